// JSON Schema to GBNF (docs/grammar.md): the grammar of the JSON texts a schema accepts, for the
// keywords type, properties, required, additionalProperties, items, prefixItems, enum, const,
// anyOf, oneOf, allOf, $ref with $defs (or definitions), minItems, maxItems, minLength,
// maxLength, pattern, format (date, time, date-time, uuid) and minimum/maximum on integers.
// Anything else is refused with a SchemaError that names the keyword and where it is; never a
// grammar that silently allows more than the schema.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.h"
#include "grammar/json_value.h"

namespace kvrt::grammar {

struct SchemaLimits {
  JsonLimits json;                             // the schema's text: size and nesting depth
  size_t max_grammar_bytes = size_t(4) << 20;  // the GBNF text the schema becomes
  size_t max_count = 100000;                   // minItems, maxItems, minLength, maxLength
  size_t max_pattern_bytes = 4096;
  // Schemas visited while converting: anyOf and allOf apply the keywords beside them to every
  // branch, which nesting can multiply.
  size_t max_visits = 100000;
  // Objects with at most this many named properties take them in any order (the grammar has a
  // rule per subset of them); more are taken in the schema's order.
  int max_any_order = 8;
};

// A schema the converter refuses. `path` is a JSON pointer into the schema ("" for its root,
// "/properties/a/items"), `keyword` the keyword at fault ("" when it is the schema's shape).
class SchemaError : public Error {
 public:
  SchemaError(std::string path, std::string keyword, const std::string& why);
  const std::string& path() const { return path_; }
  const std::string& keyword() const { return keyword_; }

 private:
  std::string path_, keyword_;
};

// The GBNF grammar (start rule `root`) of the JSON values `schema` accepts, written compactly or
// with whitespace between tokens (a space, or a newline and up to 20 spaces or tabs). Throws
// SchemaError, or kvrt::Error for text that is not JSON.
std::string schema_to_gbnf(std::string_view schema, const SchemaLimits& limits = {});
std::string schema_to_gbnf(const Json& schema, const SchemaLimits& limits = {});

// Any JSON object: response_format {"type": "json_object"}.
std::string json_object_gbnf();

}  // namespace kvrt::grammar
