// peer_tokenize: llama.cpp's token ids for every string of a tokenizer test file, as
// `llama-tokenize --no-bos --no-parse-special --ids` prints them (the same llama_tokenize call,
// without BOS/EOS and without special-token parsing), one line of " id id ..." per string.
// Built against the peer's libllama by tools/peer/vocab_vectors.sh (never part of kvrt's build).
//   peer_tokenize VOCAB.gguf INP_FILE OUT_FILE
//   (INP_FILE: strings separated by "\n__ggml_vocab_test__\n", the file ending with one)
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: peer_tokenize VOCAB.gguf INP_FILE OUT_FILE\n");
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "peer_tokenize: cannot read '%s'\n", argv[2]);
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string raw = ss.str(), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> strings;
  for (size_t pos = 0, next; (next = raw.find(sep, pos)) != std::string::npos;
       pos = next + sep.size())
    strings.push_back(raw.substr(pos, next - pos));
  if (strings.empty()) {
    std::fprintf(stderr, "peer_tokenize: no test strings in '%s'\n", argv[2]);
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "peer_tokenize: cannot load '%s'\n", argv[1]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ofstream out(argv[3]);
  for (const std::string& s : strings) {
    std::vector<llama_token> ids(s.size() + 8);
    int n = llama_tokenize(vocab, s.data(), int32_t(s.size()), ids.data(), int32_t(ids.size()),
                           false, false);
    if (n < 0) {
      ids.resize(size_t(-n));
      n = llama_tokenize(vocab, s.data(), int32_t(s.size()), ids.data(), int32_t(ids.size()), false,
                         false);
    }
    for (int i = 0; i < n; ++i) out << ' ' << ids[size_t(i)];
    out << '\n';
  }
  llama_model_free(model);
  return out.flush() ? 0 : 1;
}
