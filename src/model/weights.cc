#include "model/weights.h"

#include "common/error.h"
#include "simd/dispatch.h"

namespace kvrt::model {
namespace {

std::string shape_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
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

// The row of a tensor's type, which kvrt must be able to compute with.
const simd::WeightTypeTraits& computable_type(const io::GgufFile& file, const io::GgufTensor& t) {
  const simd::WeightTypeTraits& type = simd::weight_type_traits(t.type);
  if (!type.computable())
    file.fail("tensor '" + t.name + "' has type " + type.name + ", which kvrt does not compute (it computes " +
              simd::computable_weight_type_names() + ")");
  return type;
}

}  // namespace

const float* Weights::load(const io::GgufFile& file, const std::string& name,
                           const std::vector<int64_t>& dims) {
  return to_f32(file, *find_shaped(file, name, dims));
}

const float* Weights::to_f32(const io::GgufFile& file, const io::GgufTensor& t) {
  const simd::WeightTypeTraits& type = computable_type(file, t);
  if (t.type == simd::WeightType::kF32) {
    bytes_mapped_ += t.n_bytes;
    return reinterpret_cast<const float*>(t.data);  // offsets are 32-byte aligned
  }
  auto buf = std::make_unique<float[]>(size_t(t.n_elements));  // [n_elements]
  type.to_float_ref(t.data, t.n_elements, buf.get());
  bytes_converted_ += size_t(t.n_elements) * sizeof(float);
  owned_.push_back(std::move(buf));
  return owned_.back().get();
}

// A matrix in its stored type, in place from the map: the matmul kernels widen or multiply its
// blocks a tile at a time.
ops::WeightMatrix Weights::load_matrix(const io::GgufFile& file, const std::string& name,
                                       int64_t n_out, int64_t n_in) {
  const io::GgufTensor* t = find_shaped(file, name, {n_in, n_out});
  computable_type(file, *t);
  bytes_mapped_ += t->n_bytes;
  return {t->data, t->type, n_out, n_in};
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
