// Copies a vocabulary-only GGUF with one metadata key replaced (a SentencePiece vocabulary without
// the space prefix; the gpt-2 vocabulary with another tokenizer.ggml.pre, as llama-tokenize reads
// it to make vectors).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace kvrt::test {

// Writes `src` to `dst` with `key` set by `set` (added when `src` lacks it); tensors are not
// copied.
inline void copy_vocab(const std::string& src, const std::string& dst, std::string_view key,
                       const std::function<void(io::GgufWriter&)>& set) {
  const io::GgufFile in(src);
  io::GgufWriter w;
  for (const auto& [k, v] : in.metadata())
    if (k != key) w.add_value(k, v);
  set(w);
  w.write(dst);
}

}  // namespace kvrt::test
