#include "model/model.h"

#include <cstdlib>
#include <filesystem>

#include "common/data_dir.h"
#include "common/error.h"

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
  std::error_code ec;  // a name the file system refuses (too long, ...) is a missing file
  if (const char* env = std::getenv("KVRT_MODEL"); env && *env) {
    if (!std::filesystem::exists(env, ec))
      throw Error("KVRT_MODEL names '" + std::string(env) + "', which " +
                  (ec ? "cannot be used: " + ec.message() : std::string("does not exist")));
    return env;
  }
  const std::string name = "stories260K.gguf";
  std::string dir;
  try {
    dir = data_dir();
  } catch (const Error& e) {
    throw Error("no model given (-m) and the default model " + name +
                " cannot be found: " + e.what() + ", or set KVRT_MODEL or pass -m FILE");
  }
  const std::string path = dir + "/models/" + name;
  if (!std::filesystem::exists(path, ec))
    throw Error("no model given (-m) and the default model " + path +
                " does not exist; pass -m FILE or set KVRT_MODEL (models/catalogue.toml says where "
                "to download it)");
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

}  // namespace kvrt::model
