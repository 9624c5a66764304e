// Hostile inputs against kvrt's promised limits (docs/hardening.md): deep TOML, endless chat input,
// huge template expansions, over-long prompts, lost output, out-of-range numbers, a missing HOME,
// paths out of the case directory, duplicate ids and over-wide record values. Each must end with
// one clear sentence and a non-zero exit, within seconds and bounded memory.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"
#include "io/gguf.h"
#include "kvrt_config.h"
#include "text/tokenizer.h"
#include "simd/kernels.h"
#include "test_util.h"
#include "validate/case_set.h"
#include "validate/record.h"
#include "validate/toml_util.h"

namespace {

using kvrt::test::TempDir;

std::string quote(const std::string& s) { return "'" + s + "'"; }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// $KVRT_EXE is a command line (cross builds prefix the emulator), so the probes run it through a
// script: "$K" is then one word for every build.
std::string kvrt_script(const TempDir& tmp) {
  const char* exe = std::getenv("KVRT_EXE");
  const std::string path = tmp / "kvrt.sh";
  write_bytes(path, std::string("#!/bin/sh\nexec ") + (exe && *exe ? exe : "kvrt") + " \"$@\"\n");
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

struct Shell {
  int exit_code = -1;
  std::string err;
};

// Runs `command` in sh with kvrt's path as $K and stories260K as $M, behind a time limit of
// `seconds` and a 4 GB address-space limit (not under AddressSanitizer, whose shadow memory
// reserves terabytes), stderr captured (stdout is the command's business).
Shell shell(const std::string& command, const TempDir& tmp, int seconds = 60) {
  const std::string script = tmp / "probe.sh";
  const std::string limit = kvrt::test::kSanitizedBuild ? "" : "ulimit -v 4000000\n";
  write_bytes(script, "K=" + quote(kvrt_script(tmp)) + "\nM=" + quote(kvrt::test::stories_path()) +
                          "\n" + limit + command + "\n");
  const std::string cmd = "timeout -k 5 " + std::to_string(seconds) + " sh " + quote(script) +
                          " 2>" + quote(tmp / "err");
  const int status = std::system(cmd.c_str());
  Shell r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = kvrt::test::read_file(tmp / "err");
  return r;
}

// The one line of an error: exit code `code` and a stderr line with `says`.
void check_refused(const Shell& r, int code, const std::string& says) {
  CAPTURE(r.err);
  CHECK(r.exit_code == code);
  CHECK(r.err.find(says) != std::string::npos);
}

// A record with its content hash recomputed over `body` after the header, as a hand edit would.
std::string rehashed_record(const std::string& body) {
  const std::string header = "# edited by hand\n";
  return header +
         "content_sha256 = " + kvrt::validate::toml_quote(kvrt::sha256_hex(header + body)) + "\n" +
         body;
}

// The body of a valid record for stories260K with one q8 PASS at `n_ctx` positions.
std::string record_body(const std::string& n_ctx) {
  kvrt::validate::Record r;
  r.kvrt_version = KVRT_VERSION;
  r.isa = kvrt::simd::isa_name();
  r.model_path = kvrt::test::stories_path();
  r.model_sha256 = kvrt::sha256_file(r.model_path);
  r.thresholds_path = kvrt::test::source_dir() + "/validation/thresholds.toml";
  r.thresholds_sha256 = kvrt::sha256_file(r.thresholds_path);
  r.acceptance_sha256 = kvrt::validate::load_case_set({}).sha256;
  r.max_len = 64;
  r.settings.push_back(
      {"k=q8,v=q8,g=8,axis=token,r=0,rot=1", "q8/q8", kvrt::validate::Verdict::kPass, 1, 64});
  std::string text = kvrt::validate::record_text(r);
  text = text.substr(text.find("\nformat = ") + 1);
  const size_t at = text.find("n_ctx = 64");
  REQUIRE(at != std::string::npos);
  return text.replace(at, 10, "n_ctx = " + n_ctx);
}

std::string dotted_key(int parts) {
  std::string key = "a";
  for (int i = 1; i < parts; ++i) key += ".a";
  return key;
}

// A recall template with the given lengths and positions (TOML arrays without brackets).
std::string recall_template(const std::string& id, const std::string& lengths,
                            const std::string& positions) {
  return "[[template]]\nid = \"" + id +
         "\"\ncategory = \"recall\"\nmode = \"recall\"\nfact = \"The code is {value}.\"\n"
         "cue = \"The code is\"\nanswer = \" {value}\"\nvalues = [\"41\"]\nfiller_file = "
         "\"filler.txt\"\nlengths = [" +
         lengths + "]\npositions = [" + positions + "]\n";
}

std::string fraction_list(int n, double lo, double hi) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + std::to_string(lo + (hi - lo) * i / n);
  return out;
}

// The test strings of a vocabulary's .inp file (separated by "\n__ggml_vocab_test__\n").
std::vector<std::string> vocab_strings(const std::string& gguf) {
  const std::string raw = kvrt::test::read_file(gguf + ".inp"), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  for (size_t pos = 0, next; pos < raw.size(); pos = next + sep.size()) {
    next = raw.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(raw.substr(pos, next - pos));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "max_text_bytes bounds the text any token count can stand for, on every vendored vocabulary") {
  std::vector<std::string> files = {kvrt::test::stories_path()};
  for (const char* name : {"llama-spm", "gpt-2", "gpt-2-pre-llama-bpe", "gpt-2-pre-qwen2",
                           "starcoder", "falcon", "deepseek-coder", "phi-3"})
    files.push_back(kvrt::test::vocab_dir() + "/ggml-vocab-" + name + ".gguf");
  for (const std::string& path : files) {
    CAPTURE(path);
    const kvrt::io::GgufFile file(path);
    const kvrt::model::Tokenizer tok(file);
    // Phi-3's special tokens swallow the whitespace after them, so text can vanish: no bound.
    // SentencePiece and GPT-2's byte-level BPE keep every byte: a bound.
    if (path.find("phi-3") != std::string::npos) CHECK(tok.max_text_bytes(1) == SIZE_MAX);
    if (path == files[0] || path.find("llama-spm") != std::string::npos ||
        path.find("gpt-2.") != std::string::npos)
      CHECK(tok.max_text_bytes(1) != SIZE_MAX);
    std::vector<std::string> texts =
        path == files[0] ? std::vector<std::string>{} : vocab_strings(path);
    for (int c = 1; c < 128; ++c)
      texts.push_back(std::string(1, char(c)));  // a byte without a token drops
    for (const char* run : {" ", "\n", "a", "0", "-", "=", "\t", "\xc3\xa9", "\xe2\x96\x81",
                            "\xf0\x9f\x98\x80", "ab "})
      for (int n : {1, 7, 64, 1000}) {
        std::string t;
        for (int i = 0; i < n; ++i) t += run;
        texts.push_back(t);
      }
    for (const std::string& text : texts) {
      const size_t n_tokens = tok.encode(text, false).size();
      CAPTURE(text.substr(0, 40));
      CHECK(text.size() <= tok.max_text_bytes(n_tokens));
    }
  }
}

TEST_CASE(
    "the nesting scan counts dotted keys and brackets, not dots or brackets in strings and "
    "comments") {
  const auto ok = [](const std::string& text) {
    CAPTURE(text.substr(0, 80));
    CHECK_NOTHROW(kvrt::validate::check_toml_nesting(text, "f.toml", "file"));
  };
  const auto deep = [](const std::string& text, int line) {
    CAPTURE(text.substr(0, 80));
    try {
      kvrt::validate::check_toml_nesting(text, "f.toml", "file");
      FAIL("accepted");
    } catch (const kvrt::Error& e) {
      CHECK(std::string(e.what()) ==
            "f.toml:" + std::to_string(line) +
                ": file nests keys, tables or arrays more than 64 levels deep");
    }
  };
  const std::string dots(200, '.');
  ok(dotted_key(64) + " = 1\n");
  deep(dotted_key(65) + " = 1\n", 1);
  deep("x = 1\n\n" + dotted_key(50000) + " = 1\n", 3);
  ok("[" + dotted_key(63) + "]\n");
  deep("[" + dotted_key(64) + "]\n", 1);
  ok("a = " + std::string(63, '[') + std::string(63, ']') + "\n");
  deep("a = " + std::string(64, '[') + std::string(64, ']') + "\n", 1);
  deep("a = " + std::string(40, '{') + "b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z = 1" +
           std::string(40, '}'),
       1);
  ok("a = \"" + dots + "[[[[{{{\"\nb = '" + dots + "'\n# " + dots + "\n");
  ok("a = \"\"\"\n" + dots + "\n\\\"\"\" " + dots + "\"\"\"\nb = '''" + dots + "''''\n");
  ok("a = \"\\\"" + dots + "\"\nb = 1.5\nc = [1.5, 2.5, 3.5]\n" + dotted_key(60) +
     " = 1979-05-27T07:32:00.999\n");
  deep("a = \"\"\"\n\n\n\"\"\"\n" + dotted_key(70) + " = 1\n", 5);  // lines inside strings count
}

TEST_CASE("deeply nested TOML is one sentence naming the file, never a stack overflow") {
  TempDir tmp;
  const std::string deep = tmp / "deep.toml";
  write_bytes(deep, dotted_key(50000) + " = 1\n");
  std::filesystem::create_directory(tmp / "cases");
  write_bytes(tmp / "cases/manifest.toml", "[[case]]\n" + dotted_key(50000) + " = 1\n");
  const std::string v =
      "\"$K\" validate -m \"$M\" --kv q8 --max-len 64 --record " + quote(tmp / "r.toml") + " ";
  check_refused(shell(v + "--config " + quote(deep), tmp), 2, deep + ":1: thresholds file nests");
  check_refused(shell("\"$K\" validate -m \"$M\" --max-len 64 --record " + quote(tmp / "r.toml") +
                          " --settings " + quote(deep),
                      tmp),
                2, deep + ":1: settings file nests");
  check_refused(shell(v + "--cases " + quote(tmp / "cases"), tmp), 2,
                "manifest.toml:2: case manifest nests");
  check_refused(shell("\"$K\" tune -m \"$M\" -c 64 --config " + quote(deep), tmp), 2,
                "levels deep");
  write_bytes(tmp / "rec.toml", rehashed_record(record_body("64") + dotted_key(50000) + " = 1\n"));
  check_refused(
      shell("\"$K\" run -m \"$M\" -p hi -n 2 --kv q8 --record " + quote(tmp / "rec.toml"), tmp), 3,
      "validation record nests keys, tables or arrays more than 64 levels deep");
  CHECK(!std::filesystem::exists(tmp / "r.toml"));
}

TEST_CASE("a record's n_ctx beyond int is refused, not narrowed") {
  TempDir tmp;
  const std::string run = "\"$K\" run -m \"$M\" -p hi -n 2 --kv q8 --record ";
  write_bytes(tmp / "ok.toml", rehashed_record(record_body("64")));
  const Shell fits = shell(run + quote(tmp / "ok.toml") + " -c 64 >/dev/null", tmp);
  CAPTURE(fits.err);
  REQUIRE(fits.exit_code == 0);  // the hand-made record itself is accepted
  write_bytes(tmp / "wide.toml", rehashed_record(record_body("4294967360")));  // 2^32 + 64
  check_refused(shell(run + quote(tmp / "wide.toml") + " -c 64", tmp), 3,
                "'n_ctx' must be between 0 and 2147483647");
}

TEST_CASE("chat input is bounded: endless stdin and a directory as stdin are errors") {
  TempDir tmp;
  const std::string chat = "\"$K\" chat -m \"$M\" --chat-format chatml -c 128 -n 4 >/dev/null ";
  check_refused(shell(chat + "</dev/zero", tmp, 30), 4,
                "a message on standard input is longer than");
  check_refused(shell(chat + "<" + quote(tmp.path()), tmp, 30), 2,
                "cannot read the messages on standard input: Is a directory");
  write_bytes(tmp / "one.txt", "Hello there");  // the last line needs no newline
  const Shell one = shell(chat + "<" + quote(tmp / "one.txt"), tmp, 30);
  CAPTURE(one.err);
  CHECK(one.exit_code == 0);
}

TEST_CASE("a prompt that cannot fit is refused from its size, before it is tokenized") {
  TempDir tmp;
  write_bytes(tmp / "big.txt", std::string(size_t(10) << 20, 'a'));
  check_refused(shell("\"$K\" run -m \"$M\" -c 128 -f " + quote(tmp / "big.txt"), tmp, 30), 4,
                "the prompt has 10485760 bytes, more than the context of 128 positions can hold");
  check_refused(shell("\"$K\" run -m \"$M\" -c 4 -p 'Once upon a time there was a girl'", tmp), 4,
                "more than the context of 4");
}

TEST_CASE("template expansion is bounded and counted before any case is built") {
  TempDir tmp;
  const std::string dir = tmp / "cases";
  std::filesystem::create_directory(dir);
  write_bytes(dir + "/filler.txt", "The sky was blue.\nThe cat sat on the mat.\n");
  const std::string v = "\"$K\" validate -m \"$M\" --kv q8 --max-len 64 --record " +
                        quote(tmp / "r.toml") + " --cases " + quote(dir);
  write_bytes(dir + "/manifest.toml",
              recall_template("t", fraction_list(2000, 0.05, 1.0), fraction_list(2000, 0.0, 1.0)));
  check_refused(shell(v, tmp, 30), 2,
                "make 4000000 cases, more than the 256 one template may expand to");
  std::string many;
  for (int i = 0; i < 5; ++i)
    many += recall_template("t" + std::to_string(i), fraction_list(16, 0.05, 1.0),
                            fraction_list(16, 0.0, 1.0));
  write_bytes(dir + "/manifest.toml", many);
  check_refused(shell(v, tmp, 30), 2,
                "the templates of the acceptance set expand to more than 1024 cases");
  CHECK(!std::filesystem::exists(tmp / "r.toml"));
}

TEST_CASE(
    "duplicate case ids from templates and case texts outside the case directory are refused") {
  TempDir tmp;
  const std::string dir = tmp / "cases";
  std::filesystem::create_directory(dir);
  write_bytes(dir + "/filler.txt", "The sky was blue.\n");
  write_bytes(tmp / "outside.txt", "A text outside the case directory.\n");
  std::filesystem::create_symlink(tmp / "outside.txt", dir + "/link.txt");
  const std::string v = "\"$K\" validate -m \"$M\" --kv q8 --max-len 64 --record " +
                        quote(tmp / "r.toml") + " --only-cases --cases " + quote(dir);
  const auto text_case = [](const std::string& id, const std::string& file) {
    return "[[case]]\nid = \"" + id +
           "\"\ncategory = \"prose\"\nmode = \"teacher_forced\"\ntext_file = \"" + file + "\"\n";
  };
  write_bytes(dir + "/manifest.toml", recall_template("t", "0.5, 0.501", "0.0"));
  check_refused(shell(v, tmp), 2,
                "expands to the case id 't-L50-P0', which another case already uses");
  write_bytes(dir + "/manifest.toml",
              text_case("t-L50-P0", "filler.txt") + recall_template("t", "0.5", "0.0"));
  check_refused(shell(v, tmp), 2, "expands to the case id 't-L50-P0'");
  for (const std::string& path : {std::string("../../../../etc/passwd"),
                                  std::string("../outside.txt"), std::string("link.txt")}) {
    write_bytes(dir + "/manifest.toml", text_case("x", path));
    check_refused(shell(v, tmp), 2, "'text_file' names '" + path + "', outside the case directory");
  }
  write_bytes(dir + "/manifest.toml", text_case("x", "/etc/passwd"));
  check_refused(shell(v, tmp), 2, "'text_file' must be a path relative to the case directory");
}

TEST_CASE("output that cannot be written is a failure on stderr, never exit 0") {
  TempDir tmp;
  const std::string m = "-m \"$M\" ";
  const std::vector<std::string> commands = {
      "run " + m + "-p Once -n 4",
      "info " + m,
      "bench " + m + "--ctx 16 --settings f32 --prefill-tokens 16 --decode-tokens 1",
      "validate " + m + "--kv q8 --max-len 64 --record " + quote(tmp / "r.toml"),
      "--version",
  };
  for (const std::string& c : commands) {
    CAPTURE(c);
    const Shell full = shell("\"$K\" " + c + " >/dev/full", tmp);
    CHECK(full.exit_code != 0);
    CHECK_MESSAGE(full.err.find("No space left on device") != std::string::npos, full.err);
    const Shell closed = shell("\"$K\" " + c + " >&-", tmp);
    CHECK(closed.exit_code != 0);
    CHECK_MESSAGE(closed.err.find("Bad file descriptor") != std::string::npos, closed.err);
  }
  write_bytes(tmp / "msg.txt", "Hello\n");
  check_refused(shell("\"$K\" chat " + m + "--chat-format chatml -n 4 <" + quote(tmp / "msg.txt") +
                          " >/dev/full",
                      tmp),
                4, "cannot write to standard output: No space left on device");
  check_refused(shell("\"$K\" run " + m + "-p Once -n 4 >/dev/full", tmp), 4,
                "kvrt run: error: cannot write to standard output: No space left on device");
}

TEST_CASE("numeric flags are read whole and range-checked before narrowing") {
  TempDir tmp;
  const std::string b =
      "\"$K\" bench -m \"$M\" --settings f32 --prefill-tokens 16 --decode-tokens 1 --ctx ";
  for (const char* ctx :
       {"2147483648", "4294967424", "2147483647", "-1", "0", "16,x", "16,", " 16", "+16", "0x10"})
    check_refused(shell(b + quote(ctx), tmp), 2,
                  std::string("invalid value '") + ctx + "' for --ctx");
  check_refused(shell(b + "16777216", tmp), 2,
                "needs 16777217 positions, more than the most of 16777216");
  const std::string r = "\"$K\" run -m \"$M\" -p hi ";
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"--ctx", "4294967424"},
      {"--ctx", " 64"},
      {"--ctx", "+64"},
      {"--n-predict", "1e3"},
      {"--threads", "4294967297"},
      {"--top-k", "18446744073709551617"},
      {"--temp", "nan"},
      {"--temp", "0x1p-2"},
      {"--temp", " 1"},
      {"--seed", "+5"},
      {"--seed", " 5"},
  };
  for (const auto& [flag, value] : flags)
    check_refused(shell(r + flag + " " + quote(value), tmp), 2,
                  "invalid value '" + value + "' for " + flag);
  const Shell ok = shell(b + "'16,8,16' >/dev/null", tmp);
  CAPTURE(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.err.find("ctx      8") != std::string::npos);
}

TEST_CASE(
    "without HOME the default record path is an error, never a directory relative to the working "
    "one") {
  TempDir tmp;
  const std::string unset =
      "cd " + quote(tmp.path()) + " && env -u HOME -u XDG_STATE_HOME -u KVRT_STATE_DIR ";
  const std::string says =
      "no directory for validation records: HOME is unset or not an absolute path";
  check_refused(shell(unset + "\"$K\" run -m \"$M\" -p hi -n 2 --kv q8", tmp), 2, says);
  check_refused(shell(unset + "\"$K\" validate -m \"$M\" --kv q8 --max-len 64", tmp), 2, says);
  check_refused(shell(unset + "HOME=relative XDG_STATE_HOME=also-relative \"$K\" validate -m "
                              "\"$M\" --kv q8 --max-len 64",
                      tmp),
                2, says);
  CHECK(!std::filesystem::exists(tmp / ".kvrt-state"));
  CHECK(!std::filesystem::exists(tmp / "relative"));
  // An explicit --record or KVRT_STATE_DIR needs no HOME; an f32 run needs no record.
  const Shell f32 = shell(unset + "\"$K\" run -m \"$M\" -p hi -n 2 >/dev/null", tmp);
  CAPTURE(f32.err);
  CHECK(f32.exit_code == 0);
  const Shell state = shell(unset + "KVRT_STATE_DIR=" + quote(tmp / "state") +
                                " \"$K\" validate -m \"$M\" --kv q8 --max-len 64 >/dev/null",
                            tmp, 120);
  CAPTURE(state.err);
  CHECK(state.exit_code == 0);
  CHECK(std::filesystem::is_directory(tmp / "state/records"));
}
