// Replays the fuzz seed corpus and every input that once crashed a fuzz target
// (tests/fuzz/corpus/<target>/, tests/fuzz/crashes/<target>/) through the same target bodies.
// Each input must be handled: a result or a kvrt::Error, never a crash or a sanitizer report.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/targets.h"
#include "kvrt_config.h"
#include "test_util.h"

namespace {

// Files of corpus/<target> and crashes/<target>.
std::vector<std::string> inputs(const std::string& target) {
  std::vector<std::string> files;
  for (const char* kind : {"corpus", "crashes"}) {
    const std::filesystem::path dir =
        std::filesystem::path(KVRT_SOURCE_DIR) / "tests" / "fuzz" / kind / target;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path().string());
  }
  return files;
}

void replay(const std::string& target, void (*body)(const uint8_t*, size_t)) {
  const std::vector<std::string> files = inputs(target);
  CHECK(files.size() >= 3);
  for (const auto& f : files) {
    CAPTURE(f);
    const std::string bytes = kvrt::test::read_file(f);
    body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
}

}  // namespace

TEST_CASE("the gguf fuzz target handles its corpus and past crashes") {
  replay("gguf", kvrt::fuzz::gguf_one);
  // The seed model is a complete model: it loads and tokenizes.
  kvrt::model::Model m(std::string(KVRT_SOURCE_DIR) +
                       "/tests/fuzz/corpus/gguf/tiny_llama_f32.gguf");
  CHECK(m.config().n_vocab == 8);
}

TEST_CASE("the grammar fuzz target handles its corpus and past crashes") {
  replay("grammar", kvrt::fuzz::grammar_one);
}

TEST_CASE("the tokenizer fuzz target handles its corpus and past crashes") {
  replay("tokenizer", kvrt::fuzz::tokenizer_one);
}

TEST_CASE("the manifest fuzz target handles its corpus and past crashes") {
  replay("manifest", kvrt::fuzz::manifest_one);
  // The seeds are valid manifests: each loads on its own.
  for (const char* seed : {"cases.toml", "templates.toml", "tasks.toml"}) {
    CAPTURE(seed);
    const std::string bytes =
        kvrt::test::read_file(std::string(KVRT_SOURCE_DIR) + "/tests/fuzz/corpus/manifest/" + seed);
    const kvrt::fuzz::CaseDir dir;
    std::ofstream(dir.path + "/manifest.toml") << bytes;
    const kvrt::validate::CaseSet set = kvrt::validate::load_case_set({dir.path});
    CHECK(set.cases.size() + set.templates.size() >= 2);
  }
}

TEST_CASE("the toml fuzz target handles its corpus and past crashes") {
  replay("toml", kvrt::fuzz::toml_one);
  // The record seed reaches the record parser: with its hash line it reads back as a record.
  const std::string body = kvrt::test::read_file(std::string(KVRT_SOURCE_DIR) +
                                                 "/tests/fuzz/corpus/toml/record_body.toml");
  const std::string text =
      "#\ncontent_sha256 = " + kvrt::validate::toml_quote(kvrt::sha256_hex("#\n" + body)) + "\n" +
      body;
  const kvrt::validate::Record r = kvrt::validate::read_record(kvrt::fuzz::memory_file(text));
  REQUIRE(r.settings.size() == 2);
  CHECK(r.settings[1].n_ctx == 256);
  CHECK(r.settings[0].matmul == kvrt::ops::MatmulPrecision::kF32);
  CHECK(r.settings[1].matmul == kvrt::ops::MatmulPrecision::kBf16);
  CHECK(r.case_dirs.at(1) == "/data/more \"cases\"\u00e9");
}

TEST_CASE("the signed fuzz target handles its corpus and past crashes") {
  replay("signed", kvrt::fuzz::signed_one);
  // The signed seed reaches verification and passes it: a record signed by the corpus's fixed test
  // key (seed bytes 0..31), which its secret key seed also gives.
  const std::string dir = std::string(KVRT_SOURCE_DIR) + "/tests/fuzz/corpus/signed/";
  const std::string text = kvrt::test::read_file(dir + "signed_record.toml");
  CHECK(kvrt::fuzz::with_valid_hash(text) == text);
  const kvrt::validate::Record r = kvrt::validate::read_record(kvrt::fuzz::memory_file(text));
  CHECK(r.settings.size() == 2);
  std::array<uint8_t, 32> seed{};
  for (size_t i = 0; i < seed.size(); ++i) seed[i] = uint8_t(i);
  CHECK(r.signer == kvrt::validate::SecretKey::from_seed(seed).public_key().hex());
}

TEST_CASE("the weights fuzz target handles its corpus and past crashes") {
  replay("weights", kvrt::fuzz::weights_one);
}

TEST_CASE("the state fuzz target handles its corpus and past crashes") {
  replay("state", kvrt::fuzz::state_one);
  // The seed is a complete state file of stories260K: it loads as it is.
  const std::string bytes = kvrt::test::read_file(std::string(KVRT_SOURCE_DIR) +
                                                  "/tests/fuzz/corpus/state/stories_f32_8.kvs");
  const kvrt::model::StateHeader h = kvrt::model::read_state_header(bytes, "seed");
  CHECK(h.n_past == 8);
  CHECK(h.setting.find("k=f32,v=f32,") == 0);
}
