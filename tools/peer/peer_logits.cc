// peer_logits: the logits llama.cpp computes for kv_quality's token chunks, a token at a time, with
// a given K/V cache type: raw little-endian float32 [chunks * n][n_vocab], the chunks one after
// another, each in a fresh cache. Built against the peer's libllama by tools/peer/kv_quality.sh
// (never part of kvrt's build). Flash attention is on, as llama.cpp needs it for a quantized V.
//   peer_logits MODEL TOKENS_FILE CACHE_TYPE OUT_FILE [THREADS]
//   (TOKENS_FILE: kv_quality --dump-tokens; CACHE_TYPE: f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1,
//    iq4_nl, or K_TYPE/V_TYPE such as q8_0/q4_0)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

ggml_type parse_type(const std::string& name) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* n = ggml_type_name(ggml_type(t));
    if (n && name == n) return ggml_type(t);
  }
  std::fprintf(stderr, "peer_logits: unknown cache type '%s'\n", name.c_str());
  std::exit(2);
}

std::vector<std::vector<llama_token>> read_chunks(const char* path) {
  std::ifstream in(path);
  std::vector<std::vector<llama_token>> chunks;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    chunks.emplace_back();
    for (llama_token t; ss >> t;) chunks.back().push_back(t);
    if (chunks.back().empty()) chunks.pop_back();
  }
  return chunks;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: peer_logits MODEL TOKENS_FILE CACHE_TYPE OUT_FILE [THREADS]\n");
    return 2;
  }
  const std::string types = argv[3];
  const size_t slash = types.find('/');
  const ggml_type type_k = parse_type(types.substr(0, slash));
  const ggml_type type_v = parse_type(slash == std::string::npos ? types : types.substr(slash + 1));
  const int threads = argc > 5 ? std::atoi(argv[5]) : 1;
  const std::vector<std::vector<llama_token>> chunks = read_chunks(argv[2]);
  if (chunks.empty()) {
    std::fprintf(stderr, "peer_logits: no tokens in '%s'\n", argv[2]);
    return 2;
  }
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!model) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(chunks.front().size());
  cp.n_batch = cp.n_ubatch = 1;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.type_k = type_k;
  cp.type_v = type_v;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  std::ofstream out(argv[4], std::ios::binary);
  for (const auto& chunk : chunks) {
    llama_memory_clear(llama_get_memory(ctx), true);
    for (llama_token t : chunk) {
      llama_token tok = t;
      if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) {
        std::fprintf(stderr, "peer_logits: llama_decode failed\n");
        return 1;
      }
      out.write(reinterpret_cast<const char*>(llama_get_logits_ith(ctx, -1)),
                std::streamsize(n_vocab) * 4);
    }
  }
  llama_free(ctx);
  llama_model_free(model);
  return out.flush() ? 0 : 1;
}
