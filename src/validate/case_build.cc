// Tokenizing cases and expanding templates for the model at hand.
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "validate/case_set.h"

namespace kvrt::validate {
namespace {

// Tokens of `prompt` and of `answer` as they fall when the two are written one after the other:
// the answer must start on a token boundary (begin it with a space).
void split_answer(const model::Tokenizer& tok, const std::string& prompt, const std::string& answer,
                  const std::string& source, Case& c) {
  std::vector<int32_t> whole = tok.encode(prompt + answer, true);
  std::vector<int32_t> head = tok.encode(prompt, true);
  if (head.size() >= whole.size() || !std::equal(head.begin(), head.end(), whole.begin()))
    throw Error(
        source +
        ": the answer does not start on a token boundary after the text; begin it with a space");
  c.turns = {head};
  c.answer.assign(whole.begin() + long(head.size()), whole.end());
}

// Tokens of the turns of a multi-turn case. With the model's chat format each turn is a user
// message and the assistant's header; the greedy continuation after it stands for the reply, so
// later turns start with the format's end of turn. Without a format, the turns as plain text.
std::vector<std::vector<int32_t>> turn_tokens(const CaseDef& d, const model::Tokenizer& tok,
                                              const model::ChatTemplate* chat) {
  std::vector<std::vector<int32_t>> out;
  std::vector<model::ChatMessage> messages;
  for (size_t i = 0; i < d.turns.size(); ++i) {
    if (!chat) {
      out.push_back(tok.encode(d.turns[i], i == 0));
      continue;
    }
    const size_t n_held = messages.size();
    messages.push_back({"user", d.turns[i]});
    const std::string text = std::string(i == 0 ? "" : chat->end_of_turn()) +
                             chat->apply_continuing(messages, n_held, true);
    out.push_back(tok.encode(text, i == 0, true));
    messages.push_back({"assistant", ""});
  }
  return out;
}

Case from_def(const CaseDef& d, const model::Tokenizer& tok, const model::ChatTemplate* chat) {
  Case c;
  c.id = d.id;
  c.category = d.category;
  c.mode = d.mode;
  c.expect = d.expect;
  c.check = d.check;
  c.n_generate = d.n_generate;
  c.seeds = d.seeds;
  c.temperature = d.temperature;
  if (d.mode == Mode::kRecall) {
    split_answer(tok, d.turns[0], d.answer, d.source, c);
    return c;
  }
  if (!d.instruction.empty()) {
    c.turns = {tok.encode(d.instruction + " " + d.turns[0], true)};
    return c;
  }
  c.turns = turn_tokens(d, tok, d.mode == Mode::kMultiTurn ? chat : nullptr);
  return c;
}

// Filler sentences from `start`, cyclically, until about `budget` tokens, with the fact
// inserted at `position` (fraction of the filler) and the cue at the end.
std::string compose(const TemplateDef& t, const model::Tokenizer& tok, int budget, double position,
                    size_t start, const std::string& value) {
  std::vector<std::string> sentences;
  int n = 0;
  for (size_t i = 0; n < budget; ++i) {
    const std::string& s = t.filler[(start + i) % t.filler.size()];
    n += int(tok.encode(s, false).size());  // SPM's dummy space stands for the separating space
    if (n > budget && !sentences.empty()) break;
    sentences.push_back(s);
  }
  const size_t at = size_t(std::lround(position * double(sentences.size())));
  sentences.insert(sentences.begin() + long(std::min(at, sentences.size())),
                   replace_value(t.fact, value));
  std::string text;
  for (const auto& s : sentences) text += (text.empty() ? "" : " ") + s;
  return text + " " + replace_value(t.cue, value);
}

// A recall template's cases end with the answer teacher-forced; a task template's with the cue,
// its check the one of the case's value.
void expand(const TemplateDef& t, const model::Tokenizer& tok, int max_len,
            std::vector<Case>& out) {
  size_t k = 0;
  for (double length : t.lengths) {
    for (double position : t.positions) {
      const size_t vi = k % t.values.size();
      const std::string& value = t.values[vi];
      const std::string answer = t.mode == Mode::kRecall ? replace_value(t.answer, value) : "";
      const int fixed =
          int(tok.encode(replace_value(t.fact, value) + " " + replace_value(t.cue, value) + answer,
                         true)
                  .size());
      const int target = int(length * max_len) - t.n_generate;
      const int budget = std::max(0, target - fixed);
      Case c;
      c.id = template_case_id(t.id, length, position);
      c.category = t.category;
      c.mode = t.mode;
      c.n_generate = t.n_generate;
      const std::string text = compose(t, tok, budget, position, k * 7, value);
      if (t.mode == Mode::kTask) {
        c.check = t.checks[vi];
        c.turns = {tok.encode(text, true)};
      } else {
        c.expect = value;
        split_answer(tok, text, answer, t.source, c);
      }
      out.push_back(std::move(c));
      ++k;
    }
  }
}

}  // namespace

std::string template_case_id(const std::string& template_id, double length, double position) {
  return template_id + "-L" + std::to_string(int(std::lround(length * 100))) + "-P" +
         std::to_string(int(std::lround(position * 100)));
}

int Case::n_positions() const {
  int n = int(answer.size());
  for (const auto& t : turns) n += int(t.size()) + n_generate;
  if (mode == Mode::kTeacherForced) n -= n_generate * int(turns.size());
  return n;
}

const char* length_bucket(int n_positions, int max_len) {
  if (4 * n_positions <= max_len) return kBuckets[0];
  if (2 * n_positions <= max_len) return kBuckets[1];
  return kBuckets[2];
}

std::vector<Case> build_cases(const CaseSet& set, const model::Tokenizer& tok,
                              const model::ChatTemplate* chat, int max_len,
                              std::vector<std::string>* skipped) {
  std::vector<Case> all;
  for (const CaseDef& d : set.cases) all.push_back(from_def(d, tok, chat));
  for (const TemplateDef& t : set.templates) expand(t, tok, max_len, all);
  std::vector<Case> kept;
  for (Case& c : all) {
    if (c.n_positions() > max_len) {
      if (skipped)
        skipped->push_back(c.id + " (" + std::to_string(c.n_positions()) + " positions)");
      continue;
    }
    c.bucket = length_bucket(c.n_positions(), max_len);
    kept.push_back(std::move(c));
  }
  return kept;
}

}  // namespace kvrt::validate
