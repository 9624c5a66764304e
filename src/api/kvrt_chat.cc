// The C API's chat support (include/kvrt/kvrt.h): chat formats, rendering and tokenizing a
// conversation (its messages as plain text), tokenizing template text with its control tokens, and
// which tokens end generation.
#include <optional>
#include <string>
#include <vector>

#include "api/handles.h"
#include "text/chat_template.h"

namespace kvrt::api {
namespace {

// The format called `name`, or the model's own when `name` is NULL.
model::ChatTemplate format_of(const kvrt_model& model, const char* name) {
  if (name) return model::ChatTemplate::from_name(name);
  return model::ChatTemplate::for_model(model.model->file(), "");
}

std::vector<model::ChatMessage> to_messages(const kvrt_chat_message* messages, size_t n) {
  std::vector<model::ChatMessage> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!messages[i].role || !messages[i].content)
      throw Error("message " + std::to_string(i) + " has a NULL role or content",
                  ErrorKind::kUsage);
    out.push_back({messages[i].role, messages[i].content});
  }
  return out;
}

// Checks the pointer arguments of a call that renders messages.
kvrt_status check_messages(const kvrt_chat_message* messages, size_t n_messages,
                           size_t n_previous) {
  if (messages == nullptr && n_messages > 0)
    return fail(KVRT_ERR_INVALID_ARGUMENT, "argument 'messages' is NULL");
  if (n_previous > n_messages)
    return fail(KVRT_ERR_INVALID_ARGUMENT, "n_previous (" + std::to_string(n_previous) +
                                               ") is more than n_messages (" +
                                               std::to_string(n_messages) + ")");
  return KVRT_OK;
}

}  // namespace
}  // namespace kvrt::api

using kvrt::api::fail;
using kvrt::api::guard;

extern "C" {

kvrt_status kvrt_tokenize_special(const kvrt_model* model, const char* text, size_t text_len,
                                  int add_bos, int32_t* tokens, size_t capacity,
                                  size_t* out_n_tokens) {
  return guard([&] {
    return kvrt::api::tokenize(model, {text, text_len}, add_bos != 0, true, {tokens, capacity},
                               out_n_tokens);
  });
}

int kvrt_model_adds_bos(const kvrt_model* model) {
  return model && model->model->tokenizer().adds_bos() ? 1 : 0;
}

int kvrt_token_is_end_of_generation(const kvrt_model* model, int32_t token) {
  return model && model->model->tokenizer().is_end_of_generation(token) ? 1 : 0;
}

kvrt_status kvrt_chat_format(const kvrt_model* model, const char* name, const char** out_name,
                             const char** out_end_of_turn) {
  return guard([&] {
    KVRT_REQUIRE(model);
    const kvrt::model::ChatTemplate t = kvrt::api::format_of(*model, name);
    // Both views point into the static table of formats, NUL-terminated string literals.
    if (out_name) *out_name = t.name().data();
    if (out_end_of_turn) *out_end_of_turn = t.end_of_turn().data();
    return KVRT_OK;
  });
}

kvrt_status kvrt_chat_apply_template(const kvrt_model* model, const char* format,
                                     const kvrt_chat_message* messages, size_t n_messages,
                                     size_t n_previous, int add_assistant, char* buf,
                                     size_t capacity, size_t* out_len) {
  return guard([&] {
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(out_len);
    *out_len = 0;
    if (kvrt_status st = kvrt::api::check_messages(messages, n_messages, n_previous); st != KVRT_OK)
      return st;
    if (buf == nullptr && capacity > 0)
      return fail(KVRT_ERR_INVALID_ARGUMENT, "argument 'buf' is NULL");
    const kvrt::model::ChatTemplate t = kvrt::api::format_of(*model, format);
    const std::string text =
        t.apply_after(kvrt::api::to_messages(messages, n_messages), n_previous, add_assistant != 0);
    const kvrt_status st =
        kvrt::api::copy_out(text.c_str(), text.size() + 1, buf, capacity, out_len, "the text");
    *out_len = text.size();
    return st;
  });
}

void kvrt_chat_options_default(kvrt_chat_options* out_options) {
  if (out_options) *out_options = kvrt_chat_options{nullptr, 0, 1, 0};
}

kvrt_status kvrt_chat_tokenize(const kvrt_model* model, const kvrt_chat_options* options,
                               const kvrt_chat_message* messages, size_t n_messages,
                               int32_t* tokens, size_t capacity, size_t* out_n_tokens,
                               int* out_from_start) {
  return guard([&] {
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(options);
    KVRT_REQUIRE(out_n_tokens);
    *out_n_tokens = 0;
    if (out_from_start) *out_from_start = 0;
    if (kvrt_status st = kvrt::api::check_messages(messages, n_messages, options->n_previous);
        st != KVRT_OK)
      return st;
    if (tokens == nullptr && capacity > 0)
      return fail(KVRT_ERR_INVALID_ARGUMENT, "argument 'tokens' is NULL");
    const kvrt::model::ChatTemplate t = kvrt::api::format_of(*model, options->format);
    const auto m = kvrt::api::to_messages(messages, n_messages);
    std::optional<kvrt::model::ChatText> text =
        t.render_after(m, options->n_previous, options->add_assistant != 0);
    const bool from_start = !text || options->n_previous == 0;
    if (!text) text = t.render(m, options->add_assistant != 0);
    const kvrt::model::Tokenizer& tok = model->model->tokenizer();
    const std::vector<int32_t> ids =
        options->parse_special
            ? tok.encode(text->text, from_start && tok.adds_bos(), true)
            : tok.encode_template(text->text, from_start && tok.adds_bos(), text->contents);
    if (out_from_start) *out_from_start = options->n_previous > 0 && from_start ? 1 : 0;
    return kvrt::api::copy_out(ids.data(), ids.size(), tokens, capacity, out_n_tokens,
                               "the token list");
  });
}

}  // extern "C"
