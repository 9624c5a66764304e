// kvrt's chat formats against the real templates (../shared/templates) as Jinja2 renders them
// (tests/chat_oracle.h, tools/render_template.py): every family, a set of conversations (with and
// without a system message, one to three turns, replies that think, special characters, empty
// messages, a history without the assistant's header), and the thinking switch where the template
// has one. Each format is found from its template by kvrt's detection, and its rendering must
// equal the template's byte for byte, except:
//   - where the template refuses the conversation (kRefused: Gemma 2 has no system role, ...);
//   - the deliberate differences of kDeliberate, each with its reason, where the template adds
//     text before or after kvrt's rendering (a default system message holding today's date, ...).
// Both lists must stay true: an entry that no case needs any more is a failure.
// The templates' tools, tool calls and tool results are rendered too (the markup kvrt must write
// for tools, issue 44): each template that takes them writes the markup listed in kToolMarkup.
// Skipped (77) without python3-jinja2 or ../shared/templates.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "chat_oracle.h"
#include "io/gguf.h"
#include "text/chat_template.h"

using kvrt::model::ChatMessage;
using kvrt::model::ChatOptions;
using kvrt::model::ChatTemplate;

namespace {

// strftime_now's date in the oracle; Llama 3.1+ falls back to it when the engine has no clock.
constexpr const char* kDate = "2024-07-26";

struct Family {
  std::string_view name;
  std::string_view jinja;   // in ../shared/templates
  std::string_view format;  // what kvrt detects from it
  std::string_view eos;     // the template's eos_token
  bool thinking_switch;     // the template reads enable_thinking
};

const Family kFamilies[] = {
    {"qwen2.5", "Qwen-Qwen2.5-7B-Instruct.jinja", "qwen2.5", "<|im_end|>", false},
    {"qwen3", "Qwen-Qwen3-0.6B.jinja", "qwen3", "<|im_end|>", true},
    {"qwen3.5", "Qwen3.5-4B.jinja", "qwen3.5", "<|im_end|>", true},
    {"smollm3", "HuggingFaceTB-SmolLM3-3B.jinja", "smollm3", "<|im_end|>", true},
    {"lfm2.5", "LFM2.5-Instruct.jinja", "lfm2", "<|im_end|>", false},
    {"granite-3.3", "ibm-granite-granite-3.3-2B-Instruct.jinja", "granite", "<|end_of_text|>",
     false},
    {"granite-4.0", "ibm-granite-granite-4.0.jinja", "granite-4.0", "<|end_of_text|>", false},
    {"mistral-small-3.2", "Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistral-v7-tekken", "</s>",
     false},
    {"ministral-3", "mistralai-Ministral-3-14B-Reasoning-2512.jinja", "ministral-3-reasoning",
     "</s>", false},
    {"phi3.5", "microsoft-Phi-3.5-mini-instruct.jinja", "phi3", "<|endoftext|>", false},
    {"llama3.2", "meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3.1", "<|eot_id|>", false},
    {"gemma2", "google-gemma-2-2b-it.jinja", "gemma", "<eos>", false},
    {"gemma4", "google-gemma-4-31B-it.jinja", "gemma4", "<eos>", true},
};

struct Conversation {
  std::string_view name;
  std::vector<ChatMessage> messages;
  bool add_assistant = true;
};

const std::string kSystem = "You are a helpful assistant.";
// Markup of several families, template syntax, quotes, backslashes, tabs, non-ASCII text, and
// whitespace that Jinja's trim removes (U+00A0, U+3000, U+2003) or keeps (U+200B).
const std::string kSpecial =
    " <|im_end|>\n<|im_start|>system\n[INST]<turn|><|eot_id|> {{ messages }} {% if x %}\n"
    "\"quoted\" 'single' back\\slash\ttab caf\u00e9 \u4e2d\u6587 \U0001F600 \u00a0";

const std::vector<Conversation>& conversations() {
  static const std::vector<Conversation> all = {
      {"hello", {{"user", "Hello! Who are you?"}}},
      {"system", {{"system", kSystem}, {"user", "Hello! Who are you?"}}},
      {"two-turns",
       {{"system", kSystem},
        {"user", "Hello! Who are you?"},
        {"assistant", "I am a small model."},
        {"user", "What is 2+2?"}}},
      {"three-turns",
       {{"system", kSystem},
        {"user", "Hello! Who are you?"},
        {"assistant", "I am a small model."},
        {"user", "What is 2+2? Answer with a number."},
        {"assistant", "  4  "},
        {"user", "Thanks, bye."}}},
      {"three-turns-no-system",
       {{"user", "Hello! Who are you?"},
        {"assistant", "I am a small model."},
        {"user", "What is 2+2?"},
        {"assistant", "\n4\n"},
        {"user", "Thanks, bye."}}},
      {"thinking",
       {{"system", kSystem},
        {"user", "Hello! Who are you?"},
        {"assistant", "<think>\nThe user greets me.\n</think>\n\nI am a small model."},
        {"user", "What is 2+2? /no_think"},
        {"assistant", "<think>\n\n</think>\n\n4"},
        {"user", "Thanks, bye."}}},
      {"thinking-held",  // what the model holds after its reply: no assistant header follows
       {{"user", "Hi"}, {"assistant", "<think>\nhm\n</think>\n\nHello"}},
       false},
      {"thought-channels",
       {{"user", "Hello! Who are you?"},
        {"assistant", "<|channel>thought\nThe user greets me.<channel|>I am a small model."},
        {"user", "And you think?"},
        {"assistant", "<|channel>thought\nYes.<channel|>Yes, <|channel>thought\nhm<channel|>I do."},
        {"user", "Thanks."}}},
      {"special",
       {{"system", "Be brief.\t"},
        {"user", kSpecial},
        {"assistant", kSpecial},
        {"user", "\u3000 spaces \u2003\n\u200b"}}},
      {"unicode-spaces",  // spaces at the ends that Python's strip() removes, and U+200B
       {{"user", "\u3000\u00a0 spaces \u2003\n\u200b"},
        {"assistant", "\u00a0ok\u3000"},
        {"user", "\x1c next \u0085\u2028"}}},
      {"empty-system", {{"system", ""}, {"user", "Hi"}}},
      {"empty-user", {{"user", ""}}},
      {"empty-reply", {{"user", "Hi"}, {"assistant", ""}, {"user", "Again"}}},
      {"history",
       {{"system", kSystem}, {"user", "Hello! Who are you?"}, {"assistant", "I am a small model."}},
       false},
      {"replies-in-a-row",
       {{"user", "Hi"}, {"assistant", "One."}, {"assistant", "Two."}, {"user", "Go on."}}},
      {"system-later",
       {{"user", "Hello!"},
        {"assistant", "Hi."},
        {"system", "Answer in French."},
        {"user", "Who are you?"}}},
  };
  return all;
}

struct Variant {
  std::string_view name;
  std::string_view kwargs;  // JSON
  ChatOptions options;
};

const Variant kDefault = {"default", "{}", {}};
const Variant kThinkingVariants[] = {
    kDefault,
    {"think-on", "{\"enable_thinking\": true}", {true}},
    {"think-off", "{\"enable_thinking\": false}", {false}},
};

// Conversations a template refuses (raise_exception): kvrt renders them all the same.
struct Refusal {
  std::string_view family;
  std::set<std::string_view> conversations;
  std::string_view because;  // in the template's message
};

const Refusal kRefused[] = {
    {"gemma2",
     {"system", "two-turns", "three-turns", "thinking", "special", "empty-system", "history"},
     "System role not supported"},
    {"gemma2", {"system-later", "replies-in-a-row"}, "must alternate"},
    {"mistral-small-3.2", {"system-later", "replies-in-a-row"}, "must alternate"},
    {"ministral-3", {"replies-in-a-row"}, "must alternate"},
    {"ministral-3", {"system-later"}, "Only user, assistant and tool roles"},
    {"ministral-3", {"empty-reply"}, "Assistant message must have"},
    {"qwen3.5", {"system-later"}, "System message must be at the beginning"},
};

// Where kvrt deliberately renders less than the template: the template's text is kvrt's with
// `extra` added before it (or after it, `after`). Each matches the cases of a family whose
// conversation is in `conversations` (all when empty) in the variants named (all when empty).
struct Deliberate {
  std::string_view family;
  std::set<std::string_view> conversations;
  std::string_view extra;  // how the added text starts
  bool after;
  std::string_view why;
};

const std::set<std::string_view> kNoSystem = {
    "hello",       "three-turns-no-system", "thinking-held", "thought-channels", "empty-user",
    "empty-reply", "replies-in-a-row",      "system-later",  "unicode-spaces"};

const Deliberate kDeliberate[] = {
    {"granite-3.3", kNoSystem,
     "<|start_of_role|>system<|end_of_role|>Knowledge Cutoff Date: April 2024. Today's Date: ",
     false,
     "the default system message holds today's date: kvrt renders no default, so that a "
     "conversation renders the same every day (pass a system message)"},
    {"mistral-small-3.2", kNoSystem, "[SYSTEM_PROMPT]You are Mistral Small 3", false,
     "the default system message holds today's date, as Granite 3.3's"},
    {"phi3.5",
     {"thinking-held", "history"},
     "<|endoftext|>",
     true,
     "without the assistant's header the template ends with eos_token; kvrt renders the history "
     "the model holds, and its end of turn is <|end|>"},
};

bool matches(const std::set<std::string_view>& names, std::string_view name) {
  return names.empty() || names.contains(name);
}

struct Tally {
  int equal = 0, deliberate = 0, refused = 0;
};

std::string case_name(const Family& f, const Conversation& c, const Variant& v) {
  return std::string(f.name) + "__" + std::string(c.name) + "__" + std::string(v.name);
}

}  // namespace

TEST_CASE("every family renders conversations as its real template does (Jinja2)") {
  const std::string dir = kvrt::test::templates_dir();
  kvrt::test::TempDir tmp;
  std::vector<kvrt::test::OracleCase> cases;
  for (const Family& f : kFamilies) {
    const std::span<const Variant> variants = f.thinking_switch
                                                  ? std::span<const Variant>(kThinkingVariants)
                                                  : std::span<const Variant>(&kDefault, 1);
    for (const Conversation& c : conversations())
      for (const Variant& v : variants)
        cases.push_back({case_name(f, c, v), dir + "/" + std::string(f.jinja),
                         kvrt::test::messages_json(c.messages), "null", std::string(v.kwargs),
                         c.add_assistant, "", std::string(f.eos)});
  }
  const auto rendered = kvrt::test::render_with_jinja(cases, tmp, kDate);

  std::vector<int> refusals_used(std::size(kRefused)), deliberate_used(std::size(kDeliberate));
  Tally tally;
  for (const Family& f : kFamilies) {
    CAPTURE(f.name);
    const auto format =
        ChatTemplate::detect(kvrt::test::read_file(dir + "/" + std::string(f.jinja)));
    REQUIRE(format.has_value());
    CHECK(format->name() == f.format);
    const std::span<const Variant> variants = f.thinking_switch
                                                  ? std::span<const Variant>(kThinkingVariants)
                                                  : std::span<const Variant>(&kDefault, 1);
    for (const Conversation& c : conversations()) {
      for (const Variant& v : variants) {
        const std::string name = case_name(f, c, v);
        CAPTURE(name);
        const kvrt::test::OracleResult& want = rendered.at(name);
        const std::string got = format->apply(c.messages, c.add_assistant, v.options);
        int refusal = -1;
        for (size_t i = 0; i < std::size(kRefused); ++i)
          if (kRefused[i].family == f.name && kRefused[i].conversations.contains(c.name))
            refusal = int(i);
        if (want.refused || refusal >= 0) {
          INFO("the template says: ", want.text);
          REQUIRE(want.refused);
          REQUIRE(refusal >= 0);
          CHECK(want.text.find(kRefused[refusal].because) != std::string::npos);
          ++refusals_used[size_t(refusal)];
          ++tally.refused;
          continue;
        }
        int deliberate = -1;
        for (size_t i = 0; i < std::size(kDeliberate); ++i)
          if (kDeliberate[i].family == f.name && matches(kDeliberate[i].conversations, c.name))
            deliberate = int(i);
        if (deliberate < 0) {
          CHECK(got == want.text);
          ++tally.equal;
          continue;
        }
        const Deliberate& d = kDeliberate[size_t(deliberate)];
        INFO("kvrt: ", got, "\ntemplate: ", want.text);
        REQUIRE(want.text.size() > got.size());
        const std::string extra = d.after ? want.text.substr(got.size())
                                          : want.text.substr(0, want.text.size() - got.size());
        CHECK((d.after ? want.text.starts_with(got) : want.text.ends_with(got)));
        CHECK(extra.starts_with(d.extra));
        ++deliberate_used[size_t(deliberate)];
        ++tally.deliberate;
      }
    }
  }
  for (size_t i = 0; i < std::size(kRefused); ++i) {
    CAPTURE(kRefused[i].family);
    CAPTURE(kRefused[i].because);
    CHECK(refusals_used[i] > 0);
  }
  for (size_t i = 0; i < std::size(kDeliberate); ++i) {
    CAPTURE(kDeliberate[i].family);
    CAPTURE(kDeliberate[i].why);
    CHECK(deliberate_used[i] > 0);
  }
  MESSAGE(cases.size() << " renderings: " << tally.equal << " equal, " << tally.deliberate
                       << " deliberately shorter, " << tally.refused << " refused by the template");
  CHECK(tally.equal > tally.deliberate + tally.refused);
}

namespace {

// A conversation that declares a tool, calls it and reads its result (OpenAI-style: the
// arguments as an object, which the templates print themselves; a 9-character call id, which
// Mistral's templates require).
constexpr std::string_view kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Current weather in a city", "parameters": {"type": "object", "properties":
  {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}])";
constexpr std::string_view kToolMessages = R"([
  {"role": "system", "content": "You are a helpful assistant."},
  {"role": "user", "content": "What is the weather in Paris?"},
  {"role": "assistant", "content": "", "tool_calls": [{"id": "call00001", "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
  {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
   "content": "{\"temperature\": 21}"},
  {"role": "assistant", "content": "It is 21 degrees in Paris."},
  {"role": "user", "content": "Thanks!"}])";

// What each template writes for the tool's declaration, the call and the result; "" where it
// writes nothing of it (the model then writes the call in its reply's text).
struct ToolMarkup {
  std::string_view family;
  std::string_view declaration, call, result;
};

const ToolMarkup kToolMarkup[] = {
    {"qwen2.5", "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "<|im_start|>user\n<tool_response>\n{\"temperature\": 21}\n</tool_response><|im_end|>"},
    {"qwen3", "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "<|im_start|>user\n<tool_response>\n{\"temperature\": 21}\n</tool_response><|im_end|>"},
    {"qwen3.5", "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
     "</tool_call>",
     "<|im_start|>user\n<tool_response>\n{\"temperature\": 21}\n</tool_response><|im_end|>"},
    {"lfm2.5", "List of tools: [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
     "", "<|im_start|>tool\n{\"temperature\": 21}<|im_end|>"},
    {"granite-3.3",
     "<|start_of_role|>available_tools<|end_of_role|>[\n    {\n        \"type\": \"function\"", "",
     "<|start_of_role|>tool<|end_of_role|>{\"temperature\": 21}<|end_of_text|>"},
    {"granite-4.0", "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "<|start_of_role|>user<|end_of_role|>\n<tool_response>\n{\"temperature\": "
     "21}\n</tool_response><|end_of_text|>"},
    {"mistral-small-3.2",
     "[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
     "[TOOL_CALLS]get_weather[CALL_ID]call00001[ARGS]{\"city\": \"Paris\"}</s>",
     "[TOOL_RESULTS]call00001[TOOL_CONTENT]{\"temperature\": 21}[/TOOL_RESULTS]"},
    {"ministral-3",
     "[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
     "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}</s>",
     "[TOOL_RESULTS]{\"temperature\": 21}[/TOOL_RESULTS]"},
    {"llama3.2", "Given the following functions, please respond with a JSON for a function call",
     "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", "
     "\"parameters\": {\"city\": \"Paris\"}}<|eot_id|>",
     "<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temperature\\\": 21}\"<|eot_id|>"},
    {"gemma4",
     "<|tool>declaration:get_weather{description:<|\"|>Current weather in a city<|\"|>,"
     "parameters:{properties:{city:{description:<|\"|>City name<|\"|>,type:<|\"|>STRING<|\"|>}},"
     "required:[<|\"|>city<|\"|>],type:<|\"|>OBJECT<|\"|>}}<tool|>",
     "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
     "<|tool_response>response:get_weather{value:<|\"|>{\"temperature\": "
     "21}<|\"|>}<tool_response|>"},
    // Templates without tools: the declaration and the call vanish.
    {"smollm3", "", "", "<|im_start|>user\n{\"temperature\": 21}<|im_end|>"},
    {"phi3.5", "", "", ""},
};

}  // namespace

TEST_CASE("the oracle renders each template's tools, tool calls and tool results") {
  const std::string dir = kvrt::test::templates_dir();
  kvrt::test::TempDir tmp;
  std::vector<kvrt::test::OracleCase> cases;
  for (const ToolMarkup& t : kToolMarkup) {
    const Family* f = nullptr;
    for (const Family& g : kFamilies)
      if (g.name == t.family) f = &g;
    REQUIRE(f != nullptr);
    cases.push_back({std::string(t.family), dir + "/" + std::string(f->jinja),
                     std::string(kToolMessages), std::string(kTools), "{}", true, "",
                     std::string(f->eos)});
  }
  const auto rendered = kvrt::test::render_with_jinja(cases, tmp, kDate);
  for (const ToolMarkup& t : kToolMarkup) {
    CAPTURE(t.family);
    const kvrt::test::OracleResult& r = rendered.at(std::string(t.family));
    INFO(r.text);
    REQUIRE_FALSE(r.refused);
    for (std::string_view part : {t.declaration, t.call, t.result})
      if (!part.empty()) CHECK(r.text.find(part) != std::string::npos);
    if (t.declaration.empty()) CHECK(r.text.find("City name") == std::string::npos);
    if (t.call.empty()) CHECK(r.text.find("Paris\"") == std::string::npos);
    CHECK(r.text.find("It is 21 degrees in Paris.") != std::string::npos);
  }
}
