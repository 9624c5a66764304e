#include "validate/case_set.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/regular_file.h"
#include "common/sha256.h"
#include "validate/toml_util.h"

namespace kvrt::validate {
namespace {

// The path of a case text: relative to the case directory and inside it, after symbolic links.
std::string text_path(const TomlView& v, std::string_view key, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path rel = *v.string(key);
  if (rel.empty() || rel.is_absolute())
    v.fail_key(key, "must be a path relative to the case directory");
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::absolute(dir), ec);
  const fs::path path = ec ? fs::path() : fs::weakly_canonical(base / rel, ec);
  if (ec) v.fail_key(key, "names a path kvrt cannot resolve: " + ec.message());
  if (std::mismatch(base.begin(), base.end(), path.begin(), path.end()).first != base.end())
    v.fail_key(key, "names '" + rel.string() + "', outside the case directory " + base.string());
  return path.string();
}

struct Loader {
  Sha256 hash;
  std::set<std::string> ids;
  size_t text_bytes = 0;      // read from text files so far
  size_t expanded_cases = 0;  // the templates' cases so far

  std::string read_text(const TomlView& v, std::string_view key, const std::string& dir) {
    const std::string path = text_path(v, key, dir);
    std::string s;
    try {
      s = read_regular_file(path, "case text", kMaxTextFileBytes);
    } catch (const Error& e) {
      v.fail_key(key, std::string("names a file kvrt cannot use: ") + e.what());
    }
    text_bytes += s.size();
    if (text_bytes > kMaxCaseTextBytes)
      v.fail_key(key, "brings the text files of the acceptance set over the limit of " +
                          std::to_string(kMaxCaseTextBytes >> 20) + " MiB");
    hash.update("file\0", 5);
    hash.update(s);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }

  // `key` inline or `key_file` relative to the manifest's directory.
  std::optional<std::string> text(const TomlView& v, const std::string& key,
                                  const std::string& dir) {
    const std::string file_key = key + "_file";
    if (v.has(key) && v.has(file_key))
      v.fail_key(file_key, "cannot be given together with '" + key + "'");
    if (v.has(file_key)) return read_text(v, file_key, dir);
    return v.string(key);
  }

  void claim_id(const TomlView& v, const std::string& id) {
    if (id.empty()) v.fail_key("id", "must not be empty");
    if (!ids.insert(id).second) v.fail_key("id", "'" + id + "' is already used by another case");
  }

  // A template's cases, counted and their ids claimed before any is built.
  void claim_expansion(const TomlView& v, const TemplateDef& t) {
    const size_t n = t.lengths.size() * t.positions.size();
    if (n > kMaxTemplateCases)
      v.fail(nullptr, "'lengths' x 'positions' make " + std::to_string(n) +
                          " cases, more than the " + std::to_string(kMaxTemplateCases) +
                          " one template may expand to");
    expanded_cases += n;
    if (expanded_cases > kMaxExpandedCases)
      v.fail(nullptr, "the templates of the acceptance set expand to more than " +
                          std::to_string(kMaxExpandedCases) + " cases");
    for (double length : t.lengths)
      for (double position : t.positions)
        if (const std::string id = template_case_id(t.id, length, position); !ids.insert(id).second)
          v.fail(nullptr, "expands to the case id '" + id +
                              "', which another case already uses (lengths and "
                              "positions name cases in whole percent)");
  }

  CaseDef read_case(const TomlView& v, const std::string& dir);
  TemplateDef read_template(const TomlView& v, const std::string& dir);
};

Mode parse_mode(const TomlView& v) {
  const std::string m = v.required_string("mode");
  for (Mode x : {Mode::kTeacherForced, Mode::kGreedy, Mode::kRecall, Mode::kMultiTurn,
                 Mode::kSampling, Mode::kTask})
    if (m == mode_name(x)) return x;
  v.fail_key(
      "mode",
      "is '" + m + "'; expected teacher_forced, greedy, recall, multi_turn, sampling or task");
}

void compile_with(const TomlView& v, TaskCheck& c, const char* key) {
  try {
    compile_pattern(c);
  } catch (const Error& e) {
    v.fail_key(key, e.what());
  }
}

// The keys each check takes (besides 'check'); every other check key on the case is an error.
std::vector<std::string_view> check_keys(CheckKind k) {
  switch (k) {
    case CheckKind::kExact: return {"expect"};
    case CheckKind::kRegex: return {"pattern"};
    case CheckKind::kJsonValid: return {"json_prefix"};
    case CheckKind::kConstraint: return {"instruction", "pattern", "forbid"};
  }
  return {};
}

// The task check of a case: `check` names it; the keys of other checks are refused. A template's
// pattern holds "{value}" and is compiled per value (compile = false).
TaskCheck read_check(const TomlView& v, bool compile = true) {
  TaskCheck c;
  if (!v.has("check"))
    v.fail(nullptr, "a task case needs 'check': exact, regex, json_valid or constraint");
  const std::string name = v.required_string("check");
  const auto kind = parse_check(name);
  if (!kind)
    v.fail_key("check", "is '" + name + "'; expected exact, regex, json_valid or constraint");
  c.kind = *kind;
  const auto own = check_keys(c.kind);
  for (std::string_view key : {"pattern", "forbid", "json_prefix", "instruction"})
    if (v.has(key) && std::find(own.begin(), own.end(), key) == own.end())
      v.fail_key(key, "is not a parameter of the '" + name + "' check");
  switch (c.kind) {
    case CheckKind::kExact:
      c.expect = v.string("expect").value_or("");
      if (c.expect.empty())
        v.fail(nullptr, "an exact check needs 'expect', the text the continuation must begin with");
      return c;
    case CheckKind::kJsonValid: c.json_prefix = v.string("json_prefix").value_or(""); return c;
    case CheckKind::kRegex:
      if (!v.has("pattern")) v.fail(nullptr, "a regex check needs 'pattern'");
      break;
    case CheckKind::kConstraint:
      if (v.string("instruction").value_or("").empty())
        v.fail(nullptr,
               "a constraint check needs 'instruction', the text put at the start of the prompt");
      if (v.has("pattern") == v.has("forbid"))
        v.fail(nullptr,
               "a constraint check needs one of 'pattern' (must match) or 'forbid' (must not)");
      break;
  }
  const char* key = v.has("forbid") ? "forbid" : "pattern";
  c.forbid = v.has("forbid");
  c.pattern = *v.string(key);
  if (compile) compile_with(v, c, key);
  return c;
}

int read_generate(const TomlView& v, int fallback) {
  const auto g = v.integer("generate");
  if (g && (*g < 1 || *g > 4096)) v.fail_key("generate", "must be between 1 and 4096");
  return g ? int(*g) : fallback;
}

CaseDef Loader::read_case(const TomlView& v, const std::string& dir) {
  v.allow_only({"id", "category", "mode", "text", "text_file", "turns", "answer", "expect",
                "generate", "seeds", "temperature", "check", "pattern", "forbid", "json_prefix",
                "instruction"});
  CaseDef c;
  c.id = v.required_string("id");
  claim_id(v, c.id);
  c.category = v.required_string("category");
  c.mode = parse_mode(v);
  c.source = v.file() + ":" + std::to_string(v.line());
  if (c.mode == Mode::kMultiTurn) {
    auto turns = v.strings("turns");
    if (!turns || turns->size() < 2)
      v.fail(nullptr, "a multi_turn case needs 'turns' with at least two strings");
    c.turns = *turns;
  } else {
    if (v.has("turns")) v.fail_key("turns", "is only for multi_turn cases");
    auto t = text(v, "text", dir);
    if (!t || t->empty()) v.fail(nullptr, "needs a non-empty 'text' or 'text_file'");
    c.turns = {*t};
  }
  if (c.mode == Mode::kTask) {
    c.check = read_check(v);
    c.instruction = v.string("instruction").value_or("");
  } else if (v.has("check")) {
    v.fail_key("check", "is only for task cases (mode = \"task\")");
  }
  for (std::string_view key : {"pattern", "forbid", "json_prefix", "instruction"})
    if (!c.check && v.has(key)) v.fail_key(key, "is only for task cases");
  c.answer = v.string("answer").value_or("");
  if (c.mode == Mode::kRecall) c.expect = v.string("expect").value_or("");
  if (c.mode == Mode::kRecall && c.answer.empty()) v.fail(nullptr, "a recall case needs 'answer'");
  if (c.mode != Mode::kRecall && v.has("answer")) v.fail_key("answer", "is only for recall cases");
  if (v.has("expect") && c.mode != Mode::kRecall &&
      !(c.check && c.check->kind == CheckKind::kExact))
    v.fail_key("expect", "is only for recall cases and exact checks");
  if (c.mode == Mode::kRecall && c.expect.empty()) c.expect = c.answer;
  c.n_generate = c.mode == Mode::kTeacherForced ? 0 : read_generate(v, 16);
  if (c.mode == Mode::kTeacherForced && v.has("generate"))
    v.fail_key("generate", "is not used by teacher_forced cases");
  if (c.mode == Mode::kSampling) {
    auto seeds = v.integers("seeds");
    if (!seeds || seeds->size() < 2)
      v.fail(nullptr, "a sampling case needs 'seeds' with at least two seeds");
    for (int64_t s : *seeds) c.seeds.push_back(uint64_t(s));
    c.temperature = v.number("temperature").value_or(0.8);
    if (!(c.temperature > 0 && c.temperature <= 10))
      v.fail_key("temperature", "must be in (0, 10]");
  } else if (v.has("seeds") || v.has("temperature")) {
    v.fail(nullptr, "'seeds' and 'temperature' are only for sampling cases");
  }
  return c;
}

std::vector<double> fractions(const TomlView& v, std::string_view key, double lo) {
  auto xs = v.numbers(key);
  if (!xs || xs->empty())
    v.fail(nullptr, "needs '" + std::string(key) + "', a non-empty array of fractions");
  for (double x : *xs)
    if (!(x >= lo && x <= 1.0))
      v.fail_key(key, "values must lie in [" + std::to_string(lo).substr(0, 4) + ", 1]");
  return *xs;
}

// A task template's check, one per value: "{value}" in its pattern replaced by the value.
void read_template_check(const TomlView& v, TemplateDef& t) {
  if (v.has("check") && v.string("check") != "constraint")
    v.fail_key("check", "of a template must be constraint");
  const TaskCheck check = read_check(v, false);
  for (const std::string& value : t.values) {
    TaskCheck c = check;
    c.pattern = replace_value(c.pattern, value);
    compile_with(v, c, c.forbid ? "forbid" : "pattern");
    t.checks.push_back(c);
  }
}

TemplateDef Loader::read_template(const TomlView& v, const std::string& dir) {
  v.allow_only({"id", "category", "mode", "fact", "cue", "answer", "values", "filler_file",
                "lengths", "positions", "generate", "check", "instruction", "pattern", "forbid"});
  TemplateDef t;
  t.id = v.required_string("id");
  claim_id(v, t.id);
  t.category = v.required_string("category");
  t.mode = parse_mode(v);
  if (t.mode != Mode::kRecall && t.mode != Mode::kTask)
    v.fail_key("mode", "of a template must be recall or task");
  t.source = v.file() + ":" + std::to_string(v.line());
  t.cue = v.required_string("cue");
  auto values = v.strings("values");
  if (!values || values->empty()) v.fail(nullptr, "needs 'values', a non-empty array of strings");
  t.values = *values;
  if (t.mode == Mode::kRecall) {
    for (const char* key : {"check", "instruction", "pattern", "forbid"})
      if (v.has(key)) v.fail_key(key, "is only for task templates");
    t.fact = v.required_string("fact");
    t.answer = v.required_string("answer");
  } else {
    for (const char* key : {"fact", "answer"})
      if (v.has(key))
        v.fail_key(key, "is only for recall templates (a task template has 'instruction')");
    read_template_check(v, t);
    t.fact = *v.string("instruction");
  }
  if (!v.has("filler_file"))
    v.fail(nullptr, "needs 'filler_file', a text file of filler sentences");
  std::istringstream filler(read_text(v, "filler_file", dir));
  for (std::string line; std::getline(filler, line);)
    if (!line.empty()) t.filler.push_back(line);
  if (t.filler.empty()) v.fail_key("filler_file", "names an empty file");
  t.lengths = fractions(v, "lengths", 0.05);
  t.positions = fractions(v, "positions", 0.0);
  claim_expansion(v, t);
  t.n_generate = read_generate(v, 12);
  return t;
}

}  // namespace

std::string replace_value(std::string s, const std::string& value) {
  for (size_t p = s.find("{value}"); p != std::string::npos;
       p = s.find("{value}", p + value.size()))
    s.replace(p, 7, value);
  return s;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kTeacherForced: return "teacher_forced";
    case Mode::kGreedy: return "greedy";
    case Mode::kRecall: return "recall";
    case Mode::kMultiTurn: return "multi_turn";
    case Mode::kSampling: return "sampling";
    case Mode::kTask: return "task";
  }
  return "?";
}

CaseSet load_case_set(const std::vector<std::string>& dirs) {
  CaseSet set;
  Loader loader;
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/manifest.toml";
    const std::string text = read_regular_file(path, "case manifest", kMaxTomlFileBytes);
    const toml::table doc = parse_toml(text, path, "case manifest");
    set.dirs.push_back(std::filesystem::absolute(dir).lexically_normal().string());
    loader.hash.update("manifest\0", 9);
    loader.hash.update(text);
    const TomlView top(path, doc, "");
    top.allow_only({"case", "template"});
    for (const char* kind : {"case", "template"}) {
      const toml::array* arr = top.array(kind);
      if (!arr) continue;
      for (const auto& node : *arr) {
        if (!node.is_table()) top.fail(&node, std::string("each [[") + kind + "]] must be a table");
        const TomlView v(path, *node.as_table(), kind);
        if (kind == std::string("case")) set.cases.push_back(loader.read_case(v, dir));
        else set.templates.push_back(loader.read_template(v, dir));
      }
    }
    if (!top.has("case") && !top.has("template"))
      top.fail(nullptr, "defines no [[case]] or [[template]]");
  }
  set.sha256 = loader.hash.hex_digest();
  return set;
}

}  // namespace kvrt::validate
