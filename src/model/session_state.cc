// A session's positions as bytes (the session part of docs/formats/state-file.md) and dropping
// the positions after a prefix.
#include <algorithm>
#include <cstring>
#include <string>

#include "common/byte_io.h"
#include "common/error.h"
#include "model/session.h"

namespace kvrt::model {

void Session::save_state(ByteWriter& out) const {
  out.put(uint32_t(n_past_));
  out.put_bytes(tokens_.data(), tokens_.size() * sizeof(int32_t));
  out.put(uint32_t(last_logits_.size()));
  out.put_bytes(last_logits_.data(), last_logits_.size() * sizeof(float));
  kv_->save_state(out);
}

void Session::load_state(ByteReader& in) {
  reset();
  const uint32_t n_past = in.get<uint32_t>("position count");
  if (n_past > uint32_t(n_ctx_))
    throw Error(in.what() + " holds " + std::to_string(n_past) +
                    " positions, more than this session's context of " + std::to_string(n_ctx_) +
                    " (open it with a larger n_ctx)",
                ErrorKind::kUsage);
  const int n_vocab = model_.config().n_vocab;
  const uint8_t* ids = in.take(size_t(n_past) * sizeof(int32_t), "token ids");
  tokens_.resize(n_past);
  std::memcpy(tokens_.data(), ids, size_t(n_past) * sizeof(int32_t));
  for (int32_t t : tokens_)
    if (t < 0 || t >= n_vocab) {
      tokens_.clear();
      throw Error(in.what() + " holds token id " + std::to_string(t) +
                  ", outside the vocabulary of " + std::to_string(n_vocab));
    }
  if (in.get<uint32_t>("vocabulary size") != uint32_t(n_vocab)) {
    tokens_.clear();
    throw Error(in.what() + " holds logits of another vocabulary size than the model's " +
                std::to_string(n_vocab));
  }
  std::memcpy(last_logits_.data(), in.take(last_logits_.size() * sizeof(float), "logits"),
              last_logits_.size() * sizeof(float));
  try {
    kv_->load_state(in, int(n_past));
  } catch (...) {
    tokens_.clear();
    throw;
  }
  n_past_ = int(n_past);
}

int Session::truncate(int n_keep) {
  KVRT_ASSERT(n_keep >= 0);
  if (n_keep >= n_past_) return n_past_;
  n_past_ = kv_->truncate(n_keep);
  tokens_.resize(size_t(n_past_));
  return n_past_;
}

}  // namespace kvrt::model
