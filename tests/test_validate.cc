// Validation pieces that need no model: statistics, metrics, thresholds files, records, gate
// decisions and the acceptance-set format.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "common/error.h"
#include "test_util.h"
#include "validate/bootstrap.h"
#include "validate/case_set.h"
#include "validate/metrics.h"
#include "validate/record.h"
#include "validate/settings.h"
#include "validate/thresholds.h"
#include "validate/verdict.h"

using namespace kvrt;
using namespace kvrt::validate;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bootstrap interval is deterministic for a seed, brackets the mean and narrows with more cases") {
  std::vector<double> x;
  for (int i = 0; i < 40; ++i) x.push_back(std::sin(i * 1.7) + 2.0);
  BootstrapOptions o;
  const Interval a = bootstrap_mean(x, o), b = bootstrap_mean(x, o);
  CHECK(a.lower == b.lower);
  CHECK(a.upper == b.upper);
  CHECK(a.lower < a.mean);
  CHECK(a.mean < a.upper);
  o.seed += 1;
  CHECK(bootstrap_mean(x, o).upper != a.upper);
  std::vector<double> x4(x.begin(), x.begin() + 4);
  const Interval small = bootstrap_mean(x4, o);
  CHECK(small.upper - small.lower > a.upper - a.lower);
  CHECK(bootstrap_mean({}, o).n_cases == 0);
  const Interval flat = bootstrap_mean(std::vector<double>(10, 0.25), o);
  CHECK(flat.lower == doctest::Approx(0.25));
  CHECK(flat.upper == doctest::Approx(0.25));
}

TEST_CASE("decide: PASS on the upper bound, FAIL on the lower bound, INCONCLUSIVE between or when few") {
  Interval i{0.5, 0.4, 0.6, 20};
  CHECK(decide(i, 0.7, 5) == Verdict::kPass);
  CHECK(decide(i, 0.3, 5) == Verdict::kFail);
  CHECK(decide(i, 0.5, 5) == Verdict::kInconclusive);
  CHECK(decide(i, 0.7, 21) == Verdict::kInconclusive);
}

TEST_CASE("per-token metrics: identical logits score zero, a shifted distribution scores its KL") {
  const float base[4] = {1.0f, 2.0f, 0.5f, -1.0f};
  const float same[4] = {1.0f, 2.0f, 0.5f, -1.0f};
  TokenSums s;
  CHECK(score_position(base, same, 4, 1, s) == doctest::Approx(0.0));
  CHECK(*token_metric_value(Metric::kPplRatio, s) == doctest::Approx(1.0));
  const float other[4] = {2.5f, 1.0f, 0.5f, -1.0f};
  TokenSums t;
  // Reference KL computed in double: sum p_b (log p_b - log p_c).
  double zb = 0, zc = 0, kl = 0;
  for (int i = 0; i < 4; ++i) zb += std::exp(double(base[i])), zc += std::exp(double(other[i]));
  for (int i = 0; i < 4; ++i)
    kl += std::exp(double(base[i])) / zb * ((base[i] - std::log(zb)) - (other[i] - std::log(zc)));
  CHECK(score_position(base, other, 4, 1, t) == doctest::Approx(kl).epsilon(1e-9));
  CHECK(*token_metric_value(Metric::kTop1Mismatch, t) == 1.0);
  CHECK(*token_metric_value(Metric::kPplRatio, t) > 1.0);
  CHECK(spread({{1, 2, 3}, {1, 2, 3}}) == 0.0);
  CHECK(spread({{1, 2, 3, 4}, {1, 2, 0, 0}}) == doctest::Approx(0.5));
}

TEST_CASE("the shipped thresholds, settings and acceptance set parse") {
  const std::string dir = default_validation_dir();
  const Thresholds t = read_thresholds(dir + "/thresholds.toml");
  CHECK(t.limits.count(Metric::kKl) == 1);
  CHECK(t.sha256.size() == 64);
  CHECK(read_settings(dir + "/settings.toml").size() >= 5);
  const CaseSet set = load_case_set({dir + "/cases"});
  CHECK(set.cases.size() >= 10);
  CHECK(!set.templates.empty());
  CHECK(load_case_set({dir + "/cases"}).sha256 == set.sha256);
}

TEST_CASE("a bad thresholds file is an error naming the file and the line") {
  test::TempDir tmp;
  const std::string path = tmp / "t.toml";
  write(path, "[bootstrap]\nseed = 1\n\n[metric.kl]\nmax = 0.01\nmaximum = 3\n");
  CHECK(error_of([&] { read_thresholds(path); }).find(path + ":6: ") == 0);
  CHECK(error_of([&] { read_thresholds(path); }).find("unknown key 'maximum'") != std::string::npos);
  write(path, "[metric.kl]\nmax = \"small\"\n");
  CHECK(error_of([&] { read_thresholds(path); }).find(path + ":2: ") == 0);
  write(path, "[metric.klx]\nmax = 1\n");
  CHECK(error_of([&] { read_thresholds(path); }).find("unknown metric 'klx'") != std::string::npos);
  write(path, "[metric.kl\nmax = 1\n");
  CHECK(error_of([&] { read_thresholds(path); }).find(path + ":1:") == 0);
  CHECK(error_of([&] { read_thresholds(tmp / "missing.toml"); }).find("missing.toml") != std::string::npos);
}

TEST_CASE("a bad case manifest is an error naming the file and the line") {
  test::TempDir tmp;
  write(tmp / "manifest.toml", "[[case]]\nid = \"a\"\ncategory = \"prose\"\nmode = \"greedy\"\ntext = \"x\"\n\n"
                               "[[case]]\nid = \"a\"\ncategory = \"prose\"\nmode = \"teacher_forced\"\ntext = \"y\"\n");
  const std::string dup = error_of([&] { load_case_set({tmp.path()}); });
  INFO(dup);
  CHECK(dup.find(":8: case: 'id' 'a' is already used") != std::string::npos);
  write(tmp / "manifest.toml", "[[case]]\nid = \"a\"\ncategory = \"prose\"\nmode = \"guess\"\ntext = \"x\"\n");
  CHECK(error_of([&] { load_case_set({tmp.path()}); }).find(":4: case: 'mode' is 'guess'") != std::string::npos);
}

TEST_CASE("a record round-trips, and an edited record is refused") {
  test::TempDir tmp;
  Record r;
  r.kvrt_version = "9.9";
  r.isa = "scalar";
  r.model_path = "/m.gguf";
  r.model_sha256 = std::string(64, 'a');
  r.thresholds_path = "/t.toml";
  r.thresholds_sha256 = std::string(64, 'b');
  r.case_dirs = {"/cases"};
  r.acceptance_sha256 = std::string(64, 'c');
  r.max_len = 512;
  r.settings.push_back({"k=q4,v=q4", "q4/q4", Verdict::kFail, 12.5});
  const std::string path = tmp / "rec.toml";
  write_record(r, path);
  const Record back = read_record(path);
  CHECK(back.model_sha256 == r.model_sha256);
  REQUIRE(back.settings.size() == 1);
  CHECK(back.settings[0].verdict == Verdict::kFail);
  CHECK(back.settings[0].bytes_per_token == 12.5);

  std::string text = test::read_file(path);
  text.replace(text.find("\"FAIL\""), 6, "\"PASS\"");
  write(path, text);
  const std::string err = error_of([&] { read_record(path); });
  CHECK(err.find("content hash mismatch") != std::string::npos);
  try {
    read_record(path);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kRefused);
  }
}
