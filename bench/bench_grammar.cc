// Grammar mask time per token on a real vocabulary: for a few JSON schemas, a valid document is
// generated token by token (at each step the longest allowed token that continues the document,
// as a tokenizer would split it) and every step's mask is timed: as generation gets it (median
// and mean; the mean includes preemption on a loaded machine), and as a whole trie walk without
// the mask cache (best of three per step). Also the allowed tokens per step and the time to
// compile the grammar. Numbers only; it fails nothing.
//   bench_grammar [VOCAB.gguf]   (default: the realistic synthetic model's tokenizer,
//                                 tests/data/vocab/ggml-vocab-llama-spm.gguf, 32000 tokens)
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"
#include "io/gguf.h"
#include "text/tokenizer.h"

#ifndef KVRT_SOURCE_DIR
#error "bench/meson.build defines KVRT_SOURCE_DIR"
#endif

namespace {

using namespace kvrt;
using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  std::string gbnf;
  const char* document;
};

double micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct Stats {
  double mean, p50, p99, max;
};

Stats stats(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  double sum = 0;
  for (double v : t) sum += v;
  const size_t n = t.size();
  return {sum / double(n), t[n / 2], t[std::min(n - 1, n * 99 / 100)], t.back()};
}

// Two matchers take the same tokens: one as generation uses it (masks of states met before are
// copies), one without the mask cache, whose every mask is a whole trie walk (timed as the best
// of three calls, so that preemption on a loaded machine drops out).
void run(const Case& c, const std::shared_ptr<const grammar::Vocabulary>& vocab) {
  const auto t0 = Clock::now();
  auto g = grammar::parse_gbnf(c.gbnf);
  const auto t1 = Clock::now();
  grammar::Matcher m(g, vocab);
  grammar::MatcherLimits no_cache;
  no_cache.cached_masks = 0;
  grammar::Matcher walk(g, vocab, no_cache);
  std::vector<uint64_t> mask(vocab->mask_words());
  std::vector<double> times, walks;
  double allowed = 0;
  const std::string doc = c.document;
  size_t at = 0;
  while (true) {
    const auto a = Clock::now();
    m.fill_mask(mask);
    times.push_back(micros(a, Clock::now()));
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      const auto w = Clock::now();
      walk.fill_mask(mask);
      best = std::min(best, micros(w, Clock::now()));
    }
    walks.push_back(best);
    if (std::getenv("STEPS"))
      std::printf("  step %zu at %zu: %.1f us, walk %.1f us\n", times.size(), at, times.back(),
                  best);
    int32_t pick = -1;
    size_t pick_len = 0;
    for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
      if (!((mask[size_t(id) >> 6] >> (id & 63)) & 1)) continue;
      allowed += 1;
      const std::string_view p = vocab->piece(id);
      if (!p.empty() && p.size() > pick_len && doc.compare(at, p.size(), p) == 0) {
        pick = id;
        pick_len = p.size();
      }
    }
    if (at == doc.size()) break;
    if (pick < 0) {
      std::printf("%-12s the document stops being allowed at byte %zu\n", c.name, at);
      return;
    }
    m.accept(pick);
    walk.accept(pick);
    at += pick_len;
  }
  if (!m.can_end()) std::printf("%-12s the document is not complete\n", c.name);
  const Stats s = stats(times), w = stats(walks);
  std::printf(
      "%-12s %4zu tokens | mask us/token: p50 %6.1f mean %7.1f | whole walk us: p50 %6.1f "
      "mean %6.1f max %6.1f | allowed/step %6.0f | grammar %5.1f ms\n",
      c.name, times.size(), s.p50, s.mean, w.p50, w.mean, w.max, allowed / double(times.size()),
      micros(t0, t1) / 1000);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1]
               : std::string(KVRT_SOURCE_DIR) + "/tests/data/vocab/ggml-vocab-llama-spm.gguf";
  io::GgufFile file(path);
  model::Tokenizer tok(file);
  const auto t0 = Clock::now();
  auto vocab =
      std::make_shared<const grammar::Vocabulary>(grammar::Vocabulary::from_tokenizer(tok));
  std::printf("vocabulary %s: %d tokens, %zu trie nodes, built in %.1f ms\n", path.c_str(),
              vocab->n_vocab(), vocab->nodes().size(), micros(t0, Clock::now()) / 1000);
  const std::vector<Case> cases = {
      {"json_object", grammar::json_object_gbnf(),
       R"({"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "alive": false, "notes": {"first": "the first program", "score": 9.5}})"},
      {"tool-call",
       grammar::schema_to_gbnf(std::string_view(R"({"type": "object", "additionalProperties": false,
         "required": ["name", "arguments"], "properties": {"name": {"enum": ["get_weather", "search", "send_email"]},
         "arguments": {"type": "object", "additionalProperties": false, "required": ["city", "days"],
         "properties": {"city": {"type": "string", "maxLength": 64}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
         "units": {"enum": ["metric", "imperial"]}}}}})")),
       R"({"name": "get_weather", "arguments": {"city": "Saint-Étienne, France", "days": 7, "units": "metric"}})"},
      {"records",
       grammar::schema_to_gbnf(
           std::string_view(R"({"type": "array", "maxItems": 20, "items": {"type": "object",
         "additionalProperties": false, "required": ["id", "date", "title"], "properties": {"id": {"type": "string", "format": "uuid"},
         "date": {"type": "string", "format": "date"}, "title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}}}}})")),
       R"([{"id": "123e4567-e89b-12d3-a456-426614174000", "date": "2024-02-29", "title": "Leap day notes", "tags": ["misc", "calendar"]}, {"id": "00000000-0000-0000-0000-000000000001", "date": "1999-12-31", "title": "Before the millennium"}])"},
      {"free text", "root ::= [^\\x00]*",
       "Once upon a time, there was a little robot who wanted to write valid JSON every day."},
  };
  for (const Case& c : cases) run(c, vocab);
  return 0;
}
