// canary_eval: the kvrt side of the canary model's recipe, on the public C API.
//   stories  sample stories from a model (the training text comes from stories260K)
//   tokens   token ids of texts, to check models/canary/spm.py against kvrt's tokenizer
//   nll      mean negative log-likelihood per text, to check an export against torch
//   token-nll  the negative log-likelihood of every token of each text (check_export.py)
//   recall   greedy continuation of each retrieval prompt, compared with its answer
// Inputs and outputs are records (models/canary/records.h); see models/canary/README.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "kvrt/kvrt.h"
#include "models/canary/records.h"

namespace kvrt::canary {
namespace {

constexpr const char* kUsage =
    "usage: canary_eval stories -m MODEL -n N [--seed S] [--temp T] [--max-tokens M]\n"
    "       canary_eval tokens  -m MODEL -i TEXTS\n"
    "       canary_eval nll     -m MODEL -i TEXTS [--kv SETTING] [--threads T]\n"
    "       canary_eval token-nll -m MODEL -i TEXTS [--kv SETTING] [--threads T]\n"
    "       canary_eval recall  -m MODEL -i CASES [--kv SETTING] [--threads T]\n"
    "TEXTS records: id, text. CASES records: id, distance, prompt, answer. Results go to stdout\n"
    "as records: stories (id, text), tokens (id, ids), nll (id, n_tokens, mean nll in nats),\n"
    "token-nll (id, the nll of tokens 1.. in nats, space-separated),\n"
    "recall (id, distance, 1 if the greedy continuation starts with the answer's tokens, text).\n";

struct Options {
  std::string mode, model, input, kv = "f32";
  int n = 0, max_tokens = 512, threads = 1;
  uint64_t seed = 1;
  float temp = 1.0f;
};

void check(kvrt_status st, const std::string& what) {
  if (st != KVRT_OK) throw Error(what + ": " + kvrt_last_error());
}

int parse_int(const std::string& flag, const char* v) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x < 0 || x > (1 << 30))
    throw Error(flag + " needs a non-negative integer, got '" + v + "'", ErrorKind::kUsage);
  return int(x);
}

Options parse_args(int argc, char** argv) {
  if (argc < 2) throw Error("no mode given", ErrorKind::kUsage);
  Options o;
  o.mode = argv[1];
  for (int i = 2; i < argc; i += 2) {
    const std::string f = argv[i];
    if (i + 1 >= argc) throw Error("flag " + f + " needs a value", ErrorKind::kUsage);
    const char* v = argv[i + 1];
    if (f == "-m") o.model = v;
    else if (f == "-i") o.input = v;
    else if (f == "--kv") o.kv = v;
    else if (f == "-n") o.n = parse_int(f, v);
    else if (f == "--max-tokens") o.max_tokens = parse_int(f, v);
    else if (f == "--threads") o.threads = parse_int(f, v);
    else if (f == "--seed") o.seed = uint64_t(parse_int(f, v));
    else if (f == "--temp") o.temp = std::strtof(v, nullptr);
    else throw Error("unknown flag '" + f + "'", ErrorKind::kUsage);
  }
  if (o.model.empty()) throw Error("no model given (-m MODEL)", ErrorKind::kUsage);
  if (o.mode != "stories" && o.input.empty())
    throw Error("no input given (-i FILE)", ErrorKind::kUsage);
  return o;
}

// Owns the model, one session and one sampler; freed in reverse order.
class Runner {
 public:
  Runner(const Options& o, float temperature, uint64_t seed) {
    check(kvrt_model_open(o.model.c_str(), &model_), "opening " + o.model);
    kvrt_session_options so;
    kvrt_session_options_default(&so);
    so.n_threads = o.threads;
    check(kvrt_kv_config_parse(o.kv.c_str(), &so.kv), "KV setting '" + o.kv + "'");
    check(kvrt_session_create(model_, &so, &session_), "creating a session");
    kvrt_sampler_options sp;
    kvrt_sampler_options_default(&sp);
    sp.temperature = temperature;
    sp.seed = seed;
    check(kvrt_sampler_create(model_, &sp, &sampler_), "creating a sampler");
  }
  ~Runner() {
    kvrt_sampler_free(sampler_);
    kvrt_session_free(session_);
    kvrt_model_free(model_);
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  std::vector<int32_t> tokenize(const std::string& text, bool bos) const {
    size_t n = 0;
    kvrt_tokenize(model_, text.data(), text.size(), bos, nullptr, 0, &n);
    std::vector<int32_t> ids(n);
    check(kvrt_tokenize(model_, text.data(), text.size(), bos, ids.data(), n, &n), "tokenizing");
    return ids;
  }
  std::string detokenize(const std::vector<int32_t>& ids) const {
    size_t len = 0;
    kvrt_detokenize(model_, ids.data(), ids.size(), nullptr, 0, &len);
    std::string s(len + 1, '\0');
    check(kvrt_detokenize(model_, ids.data(), ids.size(), s.data(), s.size(), &len),
          "detokenizing");
    s.resize(len);
    return s;
  }
  void reset() { check(kvrt_session_reset(session_), "resetting the session"); }
  void eval(const int32_t* ids, size_t n) { check(kvrt_session_eval(session_, ids, n), "eval"); }
  const float* logits() const {
    const float* l = nullptr;
    int32_t n_vocab = 0;
    check(kvrt_session_logits(session_, &l, &n_vocab), "logits");
    return l;
  }
  int n_vocab() const {
    kvrt_model_info info;
    check(kvrt_model_get_info(model_, &info), "model info");
    return info.n_vocab;
  }
  int32_t decode() {
    int32_t t = 0;
    check(kvrt_session_decode(session_, sampler_, &t), "decode");
    return t;
  }
  kvrt_session* session() { return session_; }
  kvrt_sampler* sampler() { return sampler_; }

 private:
  kvrt_model* model_ = nullptr;
  kvrt_session* session_ = nullptr;
  kvrt_sampler* sampler_ = nullptr;
};

void print_record(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "\t" : "") + escape_field(fields[i]);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
}

int append_piece(const char* piece, size_t len, int32_t, void* user) {
  static_cast<std::string*>(user)->append(piece, len);
  return 0;
}

// Story i is sampled from BOS with seed (seed + i): any story can be regenerated alone.
void run_stories(const Options& o) {
  for (int i = 0; i < o.n; ++i) {
    Runner r(o, o.temp, o.seed + uint64_t(i));
    const int32_t bos = r.tokenize("", true).at(0);
    r.eval(&bos, 1);
    std::string text;
    const kvrt_status st =
        kvrt_generate(r.session(), r.sampler(), o.max_tokens, append_piece, &text, nullptr);
    if (st != KVRT_OK && st != KVRT_ERR_CONTEXT_FULL)
      check(st, "generating story " + std::to_string(i));
    print_record({std::to_string(o.seed + uint64_t(i)), text});
  }
}

void run_tokens(const Options& o) {
  Runner r(o, 0.0f, 0);
  for (const Record& rec : read_records(o.input, 2)) {
    std::string ids;
    for (int32_t t : r.tokenize(rec[1], false)) ids += (ids.empty() ? "" : " ") + std::to_string(t);
    print_record({rec[0], ids});
  }
}

// -log softmax(logits)[target], in double.
double token_nll(const float* logits, int n_vocab, int32_t target) {
  float max = logits[0];
  for (int i = 1; i < n_vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - max);
  return std::log(sum) + max - double(logits[target]);
}

// Each text from BOS, one token per eval: the logits that predict token t + 1 come from the
// decode path with t + 1 positions in the cache. per_token: every token's NLL, else the mean.
void run_nll(const Options& o, bool per_token) {
  Runner r(o, 0.0f, 0);
  const int n_vocab = r.n_vocab();
  double total = 0.0;
  long n_total = 0;
  for (const Record& rec : read_records(o.input, 2)) {
    const std::vector<int32_t> ids = r.tokenize(rec[1], true);
    r.reset();
    double sum = 0.0;
    std::string tokens;
    for (size_t t = 0; t + 1 < ids.size(); ++t) {
      r.eval(&ids[t], 1);
      const double nll = token_nll(r.logits(), n_vocab, ids[t + 1]);
      sum += nll;
      if (!per_token) continue;
      char one[32];
      std::snprintf(one, sizeof one, "%s%.6f", tokens.empty() ? "" : " ", nll);
      tokens += one;
    }
    const long n = long(ids.size()) - 1;
    total += sum;
    n_total += n;
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.6f", n > 0 ? sum / double(n) : 0.0);
    print_record(per_token ? std::vector<std::string>{rec[0], tokens}
                           : std::vector<std::string>{rec[0], std::to_string(n), mean});
  }
  std::fprintf(stderr, "canary_eval nll: %ld tokens, mean %.6f nats/token\n", n_total,
               n_total ? total / double(n_total) : 0.0);
}

// The answer's tokens are those of prompt + answer after the prompt's (the answer starts with a
// space, where SentencePiece never merges across); the case passes when the greedy continuation
// starts with exactly those tokens.
void run_recall(const Options& o) {
  Runner r(o, 0.0f, 0);
  int n_pass = 0, n_cases = 0;
  for (const Record& rec : read_records(o.input, 4)) {
    const std::vector<int32_t> prompt = r.tokenize(rec[2], true);
    const std::vector<int32_t> full = r.tokenize(rec[2] + rec[3], true);
    if (full.size() <= prompt.size() || !std::equal(prompt.begin(), prompt.end(), full.begin()))
      throw Error("case " + rec[0] + ": the prompt's tokens are not a prefix of prompt + answer");
    const std::vector<int32_t> answer(full.begin() + long(prompt.size()), full.end());
    r.reset();
    r.eval(prompt.data(), prompt.size());
    std::vector<int32_t> got;
    for (size_t i = 0; i < answer.size(); ++i) got.push_back(r.decode());
    const bool pass = got == answer;
    n_pass += pass;
    ++n_cases;
    print_record({rec[0], rec[1], pass ? "1" : "0", r.detokenize(got)});
  }
  std::fprintf(stderr, "canary_eval recall: %d of %d cases (%s cache)\n", n_pass, n_cases,
               o.kv.c_str());
}

}  // namespace
}  // namespace kvrt::canary

int main(int argc, char** argv) {
  using namespace kvrt::canary;
  try {
    const Options o = parse_args(argc, argv);
    if (o.mode == "stories") run_stories(o);
    else if (o.mode == "tokens") run_tokens(o);
    else if (o.mode == "nll") run_nll(o, false);
    else if (o.mode == "token-nll") run_nll(o, true);
    else if (o.mode == "recall") run_recall(o);
    else throw kvrt::Error("unknown mode '" + o.mode + "'", kvrt::ErrorKind::kUsage);
    return 0;
  } catch (const kvrt::Error& e) {
    std::fprintf(stderr, "canary_eval: %s\n", e.what());
    if (e.kind() == kvrt::ErrorKind::kUsage) std::fputs(kUsage, stderr);
    return e.kind() == kvrt::ErrorKind::kUsage ? 2 : 1;
  }
}
