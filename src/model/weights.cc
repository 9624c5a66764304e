#include "model/weights.h"

#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "simd/dispatch.h"

namespace kvrt::model {
namespace {

std::string shape_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Q8_0: blocks of 32 values, an fp16 scale followed by 32 int8 codes (34 bytes).
void dequantize_q8_0(const uint8_t* src, int64_t n, float* dst) {
  for (int64_t b = 0; b < n / 32; ++b, src += 34) {
    uint16_t d16;
    std::memcpy(&d16, src, 2);
    float d = f16_to_f32(d16);
    for (int j = 0; j < 32; ++j) dst[b * 32 + j] = d * float(int8_t(src[2 + j]));
  }
}

// The tensor `name`, which must exist with exactly these dims.
const io::GgufTensor* find_shaped(const io::GgufFile& file, const std::string& name,
                                  const std::vector<int64_t>& dims) {
  const io::GgufTensor* t = file.find_tensor(name);
  if (!t) file.fail("missing tensor '" + name + "'");
  if (t->dims != dims)
    file.fail("tensor '" + name + "' has shape " + shape_str(t->dims) + ", expected " +
              shape_str(dims));
  return t;
}

}  // namespace

const float* Weights::load(const io::GgufFile& file, const std::string& name,
                           const std::vector<int64_t>& dims) {
  return to_f32(file, *find_shaped(file, name, dims));
}

const float* Weights::to_f32(const io::GgufFile& file, const io::GgufTensor& t) {
  const int64_t n = t.n_elements;
  if (t.type == io::TensorType::kF32) {
    bytes_mapped_ += t.n_bytes;
    return reinterpret_cast<const float*>(t.data);  // offsets are 32-byte aligned
  }
  auto buf = std::make_unique<float[]>(size_t(n));
  float* out = buf.get();  // [n]
  switch (t.type) {
    case io::TensorType::kF16:
    case io::TensorType::kBF16: {
      const bool f16 = t.type == io::TensorType::kF16;
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = f16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    }
    case io::TensorType::kQ8_0:
      dequantize_q8_0(t.data, n, out);
      break;
    default:
      file.fail("tensor '" + t.name + "' has type " + io::tensor_type_name(t.type) +
                ", which kvrt does not support (F32, F16, BF16, Q8_0)");
  }
  bytes_converted_ += size_t(n) * sizeof(float);
  owned_.push_back(std::move(buf));
  return out;
}

ops::WeightMatrix Weights::load_matrix(const io::GgufFile& file, const std::string& name,
                                       int64_t n_out, int64_t n_in) {
  const io::GgufTensor* t = find_shaped(file, name, {n_in, n_out});
  const bool f16 = t->type == io::TensorType::kF16, bf16 = t->type == io::TensorType::kBF16;
  if (!(f16 || bf16)) return {to_f32(file, *t), simd::WeightType::kF32, n_out, n_in};
  bytes_mapped_ += t->n_bytes;  // widened to FP32 inside the matmul kernels
  return {t->data, f16 ? simd::WeightType::kF16 : simd::WeightType::kBF16, n_out, n_in};
}

void Weights::embedding(int32_t token, float* out) const {
  simd::kernels().weight[simd::weight_index(token_embd.type)].to_float(token_embd.row(token), token_embd.n_in, out);
}

Weights::Weights(const io::GgufFile& file, const ModelConfig& c) {
  const int64_t d = c.d_model, q_dim = int64_t(c.n_heads) * c.head_dim,
                kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  token_embd = load_matrix(file, "token_embd.weight", c.n_vocab, d);
  output_norm = load(file, "output_norm.weight", {d});
  output = c.tied_output ? token_embd : load_matrix(file, "output.weight", c.n_vocab, d);
  layers.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = layers[size_t(i)];
    l.attn_norm = load(file, p + "attn_norm.weight", {d});
    l.wq = load_matrix(file, p + "attn_q.weight", q_dim, d);
    l.wk = load_matrix(file, p + "attn_k.weight", kv_dim, d);
    l.wv = load_matrix(file, p + "attn_v.weight", kv_dim, d);
    l.wo = load_matrix(file, p + "attn_output.weight", d, q_dim);
    l.ffn_norm = load(file, p + "ffn_norm.weight", {d});
    l.w_gate = load_matrix(file, p + "ffn_gate.weight", c.d_ff, d);
    l.w_up = load_matrix(file, p + "ffn_up.weight", c.d_ff, d);
    l.w_down = load_matrix(file, p + "ffn_down.weight", d, c.d_ff);
  }
}

}  // namespace kvrt::model
