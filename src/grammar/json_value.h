// A small JSON document model for JSON Schema conversion: strict RFC 8259 parsing with limits on
// size and nesting (a schema comes from a request body), and one canonical compact serialization,
// the form the converted grammars write fixed values in.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvrt::grammar {

struct JsonLimits {
  size_t max_bytes = size_t(1) << 20;
  int max_depth = 64;  // arrays and objects inside each other
};

struct JsonMember;

struct Json {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;                 // a number's lexeme; a string's UTF-8 value
  std::vector<Json> items;          // array
  std::vector<JsonMember> members;  // object, in document order

  bool is_object() const { return type == Type::kObject; }
  bool is_array() const { return type == Type::kArray; }
  bool is_string() const { return type == Type::kString; }
  bool is_number() const { return type == Type::kNumber; }
  bool is_bool() const { return type == Type::kBool; }
  // The last member named `key` (as most parsers keep duplicates), or nullptr.
  const Json* find(std::string_view key) const;
  // A number with no fractional part (1, 1.0, 1e2), within the range doubles hold exactly.
  bool is_integer() const;
  double number() const;
};

struct JsonMember {
  std::string first;  // the name
  Json second;        // the value
};

// JSON equality: numbers by value, objects regardless of member order.
bool json_equal(const Json& a, const Json& b);

// Throws kvrt::Error (kInput) naming `what` and the byte offset.
Json parse_json(std::string_view text, const JsonLimits& limits, std::string_view what);

// Compact text with no spaces. Strings escape only '"', '\\' and the control characters (as
// \b \f \n \r \t or \u00xx); numbers are written in their shortest form, integers without a
// fraction (1.0 becomes 1, as JavaScript's JSON.stringify writes it).
std::string to_json(const Json& value);
void append_json_string(std::string_view utf8, std::string& out);
std::string canonical_number(const Json& number);

}  // namespace kvrt::grammar
