// Tokenizer built from GGUF metadata: SentencePiece-style (`tokenizer.ggml.model = llama`:
// scores, byte fallback, dummy-space prefix) and GPT-2-style byte-level BPE (`gpt2`: merges,
// with the pre-tokenizer named by `tokenizer.ggml.pre`).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"

namespace kvrt::model {

// A byte range [offset, offset + length) of a text.
struct TextSpan {
  size_t offset = 0;
  size_t length = 0;
};

class Tokenizer {
 public:
  // Reads the vocabulary from the file; an unsupported tokenizer model is an Error.
  explicit Tokenizer(const io::GgufFile& file);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;

  // Token ids for `text`, with BOS first when `add_bos`. User-defined tokens written in the text
  // are always recognized; control tokens (<|im_start|>, <|eot_id|>, <s>, ...) only with
  // `parse_special`, as chat templates need: otherwise they are plain text. Throws Error when the
  // vocabulary's pre-tokenizer is not implemented (see pre_tokenizer_supported()).
  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special = false) const;

  // Text made by a chat template: control tokens are recognized except inside the `plain` spans
  // (the messages' contents; sorted, not overlapping), which are tokenized as plain text whatever
  // they contain, so a message cannot write the template's markers. A control token's text that
  // overlaps a plain span is plain text too. Outside the spans this is encode(text, add_bos, true),
  // and when no message holds a control token's text the two give the same ids.
  std::vector<int32_t> encode_template(std::string_view text, bool add_bos,
                                       std::span<const TextSpan> plain) const;
  // The most bytes of text that can encode to n_tokens tokens or fewer (BOS not counted), or
  // SIZE_MAX when this vocabulary can drop text, so that no bound holds. Text longer than this
  // cannot fit in n_tokens positions: a caller can refuse it without tokenizing it.
  size_t max_text_bytes(size_t n_tokens) const;

  // Bytes of one token as it appears in text: SPM's U+2581 becomes a space, byte tokens
  // (<0x0A>) become their byte, byte-level BPE symbols map back to bytes. Control tokens
  // (BOS, EOS) give "".
  std::string token_to_piece(int32_t id) const;

  // Text of a sequence. Drops the dummy space that SPM adds in front of the first word after BOS.
  std::string decode(const std::vector<int32_t>& ids) const;

  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t eot_id() const;  // end of turn; -1 when the vocabulary has none
  // Whether a prompt starts with BOS for this model (tokenizer.ggml.add_bos_token; by default yes
  // for SentencePiece and Llama 3 vocabularies, no for other BPE ones), as llama.cpp decides.
  bool adds_bos() const;
  // Tokens that end generation, as llama.cpp's EOG set: EOS, the end-of-turn and end-of-message
  // tokens, and control tokens such as <|eot_id|>, <|im_end|>, <end_of_turn>, <|end|>,
  // <|endoftext|>. Sorted.
  bool is_end_of_generation(int32_t id) const;
  const std::vector<int32_t>& end_of_generation_ids() const;
  int32_t find(std::string_view text) const;  // the token whose text is `text`; -1 when none
  int32_t n_vocab() const;
  std::string_view model_name() const;  // "llama" or "gpt2"
  std::string_view pre_name() const;    // tokenizer.ggml.pre, "default" when absent
  bool pre_tokenizer_supported() const;
  bool adds_space_prefix() const;

 private:
  std::vector<int32_t> encode_parts(std::string_view text, bool add_bos, bool parse_special,
                                    std::span<const TextSpan> plain) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvrt::model
