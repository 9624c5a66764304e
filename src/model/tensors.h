// The tensors of a GGUF file bound to its architecture's description (model/architecture.h):
// every described tensor found with its shape, and every tensor of the file accounted for.
#pragma once

#include <array>
#include <vector>

#include "io/gguf.h"
#include "model/architecture.h"
#include "model/config.h"

namespace kvrt::model {

using RoleTensors = std::array<const io::GgufTensor*, kNumTensorRoles>;  // [role], null: absent

struct BoundTensors {
  RoleTensors model{};              // model-level roles
  std::vector<RoleTensors> layers;  // [n_layers], layer roles
};

// Binds the file's tensors to config.architecture. Errors name the file and the tensor: a
// required tensor missing, a shape other than the description's, or tensors the description does
// not use. Unused tensors are an error, not a warning (as in llama.cpp's loader): a file whose
// metadata does not describe its tensors, e.g. a block_count smaller than its blocks, would
// otherwise run as a different model.
BoundTensors bind_tensors(const io::GgufFile& file, const ModelConfig& config);

// The length of dimension `d` of a described tensor in a model of this configuration (0 for
// Dim::kNone): what the loader checks shapes against, and what kvrt's GGUF writer (synth_model)
// writes.
int64_t dim_size(Dim d, const ModelConfig& config);

}  // namespace kvrt::model
