// Hadamard rotation of cached rows (KvConfig::rotate): each row of head_dim values is stored as
// H·x, H block-diagonal with orthonormal Walsh–Hadamard blocks of a power-of-two size, so every
// head_dim with an even size can be rotated. A rotation spreads an outlier channel over its block,
// which narrows the quantization groups' ranges; H is symmetric and orthonormal, so H⁻¹ = H and
// q·k is unchanged when the queries are rotated the same way.
#pragma once

#include "common/error.h"
#include "simd/dispatch.h"

namespace kvrt::kv {

// Largest block of values a value row is rotated in. Keys take the largest power of two dividing
// head_dim; values at most this (docs/kv-formats.md gives the measurement behind it).
constexpr int kValueRotationBlock = 64;

// The largest power of two dividing head_dim; a head_dim that is odd has none (kvrt::Error).
inline int key_rotation_block(int head_dim) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    throw Error("Hadamard rotation needs an even head_dim (blocks of a power of two), not " +
                    std::to_string(head_dim),
                ErrorKind::kUsage);
  return head_dim & -head_dim;
}

inline int value_rotation_block(int head_dim) {
  const int b = key_rotation_block(head_dim);
  return b < kValueRotationBlock ? b : kValueRotationBlock;
}

// x[head_dim] = H·x in blocks of `block` values (0: unchanged).
inline void rotate_row(float* x, int head_dim, int block) {
  if (block == 0) return;
  for (int i = 0; i < head_dim; i += block) simd::kernels().hadamard(x + i, block);
}

}  // namespace kvrt::kv
