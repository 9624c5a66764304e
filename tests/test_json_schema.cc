// JSON Schema to grammar (grammar/json_schema.h): each supported keyword accepts and refuses
// what it should, and unsupported schemas are refused with the keyword and its path.
#include <doctest/doctest.h>

#include <string>

#include "common/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"

namespace kvrt::grammar {
namespace {

std::shared_ptr<const Vocabulary> one_token() {
  return std::make_shared<Vocabulary>(std::vector<std::string>{"x"}, std::vector<int32_t>{});
}

struct Schema {
  explicit Schema(const std::string& schema) : gbnf(schema_to_gbnf(schema)), g(parse_gbnf(gbnf)) {}
  bool accepts(std::string_view text) const {
    Matcher m(g, one_token());
    return m.accept_text(text) && m.can_end();
  }
  std::string gbnf;
  std::shared_ptr<const Grammar> g;
};

std::string refusal(const std::string& schema) {
  try {
    parse_gbnf(schema_to_gbnf(schema));
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST_CASE("schema: type") {
  const Schema s(R"({"type": "integer"})");
  CHECK(s.accepts("12"));
  CHECK(s.accepts("-3"));
  CHECK_FALSE(s.accepts("1.5"));
  CHECK_FALSE(s.accepts("\"1\""));
  CHECK_FALSE(s.accepts("012"));
  CHECK(s.accepts("123456789012345678901234567890"));  // any number of digits, as JSON
  const Schema several(R"({"type": ["string", "null"]})");
  CHECK(several.accepts("null"));
  CHECK(several.accepts("\"a\\u00e9\\n\""));
  CHECK_FALSE(several.accepts("true"));
  const Schema number(R"({"type": "number"})");
  CHECK(number.accepts("-0.5e+10"));
  CHECK(number.accepts("3"));
  CHECK_FALSE(number.accepts(".5"));
  CHECK_FALSE(number.accepts("1."));
  const Schema any("{}");
  CHECK(any.accepts(R"({"a": [1, {"b": null}], "c": "d"})"));
  CHECK(any.accepts("true"));
  CHECK_FALSE(any.accepts("{"));
  CHECK(Schema("true").accepts("[]"));
}

TEST_CASE("schema: properties, required, additionalProperties") {
  const Schema s(R"({"type": "object", "properties": {"a": {"type": "integer"},
                    "b": {"type": "string"}}, "required": ["a"], "additionalProperties": false})");
  CHECK(s.accepts(R"({"a":1})"));
  CHECK(s.accepts(R"({"a":1,"b":"x"})"));
  CHECK(s.accepts(R"({"b":"x","a":1})"));  // any order
  CHECK(s.accepts("{\n  \"a\": 1,\n  \"b\": \"x\"\n}"));
  CHECK_FALSE(s.accepts(R"({"b":"x"})"));      // a is required
  CHECK_FALSE(s.accepts(R"({"a":1,"a":2})"));  // each name once
  CHECK_FALSE(s.accepts(R"({"a":1,"c":2})"));  // no other names
  CHECK_FALSE(s.accepts(R"({"a":"1"})"));
  const Schema open(R"({"properties": {"a": {"type": "integer"}},
                       "additionalProperties": {"type": "boolean"}})");
  CHECK(open.accepts(R"({"x":true,"a":1,"y":false})"));
  CHECK_FALSE(open.accepts(R"({"x":1})"));
  CHECK_FALSE(open.accepts(R"({"a":true})"));       // a named property keeps its own schema
  CHECK_FALSE(open.accepts(R"({"\u0061":true})"));  // nor can a needless escape pass for "a"
  CHECK(open.accepts(R"({"ab":true,"":false})"));
  CHECK(open.accepts("7"));  // without "type", other types are unconstrained
  // Absent additionalProperties allows any other member, as the specification says.
  CHECK(Schema(R"({"type": "object", "properties": {"a": {}}})").accepts(R"({"z":[1]})"));
  // More names than max_any_order: the schema's order.
  std::string many = R"({"type":"object","additionalProperties":false,"properties":{)";
  for (int i = 0; i < 10; ++i)
    many += (i ? "," : "") + std::string("\"p") + char('0' + i) + "\":{}";
  many += R"(},"required":["p1","p5"]})";
  const Schema ordered(many);
  CHECK(ordered.accepts(R"({"p1":1,"p5":2})"));
  CHECK(ordered.accepts(R"({"p0":0,"p1":1,"p3":3,"p5":5,"p9":9})"));
  CHECK_FALSE(ordered.accepts(R"({"p5":2,"p1":1})"));
  CHECK_FALSE(ordered.accepts(R"({"p1":1})"));
}

TEST_CASE("schema: items, prefixItems, minItems, maxItems") {
  const Schema s(
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  CHECK(s.accepts("[1]"));
  CHECK(s.accepts("[1, 2, 3]"));
  CHECK_FALSE(s.accepts("[]"));
  CHECK_FALSE(s.accepts("[1,2,3,4]"));
  CHECK_FALSE(s.accepts("[\"a\"]"));
  const Schema tuple(R"({"prefixItems": [{"type": "string"}, {"type": "boolean"}],
                        "items": {"type": "null"}, "minItems": 1})");
  CHECK(tuple.accepts(R"(["a"])"));
  CHECK(tuple.accepts(R"(["a",true,null,null])"));
  CHECK_FALSE(tuple.accepts("[]"));
  CHECK_FALSE(tuple.accepts(R"([true])"));
  CHECK_FALSE(tuple.accepts(R"(["a",true,1])"));
  const Schema closed(R"({"prefixItems": [{}], "items": false})");
  CHECK(closed.accepts("[1]"));
  CHECK(closed.accepts("[]"));
  CHECK_FALSE(closed.accepts("[1,2]"));
}

TEST_CASE("schema: enum and const") {
  const Schema e(R"({"enum": ["red", "green", 3, null, {"a": [1, 2]}]})");
  CHECK(e.accepts("\"red\""));
  CHECK(e.accepts("3"));
  CHECK(e.accepts("null"));
  CHECK(e.accepts(R"({"a":[1,2]})"));
  CHECK(e.accepts("{ \"a\": [1, 2] }"));
  CHECK_FALSE(e.accepts("\"re\""));
  CHECK_FALSE(e.accepts("\"blue\""));
  CHECK_FALSE(e.accepts(R"({"a":[1]})"));
  const Schema typed(R"({"type": "string", "enum": ["a", 1]})");
  CHECK(typed.accepts("\"a\""));
  CHECK_FALSE(typed.accepts("1"));
  const Schema c(R"({"const": "line\nbreak \"q\""})");
  CHECK(c.accepts(R"("line\nbreak \"q\"")"));
  CHECK_FALSE(c.accepts(R"("line\u000abreak \"q\"")"));  // fixed texts are canonical
  CHECK(Schema(R"({"const": 1.0})").accepts("1"));
}

TEST_CASE("schema: anyOf, oneOf, allOf") {
  const Schema any(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]})");
  CHECK(any.accepts("5"));
  CHECK(any.accepts("\"ab\""));
  CHECK_FALSE(any.accepts("\"abc\""));
  const Schema one(R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"},
     "x": {"type": "integer"}}, "required": ["kind"]}, {"type": "object", "properties":
     {"kind": {"const": "b"}}, "required": ["kind"]}]})");
  CHECK(one.accepts(R"({"kind":"a","x":1})"));
  CHECK(one.accepts(R"({"kind":"b"})"));
  CHECK_FALSE(one.accepts(R"({"kind":"c"})"));
  const Schema all(R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
     {"properties": {"b": {"type": "string"}}, "required": ["b"]}], "type": "object"})");
  CHECK(all.accepts(R"({"a":1,"b":"x"})"));
  CHECK(all.accepts(R"({"b":"x","a":1})"));
  CHECK_FALSE(all.accepts(R"({"a":1})"));
  // Sibling keywords apply to every branch.
  const Schema sib(R"({"type": "object", "required": ["a"], "anyOf": [{"required": ["b"]},
     {"required": ["c"]}]})");
  CHECK(sib.accepts(R"({"a":1,"c":2})"));
  CHECK_FALSE(sib.accepts(R"({"b":1,"c":2})"));
}

TEST_CASE("schema: $ref and $defs, recursive schemas") {
  const Schema tree(
      R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
     "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"],
     "additionalProperties": false}}, "$ref": "#/$defs/node"})");
  CHECK(tree.accepts(R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  CHECK_FALSE(tree.accepts(R"({"v":1,"kids":[{"w":2}]})"));
  CHECK(
      Schema(
          R"({"definitions": {"a~b": {"type": "null"}}, "items": {"$ref": "#/definitions/a~0b"}})")
          .accepts("[null]"));
}

TEST_CASE("schema: minLength, maxLength, pattern, format") {
  const Schema len(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  CHECK(len.accepts("\"ab\""));
  CHECK(len.accepts("\"é\\n日\""));  // characters, not bytes or escapes
  CHECK_FALSE(len.accepts("\"a\""));
  CHECK_FALSE(len.accepts("\"abcd\""));
  const Schema pat(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d+(\\.\\d)?$"})");
  CHECK(pat.accepts("\"AB-12\""));
  CHECK(pat.accepts("\"XY-1.5\""));
  CHECK_FALSE(pat.accepts("\"ab-12\""));
  CHECK_FALSE(pat.accepts("\"AB-12 \""));
  const Schema search(R"({"pattern": "a|b\""})");  // unanchored: anywhere in the string
  CHECK(search.accepts("\"xxax\""));
  CHECK(search.accepts("\"xb\\\"x\""));
  CHECK_FALSE(search.accepts("\"xb\""));
  CHECK(search.accepts("5"));  // pattern constrains strings only
  const Schema date(R"({"type": "string", "format": "date"})");
  CHECK(date.accepts("\"2024-02-29\""));
  CHECK(date.accepts("\"2000-02-29\""));
  CHECK_FALSE(date.accepts("\"1900-02-29\""));
  CHECK_FALSE(date.accepts("\"2023-02-29\""));
  CHECK_FALSE(date.accepts("\"2023-04-31\""));
  CHECK_FALSE(date.accepts("\"2023-13-01\""));
  const Schema dt(R"({"type": "string", "format": "date-time"})");
  CHECK(dt.accepts("\"2023-01-31T23:59:60.5+05:30\""));
  CHECK_FALSE(dt.accepts("\"2023-01-31T24:00:00Z\""));
  const Schema uuid(R"({"type": "string", "format": "uuid"})");
  CHECK(uuid.accepts("\"123e4567-e89b-12d3-a456-426614174000\""));
  CHECK_FALSE(uuid.accepts("\"123e4567e89b12d3a456426614174000\""));
  CHECK(Schema(R"({"format": "time"})").accepts("\"08:30:06Z\""));
}

TEST_CASE("schema: integer minimum and maximum, digit by digit") {
  const Schema s(R"({"type": "integer", "minimum": -15, "maximum": 1234})");
  for (int v = -40; v <= 1300; ++v) {
    INFO("v = " << v);
    CHECK(s.accepts(std::to_string(v)) == (v >= -15 && v <= 1234));
  }
  CHECK_FALSE(s.accepts("-0"));
  CHECK_FALSE(s.accepts("007"));
  const Schema lo(R"({"type": "integer", "minimum": 99.5})");
  CHECK_FALSE(lo.accepts("99"));
  CHECK(lo.accepts("100"));
  CHECK(lo.accepts("99999999999999999999999"));
  CHECK_FALSE(lo.accepts("-99999999999999999999999"));
  const Schema big(
      R"({"type": "integer", "minimum": -1e20, "maximum": 123456789012345678901234567890})");
  CHECK(big.accepts("-100000000000000000000"));
  CHECK_FALSE(big.accepts("-100000000000000000001"));
  CHECK(big.accepts("123456789012345678901234567890"));
  CHECK_FALSE(big.accepts("123456789012345678901234567891"));
  const Schema hi(R"({"type": "integer", "maximum": -100})");
  CHECK(hi.accepts("-100"));
  CHECK(hi.accepts("-5000"));
  CHECK_FALSE(hi.accepts("-99"));
  CHECK_FALSE(hi.accepts("0"));
}

TEST_CASE("schema: refusals name the keyword and where it is") {
  CHECK(refusal(R"({"type": "array", "uniqueItems": true})") ==
        "JSON schema: 'uniqueItems' at the root: this keyword is not supported");
  CHECK(refusal(R"({"properties": {"a/b": {"not": {}}}})") ==
        "JSON schema: 'not' at '/properties/a~1b': this keyword is not supported");
  CHECK(
      refusal(
          R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})") ==
      "JSON schema: '$ref' at '/$defs/b': '#/$defs/a' refers back to itself before any "
      "object or array");
  CHECK(refusal(R"({"$ref": "http://example.com/s.json"})") ==
        "JSON schema: '$ref' at the root: 'http://example.com/s.json': only references within "
        "the schema (#/...) are supported");
  CHECK(refusal(R"({"items": {"$ref": "#/$defs/none"}})") ==
        "JSON schema: '$ref' at '/items': '#/$defs/none' does not resolve in this schema");
  CHECK(refusal(R"({"type": "number", "minimum": 1})") ==
        "JSON schema: 'minimum' at the root: minimum and maximum are supported on integers only "
        "(type \"integer\")");
  CHECK(refusal(R"({"oneOf": [{"type": "integer"}, {"minimum": 2, "type": "integer"}]})")
            .starts_with("JSON schema: 'oneOf' at the root: branches 0 and 1 may both match"));
  CHECK(refusal(R"({"type": "string", "format": "email"})") ==
        "JSON schema: 'format' at the root: format 'email' is not supported (only date, time, "
        "date-time, uuid)");
  CHECK(refusal(R"({"type": "string", "pattern": "(a)\\1"})") ==
        "JSON schema: 'pattern' at the root: backreferences are not supported (at character 5)");
  CHECK(refusal(R"j({"type": "string", "pattern": "a(?=b)"})j") ==
        "JSON schema: 'pattern' at the root: lookaround and named groups are not supported (at "
        "character 3)");
  CHECK(refusal(R"({"type": "string", "pattern": "(a*)*"})") ==
        "JSON schema: 'pattern' at the root: a repetition of something that can match empty "
        "text (at character 5)");
  CHECK(refusal(R"({"type": "string", "maxLength": 1000000})") ==
        "JSON schema: 'maxLength' at the root: values above 100000 are not supported");
  CHECK(refusal(R"({"type": "bytes"})") ==
        "JSON schema: 'type' at the root: 'bytes' is not a JSON type");
  CHECK(refusal(R"({"$ref": "#/$defs/a", "type": "object", "$defs": {"a": {}}})") ==
        "JSON schema: '$ref' at the root: $ref beside 'type' is not supported (drafts disagree "
        "on what it means)");
  CHECK(refusal("{\"type\": ") == "JSON schema: invalid JSON at byte 9: expected a value");
  CHECK(refusal("false") == "grammar: rule 'root' matches no text");
}

TEST_CASE("schema: deep nesting and huge enums are refused or handled in bounded time") {
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += R"({"items":)";
  deep += "{}";
  for (int i = 0; i < 10000; ++i) deep += "}";
  CHECK(refusal(deep) == "JSON schema: invalid JSON at byte 576: nested deeper than 64 levels");
  std::string big = R"({"enum": [)";
  for (int i = 0; big.size() < (size_t(1) << 20); ++i)
    big += (i ? ",\"" : "\"") + std::to_string(i) + "-value\"";
  big += "]}";
  CHECK(refusal(big) == "JSON schema: invalid JSON at byte 0: it has " +
                            std::to_string(big.size()) + " bytes, more than the limit of 1048576");
  // anyOf beside properties at every level copies the levels below into each branch: each
  // distinct sub-schema is converted once, so this stays small.
  std::string branching;
  for (int i = 0; i < 25; ++i)
    branching += R"({"anyOf": [{"type": "object"}, {"required": ["a"]}], "properties": {"a": )";
  branching += "{}";
  for (int i = 0; i < 25; ++i) branching += "}}";
  CHECK(schema_to_gbnf(branching).size() < 100000);
  SchemaLimits few;
  few.max_visits = 10;
  CHECK_THROWS_WITH_AS(schema_to_gbnf(branching, few),
                       "JSON schema: at '/anyOf/0/properties/a/anyOf/0/properties/a/anyOf/0/"
                       "properties/a/anyOf/0': converting the schema takes more than 10 steps "
                       "(anyOf or allOf nested in each other repeat their "
                       "siblings)",
                       SchemaError);
  // Just under the limit: converted, and the enum shares prefixes so the matcher stays small.
  std::string large = R"({"enum": [)";
  for (int i = 0; i < 60000; ++i) large += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  large += "]}";
  const Schema s(large);
  CHECK(s.accepts("\"59999\""));
  CHECK_FALSE(s.accepts("\"60000\""));
}

TEST_CASE("schema: json_object is any object") {
  const auto g = parse_gbnf(json_object_gbnf());
  Matcher m(g, one_token());
  CHECK(m.accept_text(R"({"a": [1, 2.5e3, "x", {}], "b": {"c": null}})"));
  CHECK(m.can_end());
  Matcher n(g, one_token());
  CHECK_FALSE(n.accept_text("[1]"));
}

}  // namespace
}  // namespace kvrt::grammar
