// Strings of a JSON schema: lengths, patterns (a subset of ECMAScript regular expressions),
// formats, and the fixed texts of enum, const and property names. Characters in constrained
// strings are written in canonical JSON form (escaped only where JSON requires it: '"', '\\'
// and control characters, as \b \f \n \r \t or \u00xx), so that one character is one unit of
// the grammar and a pattern or length applies to the value, not to the escapes spelling it.
#include <algorithm>
#include <cstdio>
#include <map>

#include "grammar/schema_internal.h"

namespace kvrt::grammar::detail {
namespace {

// A code point as GBNF writes it inside a class or literal.
std::string gbnf_char(uint32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9'))
    return std::string(1, char(cp));
  char buf[16];
  if (cp < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02X", cp);
  } else if (cp < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  }
  return buf;
}

std::string gbnf_class(const std::vector<CodeRange>& ranges) {
  std::string out = "[";
  for (CodeRange r : ranges) {
    out += gbnf_char(r.lo);
    if (r.hi != r.lo) out += (r.hi > r.lo + 1 ? "-" : "") + gbnf_char(r.hi);
  }
  return out + "]";
}

std::vector<uint32_t> code_points(std::string_view utf8) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < utf8.size();) {
    const uint8_t c = uint8_t(utf8[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n && i + size_t(k) < utf8.size(); ++k)
      cp = (cp << 6) | (uint8_t(utf8[i + size_t(k)]) & 0x3F);
    out.push_back(cp);
    i += size_t(n);
  }
  return out;
}

// A GBNF literal of code points.
std::string gbnf_literal(const std::vector<uint32_t>& cps) {
  std::string out = "\"";
  for (uint32_t cp : cps) {
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += char(cp);
    } else if (cp < 0x20 || cp == 0x7F) {
      out += gbnf_char(cp);
    } else {
      append_utf8(cp, out);
    }
  }
  return out + "\"";
}

// The canonical JSON text of one code point, as a literal.
std::string canonical_literal(uint32_t cp) {
  std::string text;
  std::string utf8;
  append_utf8(cp, utf8);
  append_json_string(utf8, text);
  return gbnf_literal(code_points(text.substr(1, text.size() - 2)));
}

bool in_ranges(const std::vector<CodeRange>& ranges, uint32_t cp) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](CodeRange r) { return r.lo <= cp && cp <= r.hi; });
}

// A trie of code point sequences; children have larger indices than their parent.
struct Trie {
  struct Node {
    std::map<uint32_t, int32_t> kids;
    bool end = false;
  };
  std::vector<Node> nodes{1};
  void add(const std::vector<uint32_t>& cps) {
    int32_t at = 0;
    for (uint32_t cp : cps) {
      auto it = nodes[size_t(at)].kids.find(cp);
      if (it == nodes[size_t(at)].kids.end()) {
        nodes.emplace_back();
        it = nodes[size_t(at)].kids.emplace(cp, int32_t(nodes.size()) - 1).first;
      }
      at = it->second;
    }
    nodes[size_t(at)].end = true;
  }
};

const std::vector<CodeRange> kAll = {{0, kMaxCodePoint}};

}  // namespace

std::string SchemaConverter::canonical_chars(const std::vector<CodeRange>& ranges_in) {
  const std::vector<CodeRange> ranges = normalize_ranges(ranges_in);
  std::vector<uint64_t> key;
  for (CodeRange r : ranges) key.push_back(uint64_t(r.lo) << 32 | r.hi);
  auto memo = chars_memo_.find(key);
  if (memo != chars_memo_.end()) return memo->second;
  // Code points written as themselves: all but '"', '\\' and the controls.
  const std::vector<CodeRange> plain =
      normalize_ranges({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodePoint}});
  std::vector<CodeRange> raw;
  for (CodeRange r : ranges)
    for (CodeRange p : plain)
      if (std::max(r.lo, p.lo) <= std::min(r.hi, p.hi))
        raw.push_back({std::max(r.lo, p.lo), std::min(r.hi, p.hi)});
  std::vector<std::string> alts;
  if (!raw.empty()) alts.push_back(gbnf_class(raw));
  for (uint32_t cp = 0; cp < 0x20; ++cp)
    if (in_ranges(ranges, cp)) alts.push_back(canonical_literal(cp));
  for (uint32_t cp : {uint32_t('"'), uint32_t('\\')})
    if (in_ranges(ranges, cp)) alts.push_back(canonical_literal(cp));
  std::string body;
  for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
  const std::string expr = alts.empty() ? kNever : alts.size() == 1 ? body : rule("char", body);
  chars_memo_.emplace(std::move(key), expr);
  return expr;
}

std::string SchemaConverter::string_except(const std::vector<std::string>& names) {
  auto memo = except_memo_.find(names);
  if (memo != except_memo_.end()) return memo->second;
  const std::string quote = "\"\\\"\"";
  const std::string rest = rule("rest", canonical_chars(kAll) + "* " + quote);
  Trie trie;
  for (const std::string& n : names) trie.add(code_points(n));
  std::vector<std::string> node_rule(trie.nodes.size());
  for (size_t i = trie.nodes.size(); i-- > 0;) {
    const Trie::Node& node = trie.nodes[i];
    std::vector<std::string> alts;
    if (!node.end) alts.push_back(quote);
    std::vector<CodeRange> taken;
    for (const auto& [cp, kid] : node.kids) {
      alts.push_back(canonical_literal(cp) + " " + node_rule[size_t(kid)]);
      taken.push_back({cp, cp});
    }
    const std::string other = canonical_chars(complement_ranges(normalize_ranges(taken)));
    if (other != kNever) alts.push_back(other + " " + rest);
    std::string body;
    for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
    node_rule[i] = rule("name", body);
  }
  return except_memo_.emplace(names, quote + " " + node_rule[0]).first->second;
}

std::string SchemaConverter::literal_set(const std::vector<std::string>& texts) {
  Trie trie;
  for (const std::string& t : texts) trie.add(code_points(t));
  // Rules only where the trie branches or a text ends; runs of single children are literals.
  std::vector<std::string> expr(trie.nodes.size());  // what may follow each node
  for (size_t i = trie.nodes.size(); i-- > 0;) {
    const Trie::Node& node = trie.nodes[i];
    std::vector<std::string> alts;
    if (node.end) alts.push_back("\"\"");
    for (const auto& [cp, kid] : node.kids) {
      std::vector<uint32_t> run = {cp};
      int32_t at = kid;
      while (!trie.nodes[size_t(at)].end && trie.nodes[size_t(at)].kids.size() == 1) {
        run.push_back(trie.nodes[size_t(at)].kids.begin()->first);
        at = trie.nodes[size_t(at)].kids.begin()->second;
      }
      const std::string& after = expr[size_t(at)];
      alts.push_back(gbnf_literal(run) + (after == "\"\"" ? "" : " " + after));
    }
    if (alts.size() <= 1) {
      expr[i] = alts.empty() ? std::string(kNever) : alts[0];
      continue;
    }
    std::string body;
    for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
    expr[i] = rule("lit", body);
  }
  return expr[0];
}

std::string SchemaConverter::string(const Json& schema, const std::string& path) {
  const Json* pattern = schema.find("pattern");
  const Json* format = schema.find("format");
  const Json* min_len = schema.find("minLength");
  const Json* max_len = schema.find("maxLength");
  const std::string quote = "\"\\\"\"";
  const std::string space = primitive("space");
  if (format) {
    if (!format->is_string()) fail(path, "format", "must be a string");
    if (pattern || min_len || max_len)
      fail(path, "format", "format beside pattern, minLength or maxLength is not supported");
    static const std::map<std::string, std::string> kFormats = {
        {"date",
         R"([0-9]{4} "-" (("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("04" | "06" | "09" | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8])) | ([0-9]{2} ("0" [48] | [2468] [048] | [13579] [26]) | ([02468] [048] | [13579] [26]) "00") "-02-29")"},
        {"time",
         R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" ([0-5] [0-9] | "60") ("." [0-9]{1,9})? ([Zz] | [-+] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
        {"uuid",
         R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
    };
    if (format->text == "date-time") {
      const std::string date = rule("date", kFormats.at("date"));
      const std::string time = rule("time", kFormats.at("time"));
      return quote + " " + date + " [Tt] " + time + " " + quote + " " + space;
    }
    auto f = kFormats.find(format->text);
    if (f == kFormats.end())
      fail(path, "format",
           "format '" + format->text + "' is not supported (only date, time, date-time, uuid)");
    return quote + " " + rule(format->text, f->second) + " " + quote + " " + space;
  }
  if (pattern) {
    if (!pattern->is_string()) fail(path, "pattern", "must be a string");
    if (min_len || max_len)
      fail(path, "pattern", "pattern beside minLength or maxLength is not supported");
    return quote + " " + regex(pattern->text, path) + " " + quote + " " + space;
  }
  if (!min_len && !max_len) return primitive("string");
  auto count = [&](const Json* v, const char* key) -> std::string {
    if (v == nullptr) return "";
    if (!v->is_integer() || v->number() < 0) fail(path, key, "must be a non-negative integer");
    if (v->number() > double(limits_.max_count))
      fail(path, key, "values above " + std::to_string(limits_.max_count) + " are not supported");
    return std::to_string(size_t(v->number()));
  };
  const std::string lo = min_len ? count(min_len, "minLength") : "0";
  const std::string hi = count(max_len, "maxLength");
  if (max_len && min_len && max_len->number() < min_len->number()) return kNever;
  return quote + " " + canonical_chars(kAll) + "{" + lo + "," + hi + "} " + quote + " " + space;
}

}  // namespace kvrt::grammar::detail
