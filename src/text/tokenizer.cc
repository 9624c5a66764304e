#include "text/tokenizer.h"

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace kvrt::model {

using detail::PreTokenizer;
using detail::TokenType;
using detail::VocabKind;

struct Tokenizer::Impl : detail::Vocab {};

namespace {

constexpr std::string_view kKeyModel = "tokenizer.ggml.model";
constexpr std::string_view kKeyPre = "tokenizer.ggml.pre";
constexpr std::string_view kKeyTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kKeyScores = "tokenizer.ggml.scores";
constexpr std::string_view kKeyTypes = "tokenizer.ggml.token_type";
constexpr std::string_view kKeyMerges = "tokenizer.ggml.merges";
constexpr std::string_view kKeySpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr std::string_view kKeyAddBos = "tokenizer.ggml.add_bos_token";

constexpr const char* kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped space

// tokenizer.ggml.pre names whose regex set is implemented, with the aliases llama.cpp maps to
// the same regexes (llama-vocab.cpp), and whether llama.cpp takes a word that is a token whole
// and starts prompts with BOS for them (Llama 3 and Tekken; DBRX and Smaug have Llama 3's regex
// without either).
struct PreName {
  std::string_view name;
  PreTokenizer pre;
  bool llama3_defaults = false;
};
constexpr PreName kPreNames[] = {
    {"default", PreTokenizer::kDefault},
    {"gpt-2", PreTokenizer::kGpt2},
    {"phi-2", PreTokenizer::kGpt2},
    {"mpt", PreTokenizer::kGpt2},
    {"olmo", PreTokenizer::kGpt2},
    {"jais", PreTokenizer::kGpt2},
    {"roberta-bpe", PreTokenizer::kGpt2},
    {"granite-docling", PreTokenizer::kGpt2},
    {"trillion", PreTokenizer::kGpt2},
    {"exaone4", PreTokenizer::kGpt2},
    {"starcoder", PreTokenizer::kStarcoder},
    {"refact", PreTokenizer::kStarcoder},
    {"command-r", PreTokenizer::kStarcoder},
    {"smollm", PreTokenizer::kStarcoder},
    {"codeshell", PreTokenizer::kStarcoder},
    {"falcon", PreTokenizer::kFalcon},
    {"deepseek-coder", PreTokenizer::kDeepseekCoder},
    {"llama-bpe", PreTokenizer::kLlama3, true},
    {"llama3", PreTokenizer::kLlama3, true},
    {"llama-v3", PreTokenizer::kLlama3, true},
    {"falcon3", PreTokenizer::kLlama3, true},
    {"falcon-h1", PreTokenizer::kLlama3, true},
    {"pixtral", PreTokenizer::kLlama3, true},
    {"midm-2.0", PreTokenizer::kLlama3, true},
    {"lfm2", PreTokenizer::kLlama3, true},
    {"dbrx", PreTokenizer::kLlama3},
    {"smaug-bpe", PreTokenizer::kLlama3},
    {"qwen2", PreTokenizer::kQwen2},
    {"deepseek-r1-qwen", PreTokenizer::kQwen2},
    {"kormo", PreTokenizer::kQwen2},
    {"megrez", PreTokenizer::kQwen2},
    {"stablelm2", PreTokenizer::kQwen2},
    {"qwen35", PreTokenizer::kQwen35},
    {"tekken", PreTokenizer::kTekken, true},
    {"gpt-4o", PreTokenizer::kGpt4o},
    {"llama4", PreTokenizer::kGpt4o},
    {"gemma4", PreTokenizer::kNewlines},
};

[[noreturn]] void fail(const detail::Vocab& v, const std::string& what,
                       ErrorKind kind = ErrorKind::kInput) {
  throw Error("'" + v.path + "': " + what, kind);
}

const PreName* pre_from_name(std::string_view name) {
  for (const PreName& p : kPreNames)
    if (p.name == name) return &p;
  return nullptr;
}

void read_model(const io::GgufFile& f, detail::Vocab& v) {
  v.path = f.path();
  v.model_name = std::string(f.get_string(kKeyModel));
  v.pre_name = std::string(f.get_string_or(kKeyPre, "default"));
  if (v.model_name == "llama") {
    v.kind = VocabKind::kSpm;
  } else if (v.model_name == "gpt2") {
    v.kind = VocabKind::kBpe;
  } else if (v.model_name == "gemma4") {
    // Gemma 4's files name no pre-tokenizer: llama.cpp gives the model its own, and ignores
    // tokenizer.ggml.pre.
    v.kind = VocabKind::kBpe;
    v.pre_name = "gemma4";
  } else {
    fail(v, "tokenizer model '" + v.model_name +
                "' is not supported (kvrt reads 'llama' SentencePiece, 'gpt2' byte-level BPE and "
                "'gemma4' BPE)");
  }
  const PreName* pre = v.kind == VocabKind::kSpm ? &kPreNames[0] : pre_from_name(v.pre_name);
  v.pre = pre ? pre->pre : PreTokenizer::kUnsupported;
  const bool llama3 = pre && pre->llama3_defaults;
  v.add_space_prefix = f.get_bool_or(kKeySpacePrefix, v.kind == VocabKind::kSpm);
  // llama.cpp's defaults: BOS in front of SentencePiece, Llama 3 and Tekken prompts, not other BPE
  // ones.
  v.add_bos = f.get_bool_or(kKeyAddBos, v.kind == VocabKind::kSpm || llama3);
  v.ignore_merges = llama3;
  if (v.pre == PreTokenizer::kNewlines) {
    // Gemma 4's pre-tokenizer, whatever the model names it with (gemma4 or gpt2): BPE over UTF-8
    // text with spaces as U+2581, split at newlines, and always BOS (llama.cpp overrides
    // tokenizer.ggml.add_bos_token = false).
    v.byte_level = false;
    v.escape_spaces = true;
    v.add_bos = true;
  }
}

void read_tokens(const io::GgufFile& f, detail::Vocab& v) {
  const std::vector<std::string_view> texts = f.get_string_array(kKeyTokens);
  if (texts.empty() || texts.size() > size_t(INT32_MAX))
    fail(v, "metadata array '" + std::string(kKeyTokens) + "' has " + std::to_string(texts.size()) +
                " tokens");
  const size_t n = texts.size();
  std::vector<float> scores =
      f.find(kKeyScores) ? f.get_float_array(kKeyScores) : std::vector<float>(n, 0.0f);
  std::vector<int32_t> types =
      f.find(kKeyTypes) ? f.get_int_array(kKeyTypes) : std::vector<int32_t>(n, 1);
  if (scores.size() != n || types.size() != n)
    fail(v, "metadata arrays '" + std::string(kKeyScores) + "' (" + std::to_string(scores.size()) +
                ") and '" + std::string(kKeyTypes) + "' (" + std::to_string(types.size()) +
                ") must have one entry per token (" + std::to_string(n) + ")");
  v.tokens.resize(n);
  for (size_t i = 0; i < n; ++i) {
    detail::TokenData& t = v.tokens[i];
    // llama.cpp renames empty tokens so that every token has a distinct, non-empty text.
    t.text = texts[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : std::string(texts[i]);
    t.score = scores[i];
    if (types[i] < 0 || types[i] > int32_t(TokenType::kByte))
      fail(v, "'" + std::string(kKeyTypes) + "'[" + std::to_string(i) +
                  "] = " + std::to_string(types[i]) + " is not a token type (0..6)");
    t.type = TokenType(types[i]);
  }
  v.token_ids.reserve(n);
  for (size_t i = 0; i < n; ++i) v.token_ids[v.tokens[i].text] = int32_t(i);  // last one wins
}

// "left right" pairs, rank = position in the list; the first occurrence of a pair counts.
void read_merges(const io::GgufFile& f, detail::Vocab& v) {
  const std::vector<std::string_view> merges = f.get_string_array(kKeyMerges);
  v.merge_ranks.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    // Split at the first space after the first byte, so a left part may be a lone space.
    if (merges[i].find(' ', 1) == std::string_view::npos) continue;
    v.merge_ranks.try_emplace(std::string(merges[i]), int32_t(i));
  }
}

// An id from the file must name a token; without the key llama.cpp's default applies if valid.
int32_t read_token_id(const io::GgufFile& f, const detail::Vocab& v, std::string_view key,
                      int32_t fallback) {
  const int64_t n = int64_t(v.tokens.size());
  if (!f.find(key)) return fallback < n ? fallback : -1;
  const uint64_t id = f.get_uint(key);
  if (id >= uint64_t(n))
    fail(v, "metadata key '" + std::string(key) + "' = " + std::to_string(id) +
                " is not a token id (the vocabulary has " + std::to_string(n) + " tokens)");
  return int32_t(id);
}

void read_special_ids(const io::GgufFile& f, detail::Vocab& v) {
  const bool spm = v.kind == VocabKind::kSpm;
  const int32_t bpe_default = v.model_name == "gpt2" ? 11 : -1;  // Gemma 4 names its own
  v.bos_id = read_token_id(f, v, "tokenizer.ggml.bos_token_id", spm ? 1 : bpe_default);
  v.eos_id = read_token_id(f, v, "tokenizer.ggml.eos_token_id", spm ? 2 : bpe_default);
  v.unk_id = read_token_id(f, v, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
  v.eot_id = read_token_id(f, v, "tokenizer.ggml.eot_token_id", -1);
  v.eom_id = read_token_id(f, v, "tokenizer.ggml.eom_token_id", v.find("<|eom_id|>"));
}

// Byte tokens "<0xHH>" (SPM byte fallback); a byte without one falls back to a one-byte token.
void index_byte_tokens(detail::Vocab& v) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    const char byte = char(b);
    const int32_t id = v.find(std::string_view(name, 6));
    v.byte_ids[b] = id >= 0 ? id : v.find(std::string_view(&byte, 1));
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i].text;
    const bool hex_form = t.size() == 6 && t.starts_with("<0x") && t[5] == '>' &&
                          std::isxdigit(uint8_t(t[3])) && std::isxdigit(uint8_t(t[4]));
    if (v.tokens[i].type == TokenType::kByte && !hex_form)
      fail(v, "byte token " + std::to_string(i) + " '" + t + "' is not of the form <0xHH>");
  }
}

// SPM: spaces become U+2581, and a raw fragment at the start or after a special token gets
// the dummy-space prefix.
void encode_spm(const detail::Vocab& v, std::string_view text,
                const std::vector<detail::Fragment>& frags, std::vector<int32_t>& out) {
  bool after_special = true;
  std::string piece;
  for (const detail::Fragment& fr : frags) {
    if (fr.token >= 0) {
      out.push_back(fr.token);
      after_special = true;
      continue;
    }
    piece.assign(v.add_space_prefix && after_special ? kSpaceMark : "");
    for (char c : text.substr(fr.offset, fr.length)) {
      if (c == ' ') {
        piece += kSpaceMark;
      } else {
        piece += c;
      }
    }
    detail::spm_encode(v, piece, out);
    after_special = false;
  }
}

}  // namespace

Tokenizer::Tokenizer(const io::GgufFile& file) : impl_(std::make_unique<Impl>()) {
  Impl& v = *impl_;
  read_model(file, v);
  read_tokens(file, v);
  if (v.kind == VocabKind::kBpe) read_merges(file, v);
  read_special_ids(file, v);
  if (v.kind == VocabKind::kSpm || !v.byte_level) index_byte_tokens(v);
  detail::apply_token_quirks(v, std::string(file.get_string_or("general.name", "")));
  detail::index_special_tokens(v);
  detail::index_end_of_generation(v);
  v.max_bytes_per_token = detail::max_bytes_per_token(v);
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos,
                                       bool parse_special) const {
  return encode_parts(text, add_bos, parse_special, {});
}

std::vector<int32_t> Tokenizer::encode_template(std::string_view text, bool add_bos,
                                                std::span<const TextSpan> plain) const {
  return encode_parts(text, add_bos, true, plain);
}

std::vector<int32_t> Tokenizer::encode_parts(std::string_view text, bool add_bos,
                                             bool parse_special,
                                             std::span<const TextSpan> plain) const {
  const Impl& v = *impl_;
  if (!pre_tokenizer_supported())
    fail(v, "pre-tokenizer '" + v.pre_name + "' is not implemented in kvrt");
  std::vector<int32_t> out;
  if (add_bos) {
    if (v.bos_id < 0) fail(v, "the vocabulary has no BOS token", ErrorKind::kUsage);
    out.push_back(v.bos_id);
  }
  const std::vector<detail::Fragment> frags = detail::partition(v, text, parse_special, plain);
  if (v.kind == VocabKind::kSpm) {
    encode_spm(v, text, frags, out);
    return out;
  }
  std::string escaped;
  for (const detail::Fragment& fr : frags) {
    if (fr.token >= 0) {
      out.push_back(fr.token);
    } else if (v.escape_spaces) {
      escaped.clear();
      for (char c : text.substr(fr.offset, fr.length)) {
        if (c == ' ') {
          escaped += kSpaceMark;
        } else {
          escaped += c;
        }
      }
      detail::bpe_encode(v, escaped, out);
    } else {
      detail::bpe_encode(v, text.substr(fr.offset, fr.length), out);
    }
  }
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id) const {
  const Impl& v = *impl_;
  if (id < 0 || id >= n_vocab())
    fail(v,
         "token id " + std::to_string(id) + " is out of range [0, " + std::to_string(n_vocab()) +
             ")",
         ErrorKind::kUsage);
  const detail::TokenData& t = v.tokens[id];
  switch (t.type) {
    case TokenType::kUserDefined: return t.text;
    case TokenType::kNormal: break;
    case TokenType::kByte:
      // Validated as <0xHH> at load; byte-level BPE byte tokens have no defined text.
      if (v.kind != VocabKind::kSpm && v.byte_level) return "";
      return std::string(1, char(std::stoi(t.text.substr(3, 2), nullptr, 16)));
    default:  // control, unknown, unused, undefined
      return "";
  }
  std::string piece;
  if (v.kind == VocabKind::kSpm || v.escape_spaces) {
    for (size_t i = 0; i < t.text.size(); ++i) {
      if (t.text.compare(i, 3, kSpaceMark) == 0) {
        piece += ' ';
        i += 2;
      } else {
        piece += t.text[i];
      }
    }
    return piece;
  }
  for (uint32_t cp : unicode::utf8_to_cps(t.text)) {
    const int byte = unicode::cp_to_byte(cp);
    if (byte >= 0) {
      piece += char(byte);
    } else {
      unicode::append_utf8(cp, piece);  // not a byte symbol: keep the character itself
    }
  }
  return piece;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const Impl& v = *impl_;
  bool drop_space = v.kind == VocabKind::kSpm && v.add_space_prefix;
  std::string text;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id);
    if (drop_space && v.tokens[id].type != TokenType::kControl) {
      if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      drop_space = false;
    }
    text += piece;
  }
  return text;
}

size_t Tokenizer::max_text_bytes(size_t n_tokens) const {
  const size_t per_token = impl_->max_bytes_per_token;
  if (per_token == 0 || n_tokens > SIZE_MAX / per_token) return SIZE_MAX;
  return n_tokens * per_token;
}

int32_t Tokenizer::bos_id() const { return impl_->bos_id; }
int32_t Tokenizer::eos_id() const { return impl_->eos_id; }
int32_t Tokenizer::eot_id() const { return impl_->eot_id; }
bool Tokenizer::adds_bos() const { return impl_->add_bos; }
bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(impl_->eog_ids.begin(), impl_->eog_ids.end(), id);
}
const std::vector<int32_t>& Tokenizer::end_of_generation_ids() const { return impl_->eog_ids; }
int32_t Tokenizer::find(std::string_view text) const { return impl_->find(text); }
int32_t Tokenizer::n_vocab() const { return int32_t(impl_->tokens.size()); }
std::string_view Tokenizer::model_name() const { return impl_->model_name; }
std::string_view Tokenizer::pre_name() const { return impl_->pre_name; }
bool Tokenizer::pre_tokenizer_supported() const { return impl_->pre != PreTokenizer::kUnsupported; }
bool Tokenizer::adds_space_prefix() const { return impl_->add_space_prefix; }

}  // namespace kvrt::model
