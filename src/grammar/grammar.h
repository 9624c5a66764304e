// A context-free grammar over bytes, compiled from llama.cpp's GBNF dialect (docs/grammar.md):
// the form the token matcher (grammar/matcher.h) runs as a pushdown automaton. Immutable once
// built, so one grammar can serve any number of matchers on any threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace kvrt::grammar {

// What a grammar may cost; beyond it parse_gbnf refuses the text with an Error.
struct Limits {
  size_t max_text_bytes = size_t(4) << 20;  // GBNF source (converted JSON schemas are larger)
  size_t max_symbols = size_t(1) << 20;     // symbols once repetitions are written out
  int max_nesting = 256;                    // parenthesized groups inside each other
};

// 256 bits, one per byte value.
struct ByteSet {
  std::array<uint64_t, 4> words{};
  bool has(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { words[b >> 6] |= uint64_t(1) << (b & 63); }
  bool operator==(const ByteSet&) const = default;
};

// Rules of alternatives of elements. Every alternative is a run of `elements` ending in kEnd; an
// element is a byte set (>= 0, an index into `sets`) or a reference to a rule (rule_ref()). Every
// rule can finish (rules and alternatives that cannot were removed), and no rule reaches itself
// before reading a byte (left recursion is refused), so expanding references always stops.
struct Grammar {
  static constexpr int32_t kEnd = -1;
  static constexpr bool is_rule(int32_t e) { return e <= -2; }
  static constexpr int32_t rule_of(int32_t e) { return -(e + 2); }
  static constexpr int32_t rule_ref(int32_t rule) { return -(rule + 2); }

  std::vector<int32_t> elements;   // [n_elements]
  std::vector<int32_t> alt_begin;  // [n_alts]: index of each alternative's first element
  std::vector<int32_t>
      rule_alts;  // [n_rules + 1]: rule r's alternatives are [rule_alts[r], rule_alts[r + 1])
  std::vector<ByteSet> sets;  // [n_sets]
  // Bytes that no set tells apart share a class: the matcher's tables have a column per class.
  std::array<uint8_t, 256> byte_class{};
  std::vector<uint8_t> class_byte;  // [n_classes]: one byte of each class
  int32_t root = 0;

  int32_t n_rules() const { return int32_t(rule_alts.size()) - 1; }
  int n_classes() const { return int(class_byte.size()); }
};

// Parses and compiles GBNF text whose start rule is `root`. Throws kvrt::Error (ErrorKind::kInput)
// naming the line and column for a syntax error, an undefined rule, left recursion, a grammar that
// is empty or matches nothing, and text or expansions beyond `limits`.
std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const Limits& limits = {});

}  // namespace kvrt::grammar
