/* kvrt — the stable C API (C99 and C++ compatible).
 *
 * Everything an embedder needs: open a GGUF model, create a session with a KV-cache setting and a
 * memory cap, tokenize, prefill, decode or generate with a sampler, render chat templates, read
 * logits, query memory and the SIMD instruction set in use, check a validation record, run
 * validation, and open sessions with the settings `kvrt tune` named in a record. The C++ classes
 * under src/ are private and unstable; this header is the only stable interface (KVRT_API_VERSION
 * changes when it does).
 *
 * Conventions
 *  - Every fallible call returns a kvrt_status. On failure, kvrt_last_error() gives one sentence
 *    (thread-local, valid until the next kvrt call on the same thread). No C++ exception ever
 *    leaves a kvrt_* function.
 *  - Threads: a kvrt_model is immutable once opened; any number of sessions, in any threads, may
 *    share it (tests/test_c_api.cc runs concurrent sessions on one model against one thread's
 * tokens). A kvrt_session, kvrt_sampler or kvrt_validation belongs to one thread at a time: use one
 *    session per thread, or serialize the calls on it. A call on a session or sampler while
 *    another thread is inside a call on it fails at once with KVRT_ERR_IN_USE and changes nothing
 *    (a call from the same thread, e.g. from a generation callback, goes ahead); freeing a handle
 *    another thread is using cannot be detected. kvrt_last_error() is per thread.
 *  - OpenMP: a session runs its parallel regions with its own n_threads and restores the calling
 *    thread's OpenMP settings (omp_get_max_threads() is the same after every kvrt call).
 *  - Handles are opaque. Free sessions and samplers before the model they were created from.
 *    Freeing a handle twice, or using it after it was freed, is a caller error that kvrt cannot
 *    detect (undefined behaviour, as for free()).
 *  - Memory: a session allocates everything for its context length at creation
 *    (kvrt_session_create); eval, decode and generate allocate nothing that persists, so memory
 *    does not grow during decode.
 *  - Context policy: a call that would put more tokens in the session than n_ctx returns
 *    KVRT_ERR_CONTEXT_FULL and leaves the session unchanged; there is no silent sliding window.
 *    Call kvrt_session_reset() to start over.
 *
 * Link: pkg-config --cflags --libs kvrt (shared), or pkg-config --static --cflags --libs kvrt.
 */
#ifndef KVRT_KVRT_H
#define KVRT_KVRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: chat formats (kvrt_chat_format, kvrt_chat_apply_template), kvrt_tokenize_special,
 *    kvrt_token_is_end_of_generation and kvrt_generate_until; additions only, so programs
 *    written for version 1 build and run unchanged.
 * 3: kvrt_sampler_sample takes the logits' length (n_logits), so a sampler made for another
 *    model is an error instead of a read past the logits; callers add that argument.
 * 4: validation records bind the context each setting was validated at: kvrt_validation_check_ctx
 *    checks a context length, kvrt_validation_check checks the model's declared context, and
 *    kvrt_validate_options.max_len 0 is the model's context capped by thresholds.toml's
 *    [context] max and by memory (was min(model context, 512)); kvrt_validation_context.
 * 5: the precision of the prefill matrix products as a validated setting: kvrt_matmul_precision,
 *    kvrt_session_options.matmul, kvrt_validate_options.matmul, kvrt_validation_entry.matmul and
 *    kvrt_validation_check_setting. Fields are appended, so programs that fill the structs with
 *    the *_default calls build unchanged (and get f32, as before).
 * 6: kvrt_kv_config gains sinks and per-layer formats (n_layer_formats, layer_formats), so its
 *    size and that of kvrt_session_options changed: programs built for 5 must be rebuilt.
 * 7: named settings (the ones `kvrt tune` writes into a validation record): kvrt_named_settings_*
 *    lists them, kvrt_session_create_named opens a session with one through the gate; additions
 *    only, so programs written for 6 build and run unchanged.
 * 8: KVRT_KV_Q4S, the symmetric 4-bit KV format (one FP16 scale per group, no minimum); an
 *    addition only.
 * 9: kvrt_chat_tokenize renders and tokenizes a conversation with the messages as plain text
 *    (control tokens only from the format's own markup), with kvrt_chat_options; chat formats
 *    qwen3, smollm3, granite and phi4-mini; signed validation records:
 *    kvrt_validation_check_trusted accepts only a record signed by a given Ed25519 public key
 *    (kvrt validate --sign, docs/signed-records.md); KVRT_ERR_IN_USE: a call on a session or
 *    sampler that another thread is using fails with it instead of racing; sessions that outlive
 *    the process: kvrt_session_save / kvrt_session_load (state files), kvrt_session_state_size /
 *    _write / _read (the same bytes in memory), kvrt_session_tokens, kvrt_session_truncate and
 *    kvrt_session_eval_reusing (prefix reuse); additions only.
 * 10: the sampler's generator travels with a session's state: kvrt_session_keep_sampler and
 *    kvrt_session_restore_sampler; additions only.
 * 11: KVRT_KV_Q4N, the non-uniform 4-bit KV format (4-bit indexes into a fixed 16-level grid, one
 *    FP16 scale per group); an addition only.
 * 12: KVRT_KV_Q3, the symmetric 3-bit KV format (one FP16 scale per group, no minimum); an
 *    addition only. */
#define KVRT_API_VERSION 12

/* Most threads a session or a validation run may use (n_threads); more is
 * KVRT_ERR_INVALID_ARGUMENT. When the system cannot create the threads asked for, the call that
 * creates the session (or starts the validation) fails with KVRT_ERR_OUT_OF_MEMORY. */
#define KVRT_MAX_THREADS 256

#if defined(__GNUC__)
#define KVRT_EXPORT __attribute__((visibility("default")))
#else
#define KVRT_EXPORT
#endif

/* ---- status and errors ------------------------------------------------------------------- */

typedef enum kvrt_status {
  KVRT_OK = 0,
  KVRT_ERR_INVALID_ARGUMENT = 1, /* null pointer, value out of range, unknown KV format name */
  KVRT_ERR_INPUT = 2,            /* missing, unreadable, malformed or unsupported file */
  KVRT_ERR_MEMORY_CAP = 3,       /* the session would need more bytes than the caller's cap */
  KVRT_ERR_CONTEXT_FULL = 4,     /* the tokens do not fit in the session's n_ctx positions */
  KVRT_ERR_OUT_OF_MEMORY = 5,    /* an allocation failed */
  KVRT_ERR_BUFFER_TOO_SMALL = 6, /* the caller's buffer is too small; the needed size is reported */
  KVRT_ERR_REFUSED = 7,          /* the validation gate refused a setting */
  KVRT_ERR_STOPPED = 8,          /* a callback asked generation to stop (not a failure of kvrt) */
  KVRT_ERR_INTERNAL = 9,         /* a bug or a third-party library failure */
  KVRT_ERR_IN_USE = 10 /* another thread is running a call on the same session or sampler */
} kvrt_status;

/* One sentence describing the last failure on this thread ("" after success). */
KVRT_EXPORT const char* kvrt_last_error(void);
/* A constant name for a status, e.g. "KVRT_ERR_CONTEXT_FULL". */
KVRT_EXPORT const char* kvrt_status_name(kvrt_status status);
/* Library version, e.g. "0.1.0". */
KVRT_EXPORT const char* kvrt_version(void);
/* The SIMD instruction set chosen for every kernel on this CPU: the top rung of the dispatch
 * ladder ("avx512-vnni", "avx512", "avx2", "neon", "scalar"). Decided once per process; the
 * environment variable KVRT_ISA can force a lower one. NULL when KVRT_ISA names an unknown ISA or
 * one this CPU cannot run: kvrt_last_error() says which, and kvrt_model_open fails with
 * KVRT_ERR_INVALID_ARGUMENT for the same reason. */
KVRT_EXPORT const char* kvrt_isa_name(void);

/* ---- model -------------------------------------------------------------------------------- */

typedef struct kvrt_model kvrt_model;

/* Maps a GGUF file (version 2 or 3) read-only. A malformed file is KVRT_ERR_INPUT naming the file
 * and offset; so is a path that is not a regular file (a FIFO is refused, never waited on). */
KVRT_EXPORT kvrt_status kvrt_model_open(const char* path, kvrt_model** out_model);
KVRT_EXPORT void kvrt_model_free(kvrt_model* model); /* NULL is fine */

typedef struct kvrt_model_info {
  const char* arch;      /* "llama"; strings live as long as the model */
  const char* name;      /* general.name, may be "" */
  const char* tokenizer; /* "llama" (SentencePiece) or "gpt2" (byte-level BPE) */
  int32_t n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, n_vocab;
  int32_t n_ctx_train; /* context length the model declares */
  int32_t bos_id, eos_id;
} kvrt_model_info;

KVRT_EXPORT kvrt_status kvrt_model_get_info(const kvrt_model* model, kvrt_model_info* out_info);

/* ---- tokens ------------------------------------------------------------------------------- */

/* Token ids of `text` (`text_len` bytes), BOS first when add_bos != 0. Writes at most `capacity`
 * ids; *out_n_tokens is the number of ids of the text (also when it returns
 * KVRT_ERR_BUFFER_TOO_SMALL, so a caller can size its buffer and call again). */
KVRT_EXPORT kvrt_status kvrt_tokenize(const kvrt_model* model, const char* text, size_t text_len,
                                      int add_bos, int32_t* tokens, size_t capacity,
                                      size_t* out_n_tokens);

/* Text of a token sequence, NUL-terminated. *out_len is the text's length without the NUL (also
 * on KVRT_ERR_BUFFER_TOO_SMALL; the buffer needs *out_len + 1 bytes). */
KVRT_EXPORT kvrt_status kvrt_detokenize(const kvrt_model* model, const int32_t* tokens,
                                        size_t n_tokens, char* buf, size_t capacity,
                                        size_t* out_len);

/* Like kvrt_tokenize, but control tokens written in the text (<|im_start|>, <|eot_id|>,
 * <start_of_turn>, <s>, ...) become those tokens, as chat templates need; kvrt_tokenize reads
 * them as plain text. */
KVRT_EXPORT kvrt_status kvrt_tokenize_special(const kvrt_model* model, const char* text,
                                              size_t text_len, int add_bos, int32_t* tokens,
                                              size_t capacity, size_t* out_n_tokens);

/* Non-zero when prompts for this model start with BOS (tokenizer.ggml.add_bos_token, else
 * llama.cpp's default: yes for SentencePiece and Llama 3 vocabularies, no for other BPE ones). */
KVRT_EXPORT int kvrt_model_adds_bos(const kvrt_model* model);

/* Non-zero when `token` ends generation: EOS, the end-of-turn token, and the control tokens
 * llama.cpp treats so (<|eot_id|>, <|im_end|>, <end_of_turn>, <|end|>, <|endoftext|>, ...). */
KVRT_EXPORT int kvrt_token_is_end_of_generation(const kvrt_model* model, int32_t token);

/* ---- KV-cache setting --------------------------------------------------------------------- */

typedef enum kvrt_kv_format {
  KVRT_KV_F32 = 0,
  KVRT_KV_Q8 = 1,
  KVRT_KV_Q4 = 2,
  KVRT_KV_Q2 = 3,
  KVRT_KV_Q4S = 4,
  KVRT_KV_Q4N = 5,
  KVRT_KV_Q3 = 6
} kvrt_kv_format;
typedef enum kvrt_key_axis { KVRT_KEY_AXIS_TOKEN = 0, KVRT_KEY_AXIS_CHANNEL = 1 } kvrt_key_axis;

typedef enum kvrt_kv_side { KVRT_KV_KEYS = 0, KVRT_KV_VALUES = 1 } kvrt_kv_side;

/* One side of one layer stored in its own format (the text form's k[..]=, v[..]= and layers[..]=).
 */
typedef struct kvrt_kv_layer_format {
  int32_t layer; /* layer index; negative counts from the last layer (-1 = the last) */
  kvrt_kv_side side;
  kvrt_kv_format format;
} kvrt_kv_layer_format;

/* Most per-layer entries a kvrt_kv_config holds (two per layer when both sides are overridden). */
#define KVRT_KV_MAX_LAYER_FORMATS 256

typedef struct kvrt_kv_config {
  kvrt_kv_format k_format; /* keys */
  kvrt_kv_format v_format; /* values */
  int32_t group_size; /* values per quantization group, 1..128, dividing head_dim; 0 = the largest
                         that fits, up to 32 */
  kvrt_key_axis
      k_axis;       /* channel = per-channel key groups along tokens (needs a residual window) */
  int32_t residual; /* most recent tokens kept in FP32 */
  int32_t rotate;   /* non-zero: Hadamard rotation before quantization ("q4" parses to 1) */
  int32_t sinks;    /* first positions kept in FP32 (attention sinks), keys and values */
  int32_t n_layer_formats; /* entries of layer_formats in use, 0..KVRT_KV_MAX_LAYER_FORMATS */
  kvrt_kv_layer_format
      layer_formats[KVRT_KV_MAX_LAYER_FORMATS]; /* over k_format/v_format; later entries win */
} kvrt_kv_config;

/* f32 keys and values, default group, token axis, no residual, no rotation, no sinks, no
 * per-layer formats. */
KVRT_EXPORT void kvrt_kv_config_default(kvrt_kv_config* out_config);

/* Parses a setting, as `kvrt run --kv` and validation/settings.toml do: a format name for both
 * sides ("f32", "q8", "q4", "q2", "q4s", "q4n", "q3"), then key=value fields, or the canonical form
 * used in reports and validation records, "k=q4,v=q8,g=32,axis=token,r=0,rot=0" (any subset, any
 * order, applied left to right; e.g. "q4,axis=channel,r=32"; without a rot field a setting that
 * quantizes anything is rotated, as `--kv` is: "q4" reads as "q4,rot=1"), with "sinks=N" and
 * per-layer formats such as "layers[0,1,-2,-1]=q8", "k[0]=f32", "v[-1]=q8". Unknown names, bad
 * layer lists and empty text are KVRT_ERR_INVALID_ARGUMENT; layer indices are checked against a
 * model when a session or a validation check uses the setting. */
KVRT_EXPORT kvrt_status kvrt_kv_config_parse(const char* text, kvrt_kv_config* out_config);

/* ---- matrix-product precision ------------------------------------------------------------ */

/* The arithmetic of the prefill-sized matrix products (decode-sized ones always run in f32).
 * BF16 rounds activations and weights to bfloat16 and sums in f32 (about twice the prefill speed
 * with AVX512-BF16); it needs a CPU with AVX512-BF16 or AMX-BF16, else creating a session with it
 * is KVRT_ERR_INVALID_ARGUMENT saying why. It changes the output, so like a compressed KV setting
 * it is validated (kvrt_validate_options.matmul) and checked (kvrt_validation_check_setting). */
typedef enum kvrt_matmul_precision {
  KVRT_MATMUL_F32 = 0,
  KVRT_MATMUL_BF16 = 1
} kvrt_matmul_precision;

/* ---- session ------------------------------------------------------------------------------ */

typedef struct kvrt_session kvrt_session;

typedef struct kvrt_session_options {
  int32_t n_ctx;     /* positions; 0 = the model's declared context length */
  int32_t n_threads; /* 0 = all cores (at most KVRT_MAX_THREADS); else 1..KVRT_MAX_THREADS */
  int32_t n_batch;   /* tokens per forward chunk during prefill; 0 = 256 */
  kvrt_kv_config kv; /* KV-cache setting */
  uint64_t max_memory_bytes;    /* cap on the session's allocation; 0 = no cap */
  kvrt_matmul_precision matmul; /* prefill products; default KVRT_MATMUL_F32 */
} kvrt_session_options;

KVRT_EXPORT void kvrt_session_options_default(kvrt_session_options* out_options);

/* Bytes a session with these options would allocate (KV cache plus scratch), computed without
 * allocating anything. Invalid options give the same error kvrt_session_create would. */
KVRT_EXPORT kvrt_status kvrt_session_bytes_required(const kvrt_model* model,
                                                    const kvrt_session_options* options,
                                                    uint64_t* out_bytes);

/* Allocates the session for n_ctx positions. When max_memory_bytes is set and the session would
 * need more, fails with KVRT_ERR_MEMORY_CAP before allocating anything. It does not consult a
 * validation record: check any setting but the baseline first (kvrt_validation_check_setting), as
 * kvrt_session_create_named and kvrt_session_load do themselves. */
KVRT_EXPORT kvrt_status kvrt_session_create(const kvrt_model* model,
                                            const kvrt_session_options* options,
                                            kvrt_session** out_session);
KVRT_EXPORT void kvrt_session_free(kvrt_session* session); /* NULL is fine */

/* Forgets every position (storage is kept). */
KVRT_EXPORT kvrt_status kvrt_session_reset(kvrt_session* session);

typedef struct kvrt_session_info {
  int32_t n_ctx;  /* positions the session holds */
  int32_t n_past; /* positions in use */
  int32_t n_threads;
  uint64_t bytes_allocated; /* KV cache plus scratch, allocated at creation */
  uint64_t kv_bytes_allocated;
  uint64_t kv_bytes_in_use;  /* for the n_past positions */
  double kv_bytes_per_token; /* over all layers, keys and values */
  const char* kv_setting;    /* canonical name, e.g. "k=q8,v=q8,g=32,axis=token,r=0,rot=0" */
  const char* matmul;        /* matrix-product implementation in use */
} kvrt_session_info;

/* Strings in the info live until the session is freed. */
KVRT_EXPORT kvrt_status kvrt_session_get_info(const kvrt_session* session,
                                              kvrt_session_info* out_info);

/* Prefill: runs n_tokens tokens at positions [n_past, n_past + n_tokens). Fails with
 * KVRT_ERR_CONTEXT_FULL (session unchanged) when they do not fit. */
KVRT_EXPORT kvrt_status kvrt_session_eval(kvrt_session* session, const int32_t* tokens,
                                          size_t n_tokens);

/* Logits of the last evaluated token, [n_vocab] floats owned by the session, valid until its
 * next eval, decode, generate or reset. KVRT_ERR_INVALID_ARGUMENT before any eval. */
KVRT_EXPORT kvrt_status kvrt_session_logits(const kvrt_session* session, const float** out_logits,
                                            int32_t* out_n_vocab);

/* ---- sampling and generation -------------------------------------------------------------- */

typedef struct kvrt_sampler kvrt_sampler;

typedef struct kvrt_sampler_options {
  float temperature; /* 0 = greedy (argmax) */
  int32_t top_k;     /* 0 = no limit */
  float top_p;       /* 1 = no nucleus cut */
  uint64_t seed;     /* same seed and settings give the same tokens on every platform */
} kvrt_sampler_options;

KVRT_EXPORT void kvrt_sampler_options_default(kvrt_sampler_options* out_options); /* greedy */
KVRT_EXPORT kvrt_status kvrt_sampler_create(const kvrt_model* model,
                                            const kvrt_sampler_options* options,
                                            kvrt_sampler** out_sampler);
KVRT_EXPORT void kvrt_sampler_free(kvrt_sampler* sampler); /* NULL is fine */

/* Picks a token from logits ([n_logits] floats, e.g. from kvrt_session_logits). n_logits must be
 * the vocabulary size of the sampler's model, else KVRT_ERR_INVALID_ARGUMENT before any read. */
KVRT_EXPORT kvrt_status kvrt_sampler_sample(kvrt_sampler* sampler, const float* logits,
                                            int32_t n_logits, int32_t* out_token);

/* One decode step: samples the next token from the session's last logits and evaluates it (so it
 * occupies one position). KVRT_ERR_CONTEXT_FULL, before sampling, when every position is used;
 * KVRT_ERR_INVALID_ARGUMENT when the sampler was made for a model with another vocabulary size. */
KVRT_EXPORT kvrt_status kvrt_session_decode(kvrt_session* session, kvrt_sampler* sampler,
                                            int32_t* out_token);

/* Receives each generated piece of text (not NUL-terminated; may be empty for control tokens).
 * Return 0 to go on, non-zero to stop generation (kvrt_generate then returns KVRT_ERR_STOPPED). */
typedef int (*kvrt_piece_callback)(const char* piece, size_t len, int32_t token, void* user_data);

/* Decodes up to max_tokens tokens after what the session holds (prefill a prompt first), passing
 * each piece to `callback` (may be NULL). Stops early at the end-of-sequence token (not passed to
 * the callback) and returns KVRT_OK. When the context fills first it returns KVRT_ERR_CONTEXT_FULL
 * with the tokens generated so far counted in *out_n_generated (may be NULL). The first piece of a
 * session that holds only BOS loses SentencePiece's dummy leading space, as in kvrt_detokenize. */
KVRT_EXPORT kvrt_status kvrt_generate(kvrt_session* session, kvrt_sampler* sampler,
                                      int32_t max_tokens, kvrt_piece_callback callback,
                                      void* user_data, int32_t* out_n_generated);

/* What ends kvrt_generate_until besides max_tokens, a full context and the callback. */
typedef enum kvrt_stop {
  KVRT_STOP_EOS = 0,        /* the end-of-sequence token only (what kvrt_generate does) */
  KVRT_STOP_END_OF_TURN = 1 /* any end-of-generation token (kvrt_token_is_end_of_generation) */
} kvrt_stop;

typedef struct kvrt_generate_options {
  int32_t max_tokens; /* most tokens to generate */
  kvrt_stop stop;
  kvrt_piece_callback callback; /* may be NULL */
  void* user_data;
} kvrt_generate_options;

/* 256 tokens, KVRT_STOP_END_OF_TURN, no callback. */
KVRT_EXPORT void kvrt_generate_options_default(kvrt_generate_options* out_options);

typedef struct kvrt_generate_result {
  int32_t n_generated; /* tokens passed to the callback; the stop token is not counted */
  int32_t stop_token;  /* the token that ended generation; -1 when max_tokens, a full context or
                          the callback ended it */
} kvrt_generate_result;

/* kvrt_generate with options: generation also ends at the stop token, which is evaluated like
 * every sampled token (it occupies a position), so a chat session then holds the reply up to and
 * including its end-of-turn token, the state kvrt_chat_apply_template's n_previous describes.
 * Returns as kvrt_generate does; *out_result (may be NULL) is filled in every case. */
KVRT_EXPORT kvrt_status kvrt_generate_until(kvrt_session* session, kvrt_sampler* sampler,
                                            const kvrt_generate_options* options,
                                            kvrt_generate_result* out_result);

/* ---- chat --------------------------------------------------------------------------------- */

/* Chat formats turn a conversation into the text an instruct model was trained on. A model names
 * its format in tokenizer.chat_template (Jinja); kvrt recognizes the common families by their
 * markers, as llama.cpp does without a Jinja engine, and renders them itself: chatml, llama3,
 * qwen3, smollm3, llama2 (and -sys, -sys-bos, -sys-strip), mistral-v1, -v3, -v3-tekken, -v7,
 * -v7-tekken, phi3, phi4-mini, phi4, gemma, granite, zephyr, falcon3, glmedge, deepseek3.
 *
 * Messages are plain text: only the format's own markup may become control tokens, or a user
 * could end a turn and open a system one by typing "<|im_end|><|im_start|>system". A multi-turn
 * chat on one session, each turn evaluating only its own tokens:
 *   messages = [system?, user]; options.n_previous = 0
 *   loop: tokens = kvrt_chat_tokenize(messages, options, &from_start)
 *         if from_start: kvrt_session_reset()
 *         kvrt_session_eval(tokens); kvrt_generate_until(stop = KVRT_STOP_END_OF_TURN)
 *         append {assistant, reply} and the next {user, ...} to messages
 *         options.n_previous = messages before the new user message
 * When a reply ends without a stop token (max_tokens), tokenize the format's end-of-turn text
 * (kvrt_chat_format) with kvrt_tokenize_special and evaluate it before the next tokens.
 * kvrt_chat_apply_template gives the text alone; tokenizing it with kvrt_tokenize_special makes
 * control tokens of whatever the messages contain. */

typedef struct kvrt_chat_message {
  const char* role;    /* "system", "user" or "assistant" */
  const char* content; /* NUL-terminated UTF-8 */
} kvrt_chat_message;

/* The chat format called `name`, or the model's own when `name` is NULL: its name (e.g.
 * "chatml") and the text that closes an assistant message in it (e.g. "<|im_end|>"; "" for
 * formats without one). Both are constant strings; either out pointer may be NULL. The model's
 * own format is KVRT_ERR_INPUT when it has no tokenizer.chat_template or one of no known family;
 * an unknown name is KVRT_ERR_INVALID_ARGUMENT. */
KVRT_EXPORT kvrt_status kvrt_chat_format(const kvrt_model* model, const char* name,
                                         const char** out_name, const char** out_end_of_turn);

/* The text that messages[n_previous..n_messages) add to a session holding the first n_previous
 * messages as they were generated (the last assistant message up to the end-of-turn token that
 * ended it); n_previous = 0 renders the whole conversation. With add_assistant != 0 the text ends
 * with the header of the assistant's reply. `format` names the chat format (NULL = the model's
 * own). The text holds control tokens and the messages as they are: tokenize it with
 * kvrt_tokenize_special only when the messages are trusted, else use kvrt_chat_tokenize.
 * KVRT_ERR_INVALID_ARGUMENT when the format renders the first n_previous messages differently
 * once more are added (see kvrt_chat_tokenize). NUL-terminated; buffer sizes as kvrt_detokenize. */
KVRT_EXPORT kvrt_status kvrt_chat_apply_template(const kvrt_model* model, const char* format,
                                                 const kvrt_chat_message* messages,
                                                 size_t n_messages, size_t n_previous,
                                                 int add_assistant, char* buf, size_t capacity,
                                                 size_t* out_len);

typedef struct kvrt_chat_options {
  const char* format; /* chat format name; NULL = the model's own */
  size_t n_previous;  /* messages the session already holds, as kvrt_chat_apply_template's */
  int add_assistant;  /* non-zero: end with the header of the assistant's reply */
  int parse_special;  /* non-zero: control tokens written in the messages become those tokens too */
} kvrt_chat_options;

/* The model's own format, n_previous 0, add_assistant 1, parse_special 0. */
KVRT_EXPORT void kvrt_chat_options_default(kvrt_chat_options* out_options);

/* The tokens that messages[options->n_previous..n_messages) add to a session holding the first
 * n_previous messages (see kvrt_chat_apply_template): the format's markup with its control tokens,
 * each message's content tokenized as plain text (a message holding "<|im_end|>" gets the tokens of
 * those characters), BOS first when the tokens start the session and kvrt_model_adds_bos().
 * *out_from_start (may be NULL) is 1 when the format renders the first n_previous messages
 * differently once more are added (qwen3 drops the thinking of earlier replies): the tokens are
 * then the whole conversation, to be evaluated on a reset session; else 0. Buffer sizes as
 * kvrt_tokenize. */
KVRT_EXPORT kvrt_status kvrt_chat_tokenize(const kvrt_model* model,
                                           const kvrt_chat_options* options,
                                           const kvrt_chat_message* messages, size_t n_messages,
                                           int32_t* tokens, size_t capacity, size_t* out_n_tokens,
                                           int* out_from_start);

/* ---- validation --------------------------------------------------------------------------- */

/* A compressed KV setting changes the model's output. `kvrt validate` (and kvrt_validate below)
 * replays an acceptance set on the FP32 cache and on each setting and decides, per setting, on
 * bootstrap intervals against thresholds; it writes a validation record bound to the model file,
 * kvrt version, ISA, thresholds file and acceptance set. `kvrt run` enables a compressed setting
 * only with a PASS record; an embedder does the same with kvrt_validation_check. The bundled
 * validation data (thresholds.toml, settings.toml, cases/) is found in $KVRT_VALIDATION_DIR, else
 * in validation/ of kvrt's data directory: $KVRT_DATA_DIR, else <prefix>/share/kvrt of the
 * installation libkvrt.so (or the program linking libkvrt.a) lives in, else the configured
 * <prefix>/share/kvrt. */

typedef enum kvrt_verdict {
  KVRT_VERDICT_PASS = 0,
  KVRT_VERDICT_FAIL = 1,
  KVRT_VERDICT_INCONCLUSIVE = 2 /* too few cases, or the interval straddles the limit */
} kvrt_verdict;

/* KVRT_OK when the record at `record_path` (NULL = the default record for this model file and ISA,
 * in $KVRT_STATE_DIR, else $XDG_STATE_HOME/kvrt, else ~/.local/state/kvrt) says PASS for `kv` at a
 * validated context of at least n_ctx positions (0 = the model's declared context, as for
 * kvrt_session_options.n_ctx) and still matches the model file, kvrt version, ISA, thresholds file
 * and acceptance set. Only the baseline needs no record: f32 keys and values with every other
 * field as kvrt_kv_config_default leaves it (group 0 or the group it resolves to), with f32
 * products; f32 with rotate, sinks, residual, another group, the channel axis or per-layer formats
 * needs a PASS like any compressed setting (rotation changes the numbers, and the gate does not
 * judge which fields would not). Otherwise KVRT_ERR_REFUSED and
 * kvrt_last_error() says why (no record, another model, edited record, changed thresholds, FAIL,
 * not covered, validated at a shorter context: with the `kvrt validate -c N` that extends it).
 * n_ctx < 0 is KVRT_ERR_INVALID_ARGUMENT. */
KVRT_EXPORT kvrt_status kvrt_validation_check_ctx(const kvrt_model* model, const kvrt_kv_config* kv,
                                                  int32_t n_ctx, const char* record_path);
/* kvrt_validation_check_ctx at the model's declared context (n_ctx = 0). */
KVRT_EXPORT kvrt_status kvrt_validation_check(const kvrt_model* model, const kvrt_kv_config* kv,
                                              const char* record_path);
/* kvrt_validation_check_ctx for `kv` with prefill products at `matmul`: the record must say PASS
 * for that pair. The baseline (kvrt_kv_config_default with f32 products) needs no record; the same
 * cache with BF16 products does. Pass
 * a session's options as kvrt_validation_check_setting(model, &o.kv, o.matmul, o.n_ctx, path). */
KVRT_EXPORT kvrt_status kvrt_validation_check_setting(const kvrt_model* model,
                                                      const kvrt_kv_config* kv,
                                                      kvrt_matmul_precision matmul, int32_t n_ctx,
                                                      const char* record_path);

/* kvrt_validation_check_setting that accepts only a record signed by the Ed25519 key in the public
 * key file `trusted_key_path` (the KEYFILE.pub of `kvrt keygen`; docs/signed-records.md describes
 * the key and signature formats), as `kvrt run --trust` does: for a firmware image that ships a
 * record validated once per device class. An unsigned record, one signed by another key, one
 * changed after it was signed or one made for another model file is KVRT_ERR_REFUSED saying why; a
 * missing or malformed key file is KVRT_ERR_INPUT; trusted_key_path NULL or "" is
 * KVRT_ERR_INVALID_ARGUMENT. The key file is read even for the baseline, which needs no record.
 * (Any record whose signature does not verify is refused by every check, trusted or not.) */
KVRT_EXPORT kvrt_status kvrt_validation_check_trusted(const kvrt_model* model,
                                                      const kvrt_kv_config* kv,
                                                      kvrt_matmul_precision matmul, int32_t n_ctx,
                                                      const char* record_path,
                                                      const char* trusted_key_path);

typedef struct kvrt_validate_options {
  const kvrt_kv_config* settings; /* settings to validate; NULL = those of settings_file */
  size_t n_settings;
  const char* settings_file;   /* NULL = <validation dir>/settings.toml */
  const char* thresholds_file; /* NULL = <validation dir>/thresholds.toml */
  const char* cases_dir;       /* NULL = none; else more cases (DIR/manifest.toml) */
  int only_cases;              /* non-zero: only cases_dir, not the bundled set */
  int32_t max_len;             /* context to validate at (the cases follow it, the record binds it);
                                  0 = the model's, at most thresholds.toml's [context] max and what
                                  half the available memory holds; beyond the model's context is
                                  KVRT_ERR_INVALID_ARGUMENT */
  int32_t n_threads; /* 0 = all cores (one for models under 64 MiB); at most KVRT_MAX_THREADS */
  int use_seed;      /* non-zero: bootstrap with `seed`, not the thresholds file's */
  uint64_t seed;
  const char* record_path;      /* NULL = the default record; "" = write no record */
  const char* json_path;        /* NULL = no JSON report */
  const char* html_path;        /* NULL = no HTML report */
  kvrt_matmul_precision matmul; /* prefill products of every setting in `settings` (a settings file
                                   names its own); KVRT_MATMUL_BF16 where this CPU cannot run it is
                                   KVRT_ERR_INVALID_ARGUMENT */
} kvrt_validate_options;

KVRT_EXPORT void kvrt_validate_options_default(kvrt_validate_options* out_options);

typedef struct kvrt_validation kvrt_validation;

/* Runs validation (minutes for a large model; seconds for stories260K with a short max_len).
 * Returns KVRT_OK when it ran, whatever the verdicts: read them with kvrt_validation_get.
 * Output paths are checked before the run: each must be a new path or a regular file (a symlink
 * is followed to its regular-file target); a directory, FIFO, device, socket or dangling symlink
 * is KVRT_ERR_INVALID_ARGUMENT and is left untouched. Each output is written whole (unnamed
 * temporary file, then rename) or not at all. The record keeps the verdicts of an earlier record
 * with the same bindings for settings not re-run, under a lock ("<record>.lock") so that
 * concurrent runs into one record keep every verdict; the report (kvrt_validation_report) ends
 * with a "note:" line for each earlier verdict dropped or changed. An earlier record that cannot be
 * read, or a lock file that is not a regular file, is KVRT_ERR_INPUT, and a record made for another
 * model file KVRT_ERR_INVALID_ARGUMENT, before the run (the file is left as it is). Bad thresholds,
 * settings or case files are KVRT_ERR_INPUT naming file and line. */
KVRT_EXPORT kvrt_status kvrt_validate(const kvrt_model* model, const kvrt_validate_options* options,
                                      kvrt_validation** out_validation);
KVRT_EXPORT void kvrt_validation_free(kvrt_validation* validation); /* NULL is fine */

typedef struct kvrt_validation_entry {
  const char* setting; /* canonical name, e.g. "k=q8,v=q8,g=32,axis=token,r=0,rot=0" */
  const char* label;   /* short name, e.g. "q8/q8" */
  kvrt_verdict verdict;
  double kv_bytes_per_token;    /* over all layers, keys and values */
  kvrt_matmul_precision matmul; /* of the prefill products */
} kvrt_validation_entry;

/* Settings validated, in the order asked for. */
KVRT_EXPORT size_t kvrt_validation_count(const kvrt_validation* validation);
/* Strings live until the validation is freed. KVRT_ERR_INVALID_ARGUMENT for an index out of range.
 */
KVRT_EXPORT kvrt_status kvrt_validation_get(const kvrt_validation* validation, size_t index,
                                            kvrt_validation_entry* out_entry);
/* The record written ("" when none was asked for). */
KVRT_EXPORT const char* kvrt_validation_record_path(const kvrt_validation* validation);
/* The context the settings were validated at (positions). */
KVRT_EXPORT int32_t kvrt_validation_context(const kvrt_validation* validation);
/* The text table `kvrt validate` prints. */
KVRT_EXPORT const char* kvrt_validation_report(const kvrt_validation* validation);

/* ---- named settings ----------------------------------------------------------------------- */

/* `kvrt tune` searches per-layer KV formats for the smallest setting that PASSes at a context and
 * writes it into the validation record under a name ("tuned" unless --name says otherwise), as
 * `kvrt run --kv tuned` uses it. An embedded product runs `kvrt tune` once (at install time, on
 * the deployed model and CPU) and opens its sessions by that name. */

typedef struct kvrt_named_setting {
  const char* name;             /* e.g. "tuned" */
  const char* setting;          /* canonical text (kvrt_kv_config_parse reads it) */
  kvrt_verdict verdict;         /* as recorded */
  int32_t n_ctx;                /* the context it was validated at (positions) */
  double kv_bytes_per_token;    /* over all layers, keys and values */
  kvrt_matmul_precision matmul; /* of the prefill products */
} kvrt_named_setting;

typedef struct kvrt_named_settings kvrt_named_settings;

/* Reads the named settings of the record at `record_path` (NULL = the default record for this model
 * file and ISA, as for kvrt_validation_check_ctx). KVRT_ERR_REFUSED when there is no record, it was
 * edited, or it was made for another model file; KVRT_ERR_INPUT when the path is not a readable
 * regular file. A record without named settings gives an empty list. The verdicts are listed as
 * recorded: kvrt_session_create_named still checks the kvrt version, ISA, thresholds and
 * acceptance set. */
KVRT_EXPORT kvrt_status kvrt_named_settings_read(const kvrt_model* model, const char* record_path,
                                                 kvrt_named_settings** out_settings);
KVRT_EXPORT void kvrt_named_settings_free(kvrt_named_settings* settings); /* NULL is fine */
KVRT_EXPORT size_t kvrt_named_settings_count(const kvrt_named_settings* settings);
/* Strings live until the list is freed. KVRT_ERR_INVALID_ARGUMENT for an index out of range. */
KVRT_EXPORT kvrt_status kvrt_named_settings_get(const kvrt_named_settings* settings, size_t index,
                                                kvrt_named_setting* out_setting);
/* The record read. */
KVRT_EXPORT const char* kvrt_named_settings_record_path(const kvrt_named_settings* settings);

/* kvrt_session_create with the KV setting and matmul precision named `name` in the record at
 * `record_path` (NULL = the default record), through the gate of `kvrt run --kv NAME`: the record
 * must say PASS for it at a context of at least options->n_ctx (0 = the model's declared context)
 * and still match the model file, kvrt version, ISA, thresholds and acceptance set. options->kv and
 * options->matmul are ignored; n_ctx, n_threads, n_batch and max_memory_bytes apply as in
 * kvrt_session_create. A `name` that cannot name a setting (a format such as "q8", a setting text,
 * "") is KVRT_ERR_INVALID_ARGUMENT; no record, no setting of that name (the message lists the
 * names the record has), a verdict other than PASS or a shorter validated context is
 * KVRT_ERR_REFUSED saying why, before anything is allocated. kvrt_session_get_info gives the
 * setting's canonical text. */
KVRT_EXPORT kvrt_status kvrt_session_create_named(const kvrt_model* model, const char* name,
                                                  const char* record_path,
                                                  const kvrt_session_options* options,
                                                  kvrt_session** out_session);

/* ---- sessions that outlive the process (docs/sessions.md) --------------------------------- */

/* Saves the session (its positions, token ids, last logits and packed KV cache, as in memory) to
 * a state file (docs/formats/state-file.md) bound to the model file, the KV setting and the
 * matmul precision. The file is written whole or not at all (temporary file, fsync, rename, fsync
 * of the directory): a failed save leaves an existing file as it was. A FIFO, device or directory
 * is KVRT_ERR_INVALID_ARGUMENT before anything is written. */
KVRT_EXPORT kvrt_status kvrt_session_save(const kvrt_session* session, const char* path);

/* Opens a session from a state file with the file's KV setting and matmul precision (options->kv
 * and options->matmul are ignored; kvrt_session_get_info names the setting), through the gate of
 * kvrt_session_create_named: any setting but the baseline needs a PASS in the record at
 * record_path (NULL = the default record) at a context of at least the session's n_ctx, else
 * KVRT_ERR_REFUSED saying why, before anything is allocated. options->n_ctx 0 and n_batch 0 take
 * the saved ones; n_threads and max_memory_bytes apply as in kvrt_session_create. A file that is
 * truncated, damaged, made for another model file or by a newer kvrt is KVRT_ERR_INPUT with one
 * sentence naming the mismatch. The restored session gives the logits the saved one would have
 * given, bit for bit. */
KVRT_EXPORT kvrt_status kvrt_session_load(const kvrt_model* model, const char* path,
                                          const char* record_path,
                                          const kvrt_session_options* options,
                                          kvrt_session** out_session);

/* The same bytes in memory, for firmware without a filesystem: the size of the session's state,
 * the state written to a buffer (KVRT_ERR_BUFFER_TOO_SMALL with the size in *out_size when it
 * does not fit), and a session opened from such bytes as kvrt_session_load opens a file. */
KVRT_EXPORT kvrt_status kvrt_session_state_size(const kvrt_session* session, size_t* out_size);
KVRT_EXPORT kvrt_status kvrt_session_state_write(const kvrt_session* session, void* buffer,
                                                 size_t capacity, size_t* out_size);
KVRT_EXPORT kvrt_status kvrt_session_state_read(const kvrt_model* model, const void* data,
                                                size_t size, const char* record_path,
                                                const kvrt_session_options* options,
                                                kvrt_session** out_session);

/* The sampler's random generator travels with the session's state, so that a seeded generation
 * continues after a restore with the tokens it would have given. kvrt_session_keep_sampler copies
 * the generator's state of `sampler` into the session (call it after the last token sampled
 * before a save); kvrt_session_save and kvrt_session_state_write store the last one kept (a
 * session that never kept one stores none). kvrt_session_restore_sampler sets the generator of
 * `sampler` to the state the session was opened from (kvrt_session_load, _state_read) or last
 * kept; *out_restored (may be NULL) is 1, or 0 when there is none and the sampler is unchanged.
 * Only the generator travels: temperature, top-k, top-p and the vocabulary are the sampler's. */
KVRT_EXPORT kvrt_status kvrt_session_keep_sampler(kvrt_session* session,
                                                  const kvrt_sampler* sampler);
KVRT_EXPORT kvrt_status kvrt_session_restore_sampler(const kvrt_session* session,
                                                     kvrt_sampler* sampler, int* out_restored);

/* The token ids the session holds ([n_past], owned by the session, valid until its next call). */
KVRT_EXPORT kvrt_status kvrt_session_tokens(const kvrt_session* session, const int32_t** out_tokens,
                                            size_t* out_n_tokens);

/* Forgets the positions from n_keep on. *out_n_kept (may be NULL) is n_keep, or 0 when the cache
 * cannot drop positions exactly (a residual FP32 window, or a sliding-window layer whose ring has
 * turned): the session is then empty and the caller evaluates everything again. Logits are
 * unavailable until the next eval. */
KVRT_EXPORT kvrt_status kvrt_session_truncate(kvrt_session* session, int32_t n_keep,
                                              int32_t* out_n_kept);

/* Evaluates `tokens` as the session's whole content, reusing the longest prefix it already holds
 * (kvrt_session_truncate's rule), so a request sharing a prefix with the last one evaluates only
 * its suffix. *out_n_reused (may be NULL) counts the positions kept. */
KVRT_EXPORT kvrt_status kvrt_session_eval_reusing(kvrt_session* session, const int32_t* tokens,
                                                  size_t n_tokens, size_t* out_n_reused);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_KVRT_H */
