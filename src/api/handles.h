// What the opaque C handles hold, and the guard that turns every C++ exception into a status.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kv/kv_config.h"
#include "kvrt/kvrt.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/session.h"
#include "validate/open_session.h"
#include "validate/verdict.h"

struct kvrt_model {
  std::unique_ptr<kvrt::model::Model> model;
  std::string path;                   // the file it was opened from (validation binds to it)
  std::string arch, name, tokenizer;  // backing store of kvrt_model_info's strings
  // SHA-256 of the file, taken once on first use: every state saved or loaded binds to it.
  mutable std::once_flag sha256_once;
  mutable std::string sha256;
};

// The thread running a call on a handle (kvrt::api::InUse's tag), 0 when none.
using kvrt_in_use = std::atomic<uintptr_t>;

struct kvrt_session {
  mutable kvrt_in_use in_use{0};
  const kvrt_model* owner = nullptr;
  std::unique_ptr<kvrt::model::Session> session;
  bool has_text = false;                // some evaluated token produced text (SPM dummy-space rule)
  bool has_logits = false;              // last_logits() holds the logits of an evaluated token
  std::string kv_setting;               // backing store of kvrt_session_info::kv_setting
  std::optional<uint64_t> sampler_rng;  // kept by kvrt_session_keep_sampler or from a state
};

struct kvrt_sampler {
  mutable kvrt_in_use in_use{0};
  std::unique_ptr<kvrt::model::Sampler> sampler;
};

namespace kvrt::api {

// Records `message` as this thread's last error and returns `status`.
kvrt_status fail(kvrt_status status, const std::string& message);
void clear_error();
kvrt_status status_of(ErrorKind kind);

// Runs `body` (returning kvrt_status), mapping every exception to a status and message.
template <typename Body>
kvrt_status guard(Body&& body) noexcept {
  try {
    clear_error();
    return body();
  } catch (const Error& e) {
    return fail(status_of(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(KVRT_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(KVRT_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(KVRT_ERR_INTERNAL, "internal error: unknown exception");
  }
}

// Marks a session or sampler as in use by this thread for one call. A call from another thread
// meanwhile is refused (held() false), instead of racing on the handle's state and aborting the
// host; a nested call from the same thread (a generation callback) goes ahead.
class InUse {
 public:
  explicit InUse(kvrt_in_use& flag) : flag_(flag) {
    uintptr_t owner = 0;
    claimed_ = flag_.compare_exchange_strong(owner, self(), std::memory_order_acquire);
    held_ = claimed_ || owner == self();
  }
  ~InUse() {
    if (claimed_) flag_.store(0, std::memory_order_release);
  }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;
  bool held() const { return held_; }

 private:
  static uintptr_t self() {
    static thread_local const char tag = 0;  // one address per thread
    return reinterpret_cast<uintptr_t>(&tag);
  }
  kvrt_in_use& flag_;
  bool claimed_ = false, held_ = false;
};

// The session options of the C struct; kvrt::Error(kUsage) for values out of range.
model::SessionOptions to_options(const kvrt_session_options& o);
// A request for a session of `model` with options `so` (validate/open_session.h), gated by the
// record at record_path (NULL or "": the default record).
validate::SessionRequest session_request(const kvrt_model& model, const model::SessionOptions& so,
                                         const char* record_path);
// Opens the session through the gate: KVRT_ERR_REFUSED (a kvrt::Error) before allocating anything
// when the gate refuses, KVRT_ERR_MEMORY_CAP when it would need more than max_memory_bytes (0: no
// cap).
kvrt_status create_session(const kvrt_model& model, const validate::SessionRequest& request,
                           uint64_t max_memory_bytes, kvrt_session** out_session);
// The C verdict of a record's or report's verdict.
kvrt_verdict to_c_verdict(validate::Verdict v);

// The KV setting of a kvrt_kv_config; kvrt::Error(kUsage) for values out of range.
kv::KvConfig to_kv_config(const kvrt_kv_config& c);
kvrt_kv_config to_c_config(const kv::KvConfig& kv);
// The precision of a kvrt_matmul_precision field; kvrt::Error(kUsage) for an unknown value.
ops::MatmulPrecision to_matmul(const kvrt_matmul_precision& p);
kvrt_matmul_precision to_c_matmul(ops::MatmulPrecision p);

// The value a C caller stored in an enum field. C allows any int there, while loading a value
// outside the enumerators' range as the C++ enum type is undefined, so the bytes are read as int.
template <typename E>
int raw_enum(const E& field) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &field, sizeof v);
  return static_cast<int>(v);
}

// Copies `src` into the caller's buffer; *out_n is the element count either way.
template <typename T>
kvrt_status copy_out(const T* src, size_t n, T* dst, size_t capacity, size_t* out_n,
                     const char* what) {
  *out_n = n;
  if (n > capacity)
    return fail(KVRT_ERR_BUFFER_TOO_SMALL, std::string(what) + " needs room for " +
                                               std::to_string(n) + ", the buffer holds " +
                                               std::to_string(capacity));
  if (n > 0) std::memcpy(dst, src, n * sizeof(T));
  return KVRT_OK;
}

struct TextArg {
  const char* data;  // may be NULL when size is 0
  size_t size;
};
struct TokenBuffer {
  int32_t* tokens;  // may be NULL when capacity is 0
  size_t capacity;
};

// kvrt_tokenize and kvrt_tokenize_special (control tokens parsed in the text when parse_special).
kvrt_status tokenize(const kvrt_model* model, TextArg text, bool add_bos, bool parse_special,
                     TokenBuffer out, size_t* out_n_tokens);

// Evaluates tokens, keeping the handle's flags; CONTEXT_FULL (session unchanged) when they do not
// fit.
kvrt_status eval_tokens(kvrt_session& s, const int32_t* tokens, size_t n);

}  // namespace kvrt::api

// Holds the in-use flag of a non-NULL handle for the rest of the call, or fails it with
// KVRT_ERR_IN_USE when another thread is running a call on the same handle.
#define KVRT_CLAIM(handle)                                     \
  const ::kvrt::api::InUse handle##_in_use((handle)->in_use);  \
  if (!handle##_in_use.held())                                 \
  return ::kvrt::api::fail(KVRT_ERR_IN_USE,                    \
                           "argument '" #handle                \
                           "' is in use by a call on another " \
                           "thread (a kvrt_" #handle " belongs to one thread at a time)")

#define KVRT_REQUIRE(ptr)                                                                 \
  do {                                                                                    \
    if ((ptr) == nullptr)                                                                 \
      return ::kvrt::api::fail(KVRT_ERR_INVALID_ARGUMENT, "argument '" #ptr "' is NULL"); \
  } while (0)
