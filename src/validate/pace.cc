#include "validate/pace.h"

namespace kvrt::validate {

double Pace::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void Pace::add(const CaseCost& c, double seconds) {
  pp_ += c.positions * c.positions;
  pg_ += c.positions * c.generated;
  gg_ += c.generated * c.generated;
  pt_ += c.positions * seconds;
  gt_ += c.generated * seconds;
  units_ += c.positions + c.generated;
  seconds_ += seconds;
}

double Pace::estimate(const CaseCost& c) const {
  if (units_ <= 0) return 0.0;
  // Cases whose positions and generated tokens are (nearly) proportional cannot separate the two
  // rates: the determinant is then a rounding residue of pp * gg.
  const double det = pp_ * gg_ - pg_ * pg_;
  if (det > 1e-9 * pp_ * gg_) {
    const double a = (pt_ * gg_ - gt_ * pg_) / det, b = (gt_ * pp_ - pt_ * pg_) / det;
    if (a >= 0 && b >= 0) return a * c.positions + b * c.generated;
  }
  return (c.positions + c.generated) * seconds_ / units_;
}

}  // namespace kvrt::validate
