// A loaded model: the mapped GGUF file, its config, tokenizer and weights. Immutable after
// construction, so several sessions can share one Model.
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/config.h"
#include "text/tokenizer.h"
#include "model/weights.h"

namespace kvrt::model {

class Model {
 public:
  explicit Model(const std::string& path);  // throws kvrt::Error naming the file

  const io::GgufFile& file() const { return *file_; }
  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const Weights& weights() const { return weights_; }

 private:
  std::unique_ptr<io::GgufFile> file_;
  ModelConfig config_;
  Tokenizer tokenizer_;
  Weights weights_;
};

// The default model: $KVRT_MODEL, then models/stories260K.gguf in kvrt's data directory
// (common/data_dir.h: <prefix>/share/kvrt when installed, the source tree in a build tree).
// Throws kvrt::Error saying where it looked.
std::string find_default_model();

}  // namespace kvrt::model
