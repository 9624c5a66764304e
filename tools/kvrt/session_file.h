// State files for the CLI (docs/sessions.md): kvrt run --prompt-cache and kvrt chat --session
// restore a session from one when it exists and save it after their work.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/conversation.h"
#include "model/sampler.h"
#include "model/session.h"
#include "model/state_file.h"

namespace kvrt::cli {

class SessionFile {
 public:
  // Checks, before any work, that `path` can be written (a FIFO, device or directory is refused).
  SessionFile(std::string path, const std::string& model_path);

  // Loads the file into `session` when it exists; nothing when it does not. A file made for
  // another model file, KV setting or matmul precision, truncated, damaged or from a newer kvrt
  // is kvrt::Error(kInput) naming the mismatch; `session` is then empty.
  std::optional<model::StateExtras> load(model::Session& session) const;
  // Replaces the file atomically; returns its size in bytes.
  size_t save(const model::Session& session, const model::StateExtras& extras) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_, model_sha256_;
};

// kvrt run --prompt-cache: loads the cache file into `session` when there is one and keeps the
// longest prefix of the prompt it holds (model/prefix_reuse.h), saying on stderr how many tokens
// were reused; returns that count, so the caller evaluates tokens[count, n).
int reuse_prompt_cache(const SessionFile& cache, model::Session& session,
                       const std::vector<int32_t>& tokens);

// kvrt chat --session: resumes the conversation, its cache and the sampler's generator from the
// file when it exists (saying so on stderr); the file's conversation replaces `chat`'s.
void resume_chat(const SessionFile& file, model::Session& session, model::Conversation& chat,
                 model::Sampler& sampler);
// Saves what resume_chat reads back.
void save_chat(const SessionFile& file, const model::Session& session,
               const model::Conversation& chat, const model::Sampler& sampler);

}  // namespace kvrt::cli
