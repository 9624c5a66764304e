// Task checks (validate/task_check.h) and the strict JSON reader behind json_valid, on texts with
// known answers, and the case-manifest fields that define them.
#include <doctest/doctest.h>

#include <fstream>

#include "common/error.h"
#include "model/model.h"
#include "test_util.h"
#include "kv/kv_config.h"
#include "validate/case_set.h"
#include "validate/json_parse.h"
#include "validate/runner.h"
#include "validate/settings.h"
#include "validate/task_check.h"

using namespace kvrt;
using namespace kvrt::validate;

namespace {

TaskCheck with_pattern(CheckKind kind, const std::string& pattern, bool forbid = false) {
  TaskCheck c;
  c.kind = kind;
  c.pattern = pattern;
  c.forbid = forbid;
  compile_pattern(c);
  return c;
}

std::string load_error(const std::string& case_toml) {
  test::TempDir tmp;
  std::ofstream(tmp / "manifest.toml") << "[[case]]\nid = \"t\"\ncategory = \"task\"\n"
                                       << case_toml;
  try {
    load_case_set({tmp.path()});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("json: complete values of every kind are valid, with whitespace around them") {
  for (const char* ok :
       {"{}", "[]", "0", "-0", "12.5e-3", "1E+9", "-7", "true", "false", "null", "\"\"",
        " {\"a\": [1, 2.0, {\"b\": null}], \"c\": \"x\\ny\\u00e9\\\"\"} ", "[[[[]]]]",
        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "\t[true,false]\n"})
    CHECK_MESSAGE(json_valid(ok), ok);
}

TEST_CASE("json: what lenient parsers accept is refused") {
  for (const char* bad : {"",
                          " ",
                          "{",
                          "[1,]",
                          "{\"a\":1,}",
                          "{a: 1}",
                          "{'a': 1}",
                          "[01]",
                          "[1.]",
                          "[.5]",
                          "[+1]",
                          "[1e]",
                          "[-]",
                          "NaN",
                          "[Infinity]",
                          "tru",
                          "nul",
                          "\"abc",
                          "\"a\\x\"",
                          "\"\\u12G4\"",
                          "\"tab\there\"",
                          "[1 2]",
                          "{\"a\" 1}",
                          "{\"a\":}",
                          "[1] x",
                          "// c\n{}",
                          "\"\xc0\xaf\"",
                          "\"\xed\xa0\x80\"",
                          "\"\xf5\x80\x80\x80\"",
                          "\"\xe2\x82\""})
    CHECK_MESSAGE(!json_valid(bad), bad);
}

TEST_CASE("json: the end of the first value is found, and nesting is bounded") {
  CHECK(json_value_end(" {\"a\": 1} and more") == size_t(9));
  CHECK(json_value_end("[1, 2]]") == size_t(6));
  CHECK(!json_value_end("{\"a\": 1"));
  const std::string deep_ok = std::string(kJsonMaxDepth, '[') + std::string(kJsonMaxDepth, ']');
  CHECK(json_valid(deep_ok));
  const std::string too_deep = "[" + deep_ok + "]";
  CHECK(!json_valid(too_deep));
}

TEST_CASE("exact: the continuation must begin with the expected text, spaces included") {
  TaskCheck c;
  c.kind = CheckKind::kExact;
  c.expect = " friends";
  CHECK(task_passes(c, " friends. They played"));
  CHECK(task_passes(c, " friends"));
  CHECK(!task_passes(c, "friends. They"));  // the leading space is part of the answer
  CHECK(!task_passes(c, " friend"));
  CHECK(!task_passes(c, " Friends"));
  CHECK(!task_passes(c, " they were friends"));
}

TEST_CASE("regex: ECMAScript search in the continuation; anchors mean its start and end") {
  const TaskCheck name = with_pattern(CheckKind::kRegex, "^ [A-Z][a-z]+[.,!]");
  CHECK(task_passes(name, " Lily. She"));
  CHECK(!task_passes(name, " the girl."));
  CHECK(!task_passes(name, "Lily."));
  const TaskCheck quote = with_pattern(CheckKind::kRegex, "\"");
  CHECK(task_passes(quote, "I like it,\" said Tom."));
  CHECK(!task_passes(quote, "I like it, said Tom."));
}

TEST_CASE(
    "regex: a continuation of 4096 long tokens is matched in one pass, whatever the pattern") {
  // 4096 tokens of 16 bytes, no period. std::regex's default backtracking matcher recursed once
  // per character: the bundled word-list pattern crashed it from 32 KiB on an 8 MiB stack, and
  // the sentence pattern took 34 s at 16 KiB (it retries every start).
  std::string text;
  while (text.size() < 4096 * 16) text += " lily ran home";
  const TaskCheck words = with_pattern(CheckKind::kRegex, "^( [a-z]+)+[.,]");
  const TaskCheck sentence = with_pattern(CheckKind::kRegex, "[a-z ]+\\.$");
  const TaskCheck tom = with_pattern(CheckKind::kConstraint, "\\bTom\\b", true);
  CHECK(!task_passes(words, text));
  CHECK(!task_passes(sentence, text));
  CHECK(task_passes(tom, text));
  CHECK(task_passes(words, text + "."));  // matches that end at the last byte
  CHECK(task_passes(sentence, text + "."));
  CHECK(!task_passes(words, "Tom" + text + "."));  // "^" is the continuation's start only
  CHECK(!task_passes(tom, text + " Tom."));
  // The longest pattern allowed, each optional item a branch: linear in the text as well.
  std::string longest;
  while (longest.size() + 4 < kMaxPatternLength) longest += "(a?)";  // and room for one letter
  CHECK(task_passes(with_pattern(CheckKind::kRegex, longest + "l"), text));
  CHECK(!task_passes(with_pattern(CheckKind::kRegex, longest + "x"), text));  // no x in the text
}

TEST_CASE("regex: patterns that would not match in one pass within bounded stack are refused") {
  auto error = [](const std::string& pattern) {
    INFO(pattern);
    try {
      with_pattern(CheckKind::kRegex, pattern);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("(a)\\1").find("back-references are not supported") != std::string::npos);
  const std::string too_long =
      "is too long: more than " + std::to_string(kMaxPatternLength) + " characters";
  CHECK(error(std::string(kMaxPatternLength, 'a')).empty());
  CHECK(error(std::string(kMaxPatternLength + 1, 'a')).find(too_long) != std::string::npos);
  const std::string n = std::to_string(kMaxPatternLength);
  CHECK(error("a{" + n + "}").empty());
  CHECK(error("a{" + n + ",}").find(too_long) != std::string::npos);  // at least n + 1
  CHECK(error("a{2," + std::to_string(kMaxPatternLength + 1) + "}").find(too_long) !=
        std::string::npos);
  CHECK(error("(a{16}){16}").find(too_long) != std::string::npos);  // 16 x (16 + 2)
  CHECK(error("[a-z]{8}").empty());
  CHECK(error("a{99999999999999999999999}").find(too_long) != std::string::npos);
  const TaskCheck braces = with_pattern(CheckKind::kRegex, "a\\{999\\}");  // escaped: not a count
  CHECK(task_passes(braces, "say a{999}"));
  const std::string e =
      load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"regex\"\npattern = '(a)\\1'\n");
  INFO(e);
  CHECK(e.find(":7: case: 'pattern' bad regular expression '(a)\\1': back-references are not "
               "supported") != std::string::npos);
}

TEST_CASE("constraint: the pattern must match, or with forbid must not") {
  const TaskCheck keep = with_pattern(CheckKind::kConstraint, "\\bMia\\b");
  CHECK(task_passes(keep, " Mia went home."));
  CHECK(!task_passes(keep, " Miami went home."));
  const TaskCheck avoid = with_pattern(CheckKind::kConstraint, "\\bLily\\b", true);
  CHECK(task_passes(avoid, " Mia went home."));
  CHECK(!task_passes(avoid, " Lily went home."));
}

TEST_CASE(
    "json_valid: the prompt's part of the value plus the continuation must begin an object or "
    "array") {
  TaskCheck c;
  c.kind = CheckKind::kJsonValid;
  CHECK(task_passes(c, " {\"name\": \"Tom\", \"age\": 5}\nMore text"));
  CHECK(task_passes(c, "[1, 2, 3] and so on"));
  CHECK(!task_passes(c, " 5 years old"));  // a bare number is no document
  CHECK(!task_passes(c, " {\"name\": \"Tom\", \"age\": 5"));
  CHECK(!task_passes(c, " {\"name\": 'Tom'}"));
  c.json_prefix = "{\"name\": \"Tom\", \"age\":";
  CHECK(task_passes(c, " 5}. He"));
  CHECK(!task_passes(c, "\" said Carl."));
}

TEST_CASE("a bad regular expression is an error, at compile time and in a manifest") {
  TaskCheck c;
  c.kind = CheckKind::kRegex;
  c.pattern = "a(b";
  CHECK_THROWS_AS(compile_pattern(c), Error);
  c.pattern = "";
  CHECK_THROWS_AS(compile_pattern(c), Error);
  const std::string e =
      load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"regex\"\npattern = \"[a-\"\n");
  INFO(e);
  CHECK(e.find(":7: case: 'pattern' bad regular expression '[a-'") != std::string::npos);
}

TEST_CASE(
    "task fields in a manifest are checked: mode, check, its parameters and where they may "
    "appear") {
  auto has = [](const std::string& error, const std::string& part) {
    INFO(error);
    return error.find(part) != std::string::npos;
  };
  CHECK(has(load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"fuzzy\"\n"),
            "'check' is 'fuzzy'; expected exact, regex, json_valid or constraint"));
  CHECK(has(load_error("mode = \"task\"\ntext = \"x\"\n"), "a task case needs 'check'"));
  CHECK(has(load_error("mode = \"greedy\"\ntext = \"x\"\ncheck = \"exact\"\nexpect = \"y\"\n"),
            "'check' is only for task cases"));
  CHECK(has(load_error("mode = \"greedy\"\ntext = \"x\"\npattern = \"y\"\n"),
            "'pattern' is only for task cases"));
  CHECK(has(load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"exact\"\n"),
            "an exact check needs 'expect'"));
  CHECK(has(
      load_error(
          "mode = \"task\"\ntext = \"x\"\ncheck = \"exact\"\nexpect = \"y\"\npattern = \"z\"\n"),
      "'pattern' is not a parameter of the 'exact' check"));
  CHECK(has(load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"regex\"\n"),
            "a regex check needs 'pattern'"));
  CHECK(has(load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"constraint\"\npattern = \"y\"\n"),
            "a constraint check needs 'instruction'"));
  CHECK(has(
      load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"constraint\"\ninstruction = \"i\"\n"),
      "one of 'pattern' (must match) or 'forbid' (must not)"));
  CHECK(has(load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"constraint\"\ninstruction = "
                       "\"i\"\npattern = \"a\"\n"
                       "forbid = \"b\"\n"),
            "one of 'pattern' (must match) or 'forbid' (must not)"));
  CHECK(has(
      load_error("mode = \"task\"\ntext = \"x\"\ncheck = \"json_valid\"\ninstruction = \"i\"\n"),
      "'instruction' is not a parameter of the 'json_valid' check"));
  CHECK(has(
      load_error(
          "mode = \"task\"\ntext = \"x\"\ncheck = \"regex\"\npattern = \"y\"\nanswer = \" z\"\n"),
      "'answer' is only for recall cases"));
}

TEST_CASE(
    "recall: the continuation is read after the prompt, so an answer that starts with a space is "
    "found") {
  // stories260K goes on "... a little girl named Lily." (models/golden_greedy_prompt_once_n64.txt).
  // Decoded alone, the continuation loses its leading space, and " Lily" was never found.
  test::TempDir tmp;
  std::ofstream(tmp / "manifest.toml")
      << "[[case]]\nid = \"r\"\ncategory = \"recall\"\nmode = \"recall\"\n"
         "text = \"Once upon a time, there was a little girl named\"\n"
         "answer = \" Lily\"\ngenerate = 4\n";
  const model::Model m(test::stories_path());
  const std::vector<Case> cases =
      build_cases(load_case_set({tmp.path()}), m.tokenizer(), nullptr, 64, nullptr);
  REQUIRE(cases.size() == 1);
  RunOptions o;
  o.n_threads = 1;
  o.max_len = 64;
  o.speed.repeats = 0;
  const RunResult r = run_validation(m, cases, {{"q8", kv::parse_setting("q8")}}, o);
  REQUIRE(r.settings.size() == 1);
  const CaseScore& s = r.settings[0].cases[0];
  REQUIRE(s.recall_baseline.has_value());
  CHECK(*s.recall_baseline);
  CHECK(*s.recall_candidate);
}

TEST_CASE("a constraint case reads its check and puts the instruction before the text") {
  test::TempDir tmp;
  std::ofstream(tmp / "manifest.toml")
      << "[[case]]\nid = \"c\"\ncategory = \"task\"\nmode = \"task\"\n"
         "instruction = \"The girl is Mia.\"\ntext = \"At the end,\"\n"
         "check = \"constraint\"\nforbid = \"Lily\"\ngenerate = 8\n";
  const CaseSet set = load_case_set({tmp.path()});
  REQUIRE(set.cases.size() == 1);
  const CaseDef& d = set.cases[0];
  CHECK(d.mode == Mode::kTask);
  REQUIRE(d.check);
  CHECK(d.check->kind == CheckKind::kConstraint);
  CHECK(d.check->forbid);
  CHECK(d.instruction == "The girl is Mia.");
  CHECK(d.n_generate == 8);
  CHECK(task_passes(*d.check, " Mia smiled."));
  CHECK(!task_passes(*d.check, " Lily smiled."));
}

TEST_CASE(
    "a constraint template: one check per value, the instruction at the start of prompts scaled to "
    "the context") {
  test::TempDir tmp;
  std::ofstream(tmp / "filler.txt")
      << "The sun was warm.\nBirds sang in the tree.\nA dog ran on the grass.\n";
  std::ofstream(tmp / "manifest.toml")
      << "[[template]]\nid = \"hero\"\ncategory = \"task\"\nmode = \"task\"\ncheck = "
         "\"constraint\"\n"
         "instruction = \"There was a girl named {value}.\"\ncue = \"The next day,\"\npattern = "
         "'\\b{value}\\b'\n"
         "values = [\"Mia\", \"Sue\"]\nfiller_file = \"filler.txt\"\nlengths = [0.25, "
         "0.9]\npositions = [0.0]\n"
         "generate = 8\n";
  const CaseSet set = load_case_set({tmp.path()});
  REQUIRE(set.templates.size() == 1);
  const TemplateDef& t = set.templates[0];
  REQUIRE(t.checks.size() == 2);
  CHECK(task_passes(t.checks[0], " Mia and her mom"));
  CHECK(!task_passes(t.checks[0], " Sue and her mom"));
  CHECK(task_passes(t.checks[1], " Sue and her mom"));

  const model::Model m(test::stories_path());
  const std::vector<Case> cases = build_cases(set, m.tokenizer(), nullptr, 512, nullptr);
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].id == "hero-L25-P0");
  CHECK(cases[1].id == "hero-L90-P0");
  for (size_t i = 0; i < 2; ++i) {
    CHECK(cases[i].mode == Mode::kTask);
    CHECK(cases[i].answer.empty());
    REQUIRE(cases[i].check);
    const std::string prompt = m.tokenizer().decode(cases[i].turns[0]);
    INFO(prompt);
    CHECK(prompt.rfind(i == 0 ? "There was a girl named Mia." : "There was a girl named Sue.", 0) ==
          0);
    CHECK(prompt.size() > 13);
    CHECK(prompt.substr(prompt.size() - 13) == "The next day,");
    CHECK(task_passes(*cases[i].check, i == 0 ? " Mia" : " Sue"));
  }
  // The lengths follow the context: the long case fills about 90% of it, generation included.
  CHECK(cases[1].n_positions() > 400);
  CHECK(cases[1].n_positions() <= 512);
  CHECK(cases[0].n_positions() < cases[1].n_positions() / 2);
}

TEST_CASE("a task template is a constraint, with an instruction instead of a fact") {
  test::TempDir tmp;
  std::ofstream(tmp / "filler.txt") << "The sun was warm.\n";
  auto error = [&](const std::string& body) {
    std::ofstream(tmp / "manifest.toml")
        << "[[template]]\nid = \"t\"\ncategory = \"task\"\nmode = \"task\"\n"
           "cue = \"Then\"\nvalues = [\"Mia\"]\nfiller_file = \"filler.txt\"\n"
           "lengths = [0.5]\npositions = [0.0]\n"
        << body;
    try {
      load_case_set({tmp.path()});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("check = \"exact\"\nexpect = \"x\"\n").find("unknown key 'expect'") !=
        std::string::npos);
  CHECK(error("check = \"regex\"\npattern = \"x\"\n")
            .find("'check' of a template must be constraint") != std::string::npos);
  CHECK(error("check = \"constraint\"\ninstruction = \"i\"\npattern = \"x\"\nfact = \"f\"\n")
            .find("'fact' is only for recall templates") != std::string::npos);
  CHECK(error("check = \"constraint\"\ninstruction = \"i {value}\"\npattern = '({value}'\n")
            .find("'pattern' bad regular expression '(Mia'") != std::string::npos);
  CHECK(error("check = \"constraint\"\ninstruction = \"i {value}\"\nforbid = 'Lily'\n").empty());
}
