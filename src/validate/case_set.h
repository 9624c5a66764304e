// The acceptance set: cases as data. A case directory holds manifest.toml ([[case]] entries and
// [[template]] entries) and the text files they name. Templates are expanded against the model:
// their lengths are fractions of the usable context, so the same set scales from a 512-token
// toy model to long-context models. See validation/cases/manifest.toml for the format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "validate/task_check.h"

namespace kvrt::validate {

enum class Mode : uint8_t {
  kTeacherForced,  // the text is fed once; per-token metrics only
  kGreedy,         // prompt, then greedy continuation compared with the baseline's
  kRecall,     // prompt + answer teacher-forced; the answer must appear in the greedy continuation
  kMultiTurn,  // each turn appended to the same cache, each followed by a greedy continuation;
               // turns are user messages in the model's chat format when it has one
  kSampling,   // the prompt sampled with several seeds at a fixed temperature
  kTask,       // prompt, then every session's own greedy continuation, passed or failed by a
               // task check (validate/task_check.h)
};

const char* mode_name(Mode m);

// One [[case]] as written in a manifest.
struct CaseDef {
  std::string id, category, source;  // source: "FILE:LINE" for messages
  Mode mode = Mode::kTeacherForced;
  std::vector<std::string> turns;  // the prompt (one entry), or the turns of a multi-turn case
  std::string answer;              // recall: teacher-forced after the prompt
  std::string expect;              // recall: text the continuation must contain
  std::optional<TaskCheck> check;  // task
  std::string instruction;         // task, constraint check: put before the text
  int n_generate = 0;              // tokens generated after the prompt (after each turn)
  std::vector<uint64_t> seeds;     // sampling
  double temperature = 0.8;        // sampling
};

// One [[template]]: a fact placed at a swept position inside filler text of swept length, then a
// cue whose continuation should repeat the fact's value (recall), or pass a constraint check on
// the instruction put where the fact would be (task).
struct TemplateDef {
  std::string id, category, source;
  Mode mode = Mode::kRecall;
  std::string fact, cue,
      answer;  // "{value}" is replaced by one of `values`; task: fact is the instruction
  std::vector<std::string> values;
  std::vector<TaskCheck> checks;    // task: [values] the check with that value in its pattern
  std::vector<std::string> filler;  // sentences, used in turn
  std::vector<double> lengths;      // total positions as fractions of the usable context
  std::vector<double> positions;    // where the fact sits in the filler, 0 = start, 1 = end
  int n_generate = 12;
};

struct CaseSet {
  std::vector<std::string> dirs;
  std::vector<CaseDef> cases;
  std::vector<TemplateDef> templates;
  std::string sha256;  // over every manifest and text file read, in order (not their paths)
};

// Bounds on what a case set may make before any work: cases one template expands to (lengths x
// positions), cases all templates expand to, and the bytes of every text file the set reads.
constexpr size_t kMaxTemplateCases = 256;
constexpr size_t kMaxExpandedCases = 1024;
constexpr size_t kMaxCaseTextBytes = size_t(64) << 20;

// The id of a template's case at a length and position: "ID-L<length %>-P<position %>".
std::string template_case_id(const std::string& template_id, double length, double position);

// `s` with every "{value}" replaced by `value`.
std::string replace_value(std::string s, const std::string& value);

// Reads manifest.toml of each directory in order. Errors name the file and line; a duplicate
// id anywhere in the set (the ids templates expand to included), a text file outside its case
// directory and a set over the bounds above are errors.
CaseSet load_case_set(const std::vector<std::string>& dirs);

// A concrete case ready to run: tokens for the model at hand.
struct Case {
  std::string id, category, bucket;
  Mode mode = Mode::kTeacherForced;
  std::vector<std::vector<int32_t>> turns;  // the first turn starts with BOS
  std::vector<int32_t> answer;              // recall: follows turns[0]
  std::string expect;
  std::optional<TaskCheck> check;  // task
  int n_generate = 0;
  std::vector<uint64_t> seeds;
  double temperature = 0.8;

  int n_positions() const;  // positions the case occupies in the cache
};

// Length buckets by share of the usable context: short <= 1/4, medium <= 1/2, long above.
const char* length_bucket(int n_positions, int max_len);
constexpr const char* kBuckets[] = {"short", "medium", "long"};

// Tokenizes the cases and expands the templates for a usable context of max_len positions.
// Multi-turn cases use the model's chat format when `chat` is given (turns as user messages).
// Cases that do not fit in max_len are left out and named in `skipped`.
std::vector<Case> build_cases(const CaseSet& set, const model::Tokenizer& tok,
                              const model::ChatTemplate* chat, int max_len,
                              std::vector<std::string>* skipped);

}  // namespace kvrt::validate
