#include "model/tensors.h"

#include <unordered_set>

namespace kvrt::model {
namespace {

std::string shape_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// The tensor `name` as described (null when optional and absent), marked as used.
const io::GgufTensor* bind(const io::GgufFile& f, const TensorDesc& d, const std::string& name,
                           const ModelConfig& c, std::unordered_set<const io::GgufTensor*>& used) {
  const io::GgufTensor* t = f.find_tensor(name);
  if (!t) {
    if (d.required) f.fail("missing tensor '" + name + "'");
    return nullptr;
  }
  std::vector<int64_t> dims{dim_size(d.n_in, c)};
  if (d.n_out != Dim::kNone) dims.push_back(dim_size(d.n_out, c));
  if (t->dims != dims)
    f.fail("tensor '" + name + "' has shape " + shape_str(t->dims) + ", expected " +
           shape_str(dims));
  used.insert(t);
  return t;
}

// Refuses a file with tensors no description entry took, naming the first few.
void check_all_used(const io::GgufFile& f, const ModelConfig& c,
                    const std::unordered_set<const io::GgufTensor*>& used) {
  std::string names;
  size_t n_unused = 0;
  for (const io::GgufTensor& t : f.tensors()) {
    if (used.count(&t)) continue;
    if (++n_unused <= 6) names += (n_unused > 1 ? ", " : "") + t.name;
  }
  if (n_unused == 0) return;
  f.fail(std::to_string(n_unused) + " tensor" + (n_unused > 1 ? "s are" : " is") +
         " not used by a " + std::to_string(c.n_layers) + "-block " + c.arch + " model: " + names +
         (n_unused > 6 ? ", ..." : "") + " (does " + c.arch + ".block_count describe the file?)");
}

}  // namespace

int64_t dim_size(Dim d, const ModelConfig& c) {
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim,
                kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  switch (d) {
    case Dim::kNone: return 0;
    case Dim::kDModel: return c.d_model;
    case Dim::kHeadDim: return c.head_dim;
    case Dim::kQDim: return q_dim;
    case Dim::kKvDim: return kv_dim;
    case Dim::kQkvDim: return q_dim + 2 * kv_dim;
    case Dim::kDff: return c.d_ff;
    case Dim::kDff2: return 2 * int64_t(c.d_ff);
    case Dim::kVocab: return c.n_vocab;
    case Dim::kRopePairs: return c.rope_dim / 2;
  }
  return 0;
}

BoundTensors bind_tensors(const io::GgufFile& f, const ModelConfig& c) {
  const Architecture& arch = *c.architecture;
  std::unordered_set<const io::GgufTensor*> used;
  BoundTensors b;
  for (const TensorDesc& d : arch.model_tensors)
    b.model[size_t(d.role)] = bind(f, d, d.name, c, used);
  b.layers.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string prefix = "blk." + std::to_string(i) + ".";
    for (const TensorDesc& d : arch.layer_tensors)
      b.layers[size_t(i)][size_t(d.role)] = bind(f, d, prefix + d.name, c, used);
  }
  check_all_used(f, c, used);
  return b;
}

}  // namespace kvrt::model
