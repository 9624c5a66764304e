// Internal to the tokenizer: the vocabulary as loaded from GGUF and the encoders that use it.
// Split by algorithm: tokenizer.cc (loading, encoding, decoding), tokenizer_special.cc (special
// tokens and end of generation), tokenizer_spm.cc (SentencePiece merges), tokenizer_bpe.cc
// (byte-level BPE merges), tokenizer_pre.cc (BPE pre-tokenizers). The algorithms follow llama.cpp's
// llama-vocab.cpp and unicode.cpp so that token ids agree with it exactly.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer.h"

namespace kvrt::model::detail {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

enum class VocabKind { kSpm, kBpe };

// Pre-tokenizer regex sets of llama.cpp, by tokenizer.ggml.pre; kUnsupported for all others.
enum class PreTokenizer {
  kUnsupported,
  kDefault,
  kGpt2,
  kStarcoder,
  kFalcon,
  kDeepseekCoder,
  kLlama3,
  kQwen2,
  kQwen35,
  kTekken,
  kGpt4o,
  kNewlines,
};

struct TokenData {
  std::string text;
  float score = 0.0f;
  TokenType type = TokenType::kNormal;
  bool rstrip = false;  // whitespace after this special token is dropped (phi-3)
};

struct Vocab {
  std::string path;  // GGUF file, for error messages
  VocabKind kind = VocabKind::kSpm;
  std::string model_name;  // tokenizer.ggml.model
  std::string pre_name;    // tokenizer.ggml.pre, "default" when absent
  PreTokenizer pre = PreTokenizer::kDefault;
  bool add_space_prefix = true;
  bool add_bos = true;         // encode_chat adds BOS (tokenizer.ggml.add_bos_token)
  bool ignore_merges = false;  // BPE: a pre-tokenized word that is a token is taken whole (Llama 3)
  bool byte_level = true;      // BPE over GPT-2's byte alphabet; false: over UTF-8 text (Gemma 4)
  bool escape_spaces = false;  // BPE: spaces become U+2581 before the merges (Gemma 4)
  int32_t bos_id = -1, eos_id = -1, unk_id = -1;  // -1: none
  int32_t eot_id = -1;           // end of turn (tokenizer.ggml.eot_token_id or found by text)
  int32_t eom_id = -1;           // end of message (tokenizer.ggml.eom_token_id or <|eom_id|>)
  std::vector<int32_t> eog_ids;  // every token that ends generation, sorted

  std::vector<TokenData> tokens;                            // [n_vocab]
  std::unordered_map<std::string_view, int32_t> token_ids;  // views into tokens[].text
  std::unordered_map<std::string, int32_t> merge_ranks;     // "left right" -> rank (BPE)
  // Tokens cut out of raw text before the merges, longest first: user-defined tokens always,
  // control and unknown tokens too when special tokens are parsed (chat templates).
  std::vector<int32_t> special_ids;
  std::array<int32_t, 256> byte_ids{};  // SPM byte-fallback token per byte, -1 when none
  size_t max_bytes_per_token = 0;       // bytes of text one token stands for at most; 0: no bound

  int32_t find(std::string_view text) const {
    auto it = token_ids.find(text);
    return it == token_ids.end() ? -1 : it->second;
  }
};

// A piece of the input: raw text [offset, offset + length) or a special token.
struct Fragment {
  size_t offset;
  size_t length;
  int32_t token;  // -1 for raw text
};

// Token types llama.cpp overrides by token text and by the model name (general.name).
void apply_token_quirks(Vocab& v, std::string model_name);
// Fills v.special_ids (after apply_token_quirks).
void index_special_tokens(Vocab& v);
// Fills v.eot_id when the file names none, and v.eog_ids (after the ids are read).
void index_end_of_generation(Vocab& v);
// The most bytes of text one token can stand for, or 0 when the vocabulary can drop text (so
// that no bound holds). After apply_token_quirks and read_merges.
size_t max_bytes_per_token(const Vocab& v);
// Splits `text` at the special tokens it contains: user-defined tokens always, control and
// unknown tokens only when `parse_special` and only where they overlap none of the `plain` spans
// (sorted, not overlapping).
std::vector<Fragment> partition(const Vocab& v, std::string_view text, bool parse_special,
                                std::span<const TextSpan> plain = {});

// SentencePiece merges over `text` (spaces already escaped to U+2581); appends ids.
void spm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out);

// Byte-level BPE over raw `text` (pre-tokenized with v.pre); appends ids.
void bpe_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out);

// Splits `text` into words by the pre-tokenizer's regex set (v.pre must be supported).
// Throws kvrt::Error when `text` is not valid UTF-8.
std::vector<std::string> pre_tokenize(PreTokenizer pre, std::string_view text);

}  // namespace kvrt::model::detail
