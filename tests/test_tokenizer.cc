// Tokenizer conformance: every vocabulary in tests/data/vocab against the token ids llama.cpp's
// test-tokenizer-0 expects (.inp strings, .out ids), round trips through decode(), the
// stories260K encoding used by the reference perplexity, and errors for bad vocabularies.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "text/tokenizer.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"
#include "test_util.h"
#include "vocab_copy.h"

using namespace kvrt;

namespace {

struct VocabCase {
  std::string name;  // e.g. "llama-spm"
  std::string gguf;
  std::vector<std::string> inputs;
  std::vector<std::vector<int32_t>> expected;
};

// .inp: strings separated by "\n__ggml_vocab_test__\n" (the file ends with one); .out: one line
// of space-separated ids per string. They sit beside the vocabulary, or at `vectors` (+ .inp,
// .out) for a vocabulary the test writes itself.
VocabCase read_case(const std::filesystem::path& gguf, std::string vectors = "") {
  VocabCase c;
  c.gguf = gguf.string();
  c.name = gguf.stem().string().substr(std::string("ggml-vocab-").size());
  if (vectors.empty()) vectors = c.gguf;
  const std::string raw = test::read_file(vectors + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    c.inputs.push_back(raw.substr(pos, next == raw.npos ? raw.npos : next - pos));
    if (next == raw.npos) break;
    pos = next + sep.size();
  }
  std::istringstream out(test::read_file(vectors + ".out"));
  for (std::string line; std::getline(out, line);) {
    std::istringstream ids(line);
    std::vector<int32_t>& e = c.expected.emplace_back();
    for (int32_t id; ids >> id;) e.push_back(id);
  }
  return c;
}

std::vector<VocabCase> vocab_cases() {
  std::vector<VocabCase> cases;
  const std::filesystem::path dir = test::vocab_dir();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::filesystem::path p = entry.path();
    if (p.extension() == ".gguf" && std::filesystem::exists(p.string() + ".inp") &&
        std::filesystem::exists(p.string() + ".out"))
      cases.push_back(read_case(p));
  }
  std::sort(cases.begin(), cases.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return cases;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

// Every string of `c` encodes (without BOS) to llama.cpp's ids.
void check_case(const VocabCase& c) {
  CAPTURE(c.name);
  REQUIRE(!c.inputs.empty());
  REQUIRE(c.inputs.size() == c.expected.size());
  io::GgufFile file(c.gguf);
  model::Tokenizer tok(file);
  REQUIRE_MESSAGE(tok.pre_tokenizer_supported(), "pre-tokenizer " << tok.pre_name());
  size_t n_pass = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    CAPTURE(c.inputs[i]);
    const std::vector<int32_t> got = tok.encode(c.inputs[i], false);
    CHECK_MESSAGE(got == c.expected[i], "got" << ids_str(got) << " want" << ids_str(c.expected[i]));
    n_pass += got == c.expected[i];
  }
  MESSAGE("vocab " << c.name << " (" << tok.model_name() << ", pre " << tok.pre_name()
                   << "): " << n_pass << "/" << c.inputs.size() << " strings match");
}

}  // namespace

TEST_CASE("every vendored vocabulary matches llama.cpp's expected token ids") {
  const std::vector<VocabCase> cases = vocab_cases();
  REQUIRE(!cases.empty());
  for (const VocabCase& c : cases) check_case(c);
}

// Mistral's Tekken and Phi-4-mini's GPT-4o regexes on the gpt-2 vocabulary, against ids from
// llama.cpp 80fb11ac's llama-tokenize (tools/peer/vocab_vectors.sh) on the gpt-2 strings and
// more that exercise them: ASCII case changes, contractions, digit runs, CJK, emoji, space runs.
TEST_CASE("Tekken and GPT-4o pre-tokenizers match llama-tokenize") {
  test::TempDir tmp;
  const std::string dir = test::vocab_dir() + "/";
  for (const std::string pre : {"tekken", "gpt-4o"}) {
    const std::string stem = "ggml-vocab-gpt-2-pre-" + pre + ".gguf";
    const std::string copy = tmp / stem;
    test::copy_vocab(dir + "ggml-vocab-gpt-2.gguf", copy, "tokenizer.ggml.pre",
                     [&](io::GgufWriter& w) { w.add_string("tokenizer.ggml.pre", pre); });
    check_case(read_case(copy, dir + stem));
  }
}

// LFM2 and LFM2.5 files name the pre-tokenizer lfm2, which llama.cpp (llama-vocab.cpp, 80fb11ac)
// reads as Llama 3's: the same regex, a word that is a token taken whole, BOS. No LFM2 vocabulary
// is at hand, so the check is the Llama 3 vectors on the gpt-2 vocabulary named lfm2.
TEST_CASE("LFM2's pre-tokenizer lfm2 tokenizes as Llama 3's (llama-bpe) does") {
  test::TempDir tmp;
  const std::string dir = test::vocab_dir() + "/";
  const std::string stem = "ggml-vocab-gpt-2-pre-llama-bpe.gguf";
  const std::string copy = tmp / "ggml-vocab-gpt-2-pre-lfm2.gguf";
  test::copy_vocab(dir + stem, copy, "tokenizer.ggml.pre",
                   [&](io::GgufWriter& w) { w.add_string("tokenizer.ggml.pre", "lfm2"); });
  const VocabCase c = read_case(copy, dir + stem);
  check_case(c);
  io::GgufFile file(copy);
  model::Tokenizer tok(file);
  CHECK(tok.pre_name() == "lfm2");
  CHECK(tok.adds_bos());
  for (const std::string& s : c.inputs) {
    CAPTURE(s);
    CHECK(tok.decode(tok.encode(s, false)) == s);
  }
}

TEST_CASE("decode(encode(s)) gives s back for every test string") {
  for (const VocabCase& c : vocab_cases()) {
    CAPTURE(c.name);
    io::GgufFile file(c.gguf);
    model::Tokenizer tok(file);
    for (const std::string& s : c.inputs) {
      CAPTURE(s);
      CHECK(tok.decode(tok.encode(s, false)) == s);
      CHECK(tok.decode(tok.encode(s, true)) == s);
    }
  }
}

TEST_CASE("stories260K: [BOS] + encode(tinystories sample) starts with the reference ids") {
  io::GgufFile file(test::stories_path());
  model::Tokenizer tok(file);
  CHECK(tok.model_name() == "llama");
  CHECK(tok.n_vocab() == 512);
  CHECK(tok.adds_space_prefix());
  const std::string text = test::read_file(test::text_dir() + "/tinystories_sample.txt");
  REQUIRE(text.size() > 1000);
  const std::vector<int32_t> ids = tok.encode(text, true);
  const std::vector<int32_t> want = {1, 410, 13, 441, 416, 331, 407, 261, 378, 383, 286, 261};
  REQUIRE(ids.size() >= 512);  // the reference perplexity uses the first 512 tokens
  CHECK(std::vector<int32_t>(ids.begin(), ids.begin() + want.size()) == want);
  CHECK(tok.decode(ids) == text);
}

TEST_CASE("token_to_piece: spaces, byte tokens, control tokens") {
  io::GgufFile spm_file(test::vocab_dir() + "/ggml-vocab-llama-spm.gguf");
  model::Tokenizer spm(spm_file);
  CHECK(spm.token_to_piece(spm.bos_id()) == "");
  CHECK(spm.token_to_piece(spm.eos_id()) == "");
  CHECK(spm.token_to_piece(13) == "\n");         // <0x0A>
  CHECK(spm.token_to_piece(15043) == " Hello");  // ▁Hello
  CHECK(spm.decode({1, 15043, 3186}) == "Hello world");
  CHECK_THROWS_AS(spm.token_to_piece(spm.n_vocab()), Error);

  io::GgufFile bpe_file(test::vocab_dir() + "/ggml-vocab-gpt-2.gguf");
  model::Tokenizer bpe(bpe_file);
  CHECK(bpe.token_to_piece(220) == " ");   // Ġ
  CHECK(bpe.token_to_piece(198) == "\n");  // Ċ
  CHECK(bpe.token_to_piece(18435) == " Hello");
  CHECK(bpe.token_to_piece(50256) == "");  // <|endoftext|> is a control token
}

TEST_CASE("pre-tokenizers split words as llama.cpp's regex sets do") {
  using model::detail::pre_tokenize;
  using model::detail::PreTokenizer;
  using Words = std::vector<std::string>;
  CHECK(pre_tokenize(PreTokenizer::kGpt2, "Hello world  !!'s 3.5\n\n") ==
        Words{"Hello", " world", " ", " !!'", "s", " 3", ".", "5", "\n\n"});
  CHECK(pre_tokenize(PreTokenizer::kDefault, "a+=b 12345 ok!") ==
        Words{"a", "+=", "b", " ", "123", "45", " ok", "!"});
  CHECK(pre_tokenize(PreTokenizer::kFalcon, "x=1234567") == Words{"x", "=", "123", "456", "7"});
  CHECK(pre_tokenize(PreTokenizer::kStarcoder, "ab12 c") == Words{"ab", "1", "2", " c"});
  CHECK(pre_tokenize(PreTokenizer::kDeepseekCoder, "int x=1;\n中文 한국어") ==
        Words{"int", " x", "=", "1", ";", "\n", "中文", " ", "한국어"});
  // Llama 3: a space never prefixes a number, at most three digits per number, case-insensitive
  // contractions, one non-letter may prefix a word, line breaks join the punctuation before them.
  CHECK(pre_tokenize(PreTokenizer::kLlama3, "Hello world  !!'s 3.5\n\n") ==
        Words{"Hello", " world", " ", " !!'", "s", " ", "3", ".", "5", "\n\n"});
  CHECK(pre_tokenize(PreTokenizer::kLlama3, "ab12345 c'D") == Words{"ab", "123", "45", " c", "'D"});
  CHECK(pre_tokenize(PreTokenizer::kLlama3, "(hello)\r\n\n x") == Words{"(hello", ")\r\n\n", " x"});
  CHECK(pre_tokenize(PreTokenizer::kLlama3, "a \n  b") == Words{"a", " \n", " ", " b"});
  // Qwen2: the same with one digit per number.
  CHECK(pre_tokenize(PreTokenizer::kQwen2, "ab12345 c'D") ==
        Words{"ab", "1", "2", "3", "4", "5", " c", "'D"});
  // Qwen3.5: combining marks join the letters before them.
  CHECK(pre_tokenize(PreTokenizer::kQwen35, "e\u0301te\u0301 12") ==
        Words{"e\u0301te\u0301", " ", "1", "2"});
  CHECK(pre_tokenize(PreTokenizer::kQwen2, "e\u0301te\u0301") == Words{"e", "\u0301te", "\u0301"});
  // Tekken and GPT-4o split words where ASCII case turns from lower to upper; non-ASCII letters
  // have no case. GPT-4o keeps contractions on their word and takes three digits at a time.
  CHECK(pre_tokenize(PreTokenizer::kTekken, "HELLOworld helloWorld \u00c9T\u00c9") ==
        Words{"HELLOworld", " hello", "World", " \u00c9T\u00c9"});
  CHECK(pre_tokenize(PreTokenizer::kTekken, "I'M don't 1234") ==
        Words{"I", "'M", " don", "'t", " ", "1", "2", "3", "4"});
  CHECK(pre_tokenize(PreTokenizer::kGpt4o, "I'M don't 1234567") ==
        Words{"I'M", " don't", " ", "123", "456", "7"});
  CHECK(pre_tokenize(PreTokenizer::kGpt4o, "a/b\n/c  d") ==
        Words{"a", "/b", "\n", "/c", " ", " d"});
  CHECK(pre_tokenize(PreTokenizer::kNewlines, "a b\n\nc\n") == Words{"a b", "\n\n", "c", "\n"});
  CHECK(pre_tokenize(PreTokenizer::kGpt2, "").empty());
  CHECK_THROWS_AS(pre_tokenize(PreTokenizer::kGpt2, "ok \xC3"), Error);  // truncated UTF-8
}

TEST_CASE("unicode tables and GPT-2's byte alphabet") {
  using namespace model::unicode;
  CHECK(cp_flags('a') == kLetter);
  CHECK(cp_flags('7') == kNumber);
  CHECK(cp_flags(' ') == (kSeparator | kWhitespace));
  CHECK(cp_flags('\n') == (kControl | kWhitespace));
  CHECK(cp_flags(0x4E2D) == kLetter);                     // 中
  CHECK(cp_flags(0x3000) == (kSeparator | kWhitespace));  // ideographic space
  CHECK(cp_flags(0xFE0F) == kMark);                       // variation selector
  CHECK(cp_flags(0x1F999) == kSymbol);                    // 🦙
  CHECK(cp_flags(kMaxCodepoint + 1) == 0);
  for (int b = 0; b < 256; ++b) CHECK(cp_to_byte(byte_to_cp(uint8_t(b))) == b);
  CHECK(byte_to_cp(' ') == 0x120);  // Ġ
  CHECK(cp_to_byte(0x4E2D) == -1);
}

namespace {

// Little-endian GGUF v3 bytes with metadata only (no tensors).
class MiniGguf {
 public:
  // Value type codes of the GGUF specification.
  static constexpr uint32_t kU32 = 4, kI32 = 5, kString = 8, kArray = 9;

  void add_string(const std::string& key, const std::string& v) {
    kv(key, kString);
    str(v);
  }
  void add_u32(const std::string& key, uint32_t v) {
    kv(key, kU32);
    pod(v);
  }
  void add_strings(const std::string& key, const std::vector<std::string>& v) {
    kv(key, kArray);
    pod(kString);
    pod(uint64_t(v.size()));
    for (const std::string& s : v) str(s);
  }
  void add_i32s(const std::string& key, const std::vector<int32_t>& v) {
    kv(key, kArray);
    pod(kI32);
    pod(uint64_t(v.size()));
    for (int32_t x : v) pod(x);
  }
  void write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    const uint32_t version = 3;
    const uint64_t n_tensors = 0;
    out.write("GGUF", 4);
    out.write(reinterpret_cast<const char*>(&version), 4);
    out.write(reinterpret_cast<const char*>(&n_tensors), 8);
    out.write(reinterpret_cast<const char*>(&n_kv_), 8);
    out.write(body_.data(), std::streamsize(body_.size()));
  }

 private:
  template <class T>
  void pod(T v) {
    body_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(uint64_t(s.size()));
    body_ += s;
  }
  void kv(const std::string& key, uint32_t type) {
    str(key);
    pod(type);
    ++n_kv_;
  }

  std::string body_;
  uint64_t n_kv_ = 0;
};

// A minimal byte-level BPE vocabulary: by default tokens a, b, ab, Ġ and the merge "a b".
struct MiniVocab {
  std::string model = "gpt2", pre = "gpt-2";
  std::vector<std::string> tokens = {"a", "b", "ab", "Ġ"};
  std::vector<int32_t> types = {1, 1, 1, 1};
  std::vector<std::string> merges = {"a b"};
  uint32_t bos = 0;
};

std::string write_vocab(const test::TempDir& tmp, const MiniVocab& m) {
  MiniGguf g;
  g.add_string("tokenizer.ggml.model", m.model);
  if (!m.pre.empty()) g.add_string("tokenizer.ggml.pre", m.pre);
  g.add_strings("tokenizer.ggml.tokens", m.tokens);
  g.add_i32s("tokenizer.ggml.token_type", m.types);
  g.add_strings("tokenizer.ggml.merges", m.merges);
  g.add_u32("tokenizer.ggml.bos_token_id", m.bos);
  static int n_written = 0;
  const std::string path = tmp / ("vocab" + std::to_string(n_written++) + ".gguf");
  g.write(path);
  return path;
}

std::string error_of(const std::string& path) {
  try {
    io::GgufFile f(path);
    model::Tokenizer t(f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bad or unsupported vocabularies are errors naming the file") {
  test::TempDir tmp;
  {
    io::GgufFile f(write_vocab(tmp, {}));
    model::Tokenizer t(f);
    // Words "ab" and " ab"; "a b" merges, "Ġ a" does not.
    CHECK(t.encode("ab ab", false) == std::vector<int32_t>{2, 3, 2});
  }
  MiniVocab bert;
  bert.model = "bert";
  bert.pre = "";
  const std::string bert_path = write_vocab(tmp, bert);
  CHECK(error_of(bert_path).find(bert_path) != std::string::npos);
  CHECK(error_of(bert_path).find("'bert'") != std::string::npos);

  MiniVocab short_types;
  short_types.types = {1, 1, 1};
  CHECK(error_of(write_vocab(tmp, short_types)).find("token_type") != std::string::npos);
  MiniVocab bad_bos;
  bad_bos.bos = 4;
  CHECK(error_of(write_vocab(tmp, bad_bos)).find("bos_token_id") != std::string::npos);

  MiniVocab glm;
  glm.pre = "chatglm-bpe";
  io::GgufFile f(write_vocab(tmp, glm));
  model::Tokenizer t(f);
  CHECK_FALSE(t.pre_tokenizer_supported());
  CHECK(t.pre_name() == "chatglm-bpe");
  CHECK_THROWS_WITH_AS(t.encode("ab", false), doctest::Contains("chatglm-bpe"), Error);
  CHECK(t.decode({2, 3}) == "ab ");  // decoding does not need the pre-tokenizer
}

TEST_CASE("llama.cpp's aliases of the Llama 3 and Qwen2 pre-tokenizers") {
  test::TempDir tmp;
  for (const char* pre : {"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral",
                          "midm-2.0", "lfm2", "qwen2", "deepseek-r1-qwen", "kormo", "megrez"}) {
    CAPTURE(pre);
    MiniVocab m;
    m.pre = pre;
    io::GgufFile f(write_vocab(tmp, m));
    model::Tokenizer t(f);
    CHECK(t.pre_tokenizer_supported());
    CHECK(t.encode("ab ab", false) == std::vector<int32_t>{2, 3, 2});
  }
}

TEST_CASE("Llama 3 takes a word that is a token whole; other BPE vocabularies follow the merges") {
  test::TempDir tmp;
  MiniVocab m;  // "abc" is a token, but no merge list reaches it from "ab" + "c"
  m.tokens = {"a", "b", "c", "ab", "abc"};
  m.types = {1, 1, 1, 1, 1};
  for (const char* pre : {"gpt-2", "qwen2", "llama-bpe"}) {
    CAPTURE(pre);
    m.pre = pre;
    io::GgufFile f(write_vocab(tmp, m));
    model::Tokenizer t(f);
    const bool whole = std::string(pre) == "llama-bpe";
    CHECK(t.encode("abc", false) == (whole ? std::vector<int32_t>{4} : std::vector<int32_t>{3, 2}));
    CHECK(t.adds_bos() == whole);  // llama.cpp's default: BOS for Llama 3, not for other BPE
  }
}

TEST_CASE("special tokens are parsed only when asked, and end-of-generation tokens are known") {
  const std::string dir = test::vocab_dir() + "/";
  io::GgufFile spm_file(dir + "ggml-vocab-llama-spm.gguf");
  model::Tokenizer spm(spm_file);
  CHECK(spm.adds_bos());
  CHECK(spm.encode("<s>Hello</s>", false, true) == std::vector<int32_t>{1, 15043, 2});
  const std::vector<int32_t> plain = spm.encode("<s>Hello</s>", false);
  CHECK(std::find(plain.begin(), plain.end(), 1) == plain.end());
  CHECK(spm.end_of_generation_ids() == std::vector<int32_t>{2});
  CHECK(spm.eot_id() == -1);

  io::GgufFile gpt2_file(dir + "ggml-vocab-gpt-2.gguf");
  model::Tokenizer gpt2(gpt2_file);
  CHECK_FALSE(gpt2.adds_bos());
  CHECK(gpt2.encode("a<|endoftext|>", false, true) == std::vector<int32_t>{64, 50256});
  CHECK(gpt2.encode("a<|endoftext|>", false).size() > 2);  // plain text: <, |, endoftext, ...
  CHECK(gpt2.is_end_of_generation(50256));
  CHECK_FALSE(gpt2.is_end_of_generation(64));

  // Phi-3: <|end|> ends a turn; its special tokens swallow the newline after them.
  io::GgufFile phi3_file(dir + "ggml-vocab-phi-3.gguf");
  model::Tokenizer phi3(phi3_file);
  CHECK(phi3.find("<|end|>") == 32007);
  CHECK(phi3.eot_id() == 32007);
  CHECK(phi3.end_of_generation_ids() == std::vector<int32_t>{32000, 32007});
  CHECK(phi3.encode("<|user|>\nHello<|end|>\n<|assistant|>\n", true, true) ==
        std::vector<int32_t>{1, 32010, 15043, 32007, 32001});
  CHECK(phi3.decode({32010, 15043, 32007}) == "Hello");  // control tokens print nothing
}

TEST_CASE("SentencePiece without the space prefix (Gemma 2 and 3 files) adds no dummy space") {
  test::TempDir tmp;
  const std::string spm = test::vocab_dir() + "/ggml-vocab-llama-spm.gguf";
  const std::string copy = tmp / "llama-spm-no-prefix.gguf";
  test::copy_vocab(spm, copy, "tokenizer.ggml.add_space_prefix",
                   [](io::GgufWriter& w) { w.add_bool("tokenizer.ggml.add_space_prefix", false); });
  io::GgufFile with_file(spm), without_file(copy);
  model::Tokenizer with(with_file), without(without_file);
  CHECK(with.adds_space_prefix());
  CHECK_FALSE(without.adds_space_prefix());
  const int32_t hello = without.find("Hello"), space_hello = without.find("\xE2\x96\x81Hello");
  const int32_t space_world = without.find("\xE2\x96\x81world");
  REQUIRE(hello >= 0);
  REQUIRE(space_hello >= 0);
  CHECK(with.encode("Hello world", false) == std::vector<int32_t>{space_hello, space_world});
  CHECK(without.encode("Hello world", false) == std::vector<int32_t>{hello, space_world});
  // After a control token the text starts without a space too, as Gemma's turns need.
  CHECK(without.encode("<s>Hello", false, true) == std::vector<int32_t>{without.bos_id(), hello});
  CHECK(without.decode(without.encode(" Hello world", false)) == " Hello world");
}
