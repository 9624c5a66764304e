// JSON Schema to GBNF: dispatch by keyword, $ref, allOf (merged), anyOf/oneOf, enum/const.
#include <algorithm>
#include <cmath>

#include "grammar/grammar.h"
#include "grammar/schema_internal.h"

namespace kvrt::grammar {

SchemaError::SchemaError(std::string path, std::string keyword, const std::string& why)
    : Error("JSON schema: " + (keyword.empty() ? std::string() : "'" + keyword + "' ") + "at " +
            (path.empty() ? std::string("the root") : "'" + path + "'") + ": " + why),
      path_(std::move(path)),
      keyword_(std::move(keyword)) {}

namespace detail {
namespace {

const std::set<std::string> kAnnotations = {"title",     "description", "default",    "examples",
                                            "$comment",  "$schema",     "deprecated", "readOnly",
                                            "writeOnly", "$defs",       "definitions"};
const std::set<std::string> kKeywords = {
    "type",     "properties",  "required",  "additionalProperties",
    "items",    "prefixItems", "enum",      "const",
    "anyOf",    "oneOf",       "allOf",     "$ref",
    "minItems", "maxItems",    "minLength", "maxLength",
    "pattern",  "format",      "minimum",   "maximum"};
const char* const kTypeNames[] = {"null",   "boolean", "object", "array",
                                  "string", "number",  "integer"};

// The rules every schema may use. Whitespace is bounded (at most one newline and 20 spaces or
// tabs, as llama.cpp's converter writes it) so that a model cannot pad forever; numbers have as
// many digits as JSON allows.
const std::map<std::string, std::string> kPrimitives = {
    {"space", R"(| " " | "\n" [ \t]{0,20})"},
    {"char", R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))"},
    {"string", R"("\"" char* "\"" space)"},
    {"int-digits", R"("0" | [1-9] [0-9]*)"},
    {"number", R"("-"? int-digits ("." [0-9]+)? ([eE] [-+]? [0-9]+)? space)"},
    {"integer", R"("-"? int-digits space)"},
    {"boolean", R"(("true" | "false") space)"},
    {"null", R"("null" space)"},
    {"value", R"(object | array | string | number | boolean | null)"},
    {"object",
     R"("{" space (string ":" space value ("," space string ":" space value)*)? "}" space)"},
    {"array", R"("[" space (value ("," space value)*)? "]" space)"},
    {"never", "[]"},
};

std::string sanitize(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 32) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "r" : out;
}

std::string join_alternatives(const std::vector<std::string>& alts) {
  std::vector<std::string> live;
  for (const std::string& a : alts)
    if (a != kNever && std::find(live.begin(), live.end(), a) == live.end()) live.push_back(a);
  if (live.empty()) return kNever;
  if (live.size() == 1) return live[0];
  std::string out = "(";
  for (size_t i = 0; i < live.size(); ++i) out += (i ? " | " : "") + live[i];
  return out + ")";
}

Json member_removed(const Json& schema, const std::set<std::string>& drop) {
  Json out;
  out.type = Json::Type::kObject;
  for (const auto& m : schema.members)
    if (!drop.count(m.first)) out.members.push_back(m);
  return out;
}

void set_member(Json& obj, const std::string& key, Json value) {
  for (auto& m : obj.members) {
    if (m.first == key) {
      m.second = std::move(value);
      return;
    }
  }
  obj.members.push_back({key, std::move(value)});
}

Json make_array(std::vector<Json> items) {
  Json a;
  a.type = Json::Type::kArray;
  a.items = std::move(items);
  return a;
}

Json make_string(const std::string& s) {
  Json j;
  j.type = Json::Type::kString;
  j.text = s;
  return j;
}

bool has_constraints(const Json& schema) {
  return std::any_of(schema.members.begin(), schema.members.end(),
                     [](const auto& m) { return !kAnnotations.count(m.first); });
}

}  // namespace

std::string pointer_segment(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

bool json_has_type(const Json& v, const std::string& type) {
  switch (v.type) {
    case Json::Type::kNull: return type == "null";
    case Json::Type::kBool: return type == "boolean";
    case Json::Type::kString: return type == "string";
    case Json::Type::kArray: return type == "array";
    case Json::Type::kObject: return type == "object";
    case Json::Type::kNumber: return type == "number" || (type == "integer" && v.is_integer());
  }
  return false;
}

std::set<std::string> schema_types(const Json& schema, const std::string& path,
                                   const SchemaConverter& c) {
  const Json* t = schema.find("type");
  if (t == nullptr) return {"null", "boolean", "object", "array", "string", "number"};
  std::vector<const Json*> names;
  if (t->is_string()) {
    names.push_back(t);
  } else if (t->is_array()) {
    for (const Json& n : t->items) names.push_back(&n);
  } else {
    c.fail(path, "type", "must be a type name or an array of them");
  }
  std::set<std::string> out;
  for (const Json* n : names) {
    if (!n->is_string() ||
        std::find(std::begin(kTypeNames), std::end(kTypeNames), n->text) == std::end(kTypeNames))
      c.fail(path, "type", "'" + (n->is_string() ? n->text : to_json(*n)) + "' is not a JSON type");
    out.insert(n->text);
  }
  if (out.count("number")) out.erase("integer");
  return out;
}

SchemaConverter::SchemaConverter(const Json& root, const SchemaLimits& limits)
    : root_(root), limits_(limits) {}

void SchemaConverter::fail(const std::string& path, const std::string& keyword,
                           const std::string& why) const {
  throw SchemaError(path, keyword, why);
}

std::string SchemaConverter::reserve(const std::string& hint) {
  const std::string base = sanitize(hint);
  std::string name = base;
  int& n = suffix_[base];  // the next suffix to try for this base
  while (names_.count(name) || kPrimitives.count(name) || name == "root")
    name = base + "-" + std::to_string(++n);
  names_.insert(name);
  return name;
}

void SchemaConverter::define(const std::string& name, const std::string& body) {
  bytes_ += name.size() + body.size() + 6;
  if (bytes_ > limits_.max_grammar_bytes)
    fail("", "",
         "the schema's grammar grows beyond " + std::to_string(limits_.max_grammar_bytes) +
             " bytes");
  rules_.emplace_back(name, body);
}

std::string SchemaConverter::rule(const std::string& hint, const std::string& body) {
  auto it = by_body_.find(body);
  if (it != by_body_.end()) return it->second;
  const std::string name = reserve(hint);
  define(name, body);
  by_body_.emplace(body, name);
  return name;
}

std::string SchemaConverter::primitive(const std::string& name) {
  if (!names_.count(name)) {
    names_.insert(name);
    define(name, kPrimitives.at(name));
    // What each refers to.
    static const std::map<std::string, std::vector<std::string>> kUses = {
        {"string", {"char", "space"}},
        {"number", {"int-digits", "space"}},
        {"integer", {"int-digits", "space"}},
        {"boolean", {"space"}},
        {"null", {"space"}},
        {"value", {"object", "array", "string", "number", "boolean", "null"}},
        {"object", {"space", "string", "value"}},
        {"array", {"space", "value"}},
    };
    auto uses = kUses.find(name);
    if (uses != kUses.end())
      for (const std::string& u : uses->second) primitive(u);
  }
  return name;
}

void SchemaConverter::check_keywords(const Json& schema, const std::string& path) const {
  for (const auto& [key, v] : schema.members) {
    if (kKeywords.count(key) || kAnnotations.count(key)) continue;
    fail(path, key, "this keyword is not supported");
  }
}

std::string SchemaConverter::run() {
  primitive(kNever);  // what a schema that allows nothing refers to
  const std::string expr = value(root_, "");
  std::string out = "root ::= " + expr + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

// The same schema text converts to the same expression (anyOf and allOf copy the keywords beside
// them into every branch), so each is converted once and long ones become a rule.
std::string SchemaConverter::value(const Json& schema, const std::string& path) {
  if (++visits_ > limits_.max_visits)
    fail(path, "",
         "converting the schema takes more than " + std::to_string(limits_.max_visits) +
             " steps (anyOf or allOf nested in each other repeat their siblings)");
  std::string key = to_json(schema);
  auto memo = value_memo_.find(key);
  if (memo != value_memo_.end()) return memo->second;
  std::string expr = convert(schema, path);
  if (expr.size() > 48) expr = rule("value", expr);
  return value_memo_.emplace(std::move(key), std::move(expr)).first->second;
}

std::string SchemaConverter::convert(const Json& schema, const std::string& path) {
  if (schema.is_bool()) return schema.boolean ? primitive("value") : primitive(kNever);
  if (!schema.is_object()) fail(path, "", "a schema must be an object or a boolean");
  check_keywords(schema, path);
  if (schema.find("$ref")) return ref(schema, path);
  if (schema.find("allOf")) return value(merge_all_of(schema, path, 0), path);
  if (schema.find("anyOf") && schema.find("oneOf"))
    fail(path, "oneOf", "anyOf and oneOf in one schema are not supported");
  if (schema.find("anyOf")) return any_of(schema, path, "anyOf");
  if (schema.find("oneOf")) return any_of(schema, path, "oneOf");
  if (schema.find("enum") || schema.find("const")) return enum_or_const(schema, path);
  return typed(schema, path);
}

const Json& SchemaConverter::resolve(const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#')
    fail(path, "$ref", "'" + ref + "': only references within the schema (#/...) are supported");
  const Json* at = &root_;
  size_t pos = 1;
  if (pos < ref.size() && ref[pos] != '/')
    fail(path, "$ref", "'" + ref + "': only JSON pointers (#/...) are supported");
  while (pos < ref.size()) {
    const size_t end = std::min(ref.find('/', pos + 1), ref.size());
    std::string seg;
    for (size_t i = pos + 1; i < end; ++i) {
      if (ref[i] == '~' && i + 1 < end && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
        seg += ref[++i] == '0' ? '~' : '/';
      } else if (ref[i] == '%' && i + 2 < end && std::isxdigit(uint8_t(ref[i + 1])) &&
                 std::isxdigit(uint8_t(ref[i + 2]))) {
        seg += char(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        seg += ref[i];
      }
    }
    const Json* next = nullptr;
    if (at->is_object()) {
      next = at->find(seg);
    } else if (at->is_array() && !seg.empty() &&
               seg.find_first_not_of("0123456789") == std::string::npos && seg.size() < 9) {
      const size_t i = std::stoul(seg);
      if (i < at->items.size()) next = &at->items[i];
    }
    if (next == nullptr) fail(path, "$ref", "'" + ref + "' does not resolve in this schema");
    at = next;
    pos = end;
  }
  return *at;
}

std::string SchemaConverter::ref(const Json& schema, const std::string& path) {
  const Json& r = *schema.find("$ref");
  if (!r.is_string()) fail(path, "$ref", "must be a string");
  for (const auto& [key, v] : schema.members)
    if (key != "$ref" && !kAnnotations.count(key))
      fail(path, "$ref",
           "$ref beside '" + key + "' is not supported (drafts disagree on what it means)");
  const std::string& target = r.text;
  if (std::find(ref_chain_.begin(), ref_chain_.end(), target) != ref_chain_.end())
    fail(path, "$ref", "'" + target + "' refers back to itself before any object or array");
  auto it = ref_rules_.find(target);
  if (it != ref_rules_.end()) return it->second;
  const Json& to = resolve(target, path);
  const std::string name = reserve("ref-" + target.substr(target.rfind('/') + 1));
  ref_rules_.emplace(target, name);
  ref_chain_.push_back(target);
  const std::string expr = value(to, target.substr(1));
  ref_chain_.pop_back();
  define(name, expr);
  return name;
}

// allOf as one schema: the keywords of every branch together, when they can be combined
// exactly; otherwise refused.
Json SchemaConverter::merge_all_of(const Json& schema, const std::string& path, int depth) {
  if (depth > 32) fail(path, "allOf", "allOf nested through more than 32 levels or $refs");
  const Json& all = *schema.find("allOf");
  if (!all.is_array() || all.items.empty()) fail(path, "allOf", "must be a non-empty array");
  Json merged = member_removed(schema, {"allOf"});
  std::vector<const Json*> parts = {&schema};
  std::vector<Json> resolved;  // branches with $ref and nested allOf resolved
  resolved.reserve(all.items.size());
  for (size_t i = 0; i < all.items.size(); ++i) {
    const std::string at = path + "/allOf/" + std::to_string(i);
    const Json* b = &all.items[i];
    for (int hops = 0; b->is_object() && b->find("$ref"); ++hops) {
      if (hops > 32) fail(at, "$ref", "more than 32 $refs in a row");
      for (const auto& [key, v] : b->members)
        if (key != "$ref" && !kAnnotations.count(key))
          fail(at, "$ref",
               "$ref beside '" + key + "' is not supported (drafts disagree on what it means)");
      if (!b->find("$ref")->is_string()) fail(at, "$ref", "must be a string");
      b = &resolve(b->find("$ref")->text, at);
    }
    if (b->is_bool()) {
      if (!b->boolean) set_member(merged, "type", make_array({}));
      continue;
    }
    if (!b->is_object()) fail(at, "", "a schema must be an object or a boolean");
    check_keywords(*b, at);
    resolved.push_back(b->find("allOf") ? merge_all_of(*b, at, depth + 1) : *b);
    merge_into(merged, resolved.back(), at, depth);
    parts.push_back(&resolved.back());
  }
  // additionalProperties in one part limits the names the other parts' properties may use.
  for (const Json* p : parts) {
    const Json* ap = p->find("additionalProperties");
    if (ap == nullptr || (ap->is_bool() && ap->boolean)) continue;
    const Json* own = p->find("properties");
    for (const Json* q : parts) {
      const Json* props = q->find("properties");
      if (q == p || props == nullptr) continue;
      for (const auto& [name, s] : props->members)
        if (own == nullptr || !own->find(name))
          fail(path, "allOf",
               "additionalProperties in one branch with property '" + name +
                   "' from another is not supported");
    }
  }
  return merged;
}

void SchemaConverter::merge_into(Json& into, const Json& branch, const std::string& path,
                                 int depth) {
  (void)depth;
  for (const auto& [key, v] : branch.members) {
    if (kAnnotations.count(key)) continue;
    const Json* have = into.find(key);
    if (have == nullptr) {
      into.members.push_back({key, v});
      continue;
    }
    if (json_equal(*have, v)) continue;
    if (key == "type") {
      const std::set<std::string> a = schema_types(into, path, *this);
      Json tmp;
      tmp.type = Json::Type::kObject;
      tmp.members.push_back({"type", v});
      const std::set<std::string> b = schema_types(tmp, path, *this);
      std::vector<Json> both;
      for (const std::string& t : a) {
        if (b.count(t)) {
          both.push_back(make_string(t));
        } else if ((t == "number" && b.count("integer")) || (t == "integer" && b.count("number"))) {
          both.push_back(make_string("integer"));
        }
      }
      set_member(into, "type", make_array(std::move(both)));
    } else if (key == "properties" && have->is_object() && v.is_object()) {
      Json props = *have;
      for (const auto& [name, s] : v.members) {
        const Json* old = props.find(name);
        if (old == nullptr) {
          props.members.push_back({name, s});
        } else {
          Json both;
          both.type = Json::Type::kObject;
          both.members.push_back({"allOf", make_array({*old, s})});
          set_member(props, name, std::move(both));
        }
      }
      set_member(into, "properties", std::move(props));
    } else if (key == "required" && have->is_array() && v.is_array()) {
      Json req = *have;
      for (const Json& n : v.items)
        if (std::none_of(req.items.begin(), req.items.end(),
                         [&](const Json& m) { return json_equal(m, n); }))
          req.items.push_back(n);
      set_member(into, "required", std::move(req));
    } else if ((key == "minLength" || key == "minItems" || key == "minimum" || key == "maxLength" ||
                key == "maxItems" || key == "maximum") &&
               have->is_number() && v.is_number()) {
      const bool take_larger = key.starts_with("min");
      if ((v.number() > have->number()) == take_larger) set_member(into, key, v);
    } else if (key == "items" && !have->is_array() && !v.is_array()) {
      Json both;
      both.type = Json::Type::kObject;
      both.members.push_back({"allOf", make_array({*have, v})});
      set_member(into, "items", std::move(both));
    } else {
      fail(path, "allOf", "branches with different '" + key + "' are not supported");
    }
  }
}

// anyOf: any branch. oneOf: exactly one branch, which a grammar can only promise when no value
// can match two branches: branches of different types, distinct constants, or objects told
// apart by a required property of distinct constants.
std::string SchemaConverter::any_of(const Json& schema, const std::string& path,
                                    const std::string& keyword) {
  const Json& list = *schema.find(keyword);
  if (!list.is_array() || list.items.empty()) fail(path, keyword, "must be a non-empty array");
  const Json siblings = member_removed(schema, {keyword});
  const bool distribute = has_constraints(siblings);
  std::vector<Json> branches;  // each with the siblings' keywords
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (!distribute) {
      branches.push_back(list.items[i]);
      continue;
    }
    Json both;
    both.type = Json::Type::kObject;
    both.members.push_back({"allOf", make_array({siblings, list.items[i]})});
    branches.push_back(std::move(both));
  }
  if (keyword == "oneOf") {
    // Each branch's types and constants, resolved.
    struct Shape {
      std::set<std::string> types;
      std::vector<Json> constants;  // empty: not a set of constants
      Json merged;
    };
    std::vector<Shape> shapes;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string at = path + "/oneOf/" + std::to_string(i);
      Shape s;
      Json b = branches[i];
      for (int hops = 0; b.is_object() && b.find("$ref") && hops < 32; ++hops)
        b = resolve(b.find("$ref")->text, at);
      if (b.is_object() && b.find("allOf")) b = merge_all_of(b, at, 0);
      if (!b.is_object()) {
        s.types = b.boolean ? schema_types(Json{}, at, *this) : std::set<std::string>{};
      } else {
        s.types = schema_types(b, at, *this);
        if (const Json* c = b.find("const")) s.constants = {*c};
        if (const Json* e = b.find("enum"); e && e->is_array()) s.constants = e->items;
      }
      s.merged = b;
      shapes.push_back(std::move(s));
    }
    auto overlap = [](const std::set<std::string>& a, const std::set<std::string>& b) {
      for (const std::string& t : a)
        if (b.count(t) || (t == "number" && b.count("integer")) ||
            (t == "integer" && b.count("number")))
          return true;
      return false;
    };
    auto constants_disjoint = [](const std::vector<Json>& a, const std::vector<Json>& b) {
      for (const Json& x : a)
        for (const Json& y : b)
          if (json_equal(x, y)) return false;
      return true;
    };
    // A required property whose values are constants, told apart between branches.
    auto tag = [&](const Shape& s, const std::string& name) -> std::vector<Json> {
      if (s.types != std::set<std::string>{"object"} || !s.merged.is_object()) return {};
      const Json* req = s.merged.find("required");
      const Json* props = s.merged.find("properties");
      if (!req || !req->is_array() || !props || !props->is_object() ||
          std::none_of(req->items.begin(), req->items.end(),
                       [&](const Json& n) { return n.is_string() && n.text == name; }))
        return {};
      const Json* p = props->find(name);
      if (!p || !p->is_object()) return {};
      if (const Json* c = p->find("const")) return {*c};
      if (const Json* e = p->find("enum"); e && e->is_array()) return e->items;
      return {};
    };
    for (size_t i = 0; i < shapes.size(); ++i) {
      for (size_t j = i + 1; j < shapes.size(); ++j) {
        const Shape& a = shapes[i];
        const Shape& b = shapes[j];
        if (!overlap(a.types, b.types)) continue;
        if (!a.constants.empty() && !b.constants.empty() &&
            constants_disjoint(a.constants, b.constants))
          continue;
        bool tagged = false;
        if (const Json* props = a.merged.is_object() ? a.merged.find("properties") : nullptr;
            props && props->is_object()) {
          for (const auto& [name, s] : props->members) {
            const std::vector<Json> ta = tag(a, name), tb = tag(b, name);
            if (!ta.empty() && !tb.empty() && constants_disjoint(ta, tb)) {
              tagged = true;
              break;
            }
          }
        }
        if (!tagged)
          fail(path, "oneOf",
               "branches " + std::to_string(i) + " and " + std::to_string(j) +
                   " may both match a value, and a grammar cannot refuse a value for matching "
                   "two; use anyOf, or tell the branches apart by type or by a required "
                   "property of distinct constants");
      }
    }
  }
  std::vector<std::string> alts;
  for (size_t i = 0; i < branches.size(); ++i)
    alts.push_back(value(branches[i], path + "/" + keyword + "/" + std::to_string(i)));
  return join_alternatives(alts);
}

// enum and const: their values that have the schema's type. Objects and arrays become schemas
// of constants (objects take their members in any order, as JSON equality does).
std::string SchemaConverter::enum_or_const(const Json& schema, const std::string& path) {
  for (const auto& [key, v] : schema.members)
    if (key != "enum" && key != "const" && key != "type" && !kAnnotations.count(key))
      fail(path, key, "'" + key + "' beside enum or const is not supported");
  std::vector<Json> values;
  if (const Json* e = schema.find("enum")) {
    if (!e->is_array()) fail(path, "enum", "must be an array");
    values = e->items;
  }
  if (const Json* c = schema.find("const")) {
    if (schema.find("enum")) {
      std::erase_if(values, [&](const Json& v) { return !json_equal(v, *c); });
    } else {
      values = {*c};
    }
  }
  if (schema.find("type")) {
    const std::set<std::string> types = schema_types(schema, path, *this);
    std::erase_if(values, [&](const Json& v) {
      return std::none_of(types.begin(), types.end(),
                          [&](const std::string& t) { return json_has_type(v, t); });
    });
  }
  std::vector<std::string> scalars;
  std::vector<std::string> alts;
  for (size_t i = 0; i < values.size(); ++i) {
    const Json& v = values[i];
    if (!v.is_object() && !v.is_array()) {
      scalars.push_back(to_json(v));
      continue;
    }
    Json s;
    s.type = Json::Type::kObject;
    if (v.is_object()) {
      Json props, req;
      props.type = Json::Type::kObject;
      req.type = Json::Type::kArray;
      for (const auto& [k, m] : v.members) {
        Json c;
        c.type = Json::Type::kObject;
        c.members.push_back({"const", m});
        set_member(props, k, std::move(c));
        req.items.push_back(make_string(k));
      }
      Json no;
      no.type = Json::Type::kBool;
      s.members = {{"type", make_string("object")},
                   {"properties", props},
                   {"required", req},
                   {"additionalProperties", no}};
    } else {
      std::vector<Json> prefix;
      for (const Json& m : v.items) {
        Json c;
        c.type = Json::Type::kObject;
        c.members.push_back({"const", m});
        prefix.push_back(std::move(c));
      }
      Json n;
      n.type = Json::Type::kNumber;
      n.text = std::to_string(v.items.size());
      Json no;
      no.type = Json::Type::kBool;
      s.members = {{"type", make_string("array")},
                   {"prefixItems", make_array(std::move(prefix))},
                   {"items", no},
                   {"minItems", n}};
    }
    alts.push_back(value(s, path));
  }
  if (!scalars.empty()) alts.push_back("(" + literal_set(scalars) + ") " + primitive("space"));
  return join_alternatives(alts);
}

std::string SchemaConverter::typed(const Json& schema, const std::string& path) {
  const std::set<std::string> types = schema_types(schema, path, *this);
  for (const char* k : {"minimum", "maximum"}) {
    const Json* b = schema.find(k);
    if (b == nullptr) continue;
    if (!b->is_number()) fail(path, k, "must be a number");
    if (types.count("number"))
      fail(path, k, "minimum and maximum are supported on integers only (type \"integer\")");
  }
  std::vector<std::string> alts;
  if (types.count("null")) alts.push_back(primitive("null"));
  if (types.count("boolean")) alts.push_back(primitive("boolean"));
  if (types.count("object")) alts.push_back(object(schema, path));
  if (types.count("array")) alts.push_back(array(schema, path));
  if (types.count("string")) alts.push_back(string(schema, path));
  if (types.count("number")) alts.push_back(primitive("number"));
  if (types.count("integer")) {
    const Json* lo = schema.find("minimum");
    const Json* hi = schema.find("maximum");
    if (lo || hi) {
      alts.push_back(integer(lo, hi, path));
    } else {
      alts.push_back(primitive("integer"));
    }
  }
  return join_alternatives(alts);
}

}  // namespace detail

std::string schema_to_gbnf(const Json& schema, const SchemaLimits& limits) {
  return detail::SchemaConverter(schema, limits).run();
}

std::string schema_to_gbnf(std::string_view schema, const SchemaLimits& limits) {
  const Json parsed = parse_json(schema, limits.json, "JSON schema");
  return schema_to_gbnf(parsed, limits);
}

std::string json_object_gbnf() { return schema_to_gbnf(std::string_view(R"({"type":"object"})")); }

}  // namespace kvrt::grammar
