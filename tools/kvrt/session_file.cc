#include "session_file.h"

#include <cstdio>

#include "common/regular_file.h"
#include "common/sha256.h"
#include "model/prefix_reuse.h"
#include "validate/output_file.h"

namespace kvrt::cli {

SessionFile::SessionFile(std::string path, const std::string& model_path) : path_(std::move(path)) {
  validate::check_output_path(path_, "state file");
  model_sha256_ = sha256_file(model_path);
}

std::optional<model::StateExtras> SessionFile::load(model::Session& session) const {
  if (missing_file(path_)) return std::nullopt;
  const std::string bytes = read_regular_file(path_, "state file", model::kMaxStateFileBytes);
  const std::string what = "state file '" + path_ + "'";
  const model::StateHeader h = model::read_state_header(bytes, what);
  model::check_state_binding(h, what, model_sha256_, session.kv_cache().config().name(),
                             session.matmul_precision());
  model::load_state_session(session, bytes, h, what);
  return h.extras;
}

size_t SessionFile::save(const model::Session& session, const model::StateExtras& extras) const {
  const std::string bytes = model::state_bytes(session, model_sha256_, extras);
  validate::write_file_atomic(path_, bytes, "state file");
  return bytes.size();
}

int reuse_prompt_cache(const SessionFile& cache, model::Session& session,
                       const std::vector<int32_t>& tokens) {
  if (!cache.load(session)) {
    std::fprintf(stderr, "kvrt: prompt cache '%s' does not exist yet; it will hold this prompt\n",
                 cache.path().c_str());
    return 0;
  }
  const int n_cached = session.n_past();
  const int kept =
      tokens.empty() ? 0 : model::reuse_prefix(session, tokens.data(), int(tokens.size()));
  if (tokens.empty()) session.reset();
  std::fprintf(stderr,
               "kvrt: prompt cache '%s': reused %d of %d prompt tokens (the cache held %d)\n",
               cache.path().c_str(), kept, int(tokens.size()), n_cached);
  return kept;
}

void resume_chat(const SessionFile& file, model::Session& session, model::Conversation& chat,
                 model::Sampler& sampler) {
  const std::optional<model::StateExtras> extras = file.load(session);
  if (!extras) {
    std::fprintf(stderr,
                 "kvrt: session file '%s' does not exist yet; it is saved after every turn\n",
                 file.path().c_str());
    return;
  }
  try {
    chat.resume(extras->app, "state file '" + file.path() + "'");
  } catch (...) {
    session.reset();
    throw;
  }
  if (extras->sampler_rng) sampler.set_rng_state(*extras->sampler_rng);
  std::fprintf(stderr, "kvrt: resumed '%s': %zu messages, %d positions\n", file.path().c_str(),
               chat.messages().size(), session.n_past());
}

void save_chat(const SessionFile& file, const model::Session& session,
               const model::Conversation& chat, const model::Sampler& sampler) {
  file.save(session, {sampler.rng_state(), chat.save()});
}

}  // namespace kvrt::cli
