// The one line between decode and prefill for every op.
#pragma once

namespace kvrt::ops {

// Calls with at most this many tokens (query tokens of attention, rows of x of a matrix product)
// are decode-sized: attention walks the packed cache per token with an online softmax, and the
// matrix products read each weight once through kvrt's own kernels (matmul_blocked.cc). Larger
// calls are prefill: tiled attention over dequantized tiles, oneDNN's GEMM where the build has it.
constexpr int kDecodeMaxTokens = 4;

}  // namespace kvrt::ops
