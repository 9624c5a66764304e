// kv_quality: what each KV setting costs in output quality, side by side with a peer's caches.
// For a model and a text, each chunk of n tokens is run one token at a time with the FP32 cache
// and with each setting; the table gives, per setting, the mean KL(FP32 || setting) of the
// next-token distributions over every position (nats), the fraction of positions whose top-1
// token agrees, and the cache's bits per stored K/V value. Numbers only; nothing here fails.
//
// Peer rows: logits files of another runtime (raw little-endian float32, [n_tokens][n_vocab], the
// chunks' positions one after another) go through the same metrics against the peer's own FP32
// run (--peer-ref), e.g. llama.cpp's caches made by tools/peer/peer_logits.
//
//   kv_quality -m MODEL --text FILE [--chunks 4] [-n 960] [--settings "q8;q4,rot=1"] [-t 2]
//              [--dump-tokens FILE] [--peer-ref FILE --peer LABEL,BITS,FILE ...] [--json FILE]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/kv_config.h"
#include "model/model.h"
#include "model/session.h"
#include "validate/metrics.h"
#include "validate/report.h"

namespace {

using namespace kvrt;

constexpr const char* kUsage =
    "usage: kv_quality -m MODEL --text FILE [--chunks 4] [-n 960] [--settings LIST] [-t 2]\n"
    "                  [--dump-tokens FILE] [--peer-ref FILE --peer LABEL,BITS,FILE ...] [--json "
    "FILE]\n"
    "Mean KL to the FP32 cache's next-token distributions, top-1 agreement and bits per K/V value\n"
    "of each KV setting (LIST: settings separated by ';', default the quality ladder), a token at "
    "a\n"
    "time over CHUNKS chunks of N tokens of the text (each chunk starts with BOS). --dump-tokens\n"
    "writes the chunks' token ids (one chunk a line) for a peer to run the same tokens. Peer rows\n"
    "read float32 logits files [chunks * N][n_vocab] and compare them with --peer-ref's.\n";

// Each setting without and with rotation (the default of a quantized setting), the q4n ones
// rotated only (the grid fits rotated values), then four at 3.5 bits/value or less: q4 or q4s
// channel keys and q2 values in groups of 64, and q3 channel keys and values in groups of 32 and
// 64, with the FP32 window.
constexpr const char* kDefaultSettings =
    "q8,rot=0;q8;k=q8,v=q4s,rot=0;k=q8,v=q4s;k=q8,v=q4n;q4,rot=0;q4;q4s,rot=0;q4s;q4n;"
    "q4,axis=channel,r=32,rot=0;q4,axis=channel,r=32;q4s,axis=channel,rot=0;q4s,axis=channel;"
    "q4n,axis=channel;k=q4s,v=q4n,axis=channel;"
    "q2,axis=channel,r=128,rot=0;q2,axis=channel,r=128;"
    "k=q4,v=q2,g=64,axis=channel,r=32;k=q4s,v=q2,g=64,axis=channel,r=32;"
    "q3,axis=channel,r=32;q3,g=64,axis=channel,r=32";

struct Peer {
  std::string label;
  double bits = 0;
  std::string path;
};

struct Args {
  std::string model, text, settings = kDefaultSettings, dump_tokens, peer_ref, json;
  int chunks = 4, n = 960, threads = 2;
  std::vector<Peer> peers;
};

int parse_int(const std::string& flag, const std::string& v, int lo, int hi) {
  size_t used = 0;
  long x = 0;
  try {
    x = std::stol(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || x < lo || x > hi)
    throw Error(flag + " needs an integer from " + std::to_string(lo) + " to " +
                    std::to_string(hi) + ", got '" + v + "'",
                ErrorKind::kUsage);
  return int(x);
}

Peer parse_peer(const std::string& v) {
  const size_t a = v.find(','), b = a == std::string::npos ? a : v.find(',', a + 1);
  if (b == std::string::npos)
    throw Error("--peer needs LABEL,BITS,FILE, got '" + v + "'", ErrorKind::kUsage);
  Peer p{v.substr(0, a), 0, v.substr(b + 1)};
  try {
    p.bits = std::stod(v.substr(a + 1, b - a - 1));
  } catch (const std::exception&) {
    throw Error("--peer: BITS of '" + v + "' is not a number", ErrorKind::kUsage);
  }
  return p;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "-h" || f == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc)
      throw Error("flag '" + f + "' needs a value (see --help)", ErrorKind::kUsage);
    const std::string v = argv[++i];
    if (f == "-m") a.model = v;
    else if (f == "--text") a.text = v;
    else if (f == "--chunks") a.chunks = parse_int(f, v, 1, 1000);
    else if (f == "-n") a.n = parse_int(f, v, 2, 1 << 20);
    else if (f == "--settings") a.settings = v;
    else if (f == "-t") a.threads = parse_int(f, v, 1, model::kMaxThreads);
    else if (f == "--dump-tokens") a.dump_tokens = v;
    else if (f == "--peer-ref") a.peer_ref = v;
    else if (f == "--peer") a.peers.push_back(parse_peer(v));
    else if (f == "--json") a.json = v;
    else throw Error("unknown flag '" + f + "' (see --help)", ErrorKind::kUsage);
  }
  if (a.model.empty() || a.text.empty())
    throw Error("-m MODEL and --text FILE are required", ErrorKind::kUsage);
  if (!a.peers.empty() && a.peer_ref.empty())
    throw Error("--peer needs --peer-ref, the peer's FP32 logits", ErrorKind::kUsage);
  return a;
}

// The text's tokens cut into chunks of n, each led by BOS: [chunks][n]. Only as much of the text as
// the chunks need is tokenized (a prefix of a few bytes per token, doubled until it is enough).
std::vector<std::vector<int32_t>> chunk_tokens(const model::Model& m, const Args& a) {
  std::ifstream in(a.text, std::ios::binary);
  if (!in) throw Error("cannot read the text file '" + a.text + "'", ErrorKind::kUsage);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const size_t per = size_t(a.n - 1), need = per * size_t(a.chunks);
  std::vector<int32_t> all;
  for (size_t bytes = need * 6; all.size() < need; bytes *= 2) {
    all = m.tokenizer().encode(std::string_view(text).substr(0, bytes), false);
    if (bytes >= text.size()) break;
  }
  if (all.size() < need)
    throw Error("the text has " + std::to_string(all.size()) + " tokens; " +
                    std::to_string(a.chunks) + " chunks of " + std::to_string(a.n) + " need " +
                    std::to_string(need),
                ErrorKind::kUsage);
  std::vector<std::vector<int32_t>> chunks(size_t(a.chunks));
  for (size_t c = 0; c < chunks.size(); ++c) {
    chunks[c].push_back(m.tokenizer().bos_id());
    chunks[c].insert(chunks[c].end(), all.begin() + long(c * per),
                     all.begin() + long((c + 1) * per));
  }
  return chunks;
}

// Logits of every position of a chunk, a token at a time (the decode path): [n][n_vocab].
std::vector<float> run_chunk(const model::Model& m, const kv::KvConfig& kv,
                             const std::vector<int32_t>& tokens, int threads) {
  model::SessionOptions o;
  o.n_ctx = int(tokens.size());
  o.n_threads = threads;
  o.kv = kv;
  model::Session s(m, o);
  const size_t n_vocab = size_t(m.config().n_vocab);
  std::vector<float> out(tokens.size() * n_vocab);
  for (size_t i = 0; i < tokens.size(); ++i) s.eval(&tokens[i], 1, &out[i * n_vocab]);
  return out;
}

struct Row {
  std::string label;
  double bits = 0, mean_kl = 0, top1 = 0;
};

// KL and top-1 agreement of `test` against `ref`, positions [n_positions][n_vocab], added to sums.
void score(const float* ref, const float* test, size_t n_positions, int n_vocab,
           validate::TokenSums& sums) {
  for (size_t p = 0; p < n_positions; ++p) {
    const validate::Reference r = validate::reference_of(ref + p * size_t(n_vocab), n_vocab);
    validate::score_position(r, test + p * size_t(n_vocab), n_vocab, -1, sums);
  }
}

Row finish(std::string label, double bits, const validate::TokenSums& s) {
  return {std::move(label), bits, s.kl / double(s.n_positions),
          1.0 - s.top1_mismatch / double(s.n_positions)};
}

std::vector<float> read_logits(const std::string& path, size_t n_floats) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot read the logits file '" + path + "'", ErrorKind::kUsage);
  const auto size = size_t(in.tellg());
  if (size != n_floats * sizeof(float))
    throw Error("logits file '" + path + "' has " + std::to_string(size) +
                    " bytes; chunks x n x n_vocab float32 is " +
                    std::to_string(n_floats * sizeof(float)),
                ErrorKind::kUsage);
  std::vector<float> x(n_floats);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(x.data()), std::streamsize(size));
  return x;
}

// Bits per stored K/V value of a setting: the cache's bytes per position over its values.
double bits_per_value(const model::Model& m, const kv::KvConfig& kv, int n_ctx) {
  model::SessionOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = 1;
  o.kv = kv;
  const model::Session s(m, o);
  const model::ModelConfig& c = m.config();
  return s.kv_cache().bytes_per_token() * 8.0 / (2.0 * c.n_layers * c.n_kv_heads * c.head_dim);
}

// The table as JSON: the run (model, text, chunks, n) and one object per row (tools/results.sh
// renders it).
void print(const Args& a, const std::vector<Row>& rows, const std::string& json_path) {
  std::printf("%-40s %10s %12s %10s\n", "setting", "bits/value", "mean KL", "top-1");
  for (const Row& r : rows)
    std::printf("%-40s %10.2f %12.3g %10.4f\n", r.label.c_str(), r.bits, r.mean_kl, r.top1);
  if (json_path.empty()) return;
  std::ofstream out(json_path);
  out << "{\"model\": " << validate::json_quote(a.model)
      << ", \"text\": " << validate::json_quote(a.text) << ", \"chunks\": " << a.chunks
      << ", \"n\": " << a.n << ",\n \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i)
    out << "  {\"setting\": " << validate::json_quote(rows[i].label)
        << ", \"bits_per_value\": " << rows[i].bits << ", \"mean_kl\": " << rows[i].mean_kl
        << ", \"top1\": " << rows[i].top1 << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  out << "]}\n";
  if (!out.flush()) throw Error("cannot write '" + json_path + "'");
}

int run(const Args& a) {
  const model::Model m(a.model);
  const int n_vocab = m.config().n_vocab;
  const std::vector<std::vector<int32_t>> chunks = chunk_tokens(m, a);
  if (!a.dump_tokens.empty()) {
    std::ofstream out(a.dump_tokens);
    for (const auto& c : chunks) {
      for (size_t i = 0; i < c.size(); ++i) out << (i ? " " : "") << c[i];
      out << "\n";
    }
    if (!out.flush()) throw Error("cannot write '" + a.dump_tokens + "'");
  }
  // Settings this model cannot store (a group that does not divide its head_dim, ...) are left
  // out with the reason, so the default list runs on any model.
  std::vector<kv::SettingText> settings;
  for (kv::SettingText& s : kv::parse_setting_list(a.settings)) {
    try {
      bits_per_value(m, s.config, a.n);
      settings.push_back(std::move(s));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kUsage) throw;
      std::fprintf(stderr, "kv_quality: skipped %s: %s\n", s.text.c_str(), e.what());
    }
  }
  std::vector<validate::TokenSums> sums(settings.size());
  for (const auto& chunk : chunks) {
    const std::vector<float> ref = run_chunk(m, kv::KvConfig{}, chunk, a.threads);
    for (size_t i = 0; i < settings.size(); ++i) {
      const std::vector<float> test = run_chunk(m, settings[i].config, chunk, a.threads);
      score(ref.data(), test.data(), chunk.size(), n_vocab, sums[i]);
    }
  }
  std::vector<Row> rows;
  for (size_t i = 0; i < settings.size(); ++i)
    rows.push_back(
        finish("kvrt " + settings[i].text, bits_per_value(m, settings[i].config, a.n), sums[i]));
  if (!a.peers.empty()) {
    const size_t n_floats = size_t(a.chunks) * size_t(a.n) * size_t(n_vocab);
    const std::vector<float> ref = read_logits(a.peer_ref, n_floats);
    for (const Peer& p : a.peers) {
      validate::TokenSums s;
      score(ref.data(), read_logits(p.path, n_floats).data(), size_t(a.chunks) * size_t(a.n),
            n_vocab, s);
      rows.push_back(finish("peer " + p.label, p.bits, s));
    }
  }
  std::printf("kv_quality: %s, %d chunks x %d tokens, a token at a time, KL to the FP32 cache\n",
              a.model.c_str(), a.chunks, a.n);
  print(a, rows, a.json);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const Error& e) {
    std::fprintf(stderr, "kv_quality: error: %s\n", e.what());
    return e.kind() == ErrorKind::kUsage ? 2 : 1;
  }
}
