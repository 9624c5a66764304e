// Weight loading: every supported tensor type gives the logits of the FP32 model it encodes,
// tied output matrices work, and models with a missing key or an unsupported type are refused
// with a sentence naming the key or tensor.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <vector>

#include "common/error.h"
#include "io/gguf_writer.h"
#include "kvrt_config.h"
#include "model/session.h"
#include "test_util.h"
#include "tools/synth_model/synth.h"

using namespace kvrt;

namespace {

synth::SynthConfig small_config(simd::WeightType type) {
  synth::SynthConfig c;
  c.d_model = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.d_ff = 96;
  c.n_ctx = 128;
  c.type = type;
  c.vocab_path = test::stories_path();  // 512 tokens keep the models small
  c.seed = 7;
  return c;
}

// Logits [n_tokens][n_vocab] of a fixed token sequence.
std::vector<float> logits_of(const std::string& path) {
  model::Model m(path);
  model::SessionOptions o;
  o.n_ctx = 64;
  o.n_threads = 1;
  model::Session s(m, o);
  std::vector<int32_t> tokens{1, 10, 200, 300, 45, 77, 400, 3};
  std::vector<float> out(tokens.size() * size_t(m.config().n_vocab));
  s.eval(tokens.data(), int(tokens.size()), out.data());
  return out;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(double(a[i])));
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
  }
  return diff / scale;
}

std::string error_of(const std::string& path) {
  try {
    model::Model m(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// stories260K rewritten without the metadata key `drop` (and general.alignment), with keys that
// `add` writes first (e.g. another value for the dropped key, an alignment, padding).
void rewrite_stories(const std::string& path, const std::string& drop,
                     const std::function<void(io::GgufWriter&)>& add) {
  io::GgufFile src(test::stories_path());
  io::GgufWriter w;
  if (add) add(w);
  for (const auto& [key, value] : src.metadata())
    if (key != drop && key != "general.alignment") w.add_value(key, value);
  for (const auto& t : src.tensors()) {
    const float* data = reinterpret_cast<const float*>(t.data);
    w.add_tensor(t.name, t.dims, t.type, std::span<const float>(data, size_t(t.n_elements)));
  }
  w.write(path);
}

// Pages of [p, p + n) present in this process's page tables (/proc/self/pagemap, bit 63).
size_t present_pages(const void* p, size_t n) {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  size_t present = 0;
  for (uintptr_t i = uintptr_t(p) / page; i <= (uintptr_t(p) + n - 1) / page; ++i) {
    uint64_t entry = 0;
    const ssize_t got = ::pread(fd, &entry, sizeof entry, off_t(i * sizeof entry));
    CHECK(got == ssize_t(sizeof entry));
    present += size_t(entry >> 63);
  }
  ::close(fd);
  return present;
}

size_t pages_of(size_t n) { return n / size_t(::sysconf(_SC_PAGESIZE)); }

// Overwrites n bytes of tensor `name`, at byte_in_tensor of its data, in the file at `path`.
void patch_tensor(const std::string& path, const std::string& name, int64_t byte_in_tensor,
                  const void* bytes, size_t n) {
  uint64_t at = 0;
  {
    io::GgufFile f(path);
    const io::GgufTensor* t = f.find_tensor(name);
    REQUIRE(t != nullptr);
    at = t->file_offset + uint64_t(byte_in_tensor);
  }
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  out.seekp(std::streamoff(at));
  out.write(static_cast<const char*>(bytes), std::streamsize(n));
}

}  // namespace

TEST_CASE("F16, BF16 and Q8_0 weights give the logits of the FP32 weights they round") {
  test::TempDir tmp;
  synth::write_synth_model(small_config(simd::WeightType::kF32), tmp / "f32.gguf");
  const auto reference = logits_of(tmp / "f32.gguf");
  // Tolerances: relative rounding of each format (f16 2^-11, bf16 2^-8, q8_0 1/254 of the block
  // maximum) grown through two layers of sums; measured errors are well inside them.
  struct Case {
    simd::WeightType type;
    const char* name;
    double tol;
  } cases[] = {{simd::WeightType::kF16, "f16", 5e-3},
               {simd::WeightType::kBF16, "bf16", 4e-2},
               {simd::WeightType::kQ8_0, "q8_0", 4e-2}};
  for (const auto& c : cases) {
    const std::string path = tmp / (std::string(c.name) + ".gguf");
    synth::write_synth_model(small_config(c.type), path);
    const double err = max_rel_diff(reference, logits_of(path));
    INFO(std::string(c.name) << " max relative logit error " << err);
    CHECK(err < c.tol);
    CHECK(err > 0.0);  // the weights really were rounded, so the comparison is not vacuous
  }
}

TEST_CASE(
    "every quantized type and llama-quantize mix runs packed and tracks the FP32 model's logits") {
  // Rows of 256 so the K types apply to every matrix. The bound on the relative rms logit error is
  // three times the bound on the type's relative rms rounding of N(0, 1) weights
  // (test_weight_types.cc): a logit passes through three products in series (the two layers and
  // the output matrix), each adding an error of that size. Q2_K's would exceed 1; its bound says
  // the logits still carry the FP32 model's signal.
  test::TempDir tmp;
  auto config = [](simd::WeightType type, synth::WeightMix mix) {
    synth::SynthConfig c = small_config(type);
    c.d_model = 256, c.d_ff = 512, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.mix = mix;
    return c;
  };
  synth::write_synth_model(config(simd::WeightType::kF32, synth::WeightMix::kPure),
                           tmp / "f32.gguf");
  const auto reference = logits_of(tmp / "f32.gguf");
  struct Case {
    const char* name;
    double bound;
  } cases[] = {{"q8_0", 0.03},   {"q4_0", 0.45},   {"q4_1", 0.36}, {"q5_0", 0.225},
               {"q5_1", 0.18},   {"iq4_nl", 0.39}, {"q2_k", 0.95}, {"q3_k", 0.75},
               {"q4_k", 0.36},   {"q5_k", 0.18},   {"q6_k", 0.09}, {"q3_k_m", 0.75},
               {"q4_k_m", 0.36}, {"q5_k_m", 0.18}};
  for (const Case& c : cases) {
    const synth::WeightChoice w = synth::parse_weight_choice(c.name);
    const std::string path = tmp / (std::string(c.name) + ".gguf");
    synth::write_synth_model(config(w.type, w.mix), path);
    {
      model::Model m(path);
      CHECK(m.weights().bytes_converted() == 0);
      CHECK(m.weights().layers[0].wq.type == w.type);
      if (w.mix == synth::WeightMix::kM) CHECK(m.weights().output.type == simd::WeightType::kQ6_K);
    }
    const auto logits = logits_of(path);
    double err = 0, ref = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      err += double(logits[i] - reference[i]) * double(logits[i] - reference[i]);
      ref += double(reference[i]) * double(reference[i]);
    }
    const double rel = std::sqrt(err / ref);
    INFO(std::string(c.name) << " relative rms logit error " << rel);
    CHECK(rel < c.bound);
    CHECK(rel > 0.0);
  }
}

TEST_CASE("a NaN or infinite scale of a K block is refused at load, naming the tensor") {
  test::TempDir tmp;
  synth::SynthConfig c = small_config(simd::WeightType::kQ4_K);
  c.d_model = 256, c.d_ff = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64;
  synth::write_synth_model(c, tmp / "q4k.gguf");
  const uint16_t inf16 = 0x7c00;
  patch_tensor(tmp / "q4k.gguf", "blk.1.ffn_up.weight", 144 * 5 + 2, &inf16, 2);  // dmin of block 5
  const std::string err = error_of(tmp / "q4k.gguf");
  INFO(err);
  CHECK(err.find("tensor 'blk.1.ffn_up.weight' has a NaN or infinite scale in its Q4_K block at "
                 "element 1280 (row 5)") != std::string::npos);
}

TEST_CASE("matrices of every computable type stay packed in the map; nothing is widened at load") {
  test::TempDir tmp;
  for (simd::WeightType type :
       {simd::WeightType::kF16, simd::WeightType::kBF16, simd::WeightType::kQ8_0}) {
    const std::string path = tmp / (std::string(simd::weight_type_name(type)) + ".gguf");
    synth::write_synth_model(small_config(type), path);
    model::Model m(path);
    INFO(simd::weight_type_name(type));
    CHECK(m.weights().bytes_converted() == 0);  // the norm vectors are F32: used in place too
    CHECK(m.weights().layers[0].wq.type == type);
    CHECK(m.weights().bytes_mapped() > m.file().file_size() / 2);
  }
}

TEST_CASE("a tied output matrix reuses token_embd") {
  test::TempDir tmp;
  auto c = small_config(simd::WeightType::kF32);
  c.tied = true;
  synth::write_synth_model(c, tmp / "tied.gguf");
  model::Model m(tmp / "tied.gguf");
  CHECK(m.config().tied_output);
  CHECK(m.weights().output.data == m.weights().token_embd.data);
  CHECK(logits_of(tmp / "tied.gguf").size() == 8 * size_t(m.config().n_vocab));
}

TEST_CASE("an untied token_embd leaves resident memory once checked; rows are read from the file") {
  test::TempDir tmp;
  synth::write_synth_model(small_config(simd::WeightType::kF32), tmp / "untied.gguf");
  model::Model m(tmp / "untied.gguf");
  const model::Weights& w = m.weights();
  const size_t embd_bytes = size_t(w.token_embd.n_out) * w.token_embd.row_bytes(),
               output_bytes = size_t(w.output.n_out) * w.output.row_bytes();
  REQUIRE(pages_of(embd_bytes) >= 8);
  CHECK(present_pages(w.token_embd.data, embd_bytes) <= 2);  // the pages it shares, at most
  CHECK(present_pages(w.output.data, output_bytes) >= pages_of(output_bytes));  // read each step

  std::vector<float> row(size_t(w.token_embd.n_in)), raw(row.size());
  for (int32_t token : {0, 300, 511}) {
    w.embedding(token, row.data(), raw.data());
    const io::GgufFile file(tmp / "untied.gguf");
    const float* stored =
        reinterpret_cast<const float*>(file.find_tensor("token_embd.weight")->data);
    CHECK(std::memcmp(row.data(), stored + size_t(token) * row.size(),
                      row.size() * sizeof(float)) == 0);
  }
  CHECK(present_pages(w.token_embd.data, embd_bytes) <= 2);  // read by pread, not mapped
}

TEST_CASE("a model file cut short after loading makes a token's row an error, not a crash") {
  test::TempDir tmp;
  synth::write_synth_model(small_config(simd::WeightType::kF32), tmp / "untied.gguf");
  model::Model m(tmp / "untied.gguf");
  const size_t embd_at = m.file().find_tensor("token_embd.weight")->file_offset;
  std::filesystem::resize_file(tmp / "untied.gguf", embd_at + 100);
  std::vector<float> row(size_t(m.weights().token_embd.n_in)), raw(row.size());
  try {
    m.weights().embedding(400, row.data(), raw.data());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("changed after it was loaded") != std::string::npos);
  }
}

TEST_CASE("a model without a required key is refused naming the key") {
  test::TempDir tmp;
  rewrite_stories(tmp / "no_blocks.gguf", "llama.block_count", nullptr);
  const std::string err = error_of(tmp / "no_blocks.gguf");
  CHECK(err.find("no_blocks.gguf") != std::string::npos);
  CHECK(err.find("llama.block_count") != std::string::npos);
}

TEST_CASE("a tensor of an unsupported type is refused naming the tensor") {
  test::TempDir tmp;
  synth::write_synth_model(small_config(simd::WeightType::kF32), tmp / "m.gguf");
  // Re-type blk.0.attn_q.weight as I8 (a type GGUF files may hold, not a weight type) in place:
  // the smaller I8 data still lies inside the file, so only the type check can reject it.
  std::string bytes = test::read_file(tmp / "m.gguf");
  const std::string name = "blk.0.attn_q.weight";
  size_t at = bytes.find(name);
  REQUIRE(at != std::string::npos);
  at += name.size();
  uint32_t n_dims;
  std::memcpy(&n_dims, &bytes[at], 4);
  const uint32_t i8 = 24;
  std::memcpy(&bytes[at + 4 + 8 * n_dims], &i8, 4);
  std::ofstream(tmp / "i8.gguf", std::ios::binary) << bytes;
  const std::string err = error_of(tmp / "i8.gguf");
  CHECK(err.find("tensor 'blk.0.attn_q.weight' has type I8, which kvrt does not compute") !=
        std::string::npos);
}

TEST_CASE("an impossible block count is refused before anything is sized by it") {
  // Found by the gguf fuzz target: block_count 8388609 once made the loader reserve 2 GB.
  const std::string err =
      error_of(std::string(KVRT_SOURCE_DIR) + "/tests/fuzz/crashes/gguf/oom_huge_block_count.gguf");
  CHECK(err.find("block_count 8388609") != std::string::npos);
}

TEST_CASE("a block_count smaller than the file's blocks is refused, naming the unused tensors") {
  // Five blocks in the file, three in the metadata: the last two must not be silently dropped.
  test::TempDir tmp;
  rewrite_stories(tmp / "three_of_five.gguf", "llama.block_count",
                  [](io::GgufWriter& w) { w.add_u32("llama.block_count", 3); });
  const std::string err = error_of(tmp / "three_of_five.gguf");
  INFO(err);
  CHECK(err.find("three_of_five.gguf") != std::string::npos);
  CHECK(err.find("18 tensors are not used by a 3-block llama model") != std::string::npos);
  CHECK(err.find("blk.3.") != std::string::npos);
}

TEST_CASE("tensors misaligned by general.alignment = 1 are copied aligned, with unchanged logits") {
  test::TempDir tmp;
  rewrite_stories(tmp / "aligned.gguf", "", nullptr);
  // With alignment 1 the F32 tensors follow the header unpadded: pick a padding key length that
  // leaves them off a 4-byte boundary.
  std::string path;
  for (size_t pad = 0; pad < 4 && path.empty(); ++pad) {
    const std::string p = tmp / ("align1_pad" + std::to_string(pad) + ".gguf");
    rewrite_stories(p, "", [pad](io::GgufWriter& w) {
      w.set_alignment(1);
      w.add_string("test.pad", std::string(pad, 'x'));
    });
    if (reinterpret_cast<uintptr_t>(io::GgufFile(p).tensors()[0].data) % 4 != 0) path = p;
  }
  REQUIRE(!path.empty());
  model::Model m(path);
  const model::Weights& w = m.weights();
  std::vector<const void*> pointers{w.token_embd.data, w.output_norm, w.output.data};
  for (const model::LayerWeights& l : w.layers) {
    for (const void* p :
         {static_cast<const void*>(l.attn_norm), l.wq.data, l.wk.data, l.wv.data, l.wo.data,
          static_cast<const void*>(l.ffn_norm), l.w_gate.data, l.w_up.data, l.w_down.data})
      pointers.push_back(p);
  }
  for (const void* p : pointers) CHECK(reinterpret_cast<uintptr_t>(p) % alignof(float) == 0);
  CHECK(w.bytes_converted() > 0);  // the copies
  const io::GgufTensor& embd = *m.file().find_tensor("token_embd.weight");
  REQUIRE(pages_of(embd.n_bytes) >= 8);
  CHECK(present_pages(embd.data, embd.n_bytes) <= 2);  // the map's pages, once copied
  CHECK(logits_of(path) == logits_of(tmp / "aligned.gguf"));
}

TEST_CASE("NaN or infinity in a weight is refused at load, naming the tensor and the element") {
  test::TempDir tmp;
  synth::write_synth_model(small_config(simd::WeightType::kF32), tmp / "f32.gguf");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  patch_tensor(tmp / "f32.gguf", "blk.1.ffn_down.weight", 4 * 100, &nan, 4);
  std::string err = error_of(tmp / "f32.gguf");
  INFO(err);
  CHECK(err.find("tensor 'blk.1.ffn_down.weight' holds NaN at element 100 (row 1)") !=
        std::string::npos);

  synth::write_synth_model(small_config(simd::WeightType::kF16), tmp / "f16.gguf");
  const uint16_t inf16 = 0xfc00;  // -infinity
  patch_tensor(tmp / "f16.gguf", "blk.0.attn_k.weight", 2 * 7, &inf16, 2);
  err = error_of(tmp / "f16.gguf");
  CHECK(err.find("tensor 'blk.0.attn_k.weight' holds an infinity at element 7") !=
        std::string::npos);

  synth::write_synth_model(small_config(simd::WeightType::kQ8_0), tmp / "q8.gguf");
  const uint16_t nan16 = 0x7e00;
  patch_tensor(tmp / "q8.gguf", "token_embd.weight", 34 * 3, &nan16, 2);  // the scale of block 3
  err = error_of(tmp / "q8.gguf");
  CHECK(err.find("tensor 'token_embd.weight' has a NaN or infinite scale in its Q8_0 block at "
                 "element 96 (row 1)") != std::string::npos);
}
