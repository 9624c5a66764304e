// The rendering oracle of the chat formats: the models' real chat templates rendered by Jinja2 as
// transformers renders them (tools/render_template.py with Debian's python3-jinja2). A test
// describes conversations as JSON (OpenAI-style messages, so tools, tool calls and tool results
// too), renders them all in one run of the script, and compares kvrt's renderings with them.
// Without python3-jinja2 or ../shared/templates the program exits with meson's skip code 77.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.h"
#include "text/chat_template.h"

namespace kvrt::test {

// ../shared/templates, the real templates; exits with 77 when it is absent.
inline std::string templates_dir() {
  const std::string dir = (std::filesystem::path(source_dir()) / ".." / "shared" / "templates")
                              .lexically_normal()
                              .string();
  if (std::filesystem::is_directory(dir)) return dir;
  std::fprintf(stderr, "SKIP: %s is absent; put ../shared beside the checkout\n", dir.c_str());
  std::exit(77);
}

// A JSON string literal of UTF-8 text.
inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", byte);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// kvrt's messages as the JSON list a template reads.
inline std::string messages_json(const std::vector<model::ChatMessage>& messages) {
  std::string out = "[";
  for (const model::ChatMessage& m : messages) {
    if (out.size() > 1) out += ", ";
    out += "{\"role\": " + json_string(m.role) + ", \"content\": " + json_string(m.content) + "}";
  }
  return out + "]";
}

// One rendering to make: a template (its path), the messages as JSON, and the template's other
// variables (tools as JSON, the arguments as a JSON object).
struct OracleCase {
  std::string name;  // unique; a file name
  std::string template_path;
  std::string messages;  // JSON list
  std::string tools = "null";
  std::string kwargs = "{}";
  bool add_generation_prompt = true;
  std::string bos_token;  // "": kvrt's tokenizer adds BOS itself
  std::string eos_token;
};

// What the template made of a case: its text, or the message of the exception it raised.
struct OracleResult {
  bool refused = false;
  std::string text;
};

// Renders every case with tools/render_template.py ($KVRT_PYTHON3, else /usr/bin/python3);
// strftime_now gives `date`. Exits with 77 when that Python or its jinja2 is not installed.
inline std::map<std::string, OracleResult> render_with_jinja(const std::vector<OracleCase>& cases,
                                                             const TempDir& tmp,
                                                             const std::string& date) {
  std::string json = "[\n";
  for (const OracleCase& c : cases) {
    if (json.size() > 2) json += ",\n";
    json += "{\"name\": " + json_string(c.name) +
            ", \"template\": " + json_string(c.template_path) + ", \"messages\": " + c.messages +
            ", \"tools\": " + c.tools + ", \"kwargs\": " + c.kwargs +
            ", \"add_generation_prompt\": " + (c.add_generation_prompt ? "true" : "false") +
            ", \"bos_token\": " + json_string(c.bos_token) +
            ", \"eos_token\": " + json_string(c.eos_token) + "}";
  }
  json += "\n]\n";
  const std::string cases_path = tmp / "cases.json", out_dir = tmp / "rendered";
  std::FILE* f = std::fopen(cases_path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fwrite(json.data(), 1, json.size(), f);
  std::fclose(f);
  const char* python = std::getenv("KVRT_PYTHON3");
  const std::string cmd = std::string(python ? python : "/usr/bin/python3") + " '" + source_dir() +
                          "/tools/render_template.py' --cases '" + cases_path + "' --out '" +
                          out_dir + "' --date " + date + " 2>&1";
  std::string log;
  const int status = shell(cmd, &log);
  if (status == 77 || status == 127) {  // no jinja2 (the script says so), or no such Python
    std::fprintf(stderr, "SKIP: %s\n%s", cmd.c_str(), log.c_str());
    std::exit(77);
  }
  INFO(cmd, "\n", log);
  REQUIRE(status == 0);
  std::map<std::string, OracleResult> results;
  for (const OracleCase& c : cases) {
    const std::string text = out_dir + "/" + c.name + ".txt";
    const std::string error = out_dir + "/" + c.name + ".error";
    if (std::filesystem::exists(text)) {
      results[c.name] = {false, read_file(text)};
    } else {
      REQUIRE_MESSAGE(std::filesystem::exists(error), "no rendering of " << c.name);
      results[c.name] = {true, read_file(error)};
    }
  }
  return results;
}

}  // namespace kvrt::test
