// Objects and arrays of a JSON schema.
//
// An object's named properties may come in any order (JSON does not order members) but each at
// most once, the required ones all: for n names the grammar has a rule per set of names already
// written (2^n rules, so only up to SchemaLimits::max_any_order names; beyond, the schema's
// order). Other names, when additionalProperties allows them, may come anywhere; the grammar
// writes them in canonical form, so that a name spelled with needless escapes cannot pass for a
// named property.
#include <algorithm>
#include <cstdint>

#include "grammar/schema_internal.h"

namespace kvrt::grammar::detail {
namespace {

size_t count_of(const SchemaConverter& c, const Json& schema, const char* key,
                const std::string& path, size_t fallback) {
  const Json* v = schema.find(key);
  if (v == nullptr) return fallback;
  if (!v->is_integer() || v->number() < 0) c.fail(path, key, "must be a non-negative integer");
  if (v->number() > double(c.limits().max_count))
    c.fail(path, key,
           "values above " + std::to_string(c.limits().max_count) + " are not supported");
  return size_t(v->number());
}

std::string quoted_literal(const std::string& json_text) {
  std::string out = "\"";
  for (char ch : json_text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

std::string SchemaConverter::object(const Json& schema, const std::string& path) {
  const Json* props = schema.find("properties");
  const Json* req = schema.find("required");
  const Json* extra = schema.find("additionalProperties");
  if (props && !props->is_object()) fail(path, "properties", "must be an object");
  if (req && !req->is_array()) fail(path, "required", "must be an array of names");
  if (!props && !req && (!extra || (extra->is_bool() && extra->boolean)))
    return primitive("object");
  std::vector<std::string> names;
  std::vector<const Json*> schemas;
  std::vector<std::string> paths;
  std::vector<char> required;
  static const Json kAny = [] {
    Json t;
    t.type = Json::Type::kBool;
    t.boolean = true;
    return t;
  }();
  if (props) {
    for (const auto& [name, s] : props->members) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      names.push_back(name);
      schemas.push_back(&s);
      paths.push_back(path + "/properties/" + pointer_segment(name));
      required.push_back(0);
    }
  }
  if (req) {
    for (const Json& n : req->items) {
      if (!n.is_string()) fail(path, "required", "must be an array of names");
      auto it = std::find(names.begin(), names.end(), n.text);
      if (it != names.end()) {
        required[size_t(it - names.begin())] = 1;
        continue;
      }
      names.push_back(n.text);
      schemas.push_back(extra ? extra : &kAny);
      paths.push_back(path + "/additionalProperties");
      required.push_back(1);
    }
  }
  const size_t n = names.size();
  const std::string space = primitive("space");
  const std::vector<std::string> chain = take_ref_chain();
  std::vector<std::string> kv(n);
  for (size_t i = 0; i < n; ++i) {
    std::string key;
    append_json_string(names[i], key);
    kv[i] = rule("kv-" + names[i], quoted_literal(key) + " " + space + " \":\" " + space + " " +
                                       value(*schemas[i], paths[i]));
  }
  std::string other;  // a member of another name, when allowed
  if (!extra || !extra->is_bool() || extra->boolean) {
    const std::string v =
        extra ? value(*extra, path + "/additionalProperties") : primitive("value");
    if (v != kNever)
      other = rule("kv-other", string_except(names) + " " + space + " \":\" " + space + " " + v);
  }
  restore_ref_chain(chain);

  const std::string close = "\"}\" " + space;
  const std::string comma = "\",\" " + space + " ";
  auto join = [](const std::vector<std::string>& alts) {
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out.empty() ? std::string(kNever) : out;
  };
  std::vector<std::string> first;  // alternatives after "{"
  if (n <= size_t(limits_.max_any_order)) {
    // State: the set of names written (a bit mask); started is implied by the comma.
    uint32_t req_mask = 0;
    for (size_t i = 0; i < n; ++i)
      if (required[i]) req_mask |= 1u << i;
    const uint32_t n_masks = 1u << n;
    std::vector<std::string> state(n_masks);
    for (uint32_t m = 0; m < n_masks; ++m) state[m] = reserve("obj-" + std::to_string(m));
    for (uint32_t m = 0; m < n_masks; ++m) {
      std::vector<std::string> alts;
      if ((m & req_mask) == req_mask) alts.push_back(close);
      for (size_t i = 0; i < n; ++i)
        if (!(m & (1u << i))) alts.push_back(comma + kv[i] + " " + state[m | (1u << i)]);
      if (!other.empty()) alts.push_back(comma + other + " " + state[m]);
      define(state[m], join(alts));
    }
    if (req_mask == 0) first.push_back(close);
    for (size_t i = 0; i < n; ++i) first.push_back(kv[i] + " " + state[1u << i]);
    if (!other.empty()) first.push_back(other + " " + state[0]);
  } else {
    // State: the index of the next name that may come, in the schema's order.
    std::vector<std::string> state(n + 1);
    for (size_t i = 0; i <= n; ++i) state[i] = reserve("obj-" + std::to_string(i));
    auto next = [&](size_t i, const std::string& sep) {
      std::vector<std::string> alts;
      bool need = false;
      for (size_t j = i; j < n && !need; ++j) {
        alts.push_back(sep + kv[j] + " " + state[j + 1]);
        need = required[j];
      }
      if (!need) alts.insert(alts.begin(), close);
      if (!other.empty()) alts.push_back(sep + other + " " + state[i]);
      return alts;
    };
    for (size_t i = 0; i <= n; ++i) define(state[i], join(next(i, comma)));
    first = next(0, "");
  }
  return "\"{\" " + space + " (" + join(first) + ")";
}

std::string SchemaConverter::array(const Json& schema, const std::string& path) {
  const Json* items = schema.find("items");
  const Json* prefix = schema.find("prefixItems");
  if (prefix && !prefix->is_array()) fail(path, "prefixItems", "must be an array of schemas");
  std::string prefix_key = "/prefixItems/";
  if (items && items->is_array()) {
    // Draft 7's tuple form: the same as prefixItems (further items are unconstrained).
    if (prefix) fail(path, "items", "an array of items beside prefixItems is not supported");
    prefix = items;
    prefix_key = "/items/";
    items = nullptr;
  }
  const size_t min = count_of(*this, schema, "minItems", path, 0);
  const size_t max = count_of(*this, schema, "maxItems", path, SIZE_MAX);
  if (min > max) return kNever;
  if (!prefix && !items && min == 0 && max == SIZE_MAX) return primitive("array");
  const std::string space = primitive("space");
  const std::vector<std::string> chain = take_ref_chain();
  std::vector<std::string> p;
  const size_t k = prefix ? prefix->items.size() : 0;
  for (size_t i = 0; i < k; ++i)
    p.push_back(value(prefix->items[i], path + prefix_key + std::to_string(i)));
  const std::string item = items ? value(*items, path + "/items") : primitive("value");
  restore_ref_chain(chain);

  const std::string comma = "\",\" " + space + " ";
  // rest[i]: what may follow the first i items (i >= 1), built from the back.
  auto repeat = [&](size_t i) -> std::string {  // items past the prefix
    if (max != SIZE_MAX && i >= max) return "";
    const size_t lo = min > i ? min - i : 0;
    if (item == kNever) return lo > 0 ? kNever : "";
    const std::string hi = max == SIZE_MAX ? "" : std::to_string(max - i);
    return "(" + comma + item + "){" + std::to_string(lo) + "," + hi + "}";
  };
  std::string rest = repeat(std::max<size_t>(k, 1));
  for (size_t i = k; i-- > 1;) {
    if (max != SIZE_MAX && i >= max) {
      rest = "";
      continue;
    }
    const std::string body = comma + p[i] + (rest.empty() ? "" : " " + rest);
    rest = rule("items", i >= min ? "(" + body + ")?" : body);
  }
  std::string inner;
  if (max > 0) {
    inner = k > 0 ? p[0] : item;
    if (!rest.empty()) inner += " " + rest;
  }
  std::string out = "\"[\" " + space + " ";
  if (!inner.empty()) out += min == 0 ? "(" + inner + ")? " : inner + " ";
  return out + "\"]\" " + space;
}

}  // namespace kvrt::grammar::detail
