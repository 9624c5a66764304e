#include "model/weights.h"

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "simd/dispatch.h"

namespace kvrt::model {
namespace {

// The row of a tensor's type, which kvrt must be able to compute with.
const simd::WeightTypeTraits& computable_type(const io::GgufFile& file, const io::GgufTensor& t) {
  const simd::WeightTypeTraits& type = simd::weight_type_traits(t.type);
  if (!type.computable())
    file.fail("tensor '" + t.name + "' has type " + type.name +
              ", which kvrt does not compute (it computes " + simd::computable_weight_type_names() +
              ")");
  return type;
}

// A NaN or infinity in a weight turns every output it touches into garbage: refused at load by
// one scan of the stored values (the f16 scales and mins of block types, whose codes are finite).
void check_finite(const io::GgufFile& file, const io::GgufTensor& t,
                  const simd::WeightTypeTraits& type) {
  const int64_t at = type.find_non_finite(t.data, t.n_elements);
  if (at < 0) return;
  const std::string where =
      " at element " + std::to_string(at) + " (row " + std::to_string(at / t.dims[0]) + ")";
  if (type.block > 1)
    file.fail("tensor '" + t.name + "' has a NaN or infinite scale in its " + type.name + " block" +
              where);
  float v;
  type.to_float_ref(t.data + at * type.block_bytes, 1, &v);
  file.fail("tensor '" + t.name + "' holds " + (std::isnan(v) ? "NaN" : "an infinity") + where);
}

// The role's matrix or vector member of a layer (fused matrices are split by load_layer).
ops::WeightMatrix& layer_matrix(LayerWeights& l, TensorRole role) {
  switch (role) {
    case TensorRole::kAttnQ: return l.wq;
    case TensorRole::kAttnK: return l.wk;
    case TensorRole::kAttnV: return l.wv;
    case TensorRole::kAttnOut: return l.wo;
    case TensorRole::kFfnGate: return l.w_gate;
    case TensorRole::kFfnUp: return l.w_up;
    default: KVRT_ASSERT(role == TensorRole::kFfnDown); return l.w_down;
  }
}

const float*& layer_vector(LayerWeights& l, TensorRole role) {
  switch (role) {
    case TensorRole::kAttnNorm: return l.attn_norm;
    case TensorRole::kAttnQBias: return l.bq;
    case TensorRole::kAttnKBias: return l.bk;
    case TensorRole::kAttnVBias: return l.bv;
    case TensorRole::kAttnQNorm: return l.q_norm;
    case TensorRole::kAttnKNorm: return l.k_norm;
    case TensorRole::kPostAttnNorm: return l.post_attn_norm;
    case TensorRole::kPostFfnNorm: return l.post_ffn_norm;
    default: KVRT_ASSERT(role == TensorRole::kFfnNorm); return l.ffn_norm;
  }
}

}  // namespace

const uint8_t* Weights::aligned_data(const io::GgufFile& file, const io::GgufTensor& t) {
  const int64_t alignment = simd::weight_type_traits(t.type).alignment();
  if (reinterpret_cast<uintptr_t>(t.data) % uintptr_t(alignment) == 0) {
    bytes_mapped_ += t.n_bytes;
    return t.data;
  }
  owned_.push_back(std::make_unique<float[]>((t.n_bytes + sizeof(float) - 1) / sizeof(float)));
  std::memcpy(owned_.back().get(), t.data, t.n_bytes);
  file.release(t);
  bytes_converted_ += t.n_bytes;
  return reinterpret_cast<const uint8_t*>(owned_.back().get());
}

const float* Weights::load_vector(const io::GgufFile& file, const io::GgufTensor& t) {
  const simd::WeightTypeTraits& type = computable_type(file, t);
  check_finite(file, t, type);
  if (t.type == simd::WeightType::kF32)
    return reinterpret_cast<const float*>(aligned_data(file, t));
  owned_.push_back(std::make_unique<float[]>(size_t(t.n_elements)));  // [n_elements]
  type.to_float_ref(t.data, t.n_elements, owned_.back().get());
  file.release(t);
  bytes_converted_ += size_t(t.n_elements) * sizeof(float);
  return owned_.back().get();
}

// A matrix in its stored type, in place from the map where aligned.
ops::WeightMatrix Weights::load_matrix(const io::GgufFile& file, const io::GgufTensor& t) {
  check_finite(file, t, computable_type(file, t));
  return {aligned_data(file, t), t.type, t.dims[1], t.dims[0]};
}

void Weights::load_layer(const io::GgufFile& file, const ModelConfig& c, const RoleTensors& roles,
                         LayerWeights& l) {
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim,
                kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  for (int r = 0; r < kNumTensorRoles; ++r) {
    const io::GgufTensor* t = roles[size_t(r)];
    if (t == nullptr) continue;
    if (t->dims.size() == 1) {
      layer_vector(l, TensorRole(r)) = load_vector(file, *t);
    } else if (TensorRole(r) == TensorRole::kAttnQkv) {  // rows: Q, then K, then V
      const ops::WeightMatrix m = load_matrix(file, *t);
      l.wq = m.rows(0, q_dim);
      l.wk = m.rows(q_dim, kv_dim);
      l.wv = m.rows(q_dim + kv_dim, kv_dim);
    } else if (TensorRole(r) == TensorRole::kFfnGateUp) {  // rows: gate, then up
      const ops::WeightMatrix m = load_matrix(file, *t);
      l.w_gate = m.rows(0, c.d_ff);
      l.w_up = m.rows(c.d_ff, c.d_ff);
    } else {
      layer_matrix(l, TensorRole(r)) = load_matrix(file, *t);
    }
  }
}

const float* Weights::load_rope_factors(const io::GgufFile& file, const io::GgufTensor* t) {
  if (!t) return nullptr;
  const float* f = load_vector(file, *t);
  for (int64_t i = 0; i < t->n_elements; ++i)
    if (!(f[i] > 0.0f))
      file.fail("tensor '" + t->name + "' holds " + std::to_string(f[i]) + " at element " +
                std::to_string(i) + "; RoPE frequency factors must be positive");
  return f;
}

// llama.cpp's rule: the long factors once the context exceeds the original one.
const float* Weights::rope_factors(int n_ctx, int orig_ctx) const {
  if (rope_factors_long && orig_ctx > 0 && n_ctx > orig_ctx) return rope_factors_long;
  return rope_factors_short ? rope_factors_short : rope_freqs;
}

void Weights::embedding(int32_t token, float* out, void* raw) const {
  const uint8_t* row = token_embd.row(token);
  if (embd_file_) {
    embd_file_->read(row, token_embd.row_bytes(), raw);
    row = static_cast<const uint8_t*>(raw);
  }
  simd::kernels().weight[simd::weight_index(token_embd.type)].to_float(row, token_embd.n_in, out);
}

Weights::Weights(const io::GgufFile& file, const ModelConfig& c) {
  const BoundTensors b = bind_tensors(file, c);
  const io::GgufTensor& embd = *b.model[size_t(TensorRole::kTokenEmbd)];
  token_embd = load_matrix(file, embd);
  output_norm = load_vector(file, *b.model[size_t(TensorRole::kOutputNorm)]);
  const io::GgufTensor* out = b.model[size_t(TensorRole::kOutput)];
  output = out ? load_matrix(file, *out) : token_embd;
  // Read a row per token when not the output too: none of its pages need stay resident after
  // the load's scan for NaN and infinities (a 128k-token vocabulary is 1 GB), and rows read from
  // the file keep them out (through the map, the kernel would map 64 KiB around each).
  if (out) {
    file.release(embd);
    if (token_embd.data == embd.data) embd_file_ = &file;
  }
  rope_freqs = load_rope_factors(file, b.model[size_t(TensorRole::kRopeFreqs)]);
  rope_factors_short = load_rope_factors(file, b.model[size_t(TensorRole::kRopeFactorsShort)]);
  rope_factors_long = load_rope_factors(file, b.model[size_t(TensorRole::kRopeFactorsLong)]);
  if (!rope_factors_short != !rope_factors_long)
    file.fail(
        "the file has only one of rope_factors_short.weight and rope_factors_long.weight; LongRoPE "
        "needs both");
  layers.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) load_layer(file, c, b.layers[size_t(i)], layers[size_t(i)]);
}

}  // namespace kvrt::model
