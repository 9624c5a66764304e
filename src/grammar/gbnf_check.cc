// The checks that make a grammar safe for the pushdown matcher: every rule is defined, rules and
// alternatives that can never finish are removed (so that no live matcher state is a dead end),
// and left recursion, which would make expanding a rule loop forever, is refused.
#include <algorithm>

#include "common/error.h"
#include "grammar/gbnf_ast.h"

namespace kvrt::grammar::detail {
namespace {

struct AltRef {
  int32_t rule;
  int32_t alt;
};

// The least set of rules that have an alternative whose every symbol is a rule of the set or a
// character set accepted by `chars_ok`; in time linear in the grammar's size.
template <typename CharsOk>
std::vector<char> fixpoint(const Ast& ast, CharsOk chars_ok) {
  const size_t n_rules = ast.rules.size();
  std::vector<AltRef> alts;
  std::vector<int32_t> waiting;                     // [n_alts]: rule symbols not yet in the set
  std::vector<std::vector<int32_t>> uses(n_rules);  // alternatives that use each rule (per use)
  std::vector<char> in(n_rules, 0);
  std::vector<int32_t> queue;
  for (size_t r = 0; r < n_rules; ++r) {
    for (size_t a = 0; a < ast.rules[r].alts.size(); ++a) {
      const int32_t id = int32_t(alts.size());
      alts.push_back({int32_t(r), int32_t(a)});
      int32_t n = 0;
      bool possible = true;
      for (const Symbol& s : ast.rules[r].alts[a]) {
        if (s.rule >= 0) {
          uses[size_t(s.rule)].push_back(id);
          ++n;
        } else if (!chars_ok(s)) {
          possible = false;
        }
      }
      waiting.push_back(possible ? n : -1);
      if (n == 0 && possible && !in[r]) {
        in[r] = 1;
        queue.push_back(int32_t(r));
      }
    }
  }
  while (!queue.empty()) {
    const int32_t r = queue.back();
    queue.pop_back();
    for (int32_t id : uses[size_t(r)]) {
      if (waiting[size_t(id)] > 0 && --waiting[size_t(id)] == 0) {
        const int32_t owner = alts[size_t(id)].rule;
        if (!in[size_t(owner)]) {
          in[size_t(owner)] = 1;
          queue.push_back(owner);
        }
      }
    }
  }
  return in;
}

// Drops the alternatives that use a rule that can never finish or a set that matches nothing.
void remove_unfinishable(Ast& ast) {
  const std::vector<char> finishes = fixpoint(ast, [](const Symbol& s) { return s.count > 0; });
  for (Rule& r : ast.rules) {
    std::erase_if(r.alts, [&](const std::vector<Symbol>& alt) {
      return std::any_of(alt.begin(), alt.end(), [&](const Symbol& s) {
        return s.rule >= 0 ? !finishes[size_t(s.rule)] : s.count == 0;
      });
    });
  }
  if (!finishes[size_t(ast.root)]) throw Error("grammar: rule 'root' matches no text");
}

// A cycle of rules each reachable from the one before without reading a character.
void refuse_left_recursion(const Ast& ast) {
  const std::vector<char> nullable = fixpoint(ast, [](const Symbol&) { return false; });
  const size_t n = ast.rules.size();
  std::vector<std::vector<int32_t>> first(n);  // rules each rule can start with
  for (size_t r = 0; r < n; ++r) {
    for (const std::vector<Symbol>& alt : ast.rules[r].alts) {
      for (const Symbol& s : alt) {
        if (s.rule < 0) break;
        first[r].push_back(s.rule);
        if (!nullable[size_t(s.rule)]) break;
      }
    }
  }
  // Iterative depth-first search (grammars can chain many rules); colour 1 is on the path.
  std::vector<char> colour(n, 0);
  struct Frame {
    int32_t rule;
    size_t next;
  };
  std::vector<Frame> path;
  for (size_t start = 0; start < n; ++start) {
    if (colour[start]) continue;
    path.push_back({int32_t(start), 0});
    colour[start] = 1;
    while (!path.empty()) {
      Frame& f = path.back();
      if (f.next == first[size_t(f.rule)].size()) {
        colour[size_t(f.rule)] = 2;
        path.pop_back();
        continue;
      }
      const int32_t to = first[size_t(f.rule)][f.next++];
      if (colour[size_t(to)] == 1) {
        std::string cycle;
        auto it =
            std::find_if(path.begin(), path.end(), [&](const Frame& p) { return p.rule == to; });
        for (; it != path.end(); ++it) cycle += describe(ast, it->rule) + " -> ";
        throw Error("grammar: left recursion, which a pushdown matcher cannot run: " + cycle +
                    describe(ast, to) +
                    " (each can reach the next before reading a character; a repetition of "
                    "something that can match empty text does too)");
      }
      if (colour[size_t(to)] == 0) {
        colour[size_t(to)] = 1;
        path.push_back({to, 0});
      }
    }
  }
}

}  // namespace

std::string describe(const Ast& ast, int32_t rule) {
  const Rule& r = ast.rules[size_t(rule)];
  if (r.origin == Origin::kUser) return "rule '" + r.name + "'";
  return std::string(r.origin == Origin::kGroup ? "the group" : "the repetition") + " at line " +
         std::to_string(r.line) + ", column " + std::to_string(r.column) + " in rule '" + r.name +
         "'";
}

void check_ast(Ast& ast) {
  if (ast.rules.empty()) throw Error("grammar: the grammar is empty (it defines no rule)");
  for (const Rule& r : ast.rules) {
    if (!r.defined)
      throw Error("grammar: line " + std::to_string(r.use_line) + ", column " +
                  std::to_string(r.use_column) + ": rule '" + r.name + "' is used but not defined");
  }
  if (ast.root < 0) throw Error("grammar: there is no rule 'root' (the start rule)");
  remove_unfinishable(ast);
  refuse_left_recursion(ast);
}

}  // namespace kvrt::grammar::detail
