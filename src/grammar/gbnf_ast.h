// Internal to grammar/: GBNF parsed into rules over code points, before it is checked
// (gbnf_check.cc) and lowered to bytes (grammar_lower.cc). Groups and repetitions are already
// rules of their own here, as llama.cpp's parser makes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/utf8_ranges.h"

namespace kvrt::grammar::detail {

// One element of a sequence: a rule reference, or one code point of a set of ranges.
struct Symbol {
  int32_t rule = -1;  // >= 0: a reference to Ast::rules[rule]
  uint32_t first = 0,
           count = 0;  // else: Ast::ranges[first, first + count); count 0 matches nothing
};

enum class Origin : uint8_t { kUser, kGroup, kRepeat };

struct Rule {
  std::string name;  // kUser: its name; otherwise the name of the rule it was written in
  Origin origin = Origin::kUser;
  bool defined = false;
  int line = 0, column = 0;          // where it is defined (a group or repetition: where that is)
  int use_line = 0, use_column = 0;  // its first use, for "used but not defined"
  std::vector<std::vector<Symbol>> alts;
};

struct Ast {
  std::vector<Rule> rules;
  std::vector<CodeRange> ranges;  // normalized, per symbol
  int32_t root = -1;
  size_t n_symbols = 0;
};

Ast parse_ast(std::string_view text, const Limits& limits);
// Refuses undefined rules, a missing root and left recursion; removes what can never finish.
void check_ast(Ast& ast);
std::shared_ptr<const Grammar> lower(const Ast& ast);
// "rule 'value'", or "the group at line 3, column 7 in rule 'value'".
std::string describe(const Ast& ast, int32_t rule);

}  // namespace kvrt::grammar::detail
