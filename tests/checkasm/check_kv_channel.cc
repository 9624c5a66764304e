// q·k over the channel-axis key tiles of every quantized KV format (kv/channel_tile.h): dot_channel
// equals the scalar twin up to reordered sums, and the twin equals q · the dequantized keys
// likewise.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "checkasm.h"
#include "kv/blocks.h"
#include "kv/channel_tile.h"
#include "simd/kernels_scalar.h"

namespace kvrt::checkasm {
namespace {

// n_tiles channel-axis tiles of F of random keys, `pad` bytes apart beyond their size.
template <class F>
struct ChannelTiles {
  size_t stride;
  std::vector<uint8_t> bytes;
  ChannelTiles(int n, int group, int n_tiles, int pad) {
    const size_t tile_bytes =
        kv::channel_codes_offset<F>(n) + static_cast<size_t>(group) * n * F::kBits / 8;
    stride = tile_bytes + pad;
    const std::vector<float> x =
        randn(static_cast<size_t>(n_tiles) * group * n, n + group);  // [n_tiles * group][n]
    bytes.assign(stride * n_tiles, 0xa5);
    for (int i = 0; i < n_tiles; ++i)
      kv::channel_quantize<F>(&x[static_cast<size_t>(i) * group * n], group, n,
                              bytes.data() + i * stride);
  }
};

// From token `first` of tile 0 on.
template <class F>
void check_channel_dot(const simd::FormatKernels& fk, int n, int group, int first, int n_q) {
  const int n_tiles = 5, n_rows = n_tiles * group - first - 1;
  const ChannelTiles<F> tiles(n, group, n_tiles, 64);
  const std::vector<float> q = randn(static_cast<size_t>(n_q) * n, 3);
  std::vector<float> s_simd(n_q * n_rows, -1.0f), s_ref(n_q * n_rows, -1.0f), k(n);
  simd::DotArgs d{
      q.data(), n_q,   static_cast<size_t>(n), tiles.bytes.data(),          tiles.stride, n_rows,
      n,        group, s_simd.data(),          static_cast<size_t>(n_rows), nullptr,      first};
  fk.dot_channel(d);
  d.scores = s_ref.data();
  simd::scalar::dot_channel<F>(d);
  INFO(std::string(F::kName) << " n " << n << " group " << group << " first " << first << " n_q "
                             << n_q);
  for (int t = 0; t < n_rows; ++t) {
    const uint8_t* tile = tiles.bytes.data() + (first + t) / group * tiles.stride;
    kv::channel_dequantize_row<F>(tile, (first + t) % group, n, k.data());
    for (int i = 0; i < n_q; ++i) {
      double exact = 0, mag = 0;
      for (int c = 0; c < n; ++c) {
        exact += double(q[i * n + c]) * k[c];
        const float m = F::kSymmetric ? 0.0f : kv::channel_scale(tile, n, 1, c);
        mag += std::abs(q[i * n + c]) * (std::abs(k[c] - m) + 2 * std::abs(m));
      }
      REQUIRE(std::abs(s_simd[i * n_rows + t] - s_ref[i * n_rows + t]) <= kSumTol * mag + 1e-6);
      REQUIRE(std::abs(s_ref[i * n_rows + t] - exact) <= kSumTol * mag + 1e-6);
    }
  }
}

template <class F>
void check_channel(const Rung& r) {
  const simd::FormatKernels& fk = r.k.format[static_cast<int>(F::kFormat)];
  for (int n : {8, 64, 96, 128}) {
    for (int group : {8, 12, 32, 128}) {  // tokens per tile; 12: not a power of two
      if (group * F::kBits % 8) continue;
      for (int first : {0, group / 2 + 1}) {
        for (int n_q : {1, 7})
          check_channel_dot<F>(fk, n, group, first, n_q);  // query groups of 1, 4 and 3
      }
    }
  }
}

// 4 query heads over 256 tokens of head_dim 128, tiles of 32 tokens.
template <class F>
std::vector<BenchCall> bench_channel(const Rung& r) {
  const int n = 128, group = 32, n_q = 4, n_rows = 256;
  auto tiles = std::make_shared<ChannelTiles<F>>(n, group, n_rows / group, 0);
  auto q = std::make_shared<std::vector<float>>(randn(n_q * n, 3));
  auto s = std::make_shared<std::vector<float>>(n_q * n_rows);
  const auto fn = r.k.format[static_cast<int>(F::kFormat)].dot_channel;
  return {{std::string("attention.dot_channel.") + F::kName, [=] {
             fn({q->data(), n_q, size_t(n), tiles->bytes.data(), tiles->stride, n_rows, n, group,
                 s->data(), size_t(n_rows), nullptr, 0});
           }}};
}

const bool kRegistered = add_per_format([](auto format) -> Check {
  using F = decltype(format);
  const std::string name = F::kName;
  return {"channel tiles " + name,
          {"attention.dot_channel." + name},
          true,
          check_channel<F>,
          bench_channel<F>};
});

}  // namespace
}  // namespace kvrt::checkasm
