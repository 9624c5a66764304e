// The official JSON Schema test suite (Debian's json-schema-test-suite, draft 7, the newest draft
// it ships) against the grammars of grammar/json_schema.h used as acceptors: for every schema the
// converter takes, each instance, written compactly and with whitespace, must be accepted when
// the suite marks it valid and refused when it marks it invalid. Schemas the converter refuses
// are counted as skipped, with the reason.
//   test_json_schema_suite [--table] [DRAFT_DIR]
// Exits 77 (meson's skip) when the suite is not installed, 1 when an instance is misjudged.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_value.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"

namespace fs = std::filesystem;
using namespace kvrt;
using namespace kvrt::grammar;

namespace {

constexpr const char* kDefaultDir = "/usr/share/json-schema-test-suite/tests/draft7";

// `value` with a space after ':' and ',' (pretty: a newline and two spaces per level instead).
std::string spaced(const Json& v, bool pretty, int depth = 0) {
  const std::string nl = pretty ? "\n" + std::string(size_t(2 * (depth + 1)), ' ') : "";
  const std::string end = pretty ? "\n" + std::string(size_t(2 * depth), ' ') : "";
  const std::string sep = pretty ? "," : ", ";
  std::string out;
  if (v.is_array() && !v.items.empty()) {
    out = "[";
    for (size_t i = 0; i < v.items.size(); ++i)
      out += (i ? sep : "") + nl + spaced(v.items[i], pretty, depth + 1);
    return out + end + "]";
  }
  if (v.is_object() && !v.members.empty()) {
    out = "{";
    for (size_t i = 0; i < v.members.size(); ++i) {
      out += (i ? sep : "") + nl;
      append_json_string(v.members[i].first, out);
      out += ": " + spaced(v.members[i].second, pretty, depth + 1);
    }
    return out + end + "}";
  }
  return to_json(v);
}

struct Row {
  int cases = 0, passed = 0, skipped = 0;
  std::vector<std::string> skips;  // "group: reason (n cases)"
};

}  // namespace

int main(int argc, char** argv) {
  bool table = false;
  std::string dir = kDefaultDir;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--table") {
      table = true;
    } else {
      dir = argv[i];
    }
  }
  if (!fs::is_directory(dir)) {
    std::fprintf(stderr,
                 "SKIP: the JSON Schema test suite is not at %s (Debian package "
                 "json-schema-test-suite; tools/setup.sh installs it)\n",
                 dir.c_str());
    return 77;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());

  const auto vocab =
      std::make_shared<Vocabulary>(std::vector<std::string>{"x"}, std::vector<int32_t>{});
  JsonLimits file_limits;
  file_limits.max_bytes = size_t(16) << 20;
  file_limits.max_depth = 256;
  std::map<std::string, Row> rows;
  int failures = 0;
  for (const fs::path& file : files) {
    const std::string keyword = fs::relative(file, dir).replace_extension().string();
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    Row& row = rows[keyword];
    Json groups;
    try {
      groups = parse_json(ss.str(), file_limits, file.string());
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    for (const Json& group : groups.items) {
      const std::string description = group.find("description")->text;
      const Json& tests = *group.find("tests");
      std::shared_ptr<const Grammar> g;
      bool nothing = false;  // the schema allows no value
      try {
        g = parse_gbnf(schema_to_gbnf(*group.find("schema")));
      } catch (const SchemaError& e) {
        row.skipped += int(tests.items.size());
        row.skips.push_back(description + ": " + e.what() + " (" +
                            std::to_string(tests.items.size()) + " cases)");
        continue;
      } catch (const Error& e) {
        if (std::string(e.what()) != "grammar: rule 'root' matches no text") {
          std::fprintf(stderr, "FAIL %s / %s: %s\n", keyword.c_str(), description.c_str(),
                       e.what());
          ++failures;
          continue;
        }
        nothing = true;
      }
      for (const Json& t : tests.items) {
        const Json& data = *t.find("data");
        const bool valid = t.find("valid")->boolean;
        bool ok = true;
        std::string texts[] = {to_json(data), spaced(data, false), spaced(data, true)};
        for (const std::string& text : texts) {
          bool accepted = false;
          if (!nothing) {
            Matcher m(g, vocab);
            accepted = m.accept_text(text) && m.can_end();
          }
          if (accepted != valid) {
            ok = false;
            std::fprintf(stderr, "FAIL %s / %s / %s: %s %s\n", keyword.c_str(), description.c_str(),
                         t.find("description")->text.c_str(), text.c_str(),
                         valid ? "refused" : "accepted");
          }
        }
        ++row.cases;
        row.passed += ok;
        failures += !ok;
      }
    }
  }
  if (table) {
    std::printf("JSON Schema test suite, %s: instances compact and with whitespace\n\n",
                dir.c_str());
    std::printf("| keyword (file) | cases | passed | skipped |\n| --- | --- | --- | --- |\n");
    int cases = 0, passed = 0, skipped = 0;
    for (const auto& [k, r] : rows) {
      std::printf("| %s | %d | %d | %d |\n", k.c_str(), r.cases, r.passed, r.skipped);
      cases += r.cases;
      passed += r.passed;
      skipped += r.skipped;
    }
    std::printf("| total | %d | %d | %d |\n\nSkipped (the converter refuses the schema):\n\n",
                cases, passed, skipped);
    for (const auto& [k, r] : rows)
      for (const std::string& s : r.skips) std::printf("- %s: %s\n", k.c_str(), s.c_str());
  }
  int cases = 0;
  for (const auto& [k, r] : rows) cases += r.cases;
  std::printf("%d passed, %d failed\n", cases - failures, failures);
  return failures ? 1 : 0;
}
