// Tokenizer conformance on the large vocabularies in ../shared/vocab (Qwen3.5: the qwen35
// pre-tokenizer; Gemma 4: BPE over UTF-8 text with spaces as U+2581, as its tokenizer model
// gemma4 or as the pre-tokenizer gemma4 of a gpt2 model), against the ids llama.cpp 80fb11ac gives
// their .inp strings. The vocabularies are too large to vendor: without
// ../shared beside the checkout the program exits with meson's skip code 77.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "text/tokenizer.h"
#include "test_util.h"
#include "vocab_copy.h"

using namespace kvrt;

namespace {

std::string shared_vocab(const std::string& name) {
  const std::string path = (std::filesystem::path(test::source_dir()) / ".." / "shared" / "vocab" /
                            ("ggml-vocab-" + name + ".gguf"))
                               .lexically_normal()
                               .string();
  if (std::filesystem::exists(path)) return path;
  std::fprintf(stderr, "SKIP: %s is absent; put ../shared beside the checkout\n", path.c_str());
  std::exit(77);
}

// .inp: strings separated by "\n__ggml_vocab_test__\n"; .out: one line of ids per string. The
// vectors sit beside the vocabulary, or at `vectors` (+ .inp, .out) for a copy the test made.
void check_vectors(const std::string& gguf, std::string vectors = "") {
  if (vectors.empty()) vectors = gguf;
  io::GgufFile file(gguf);
  model::Tokenizer tok(file);
  const std::string raw = test::read_file(vectors + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    inputs.push_back(raw.substr(pos, next == raw.npos ? raw.npos : next - pos));
    if (next == raw.npos) break;
    pos = next + sep.size();
  }
  std::istringstream out(test::read_file(vectors + ".out"));
  size_t n = 0;
  for (std::string line; std::getline(out, line); ++n) {
    REQUIRE(n < inputs.size());
    std::istringstream ids(line);
    std::vector<int32_t> want;
    for (int32_t id; ids >> id;) want.push_back(id);
    CAPTURE(inputs[n]);
    CHECK(tok.encode(inputs[n], false) == want);
    CHECK(tok.decode(tok.encode(inputs[n], false)) == inputs[n]);
  }
  CHECK(n == inputs.size());
}

}  // namespace

TEST_CASE("Qwen3.5's vocabulary (pre-tokenizer qwen35) matches llama.cpp's ids") {
  const std::string gguf = shared_vocab("qwen35");
  io::GgufFile file(gguf);
  CHECK(model::Tokenizer(file).pre_name() == "qwen35");
  check_vectors(gguf);
}

TEST_CASE("Gemma 4's vocabulary (tokenizer model gemma4) matches llama.cpp's ids") {
  const std::string gguf = shared_vocab("gemma-4");
  io::GgufFile file(gguf);
  model::Tokenizer tok(file);
  CHECK(tok.model_name() == "gemma4");
  CHECK(tok.adds_bos());
  CHECK(tok.token_to_piece(tok.find("\xE2\x96\x81the")) == " the");
  REQUIRE(tok.find("<turn|>") >= 0);
  CHECK(tok.is_end_of_generation(tok.find("<turn|>")));  // Gemma 4's end of turn
  CHECK(tok.is_end_of_generation(tok.eos_id()));
  check_vectors(gguf);
}

// llama.cpp gives the pre-tokenizer gemma4 its Gemma 4 behaviour whatever tokenizer model the file
// names (spaces as U+2581, UTF-8 text, BOS even when tokenizer.ggml.add_bos_token is false): the
// same vocabulary as a gpt2 model with tokenizer.ggml.pre = gemma4 gives the same ids.
TEST_CASE("Gemma 4's vocabulary named as gpt2 with pre-tokenizer gemma4 gives the same ids") {
  const std::string gguf = shared_vocab("gemma-4");
  test::TempDir tmp;
  const std::string step = tmp / "model.gguf", copy = tmp / "gpt2-pre-gemma4.gguf";
  test::copy_vocab(gguf, step, "tokenizer.ggml.model",
                   [](io::GgufWriter& w) { w.add_string("tokenizer.ggml.model", "gpt2"); });
  test::copy_vocab(step, copy, "tokenizer.ggml.add_bos_token", [](io::GgufWriter& w) {
    w.add_string("tokenizer.ggml.pre", "gemma4");
    w.add_bool("tokenizer.ggml.add_bos_token", false);
  });
  io::GgufFile file(copy);
  model::Tokenizer tok(file);
  CHECK(tok.model_name() == "gpt2");
  CHECK(tok.pre_name() == "gemma4");
  CHECK(tok.adds_bos());
  check_vectors(copy, gguf);
}
