// Opening a session through the gate (validate/open_session.h): the gate decides before anything
// the size of a cache is allocated, in run, chat, serve and the C API; only the exact FP32
// baseline runs without a record, f32 settings with another field included; bench times any
// setting; and the setting a record names is the one the session's cache reports.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kvrt/kvrt.h"
#include "model/model.h"
#include "test_util.h"
#include "validate/open_session.h"

namespace {

using kvrt::test::TempDir;

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string stories() { return quote(kvrt::test::stories_path()); }

// The CLI under test, behind a time limit so that a serve that should have been refused ends.
std::string kvrt_exe() {
  const char* exe = std::getenv("KVRT_EXE");
  const char* build = std::getenv("KVRT_BUILD_DIR");
  const std::string cmd = exe && *exe ? exe
                          : build     ? std::string(build) + "/tools/kvrt/kvrt"
                                      : "kvrt";
  return cmd.rfind("timeout ", 0) == 0 ? cmd : "timeout -k 5 120 " + cmd;
}

// kvrt with `args` in a shell whose processes may map at most `limit_kib` KiB (0: no limit).
kvrt::test::CommandResult run_limited(const std::string& args, const TempDir& tmp,
                                      long limit_kib = 0) {
  const std::string out = tmp / "stdout", err = tmp / "stderr";
  const std::string limit = limit_kib > 0 ? "ulimit -v " + std::to_string(limit_kib) + "; " : "";
  const int status =
      std::system(("(" + limit + kvrt_exe() + " " + args + ") >" + out + " 2>" + err).c_str());
  kvrt::test::CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = kvrt::test::read_file(out);
  r.err = kvrt::test::read_file(err);
  return r;
}

bool has_serve(const TempDir& tmp) { return run_limited("serve --help", tmp).exit_code == 0; }

kvrt_model* open_stories() {
  kvrt_model* m = nullptr;
  REQUIRE(kvrt_model_open(kvrt::test::stories_path().c_str(), &m) == KVRT_OK);
  return m;
}

kvrt_session_options options_of(const char* kv, int n_ctx) {
  kvrt_session_options o;
  kvrt_session_options_default(&o);
  o.n_ctx = n_ctx;
  o.n_threads = 1;
  REQUIRE(kvrt_kv_config_parse(kv, &o.kv) == KVRT_OK);
  return o;
}

std::vector<float> logits_after_prompt(kvrt_model* m, const char* kv) {
  const kvrt_session_options o = options_of(kv, 64);
  kvrt_session* s = nullptr;
  REQUIRE(kvrt_session_create(m, &o, &s) == KVRT_OK);
  const std::string text = "Once upon a time, there was a little girl";
  std::vector<int32_t> prompt(64);
  size_t n_prompt = 0;
  REQUIRE(kvrt_tokenize(m, text.data(), text.size(), 1, prompt.data(), prompt.size(), &n_prompt) ==
          KVRT_OK);
  prompt.resize(n_prompt);
  REQUIRE(kvrt_session_eval(s, prompt.data(), prompt.size()) == KVRT_OK);
  const float* logits = nullptr;
  int32_t n = 0;
  REQUIRE(kvrt_session_logits(s, &logits, &n) == KVRT_OK);
  std::vector<float> out(logits, logits + n);
  kvrt_session_free(s);
  return out;
}

// Saves a session of `kv` that evaluated nothing (kvrt_session_create is not gated) to `path`.
std::string save_state(kvrt_model* m, const char* kv, const std::string& path) {
  const kvrt_session_options o = options_of(kv, 64);
  kvrt_session* s = nullptr;
  REQUIRE(kvrt_session_create(m, &o, &s) == KVRT_OK);
  REQUIRE(kvrt_session_save(s, path.c_str()) == KVRT_OK);
  kvrt_session_free(s);
  return path;
}

// The largest -c run takes; stories260K's q4 cache for it takes gigabytes.
constexpr int kHugeCtx = 1 << 24;
// An address-space limit the model and an ordinary session fit in, and that cache does not.
constexpr long kLimitKib = 1L << 20;

}  // namespace

TEST_CASE("a refused setting allocates no cache: under a memory limit below it, the gate says 3") {
  if (kvrt::test::kSanitizedBuild || std::getenv("KVRT_EXE_WRAPPER")) {
    MESSAGE("skipped: the sanitizers and qemu reserve more address space than the limit");
    return;
  }
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);  // no record there
  kvrt_model* m = open_stories();
  const kvrt_session_options huge = options_of("q4", kHugeCtx);
  uint64_t bytes = 0;
  REQUIRE(kvrt_session_bytes_required(m, &huge, &bytes) == KVRT_OK);
  CHECK(bytes > uint64_t(kLimitKib) * 1024);  // the session could not be made under the limit

  // The limit leaves room for the model and an ordinary session...
  const std::string m_arg = "-m " + stories() + " -t 1 ";
  const auto ok = run_limited("run " + m_arg + "-c 256 -p Once -n 4", tmp, kLimitKib);
  CHECK_MESSAGE(ok.exit_code == 0, ok.err);
  // ...so a refusal made after the cache's allocation would be that allocation failing (exit 4).
  const std::string q4 = "--kv q4 -c " + std::to_string(kHugeCtx) + " ";
  std::vector<std::string> refused = {
      "run " + m_arg + q4 + "-p Once -n 4",
      "run " + m_arg + "--kv f32,rot=1 -c " + std::to_string(kHugeCtx) + " -p Once -n 4",
      "chat " + m_arg + q4 + "--chat-format chatml < /dev/null"};
  if (has_serve(tmp)) refused.push_back("serve " + m_arg + q4 + "--port 0");
  for (const std::string& args : refused) {
    const auto r = run_limited(args, tmp, kLimitKib);
    INFO(args, "\n", r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("is not validated") != std::string::npos);
    CHECK(r.out.empty());
  }

  // The C API's gated openings refuse the same way before allocating: here a state saved with a
  // setting no record vouches for, restored at the huge context.
  const std::string state = save_state(m, "q4", tmp / "q4.state");
  kvrt_session* s = nullptr;
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
  // This process may grow by kLimitKib, which the huge session would overrun.
  long vm_pages = 0;
  std::ifstream("/proc/self/statm") >> vm_pages;
  REQUIRE(vm_pages > 0);
  rlimit limited = old;
  limited.rlim_cur = rlim_t(vm_pages) * rlim_t(sysconf(_SC_PAGESIZE)) + rlim_t(kLimitKib) * 1024;
  REQUIRE(limited.rlim_cur < old.rlim_cur);
  REQUIRE(setrlimit(RLIMIT_AS, &limited) == 0);
  const kvrt_status load = kvrt_session_load(m, state.c_str(), nullptr, &huge, &s);
  const std::string load_error = kvrt_last_error();
  REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
  CHECK_MESSAGE(load == KVRT_ERR_REFUSED, load_error);
  kvrt_model_free(m);
  unsetenv("KVRT_STATE_DIR");
}

TEST_CASE("only the exact baseline runs without a record: f32 with another field is gated") {
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);
  kvrt_model* m = open_stories();
  // Why: a rotated f32 cache stores other numbers, so its logits are not the baseline's.
  CHECK(logits_after_prompt(m, "f32,rot=1") != logits_after_prompt(m, "f32"));

  const std::string run = "run -m " + stories() + " -t 1 -c 64 -p Once -n 8 ";
  const auto base = run_limited(run + "--kv f32", tmp);
  REQUIRE(base.exit_code == 0);
  CHECK(base.err.find("validated") == std::string::npos);
  // The same setting spelled with its default group (8 on stories260K) is the baseline too.
  const auto same = run_limited(run + "--kv f32,g=8,axis=token,r=0,rot=0", tmp);
  CHECK(same.exit_code == 0);
  CHECK(same.out == base.out);
  for (const char* kv : {"f32,rot=1", "f32,sinks=4", "f32,r=4", "f32,g=4", "f32,axis=channel"}) {
    INFO(kv);
    const auto r = run_limited(run + "--kv " + kv, tmp);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("kvrt validate") != std::string::npos);
    kvrt_kv_config c;
    REQUIRE(kvrt_kv_config_parse(kv, &c) == KVRT_OK);
    CHECK(kvrt_validation_check_setting(m, &c, KVRT_MATMUL_F32, 64, nullptr) == KVRT_ERR_REFUSED);
  }
  kvrt_kv_config plain;
  kvrt_kv_config_default(&plain);
  CHECK(kvrt_validation_check_setting(m, &plain, KVRT_MATMUL_F32, 64, nullptr) == KVRT_OK);

  const std::string chat = "chat -m " + stories() + " -t 1 -c 64 --chat-format chatml ";
  CHECK(run_limited(chat + "--kv f32 < /dev/null", tmp).exit_code == 0);
  CHECK(run_limited(chat + "--kv f32,rot=1 < /dev/null", tmp).exit_code == 3);
  if (has_serve(tmp))
    CHECK(run_limited("serve -m " + stories() + " -t 1 -c 64 --port 0 --kv f32,rot=1", tmp)
              .exit_code == 3);
  // --allow-unvalidated runs it with the warning; bench times it without a record.
  const auto unvalidated = run_limited(run + "--kv f32,rot=1 --allow-unvalidated", tmp);
  CHECK(unvalidated.exit_code == 0);
  CHECK(unvalidated.err.find("warning: KV setting k=f32,v=f32,g=8,axis=token,r=0,rot=1 is not "
                             "checked") != std::string::npos);
  const auto bench = run_limited("bench -m " + stories() +
                                     " -t 1 --ctx 16 --settings 'f32;f32,rot=1' "
                                     "--prefill-tokens 16 --decode-tokens 1",
                                 tmp);
  CHECK_MESSAGE(bench.exit_code == 0, bench.err);
  CHECK(bench.out.find("f32,rot=1") != std::string::npos);

  // A state saved with f32,rot=1 restores only through the gate.
  const std::string state = save_state(m, "f32,rot=1", tmp / "rot.state");
  const kvrt_session_options o = options_of("f32,rot=1", 64);
  kvrt_session* s = nullptr;
  CHECK(kvrt_session_load(m, state.c_str(), nullptr, &o, &s) == KVRT_ERR_REFUSED);

  // Validated, it runs like any other setting.
  const auto v = run_limited(
      "validate -m " + stories() + " -t 1 -c 64 --kv f32,rot=1 --record " + quote(tmp / "r.toml"),
      tmp);
  REQUIRE_MESSAGE(v.exit_code == 0, v.out, v.err);
  const auto validated = run_limited(run + "--kv f32,rot=1 --record " + quote(tmp / "r.toml"), tmp);
  CHECK(validated.exit_code == 0);
  CHECK(validated.err.find("validated for 64 positions") != std::string::npos);
  const std::string record = tmp / "r.toml";
  REQUIRE(kvrt_session_load(m, state.c_str(), record.c_str(), &o, &s) == KVRT_OK);
  kvrt_session_free(s);
  kvrt_model_free(m);
  unsetenv("KVRT_STATE_DIR");
}

TEST_CASE("the admitted setting is the one the session's cache reports, resolved once") {
  const kvrt::model::Model model(kvrt::test::stories_path());
  for (const char* text : {"f32", "q8", "q4,layers[-1]=q8", "k=q4,v=q8,sinks=4,v[-2]=f32"}) {
    INFO(text);
    kvrt::validate::SessionRequest r;
    r.model_path = kvrt::test::stories_path();
    r.session.n_ctx = 64;
    r.session.n_threads = 1;
    r.session.kv = kvrt::kv::parse_setting(text);
    r.allow_unvalidated = true;
    const kvrt::validate::OpenedSession opened = kvrt::validate::open_session(model, r);
    CHECK(opened.admission.session.kv.name() == opened.session->kv_cache().config().name());
    CHECK(opened.admission.session.kv.name().find("g=8") != std::string::npos);  // g=0 resolved
    CHECK(opened.admission.session.kv.name().find("[-") == std::string::npos);   // indices too
    CHECK(opened.admission.session.n_ctx == opened.session->n_ctx());
    CHECK((opened.admission.kind == kvrt::validate::Admission::Kind::kBaseline) ==
          (std::string(text) == "f32"));
  }
  // A setting that does not fit the model is a usage error before the gate looks for a record.
  kvrt::validate::SessionRequest bad;
  bad.model_path = kvrt::test::stories_path();
  bad.session.kv = kvrt::kv::parse_setting("q4,layers[9]=q8");
  const std::string e = kvrt::test::error_of([&] { (void)kvrt::validate::admit(model, bad); });
  CHECK(e.find("outside the model's 5 layers") != std::string::npos);
}

TEST_CASE("bench resolves every setting for the model before it times the first") {
  TempDir tmp;
  const auto r = run_limited("bench -m " + stories() +
                                 " -t 1 --ctx 16 --settings 'f32;q4,g=3' --prefill-tokens 16 "
                                 "--decode-tokens 1",
                             tmp);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("not 3") != std::string::npos);
  CHECK(r.err.find("decode") == std::string::npos);  // f32 was not timed first
}
