#include "model/state_file.h"

#include <cstring>

#include "common/byte_io.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kv/kv_config.h"

namespace kvrt::model {
namespace {

constexpr char kMagic[8] = {'K', 'V', 'R', 'T', 'S', 'T', 'A', 'T'};
constexpr size_t kPrefixBytes = 24;  // magic, format, flags, file size
constexpr size_t kDigestBytes = 32;
constexpr size_t kMaxFieldBytes = 4096;  // model digest, setting, matmul names
constexpr size_t kMaxAppBytes = size_t(64) << 20;

// The SHA-256 of the `n` bytes at p, as 32 raw bytes at p + n.
void put_digest(uint8_t* p, size_t n) {
  const std::string hex = sha256_hex(std::string_view(reinterpret_cast<const char*>(p), n));
  for (size_t i = 0; i < kDigestBytes; ++i)
    p[n + i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
}

std::string digest_hex(const uint8_t* p) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < kDigestBytes; ++i) s += {kHex[p[i] >> 4], kHex[p[i] & 15]};
  return s;
}

// Everything but the closing digest; `size` is the whole file's, digest included.
void write_content(ByteWriter& out, uint64_t size, const Session& session,
                   const std::string& model_sha256, const StateExtras& extras) {
  out.put_bytes(kMagic, sizeof kMagic);
  out.put(kStateFormat);
  out.put(uint32_t(0));  // flags
  out.put(size);
  out.put_string(model_sha256);
  out.put_string(session.kv_cache().config().name());
  out.put_string(ops::matmul_precision_name(session.matmul_precision()));
  out.put(uint32_t(session.n_ctx()));
  out.put(uint32_t(session.n_batch()));
  out.put(uint8_t(extras.sampler_rng.has_value()));
  out.put(extras.sampler_rng.value_or(0));
  out.put_string(extras.app);
  session.save_state(out);
}

}  // namespace

size_t state_size(const Session& session, const std::string& model_sha256,
                  const StateExtras& extras) {
  ByteWriter count;
  write_content(count, 0, session, model_sha256, extras);
  return count.size() + kDigestBytes;
}

void write_state(void* buffer, size_t size, const Session& session, const std::string& model_sha256,
                 const StateExtras& extras) {
  KVRT_ASSERT(size == state_size(session, model_sha256, extras));
  ByteWriter out(buffer, size - kDigestBytes);
  write_content(out, size, session, model_sha256, extras);
  put_digest(static_cast<uint8_t*>(buffer), out.size());
}

std::string state_bytes(const Session& session, const std::string& model_sha256,
                        const StateExtras& extras) {
  std::string bytes(state_size(session, model_sha256, extras), '\0');
  write_state(bytes.data(), bytes.size(), session, model_sha256, extras);
  return bytes;
}

StateHeader read_state_header(std::string_view bytes, const std::string& what) {
  if (bytes.size() < kPrefixBytes + kDigestBytes)
    throw Error(what + " is too short to be a kvrt state file (" + std::to_string(bytes.size()) +
                " bytes)");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw Error(what + " is not a kvrt state file (no KVRTSTAT magic)");
  ByteReader in(bytes, what);
  in.take(sizeof kMagic, "magic");
  StateHeader h;
  h.format = in.get<uint32_t>("format version");
  if (h.format > kStateFormat)
    throw Error(what + " has state format " + std::to_string(h.format) +
                ", written by a newer kvrt; this one reads format " + std::to_string(kStateFormat));
  if (h.format == 0) throw Error(what + " has state format 0, which no kvrt writes");
  in.get<uint32_t>("flags");
  const uint64_t size = in.get<uint64_t>("file size");
  if (size != bytes.size())
    throw Error(what + " is " + (size > bytes.size() ? "truncated" : "longer than written") +
                ": it has " + std::to_string(bytes.size()) + " bytes, its header says " +
                std::to_string(size));
  const std::string_view content = bytes.substr(0, bytes.size() - kDigestBytes);
  if (sha256_hex(content) !=
      digest_hex(reinterpret_cast<const uint8_t*>(bytes.data()) + content.size()))
    throw Error(what + " is damaged: its SHA-256 does not match its content");
  ByteReader body(content, what);
  body.take(kPrefixBytes, "header");
  h.model_sha256 = body.get_string("model digest", kMaxFieldBytes);
  h.setting = body.get_string("KV setting", kMaxFieldBytes);
  try {
    h.matmul = ops::parse_matmul_precision(body.get_string("matmul precision", kMaxFieldBytes));
    kv::parse_setting(h.setting);
  } catch (const Error& e) {
    throw Error(what + " names a setting this kvrt does not know: " + e.what());
  }
  h.n_ctx = int(std::min<uint32_t>(body.get<uint32_t>("context"), 1u << 30));
  h.n_batch = int(std::min<uint32_t>(body.get<uint32_t>("batch size"), 1u << 30));
  if (body.get<uint8_t>("sampler flag") != 0)
    h.extras.sampler_rng = body.get<uint64_t>("sampler state");
  else body.get<uint64_t>("sampler state");
  h.extras.app = body.get_string("application data", kMaxAppBytes);
  h.session_offset = body.pos();
  h.n_past = int(std::min<uint32_t>(body.get<uint32_t>("position count"), 1u << 30));
  return h;
}

void check_state_binding(const StateHeader& h, const std::string& what,
                         const std::string& model_sha256, const std::string& setting,
                         ops::MatmulPrecision matmul) {
  if (h.model_sha256 != model_sha256)
    throw Error(what + " was saved with another model file (sha256 " +
                h.model_sha256.substr(0, 12) + "..., this model's is " +
                model_sha256.substr(0, 12) + "...)");
  if (!setting.empty() && h.setting != setting)
    throw Error(what + " was saved with the KV setting " + h.setting + ", not the " + setting +
                " asked for");
  if (!setting.empty() && h.matmul != matmul)
    throw Error(what + " was saved with " + ops::matmul_precision_name(h.matmul) +
                " prefill products, not the " + ops::matmul_precision_name(matmul) + " asked for");
}

SessionOptions state_session_options(const StateHeader& h, int n_ctx, int n_threads) {
  SessionOptions o;
  o.n_ctx = n_ctx > 0 ? n_ctx : h.n_ctx;
  if (o.n_ctx < h.n_past)
    throw Error("the saved session holds " + std::to_string(h.n_past) +
                    " positions, more than the context of " + std::to_string(o.n_ctx) +
                    " asked for",
                ErrorKind::kUsage);
  o.n_threads = n_threads;
  o.n_batch = std::max(1, h.n_batch);
  o.kv = kv::parse_setting(h.setting);
  o.matmul = h.matmul;
  return o;
}

void load_state_session(Session& session, std::string_view bytes, const StateHeader& h,
                        const std::string& what) {
  ByteReader in(bytes.substr(0, bytes.size() - kDigestBytes), what);
  in.take(h.session_offset, "header");
  session.load_state(in);
  if (in.remaining() != 0) {
    session.reset();
    throw Error(what + " has " + std::to_string(in.remaining()) +
                " bytes after the cache that no field accounts for");
  }
}

}  // namespace kvrt::model
