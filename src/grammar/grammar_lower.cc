// Rules over code points to rules over bytes: each character set becomes the UTF-8 sequences of
// its code points. One sequence stays inline; several become a rule of their own, shared by
// every use of the same set, with the sequences that differ only in their first byte merged.
#include <map>
#include <string>

#include "common/error.h"
#include "grammar/gbnf_ast.h"

namespace kvrt::grammar::detail {
namespace {

using Sequence = std::vector<ByteSet>;

class Lowering {
 public:
  explicit Lowering(const Ast& ast) : ast_(ast) {}

  std::shared_ptr<const Grammar> run() {
    // Rule ids of the AST stay; byte-sequence rules are appended after them.
    rules_.resize(ast_.rules.size());
    for (size_t r = 0; r < ast_.rules.size(); ++r) {
      for (const std::vector<Symbol>& alt : ast_.rules[r].alts) {
        std::vector<int32_t> out;
        for (const Symbol& s : alt) {
          if (s.rule >= 0) {
            out.push_back(Grammar::rule_ref(s.rule));
          } else {
            lower_chars(s, out);
          }
        }
        rules_[r].push_back(std::move(out));
      }
    }
    auto g = std::make_shared<Grammar>();
    for (const std::vector<std::vector<int32_t>>& rule : rules_) {
      g->rule_alts.push_back(int32_t(g->alt_begin.size()));
      for (const std::vector<int32_t>& alt : rule) {
        g->alt_begin.push_back(int32_t(g->elements.size()));
        g->elements.insert(g->elements.end(), alt.begin(), alt.end());
        g->elements.push_back(Grammar::kEnd);
      }
    }
    g->rule_alts.push_back(int32_t(g->alt_begin.size()));
    g->sets = std::move(sets_);
    g->root = ast_.root;
    assign_byte_classes(*g);
    return g;
  }

 private:
  int32_t set_id(const ByteSet& s) {
    auto [it, added] = set_ids_.try_emplace(s.words, int32_t(sets_.size()));
    if (added) sets_.push_back(s);
    return it->second;
  }

  void lower_chars(const Symbol& s, std::vector<int32_t>& out) {
    const std::vector<CodeRange> ranges(ast_.ranges.begin() + s.first,
                                        ast_.ranges.begin() + s.first + s.count);
    std::string key;
    for (CodeRange r : ranges) key += std::to_string(r.lo) + "-" + std::to_string(r.hi) + ",";
    auto found = lowered_.find(key);
    if (found == lowered_.end()) found = lowered_.emplace(key, lower_ranges(ranges)).first;
    out.insert(out.end(), found->second.begin(), found->second.end());
  }

  // Elements that match one code point of `ranges`.
  std::vector<int32_t> lower_ranges(const std::vector<CodeRange>& ranges) {
    std::vector<Sequence> seqs;
    for (const Utf8Sequence& u : utf8_sequences(ranges)) {
      Sequence s(size_t(u.n));
      for (int k = 0; k < u.n; ++k)
        for (int b = u.lo[k]; b <= u.hi[k]; ++b) s[size_t(k)].add(uint8_t(b));
      // Merge with an earlier sequence of the same tail (different lead bytes).
      bool merged = false;
      for (Sequence& t : seqs) {
        if (t.size() == s.size() && std::equal(t.begin() + 1, t.end(), s.begin() + 1)) {
          for (int w = 0; w < 4; ++w) t[0].words[size_t(w)] |= s[0].words[size_t(w)];
          merged = true;
          break;
        }
      }
      if (!merged) seqs.push_back(std::move(s));
    }
    KVRT_ASSERT(!seqs.empty());
    if (seqs.size() == 1) {
      std::vector<int32_t> out;
      for (const ByteSet& b : seqs[0]) out.push_back(set_id(b));
      return out;
    }
    const int32_t id = int32_t(rules_.size());
    rules_.emplace_back();
    for (const Sequence& s : seqs) {
      std::vector<int32_t> alt;
      for (const ByteSet& b : s) alt.push_back(set_id(b));
      rules_.back().push_back(std::move(alt));
    }
    return {Grammar::rule_ref(id)};
  }

  // Refines the partition of the 256 bytes by every set, so that a class is a column of the
  // matcher's transition tables.
  static void assign_byte_classes(Grammar& g) {
    std::array<uint32_t, 256> cls{};  // all bytes start in class 0
    for (const ByteSet& s : g.sets) {
      std::map<std::pair<uint32_t, bool>, uint32_t> split;
      for (int b = 0; b < 256; ++b) {
        auto [it, added] =
            split.try_emplace({cls[size_t(b)], s.has(uint8_t(b))}, uint32_t(split.size()));
        cls[size_t(b)] = it->second;
      }
    }
    // Renumber in order of first byte; at most 256 classes.
    std::map<uint32_t, uint8_t> number;
    for (int b = 0; b < 256; ++b) {
      auto [it, added] = number.try_emplace(cls[size_t(b)], uint8_t(number.size()));
      g.byte_class[size_t(b)] = it->second;
      if (added) g.class_byte.push_back(uint8_t(b));
    }
  }

  const Ast& ast_;
  std::vector<std::vector<std::vector<int32_t>>> rules_;  // [rule][alt][element]
  std::vector<ByteSet> sets_;
  std::map<std::array<uint64_t, 4>, int32_t> set_ids_;
  std::map<std::string, std::vector<int32_t>> lowered_;  // character sets already lowered
};

}  // namespace

std::shared_ptr<const Grammar> lower(const Ast& ast) { return Lowering(ast).run(); }

}  // namespace kvrt::grammar::detail

namespace kvrt::grammar {

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const Limits& limits) {
  detail::Ast ast = detail::parse_ast(text, limits);
  detail::check_ast(ast);
  return detail::lower(ast);
}

}  // namespace kvrt::grammar
