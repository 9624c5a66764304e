// kvrt validate end to end on stories260K, and the gate it feeds in kvrt run.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "kvrt_config.h"
#include "ops/matmul.h"
#include "simd/dispatch.h"
#include "test_util.h"

using kvrt::test::run_kvrt;
using kvrt::test::TempDir;

namespace {

std::string model_arg() { return "-m " + kvrt::test::stories_path(); }

// The context of the run of every shipped setting. stories260K's default (its full context of
// 2048) is measured in the README; here 512 positions keep the test to seconds, and under
// emulation (cross builds set KVRT_EXE_WRAPPER) 160: the same settings, the same cases but two
// long prose ones, and the same verdicts on stories260K.
int shipped_run_ctx() {
  const char* wrapper = std::getenv("KVRT_EXE_WRAPPER");
  return wrapper && *wrapper ? 160 : 512;
}

// The number after `key` in `text` (-1 when absent).
int number_after(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  return at == std::string::npos ? -1 : std::atoi(text.c_str() + at + key.size());
}

// JSON without the timings (run time, tok/s, their spreads and segment counts), for run-to-run
// comparison.
std::string without_seconds(const std::string& json) {
  const std::string counts =
      std::regex_replace(json, std::regex("\"undisturbed_segments\": \\[[^\\]]*\\]"), "");
  return std::regex_replace(counts,
                            std::regex("\"(seconds|prefill_tok_s|decode_tok_s|prefill_spread|"
                                       "decode_spread|speed_reliable|timed_segments)\": "
                                       "[^,}\\n]*"),
                            "");
}

// The verdict of the setting whose label is `label` in the JSON report.
std::string verdict_of(const std::string& json, const std::string& label) {
  const size_t at = json.find("{\"label\": \"" + label + "\"");
  if (at == std::string::npos) return "missing";
  const size_t v = json.find("\"verdict\": \"", at);
  return json.substr(v + 12, json.find('"', v + 12) - v - 12);
}

}  // namespace

// A short usable context keeps these runs to a few seconds; the default path is tested below.
TEST_CASE("f32 passes, the negative control fails, and results repeat exactly with the same seed") {
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);
  const std::string args = model_arg() +
                           " --max-len 160 --kv f32 --debug-negative-control 0.5 --record " +
                           tmp / "r.toml";
  const auto a = run_kvrt("validate " + args + " --json " + tmp / "a.json", tmp);
  INFO(a.out, a.err);
  CHECK(a.exit_code == 1);  // one requested setting (the negative control) refused
  const std::string ja = kvrt::test::read_file(tmp / "a.json");
  CHECK(verdict_of(ja, "f32/f32") == "PASS");
  CHECK(verdict_of(ja, "NEG CONTROL") == "FAIL");
  CHECK(a.out.find("noise floor") != std::string::npos);
  const auto b = run_kvrt("validate " + args + " --json " + tmp / "b.json", tmp);
  CHECK(b.exit_code == 1);
  CHECK(without_seconds(ja) == without_seconds(kvrt::test::read_file(tmp / "b.json")));
}

TEST_CASE("the default run covers every shipped setting, and kvrt run honours its record") {
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);
  // Before any validation, a compressed setting is refused with its own exit code.
  const auto before = run_kvrt("run " + model_arg() + " -p Once -n 4 --kv q8", tmp);
  CHECK(before.exit_code == 3);
  CHECK(before.err.find("kvrt validate") != std::string::npos);
  const auto forced =
      run_kvrt("run " + model_arg() + " -p Once -n 4 --kv q8 --allow-unvalidated", tmp);
  CHECK(forced.exit_code == 0);
  CHECK(forced.err.find("warning") != std::string::npos);

  const std::string ctx = " -c " + std::to_string(shipped_run_ctx());
  const auto v = run_kvrt("validate " + model_arg() + ctx + " --html " + tmp / "r.html", tmp);
  INFO(v.out, v.err);
  REQUIRE((v.exit_code == 0 || v.exit_code == 1));
  for (const char* label :
       {"q8/q8", "q8/q4", "q8/q4n", "q4/q4", "q4s/q4s", "q4/q4 ch r32", "q4s/q4n ch", "q3 ch r32"})
    CHECK(v.out.find(std::string("\n") + label + " ") != std::string::npos);
  // The bf16 settings run where the CPU has bf16, and are skipped with the reason elsewhere.
  for (const char* label : {"bf16", "q8/q8 bf16"})
    CHECK(
        (v.out.find(std::string("\n") + label + " ") != std::string::npos ||
         v.out.find(std::string(label) + ": --matmul bf16 cannot run here") != std::string::npos));
  CHECK(kvrt::test::read_file(tmp / "r.html").find("<svg") != std::string::npos);
  // The long cases stretch to the validated context: the longest within ~10% of it.
  const int longest = number_after(v.out, "longest case ");
  CHECK(longest <= shipped_run_ctx());
  CHECK(longest >= shipped_run_ctx() * 85 / 100);

  // q8/q8 passes on stories260K and q4/q4 per-token fails (see the README's table).
  CHECK(run_kvrt("run " + model_arg() + ctx + " -p Once -n 4 --kv q8", tmp).exit_code == 0);
  const auto q4 = run_kvrt("run " + model_arg() + ctx + " -p Once -n 4 --kv q4", tmp);
  CHECK(q4.exit_code == 3);
  CHECK(q4.err.find("says FAIL") != std::string::npos);
  CHECK(run_kvrt("run " + model_arg() + " -p Once -n 4", tmp).exit_code ==
        0);  // f32 needs no record
}

// The number after `"key": ` in the JSON of the setting whose label is `label` (-1 when absent).
int json_number_of(const std::string& json, const std::string& label, const std::string& key) {
  const size_t at = json.find("{\"label\": \"" + label + "\"");
  return at == std::string::npos ? -1 : number_after(json.substr(at), "\"" + key + "\": ");
}

TEST_CASE(
    "sequential stopping: a clearly failing setting stops at the first look; a tiny budget decides "
    "nothing") {
  TempDir tmp;
  const std::string v = "validate " + model_arg() + " -c 160 -t 1 --record " + tmp / "r.toml";
  const auto q4 = run_kvrt(v + " --kv q4 --json " + tmp / "q4.json", tmp);
  INFO(q4.out, q4.err);
  CHECK(q4.exit_code == 1);
  const std::string j = kvrt::test::read_file(tmp / "q4.json");
  CHECK(verdict_of(j, "q4/q4") == "FAIL");
  CHECK(json_number_of(j, "q4/q4", "look") == 1);
  const int n_cases = number_after(q4.out, "acceptance set: ");
  CHECK(json_number_of(j, "q4/q4", "cases_run") < n_cases / 2);
  CHECK(q4.out.find(")  FAIL  decided at look 1 after ") != std::string::npos);
  CHECK(q4.err.find("ETA ") != std::string::npos);

  // 0.06 s is over before the first case: nothing is decided, and the report says why.
  const auto tiny = run_kvrt(v + " --kv q8 --budget 0.001 --json " + tmp / "q8.json", tmp);
  INFO(tiny.out, tiny.err);
  CHECK(tiny.exit_code == 1);
  const std::string jt = kvrt::test::read_file(tmp / "q8.json");
  CHECK(verdict_of(jt, "q8/q8") == "INCONCLUSIVE");
  CHECK(json_number_of(jt, "q8/q8", "cases_run") < n_cases);
  CHECK(tiny.out.find("the budget ended the run") != std::string::npos);
  CHECK(run_kvrt("run " + model_arg() + " -c 160 -p Once -n 4 --kv q8 --record " + tmp / "r.toml",
                 tmp)
            .exit_code == 3);
}

TEST_CASE(
    "speed beside quality: memory at the validated context and tok/s per setting; --prefer picks "
    "among the PASSing ones") {
  TempDir tmp;
  const std::string v =
      "validate " + model_arg() + " -c 160 -t 1 --kv q8 --record " + tmp / "r.toml";
  const auto r =
      run_kvrt(v + " --prefer speed --json " + tmp / "r.json --html " + tmp / "r.html", tmp);
  INFO(r.out, r.err);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  const size_t header = r.out.find("\nsetting ");
  REQUIRE(header != std::string::npos);
  const std::string head = r.out.substr(header, r.out.find('\n', header + 1) - header);
  size_t at = 0;  // the columns, in this order
  for (const char* column :
       {"bytes/tok", "KV@160", "prefill t/s", "decode t/s", "kl mean", "verdict"}) {
    INFO(column);
    const size_t found = head.find(column, at);
    CHECK(found != std::string::npos);
    at = found == std::string::npos ? at : found;
  }
  // Timed: the baseline and the setting, never the noise floor; numbers are not compared (a busy
  // machine may time anything).
  CHECK(r.out.find("\nf32 baseline ") != std::string::npos);
  const std::string j = kvrt::test::read_file(tmp / "r.json");
  CHECK(json_number_of(j, "q8/q8", "prefill_tok_s") > 0);
  CHECK(json_number_of(j, "q8/q8", "decode_tok_s") > 0);
  CHECK(json_number_of(j, "noise floor", "decode_tok_s") == 0);  // null
  // Timed in rounds, at least three segments each, with the spread and whether it is reliable.
  CHECK(json_number_of(j, "q8/q8", "timed_segments") >= 3);
  CHECK(j.find("\"decode_spread\": ") != std::string::npos);
  CHECK(j.find("\"speed_reliable\": ") != std::string::npos);
  const size_t row = r.out.find("\nq8/q8 ");
  REQUIRE(row != std::string::npos);
  const std::string q8_row = r.out.substr(row, r.out.find('\n', row + 1) - row);
  CHECK((q8_row.find("\u00b1") != std::string::npos ||
         q8_row.find("UNRELIABLE") != std::string::npos));
  CHECK(j.find("\"prefer\": \"speed\"") != std::string::npos);
  // 400 bytes/token (q8, FP16 scales, head_dim 8; f32 1280) resident at the validated context of
  // 160 and at stories260K's full context of 2048 (800 KiB); the saving is what is resident less.
  CHECK(json_number_of(j, "q8/q8", "kv_bytes_at_validated_context") == 400 * 160);
  CHECK(json_number_of(j, "q8/q8", "bytes_saved_at_validated_context") == (1280 - 400) * 160);
  CHECK(json_number_of(j, "q8/q8", "kv_bytes_at_full_context") == 400 * 2048);
  CHECK(json_number_of(j, "q8/q8", "bytes_saved_at_full_context") == (1280 - 400) * 2048);
  CHECK(kvrt::test::read_file(tmp / "r.html").find("decode tok/s") != std::string::npos);
  if (verdict_of(j, "q8/q8") == "PASS")
    CHECK(r.out.find("recommended (--prefer speed): q8/q8") != std::string::npos);
  const auto bad = run_kvrt(v + " --prefer size", tmp);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--prefer takes memory or speed") != std::string::npos);
}

TEST_CASE(
    "the record binds the validated context: a longer run is refused with the command that extends "
    "it") {
  TempDir tmp;
  const std::string rec = tmp / "r.toml", thresholds = tmp / "thresholds.toml";
  // The default context is the model's (2048), capped by [context] max of the thresholds file.
  std::string t =
      kvrt::test::read_file(std::string(KVRT_SOURCE_DIR) + "/validation/thresholds.toml");
  t.replace(t.find("max = 4096"), 10, "max = 128");
  std::ofstream(thresholds) << t;
  const std::string v =
      "validate " + model_arg() + " -t 1 --config " + thresholds + " --record " + rec;
  const auto a = run_kvrt(v + " --kv q8", tmp);
  INFO(a.out, a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(number_after(a.out, "validated context ") == 128);
  CHECK(kvrt::test::read_file(rec).find("n_ctx = 128") != std::string::npos);

  const std::string run = "run " + model_arg() + " -p Once -n 4 --kv q8 --record " + rec;
  CHECK(run_kvrt(run + " -c 128", tmp).exit_code == 0);
  CHECK(run_kvrt(run + " -c 100", tmp).exit_code == 0);
  const auto longer = run_kvrt(run + " -c 129", tmp);
  CHECK(longer.exit_code == 3);
  CHECK(longer.err.find("validated up to a context of 128 positions") != std::string::npos);
  CHECK(longer.err.find("Run `kvrt validate -m ") != std::string::npos);
  CHECK(longer.err.find("stories260K.gguf -c 129 --record " + rec + " --config " + thresholds +
                        "`") != std::string::npos);
  const auto past_model = run_kvrt(run + " -c 4096", tmp);  // stories260K's context is 2048
  CHECK(past_model.exit_code == 3);
  CHECK(past_model.err.find("beyond the model's context of 2048 positions") != std::string::npos);
  CHECK(run_kvrt(run, tmp).exit_code == 3);  // run's default context is the model's 2048

  // Validating another setting at another context keeps q8's verdict at its own context.
  const auto b = run_kvrt(v + " --kv-k q8 --kv-v q4 -c 160", tmp);
  REQUIRE(b.exit_code == 0);
  CHECK(number_after(b.out, "validated context ") == 160);
  CHECK(run_kvrt(run + " -c 128", tmp).exit_code == 0);
  CHECK(run_kvrt(run + " -c 160", tmp).exit_code == 3);
  CHECK(run_kvrt("run " + model_arg() + " -p Once -n 4 --kv-k q8 --kv-v q4 -c 160 --record " + rec,
                 tmp)
            .exit_code == 0);
  // -c beyond the model's context is a usage error before anything runs.
  const auto beyond = run_kvrt(v + " --kv q8 -c 4096", tmp);
  CHECK(beyond.exit_code == 2);
  CHECK(beyond.err.find("context of 2048") != std::string::npos);
}

TEST_CASE(
    "--matmul bf16 is a validated setting: run refuses it without a PASS record, or where it "
    "cannot run") {
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);
  const std::string rec = tmp / "r.toml";
  // More than the 4 tokens of a decode-sized product, so the prefill products run in bf16.
  const std::string run =
      "run " + model_arg() +
      " -c 160 -p 'Once upon a time, there was a little girl' -n 4 --matmul bf16";
  // A CPU without AVX-512 (KVRT_ISA=avx2 stands for one on x86; an ARM build has no oneDNN) cannot
  // run it: a usage error before any work.
#if defined(__x86_64__)
  setenv("KVRT_ISA", "avx2", 1);
#endif
  const auto no_cpu = run_kvrt(run + " --allow-unvalidated", tmp);
  unsetenv("KVRT_ISA");
  CHECK(no_cpu.exit_code == 2);
  CHECK(no_cpu.err.find("--matmul bf16 cannot run here") != std::string::npos);
  // Nor can oneDNN's bf16 emulation (what it picks when capped below AVX512-BF16): refused too.
  setenv("DNNL_MAX_CPU_ISA", "AVX512_CORE", 1);
  const auto emulated = run_kvrt(run + " --allow-unvalidated", tmp);
  unsetenv("DNNL_MAX_CPU_ISA");
  CHECK(emulated.exit_code == 2);
  if (!kvrt::ops::bf16_unavailable(kvrt::simd::runnable_isas(), kvrt::simd::process_isa())
           .empty()) {
    MESSAGE("bf16 products do not run on this CPU; the gate is tested where they do");
    return;
  }
  CHECK(emulated.err.find("emulates bf16") != std::string::npos);

  const auto before = run_kvrt(run + " --record " + rec, tmp);
  CHECK(before.exit_code == 3);  // as for an unvalidated KV setting
  CHECK(before.err.find("with bf16 products is not validated") != std::string::npos);
  CHECK(before.err.find("--matmul flags") != std::string::npos);
  const auto forced = run_kvrt(run + " --allow-unvalidated", tmp);
  CHECK(forced.exit_code == 0);
  CHECK(forced.err.find("warning") != std::string::npos);
  CHECK(forced.err.find("bf16 prefill products") != std::string::npos);

  const auto v = run_kvrt("validate " + model_arg() + " -c 160 --matmul bf16 --record " + rec, tmp);
  INFO(v.out, v.err);
  REQUIRE(v.exit_code == 0);
  CHECK(kvrt::test::read_file(rec).find("matmul = \"bf16\"") != std::string::npos);
  const auto after = run_kvrt(run + " --record " + rec, tmp);
  CHECK(after.exit_code == 0);
  CHECK(after.err.find("bf16 products validated") != std::string::npos);
  // The record binds the pair: f32 KV with bf16 products does not vouch for q8 with bf16.
  const auto q8 = run_kvrt(run + " --kv q8 --record " + rec, tmp);
  CHECK(q8.exit_code == 3);
  CHECK(q8.err.find("does not cover it") != std::string::npos);
}

TEST_CASE(
    "a protected setting is validated under its canonical name, which kvrt run finds from any "
    "spelling") {
  TempDir tmp;
  const std::string rec = tmp / "r.toml";
  const auto v = run_kvrt(
      "validate " + model_arg() + " -t 1 -c 128 --kv 'q4,sinks=4,layers[0,-1]=q8' --record " + rec,
      tmp);
  INFO(v.out, v.err);
  REQUIRE((v.exit_code == 0 || v.exit_code == 1));
  const std::string name =
      "k=q4,v=q4,g=8,axis=token,r=0,rot=1,sinks=4,layers[0,4]=q8";  // stories260K: 5 layers
  CHECK(kvrt::test::read_file(rec).find("name = \"" + name + "\"") != std::string::npos);
  CHECK(v.out.find("q4/q4 sinks4 layers[-1,0]=q8") !=
        std::string::npos);  // the label: the setting as given
  // The summary's first column is as wide as the longest label and two spaces: the columns stay
  // apart.
  CHECK(v.out.find("\nq4/q4 sinks4 layers[-1,0]=q8  ") != std::string::npos);
  CHECK(v.out.find("\nsetting" + std::string(28 + 2 - 7, ' ') + "bytes/tok") != std::string::npos);
  const bool pass = v.exit_code == 0;
  const auto r =
      run_kvrt("run " + model_arg() +
                   " -c 128 -p Once -n 4 --kv 'q4,layers[4,0]=q8,sinks=4' --record " + rec,
               tmp);
  INFO(r.err);
  CHECK(r.exit_code == (pass ? 0 : 3));
  CHECK(r.err.find(pass ? "validated for 128 positions" : "says FAIL") != std::string::npos);
  CHECK(r.err.find("KV setting " + name) != std::string::npos);
  const auto other = run_kvrt(
      "run " + model_arg() + " -c 128 -p Once -n 4 --kv 'q4,sinks=4,layers[0]=q8' --record " + rec,
      tmp);
  CHECK(other.exit_code == 3);
  CHECK(other.err.find("does not cover it") != std::string::npos);
  const auto outside = run_kvrt("run " + model_arg() + " -p Once -n 4 --kv 'q4,layers[5]=q8'", tmp);
  CHECK(outside.exit_code == 2);
  CHECK(outside.err.find("outside the model's 5 layers") != std::string::npos);
}

TEST_CASE("an edited record and a record for other thresholds are refused by kvrt run") {
  TempDir tmp;
  const std::string rec = tmp / "r.toml", thresholds = tmp / "thresholds.toml";
  std::ofstream(thresholds) << kvrt::test::read_file(std::string(KVRT_SOURCE_DIR) +
                                                     "/validation/thresholds.toml");
  const auto v = run_kvrt(
      "validate " + model_arg() + " -c 160 --kv q8 --config " + thresholds + " --record " + rec,
      tmp);
  INFO(v.out, v.err);
  REQUIRE(v.exit_code == 0);
  CHECK(run_kvrt("run " + model_arg() + " -c 160 -p Once -n 4 --kv q8 --record " + rec, tmp)
            .exit_code == 0);

  std::ofstream(thresholds, std::ios::app) << "# edited\n";
  const auto moved =
      run_kvrt("run " + model_arg() + " -c 160 -p Once -n 4 --kv q8 --record " + rec, tmp);
  CHECK(moved.exit_code == 3);
  CHECK(moved.err.find("changed since validation") != std::string::npos);

  std::string text = kvrt::test::read_file(rec);
  text.replace(text.find("max_len = 160"), 13, "max_len = 512");
  std::ofstream(rec, std::ios::binary) << text;
  const auto edited =
      run_kvrt("run " + model_arg() + " -c 160 -p Once -n 4 --kv q8 --record " + rec, tmp);
  CHECK(edited.exit_code == 3);
  CHECK(edited.err.find("content hash mismatch") != std::string::npos);
}

TEST_CASE(
    "a deployer's own cases run with the default thresholds, and --thresholds takes another "
    "file") {
  TempDir tmp;
  const std::string dir = tmp / "own";
  std::filesystem::create_directory(dir);
  std::string manifest;
  const char* texts[] = {"Once upon a time there was a little girl named Lily.",
                         "Tom had a big red ball. He liked to play with it in the park.",
                         "The sun was warm and the sky was blue. The birds sang in the trees.",
                         "Mom said, \\\"It is time for bed.\\\" Ben did not want to sleep.",
                         "One day a cat found a box. The cat sat in the box all day long.",
                         "Sue and her dog went for a walk. They saw a duck by the pond."};
  for (int i = 0; i < 6; ++i)
    manifest += "[[case]]\nid = \"letter-" + std::to_string(i) +
                "\"\ncategory = \"letters\"\nmode = \"teacher_forced\"\ntext = \"" + texts[i] +
                "\"\n\n";
  std::ofstream(dir + "/manifest.toml") << manifest;
  const std::string shipped = std::string(KVRT_SOURCE_DIR) + "/validation/thresholds.toml";
  const std::string run = "validate " + model_arg() + " -c 64 --kv q8 --only-cases --cases " + dir +
                          " --record " + tmp / "r.toml";
  // The shipped thresholds' recall limit finds no recall case here: it is left out, with a note
  // naming the file's line, on stderr and in the JSON report.
  const auto own = run_kvrt(run + " --json " + tmp / "own.json", tmp);
  INFO(own.out, own.err);
  CHECK(own.exit_code != 2);
  CHECK(own.err.find("kvrt validate: note: " + shipped + ":") != std::string::npos);
  CHECK(own.err.find("has category 'recall' or one of its family ('recall-...'), so this limit "
                     "is not applied (its categories: letters)") != std::string::npos);
  CHECK(kvrt::test::read_file(tmp / "own.json").find("\"notes\": [\"" + shipped + ":") !=
        std::string::npos);
  // --thresholds FILE (--config is the same flag): a limit on a misspelt category of the set fails.
  std::ofstream(tmp / "t.toml")
      << "[metric.kl]\nmax = 0.01\n\n[metric.kl.category]\nletter = 0.005\n";
  const auto typo = run_kvrt(run + " --thresholds " + tmp / "t.toml", tmp);
  CHECK(typo.exit_code == 2);
  CHECK(typo.err.find(tmp / "t.toml" + ":5: metric.kl.category: no case of the acceptance set has "
                                       "category 'letter' (did you mean 'letters'?") !=
        std::string::npos);
  std::ofstream(tmp / "t.toml")
      << "[metric.kl]\nmax = 0.01\n\n[metric.kl.category]\nletters = 0.005\n";
  const auto mine = run_kvrt(run + " --thresholds " + tmp / "t.toml", tmp);
  INFO(mine.out, mine.err);
  CHECK(mine.exit_code != 2);
  CHECK(mine.out.find("category=letters") != std::string::npos);
  CHECK(mine.err.find("note:") == std::string::npos);
}

TEST_CASE("usage and input errors exit with 2 and name the file and line") {
  TempDir tmp;
  std::ofstream(tmp / "t.toml")
      << "[metric.kl]\nmax = 0.01\n\n[metric.top1_mismatch]\nlimit = 0.1\n";
  const auto bad = run_kvrt("validate " + model_arg() + " --config " + tmp / "t.toml", tmp);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find(tmp / "t.toml" + ":5: ") != std::string::npos);
  CHECK(run_kvrt("validate --only-cases", tmp).exit_code == 2);
  CHECK(run_kvrt("validate --kv q5", tmp).exit_code == 2);
}
