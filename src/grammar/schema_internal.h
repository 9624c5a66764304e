// Internal to grammar/: the JSON Schema converter, split by the kind of value it writes
// (schema_convert.cc: dispatch, $ref, allOf, anyOf/oneOf, enum/const; schema_object.cc: objects
// and arrays; schema_string.cc: strings, patterns and formats; schema_integer.cc: integer ranges).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/utf8_ranges.h"

namespace kvrt::grammar::detail {

// A GBNF expression that matches nothing (its rule is removed when the grammar is compiled).
inline constexpr const char* kNever = "never";

// A JSON pointer segment: '~' as ~0, '/' as ~1.
std::string pointer_segment(std::string_view name);

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, const SchemaLimits& limits);
  std::string run();

  // An expression for one value that `schema` (at JSON pointer `path`) accepts, with the
  // whitespace after it.
  std::string value(const Json& schema, const std::string& path);

  // Rules. rule() reuses a rule of the same body; define() names one chosen in advance.
  std::string rule(const std::string& hint, const std::string& body);
  std::string reserve(const std::string& hint);
  void define(const std::string& name, const std::string& body);
  // Shared rules: "space", "value", "object", "array", "string", "number", "integer",
  // "boolean", "null", "char" (any JSON string character, escapes allowed).
  std::string primitive(const std::string& name);

  [[noreturn]] void fail(const std::string& path, const std::string& keyword,
                         const std::string& why) const;
  const SchemaLimits& limits() const { return limits_; }

  // schema_object.cc
  std::string object(const Json& schema, const std::string& path);
  std::string array(const Json& schema, const std::string& path);
  // schema_string.cc
  std::string string(const Json& schema, const std::string& path);
  // One character of a string in its canonical JSON form, whose code point is in `ranges`.
  std::string canonical_chars(const std::vector<CodeRange>& ranges);
  // A quoted string whose value is none of `names`, in canonical form.
  std::string string_except(const std::vector<std::string>& names);
  // Alternatives of fixed texts, sharing their common prefixes (rules per trie node).
  std::string literal_set(const std::vector<std::string>& texts);
  std::string regex(const std::string& pattern, const std::string& path);
  // schema_integer.cc: integers from minimum to maximum (numbers; either may be missing).
  std::string integer(const Json* minimum, const Json* maximum, const std::string& path);

  // Entering an object or array ends a chain of $ref that did not read anything.
  std::vector<std::string> take_ref_chain() { return std::move(ref_chain_); }
  void restore_ref_chain(std::vector<std::string> chain) { ref_chain_ = std::move(chain); }

 private:
  std::string convert(const Json& schema, const std::string& path);
  std::string ref(const Json& schema, const std::string& path);
  const Json& resolve(const std::string& ref, const std::string& path) const;
  Json merge_all_of(const Json& schema, const std::string& path, int depth);
  void merge_into(Json& into, const Json& branch, const std::string& path, int depth);
  std::string any_of(const Json& schema, const std::string& path, const std::string& keyword);
  std::string enum_or_const(const Json& schema, const std::string& path);
  std::string typed(const Json& schema, const std::string& path);
  void check_keywords(const Json& schema, const std::string& path) const;

  const Json& root_;
  SchemaLimits limits_;
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body; in order of definition
  std::map<std::string, std::string> by_body_;
  std::set<std::string> names_;
  std::map<std::string, int> suffix_;                        // per name hint, the last suffix given
  std::map<std::string, std::string> value_memo_;            // canonical schema text -> expression
  std::map<std::vector<uint64_t>, std::string> chars_memo_;  // canonical_chars
  std::map<std::vector<std::string>, std::string> except_memo_;  // string_except
  std::map<std::string, std::string> ref_rules_;                 // JSON pointer -> rule
  std::vector<std::string> ref_chain_;  // $refs followed since the last object or array
  size_t bytes_ = 0;
  size_t visits_ = 0;
};

// The schema's types: "null", "boolean", "object", "array", "string", "number", "integer".
std::set<std::string> schema_types(const Json& schema, const std::string& path,
                                   const SchemaConverter& c);
bool json_has_type(const Json& value, const std::string& type);

}  // namespace kvrt::grammar::detail
