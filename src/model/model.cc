#include "model/model.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "kvrt_config.h"

namespace kvrt::model {

Model::Model(const std::string& path)
    : file_(std::make_unique<io::GgufFile>(path)),
      config_(ModelConfig::from_gguf(*file_)),
      tokenizer_(*file_),
      weights_(*file_, config_) {
  if (tokenizer_.n_vocab() != config_.n_vocab)
    file_->fail("the tokenizer has " + std::to_string(tokenizer_.n_vocab()) +
                " tokens but token_embd.weight has " + std::to_string(config_.n_vocab) + " rows");
}

std::string find_default_model() {
  if (const char* env = std::getenv("KVRT_MODEL"); env && *env) {
    if (!std::filesystem::exists(env))
      throw Error("KVRT_MODEL names '" + std::string(env) + "', which does not exist");
    return env;
  }
  const std::string name = "stories260K.gguf";
  const std::vector<std::string> places = {
      std::string(KVRT_SOURCE_DIR) + "/models/" + name,
      "models/" + name,
  };
  for (const auto& p : places)
    if (std::filesystem::exists(p)) return std::filesystem::weakly_canonical(p).string();
  std::string tried;
  for (const auto& p : places) tried += "\n  " + p;
  throw Error("no model given (-m) and the default model " + name +
              " was not found; set KVRT_MODEL or put it in one of:" + tried +
              "\n(see models/catalogue.toml for where to download it)");
}

}  // namespace kvrt::model
