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

void put_digest(std::string& bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  const std::string hex = h.hex_digest();
  for (size_t i = 0; i < kDigestBytes; ++i)
    bytes.push_back(char(std::stoi(hex.substr(2 * i, 2), nullptr, 16)));
}

std::string digest_hex(const uint8_t* p) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < kDigestBytes; ++i) s += {kHex[p[i] >> 4], kHex[p[i] & 15]};
  return s;
}

}  // namespace

std::string state_bytes(const Session& session, const std::string& model_sha256,
                        const StateExtras& extras) {
  std::string bytes;
  ByteWriter out(bytes);
  out.put_bytes(kMagic, sizeof kMagic);
  out.put(kStateFormat);
  out.put(uint32_t(0));  // flags
  out.put(uint64_t(0));  // file size, filled in below
  out.put_string(model_sha256);
  out.put_string(session.kv_cache().config().name());
  out.put_string(ops::matmul_precision_name(session.matmul_precision()));
  out.put(uint32_t(session.n_ctx()));
  out.put(uint32_t(session.n_batch()));
  out.put(uint8_t(extras.sampler_rng.has_value()));
  out.put(extras.sampler_rng.value_or(0));
  out.put_string(extras.app);
  session.save_state(out);
  const uint64_t size = bytes.size() + kDigestBytes;
  std::memcpy(bytes.data() + 16, &size, sizeof size);
  put_digest(bytes);
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
