// Bodies of the fuzz targets (gguf, tokenizer, toml, manifest, weights, signed, state, grammar),
// shared by the libFuzzer entry points (fuzz_*.cc, built by tools/fuzz.sh) and by
// tests/test_fuzz_regressions.cc, which replays the seed corpus and every input that once crashed.
// A target returns normally or throws kvrt::Error for bad input; anything else (a crash, a
// sanitizer report, another exception, an abort) is a bug.
#pragma once

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"
#include "io/gguf.h"
#include "text/chat_template.h"
#include "model/model.h"
#include "model/state_file.h"
#include "text/tokenizer.h"
#include "simd/dispatch.h"
#include "simd/weights/types.h"
#include "validate/case_set.h"
#include "validate/record.h"
#include "validate/settings.h"
#include "validate/signing_key.h"
#include "validate/thresholds.h"
#include "validate/toml_util.h"

namespace kvrt::fuzz {

// An in-memory file holding `bytes`; returns its path (/proc/self/fd/N), valid until the next call.
inline std::string memory_file(std::string_view bytes) {
  static const int fd = memfd_create("kvrt-fuzz", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0) std::abort();
  if (!bytes.empty() &&
      pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
    std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}

// Bytes as a GGUF model file, through the reader's real open/mmap path (an in-memory file).
inline void gguf_one(const uint8_t* data, size_t size) {
  const std::string path = memory_file(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    model::Model m(path);
    (void)m.tokenizer().decode(m.tokenizer().encode("Once upon a time", true));
  } catch (const Error&) {
  }
}

struct Vocab {
  std::unique_ptr<io::GgufFile> file;
  std::unique_ptr<model::Tokenizer> tokenizer;
};

// A vocabulary vendored in the source tree (KVRT_SOURCE_DIR: defined by tests/meson.build and
// tools/fuzz.sh), e.g. "tests/data/vocab/ggml-vocab-gpt-2.gguf".
inline Vocab load_vocab(const std::string& relative) {
  const std::string path = std::string(KVRT_SOURCE_DIR) + "/" + relative;
  Vocab v;
  v.file = std::make_unique<io::GgufFile>(path);
  v.tokenizer = std::make_unique<model::Tokenizer>(*v.file);
  return v;
}

inline void encode_checked(const model::Tokenizer& tok, std::string_view text, bool add_bos,
                           bool parse_special) {
  try {
    for (int32_t id : tok.encode(text, add_bos, parse_special))
      if (id < 0 || id >= tok.n_vocab()) {
        std::fprintf(stderr, "token id %d outside the vocabulary of %d\n", id, tok.n_vocab());
        std::abort();
      }
    (void)tok.decode(tok.encode(text, false));
  } catch (const Error&) {
  }
}

// Bytes as text through SentencePiece vocabularies (stories260K, Phi-3 with its special tokens)
// and byte-level BPE ones (GPT-2's pre-tokenizer, Llama 3's and Qwen2's).
inline void tokenizer_one(const uint8_t* data, size_t size) {
  static const Vocab vocabs[] = {load_vocab("models/stories260K.gguf"),
                                 load_vocab("tests/data/vocab/ggml-vocab-phi-3.gguf"),
                                 load_vocab("tests/data/vocab/ggml-vocab-gpt-2.gguf"),
                                 load_vocab("tests/data/vocab/ggml-vocab-gpt-2-pre-llama-bpe.gguf"),
                                 load_vocab("tests/data/vocab/ggml-vocab-gpt-2-pre-qwen2.gguf")};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool add_bos = size > 0 && (data[0] & 1);
  const bool parse_special = size > 0 && (data[0] & 2);
  for (const Vocab& v : vocabs) encode_checked(*v.tokenizer, text, add_bos, parse_special);
}

// Bytes as each TOML file kvrt reads: thresholds, candidate settings, and a validation record
// (given a valid content hash line first, so the bytes reach the record parser, not only the hash
// check).
inline void toml_one(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto attempt = [](auto&& read) {
    try {
      read();
    } catch (const Error&) {
    }
  };
  attempt([&] { (void)validate::read_thresholds(memory_file(text)); });
  attempt([&] { (void)validate::read_settings(memory_file(text)); });
  const std::string body = "#\n" + std::string(text);
  const std::string record =
      "#\ncontent_sha256 = " + validate::toml_quote(sha256_hex(body)) + "\n" + std::string(text);
  attempt([&] { (void)validate::read_record(memory_file(record)); });
}

// `text` with its content hash line (if any) made valid for the rest, as record.cc computes it:
// over the text without that line and without a signature line just before it.
inline std::string with_valid_hash(std::string text) {
  const std::string key = "content_sha256 = ";
  const size_t at = text.find("\n" + key);
  if (at == std::string::npos) return text;
  size_t end = text.find('\n', at + 1);
  if (end == std::string::npos) end = text.size();
  const size_t prev = text.rfind('\n', at - 1);
  const size_t line = prev == std::string::npos ? 0 : prev + 1;
  const bool sig = at > 0 && text.compare(line, 12, "signature = ") == 0;
  const std::string rest =
      text.substr(0, sig ? line : at + 1) + text.substr(std::min(end + 1, text.size()));
  return text.substr(0, at + 1) + key + validate::toml_quote(sha256_hex(rest)) + text.substr(end);
}

// Bytes as a signed validation record (with a valid content hash, so they reach the signature
// reader and verification), as a public key file and as a secret key file (mode 0600).
inline void signed_one(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto attempt = [](auto&& read) {
    try {
      read();
    } catch (const Error&) {
    }
  };
  attempt([&] { (void)validate::read_record(memory_file(with_valid_hash(text))); });
  attempt([&] { (void)validate::read_public_key(memory_file(text)); });
  const std::string secret = memory_file(text);
  if (::chmod(secret.c_str(), 0600) != 0) std::abort();
  attempt([&] { (void)validate::read_secret_key(secret); });
}

// A case directory for the manifest target: a filler and a text file beside the manifest the
// input becomes; removed at exit.
struct CaseDir {
  std::string path;
  CaseDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kvrt-fuzz-cases-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path = tmpl;
    std::ofstream(path + "/filler.txt")
        << "The sun was warm.\nA bird sang in the tree.\nThe dog ran home.\n";
    std::ofstream(path + "/text.txt") << "Once upon a time, there was a little girl named Lily.\n";
  }
  ~CaseDir() { std::filesystem::remove_all(path); }
};

// Bytes as a case manifest: read (text files, templates, checks), then its cases built for
// stories260K at a context of 128 positions with the chatml format for multi-turn cases.
inline void manifest_one(const uint8_t* data, size_t size) {
  static const CaseDir dir;
  static const Vocab vocab = load_vocab("models/stories260K.gguf");
  static const model::ChatTemplate chat = model::ChatTemplate::from_name("chatml");
  {
    std::ofstream out(dir.path + "/manifest.toml", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    const validate::CaseSet set = validate::load_case_set({dir.path});
    std::vector<std::string> skipped;
    (void)validate::build_cases(set, *vocab.tokenizer, &chat, 128, &skipped);
  } catch (const Error&) {
  }
}

// True when a and b hold the same floats bit for bit, except that any NaN matches any NaN: which
// operand's payload a NaN carries depends on the order of operations (d*q + m against fma), and
// the loader refuses blocks with non-finite scales before any product reads them.
inline bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && !(a[i] != a[i] && b[i] != b[i]))
      return false;
  return a.size() == b.size();
}

// Bytes as blocks of a weight type: byte 0 picks the type, the rest is cut to whole blocks (at
// most 64 KiB of values). Every ISA's decoder must give the reference decoder's floats bit for bit
// (a NaN from a NaN scale may carry another payload), the finiteness scan must stay inside the
// blocks, and finite values must encode and decode again.
inline void weights_one(const uint8_t* data, size_t size) {
  using W = simd::WeightType;
  static constexpr W kTypes[] = {W::kQ8_0, W::kQ4_0, W::kQ4_1, W::kQ5_0, W::kQ5_1, W::kIQ4_NL,
                                 W::kQ2_K, W::kQ3_K, W::kQ4_K, W::kQ5_K, W::kQ6_K};
  if (size < 1) return;
  const simd::WeightTypeTraits& t = simd::weight_type_traits(kTypes[data[0] % std::size(kTypes)]);
  const int64_t n_blocks = std::min<int64_t>(int64_t(size - 1) / t.block_bytes, 65536 / t.block);
  if (n_blocks == 0) return;  // empty vectors have null data(), which memcmp must not see
  const int64_t n = n_blocks * t.block;
  std::vector<uint8_t> blocks(
      data + 1, data + 1 + n_blocks * t.block_bytes);  // 2-byte aligned, as the loader's
  std::vector<float> ref(static_cast<size_t>(n)), got(static_cast<size_t>(n));
  t.to_float_ref(blocks.data(), n, ref.data());
  for (simd::Isa isa : simd::runnable_isas()) {
    simd::kernels_for(isa).weight[simd::weight_index(t.type)].to_float(blocks.data(), n,
                                                                       got.data());
    if (!same_floats(ref, got)) {
      std::fprintf(stderr, "%s to_float on %s differs from the reference\n", t.name,
                   simd::isa_to_string(isa));
      std::abort();
    }
  }
  const int64_t bad = t.find_non_finite(blocks.data(), n);
  if (bad < -1 || bad >= n || (bad >= 0 && bad % t.block != 0)) std::abort();
  if (bad >= 0) return;
  t.from_float_ref(ref.data(), n, blocks.data());
  t.to_float_ref(blocks.data(), n, got.data());
}

// Bytes as a state file for a stories260K session (model/state_file.h): as they are, and sealed
// (the header's size field set and the closing SHA-256 appended), so the bytes reach the parser
// of the session and its cache, not only the checksum.
inline void state_one(const uint8_t* data, size_t size) {
  static const model::Model m(std::string(KVRT_SOURCE_DIR) + "/models/stories260K.gguf");
  const auto attempt = [](const std::string& bytes) {
    try {
      const model::StateHeader h = model::read_state_header(bytes, "fuzzed state");
      model::SessionOptions o = model::state_session_options(h, std::min(h.n_ctx, 1024), 1);
      o.n_batch = std::min(o.n_batch, 64);
      model::Session s(m, o);
      model::load_state_session(s, bytes, h, "fuzzed state");
      const int32_t next = 1;
      if (s.n_past() < s.n_ctx()) s.eval(&next, 1);
    } catch (const Error&) {
    }
  };
  std::string bytes(reinterpret_cast<const char*>(data), size);
  attempt(bytes);
  if (bytes.size() < 24) return;
  const uint64_t total = bytes.size() + 32;
  std::memcpy(bytes.data() + 16, &total, sizeof total);
  const std::string hex = sha256_hex(bytes);
  for (size_t i = 0; i < 32; ++i)
    bytes.push_back(char(std::stoi(hex.substr(2 * i, 2), nullptr, 16)));
  attempt(bytes);
}

// Byte 0's low bit picks GBNF (0) or a JSON schema (1) for the rest; what compiles then runs a
// matcher for a few steps over a vocabulary of bytes and pairs of bytes (multi-byte UTF-8 split
// across tokens), always taking the last allowed token.
inline void grammar_one(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  static const std::shared_ptr<const grammar::Vocabulary> vocab = [] {
    std::vector<std::string> pieces = {""};
    for (int b = 1; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
    for (const char* p :
         {"\xC3\xA9", "{\"", "\":", "\",\"", "true", "null", "12", "\xE6\x97", "\xA5\"}"})
      pieces.push_back(p);
    return std::make_shared<grammar::Vocabulary>(pieces, std::vector<int32_t>{0});
  }();
  try {
    const std::string gbnf = (data[0] & 1) ? grammar::schema_to_gbnf(text) : std::string(text);
    grammar::MatcherLimits limits;
    limits.max_states = 4096;
    limits.compact_states = 1024;
    grammar::Matcher m(grammar::parse_gbnf(gbnf), vocab, limits);
    std::vector<uint64_t> mask(vocab->mask_words());
    for (int step = 0; step < 16 && !m.ended(); ++step) {
      m.fill_mask(mask);
      int32_t last = -1;
      for (int32_t id = 0; id < vocab->n_vocab(); ++id)
        if ((mask[size_t(id) >> 6] >> (id & 63)) & 1) last = id;
      if (last < 0) break;
      m.accept(last);
    }
  } catch (const Error&) {
  }
}

}  // namespace kvrt::fuzz
