/* Example of the kvrt C API: greedy (or sampled) generation from a prompt, streamed to stdout.
 *
 *   cc -std=c99 generate.c $(pkg-config --cflags --libs kvrt) -o generate
 *   ./generate MODEL.gguf "Once upon a time" [N_CTX] [KV]
 *
 * Generates until the end-of-sequence token or until the N_CTX positions (default 64) are full,
 * prompt included. KV is a KV-cache setting such as "f32" (default), "q8" or
 * "k=q4,v=q8,g=32,axis=token,r=0,rot=0". Memory use, the KV setting and the ISA go to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kvrt/kvrt.h>

static int print_piece(const char* piece, size_t len, int32_t token, void* user_data) {
  (void)token;
  (void)user_data;
  fwrite(piece, 1, len, stdout);
  fflush(stdout);
  return 0;
}

static int check(kvrt_status status, const char* what) {
  if (status == KVRT_OK) return 1;
  fprintf(stderr, "generate: %s failed: %s: %s\n", what, kvrt_status_name(status),
          kvrt_last_error());
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL PROMPT [N_CTX] [KV]\n", argv[0]);
    return 2;
  }
  const char* prompt = argv[2];
  kvrt_model* model = NULL;
  kvrt_session* session = NULL;
  kvrt_sampler* sampler = NULL;
  int32_t* tokens = NULL;
  int rc = 1;
  kvrt_session_options options;
  kvrt_session_options_default(&options);
  options.n_ctx = argc > 3 ? atoi(argv[3]) : 64;
  options.max_memory_bytes = 64u << 20; /* refuse anything over 64 MiB up front */
  if (!check(kvrt_kv_config_parse(argc > 4 ? argv[4] : "f32", &options.kv), "KV setting")) return 2;
  if (!check(kvrt_model_open(argv[1], &model), "opening the model")) return 2;

  size_t n_tokens = 0;
  kvrt_tokenize(model, prompt, strlen(prompt), 1, NULL, 0, &n_tokens); /* asks for the size */
  tokens = malloc(n_tokens * sizeof *tokens);
  kvrt_sampler_options sampling;
  kvrt_sampler_options_default(&sampling);
  if (tokens &&
      check(kvrt_tokenize(model, prompt, strlen(prompt), 1, tokens, n_tokens, &n_tokens),
            "tokenize") &&
      check(kvrt_session_create(model, &options, &session), "creating the session") &&
      check(kvrt_session_eval(session, tokens, n_tokens), "prefill") &&
      check(kvrt_sampler_create(model, &sampling, &sampler), "creating the sampler")) {
    fputs(prompt, stdout);
    int32_t n_generated = 0;
    kvrt_status st = kvrt_generate(session, sampler, 1 << 20, print_piece, NULL, &n_generated);
    fputc('\n', stdout);
    kvrt_session_info info;
    kvrt_session_get_info(session, &info);
    if (st == KVRT_ERR_CONTEXT_FULL)
      fprintf(stderr, "generate: context full after %d positions\n", (int)info.n_past);
    fprintf(stderr, "generate: %d tokens, KV %s, %llu bytes allocated, ISA %s\n", (int)n_generated,
            info.kv_setting, (unsigned long long)info.bytes_allocated, kvrt_isa_name());
    rc = (st == KVRT_OK || st == KVRT_ERR_CONTEXT_FULL) ? 0 : (check(st, "generate"), 1);
  }
  kvrt_sampler_free(sampler);
  kvrt_session_free(session);
  kvrt_model_free(model);
  free(tokens);
  return rc;
}
