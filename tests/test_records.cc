// Validation records as a trust boundary: signed records (tampering, a wrong key, a missing
// signature, a record replayed for another model), duplicate entries, key files, and what a
// validate run does with the record it replaces.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "common/error.h"
#include "common/sha256.h"
#include "test_util.h"
#include "validate/case_set.h"
#include "validate/gate.h"
#include "validate/record.h"
#include "validate/record_merge.h"
#include "validate/settings.h"
#include "validate/signing_key.h"

using namespace kvrt;
using namespace kvrt::validate;
using kvrt::test::error_of;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A record the gate accepts for "k=q8,v=q8" at 512 positions: the bundled thresholds and cases,
// and `model` standing for the model file (the gate reads only its sha256).
Record gate_record(const std::string& model) {
  const std::string dir = default_validation_dir();
  Record r;
  r.kvrt_version = "9.9";
  r.isa = "scalar";
  r.model_path = model;
  r.model_sha256 = sha256_file(model);
  r.thresholds_path = dir + "/thresholds.toml";
  r.thresholds_sha256 = sha256_file(r.thresholds_path);
  r.case_dirs = {dir + "/cases"};
  r.acceptance_sha256 = load_case_set(r.case_dirs).sha256;
  r.max_len = 512;
  r.settings.push_back({"k=q8,v=q8", "q8/q8", Verdict::kPass, 400, 512});
  r.settings.push_back({"k=q4,v=q4", "q4/q4", Verdict::kFail, 240, 512});
  return r;
}

GateQuery query(const Record& r, const std::string& path,
                const std::string& setting = "k=q8,v=q8") {
  return GateQuery{r.model_path, setting, ops::MatmulPrecision::kF32, path, "scalar", "9.9",
                   512,          2048};
}

// What an attacker who can write the file does after editing it: recompute the content hash (over
// the text without the hash line and the signature line just before it).
std::string rehash(const std::string& text) {
  const std::string key = "content_sha256 = \"";
  const size_t at = text.find("\n" + key);
  const size_t end = text.find('\n', at + 1);
  const size_t prev = text.rfind('\n', at - 1) + 1;
  const bool sig = text.compare(prev, 12, "signature = ") == 0;
  const std::string rest = text.substr(0, sig ? prev : at + 1) + text.substr(end + 1);
  return text.substr(0, at + 1) + key + sha256_hex(rest) + "\"" + text.substr(end);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a signed record passes the gate for its key only, and no edit survives the signature") {
  test::TempDir tmp;
  const std::string model =
      default_validation_dir() + "/settings.toml";  // any file stands for the model
  const SecretKey key = SecretKey::generate(), other = SecretKey::generate();
  const Record r = gate_record(model);
  const std::string path = tmp / "rec.toml";
  write_record(r, path, &key);
  CHECK(read_record(path).signer == key.public_key().hex());

  GateQuery q = query(r, path);
  CHECK(require_pass_record(q).signer_id.empty() ==
        false);  // signed records pass where no key is required
  q.trusted = key.public_key();
  const GatePass pass = require_pass_record(q);
  CHECK(pass.signer_id == key.public_key().id());
  CHECK(pass.bundled_thresholds);

  // A wrong key.
  q.trusted = other.public_key();
  const std::string wrong = error_of([&] { require_pass_record(q); });
  CHECK(wrong.find("is signed by key " + key.public_key().id() + ", not by the trusted key " +
                   other.public_key().id()) != std::string::npos);

  // Tampering, rehashed so that the content hash matches: a FAIL made a PASS, a context raised, a
  // PASS entry added ahead of the real one (also a duplicate), the signature line moved elsewhere.
  const std::string text = test::read_file(path);
  q.trusted = key.public_key();
  const std::string edits[][2] = {
      {"verdict = \"FAIL\"", "verdict = \"PASS\""},
      {"n_ctx = 512", "n_ctx = 4096"},
      {"\n[[setting]]\nname = \"k=q8,v=q8\"",
       "\n[[setting]]\nname = \"k=q4,v=q4\"\nmatmul = "
       "\"f32\"\nverdict = \"PASS\"\nn_ctx = 512\n\n[[setting]]\nname = \"k=q8,v=q8\""}};
  for (const auto& [from, to] : edits) {
    write(tmp / "edited.toml", rehash(replaced(text, from, to)));
    const std::string e = error_of([&] { read_record(tmp / "edited.toml"); });
    INFO(from, e);
    CHECK(e.find("does not match its signature by key " + key.public_key().id()) !=
          std::string::npos);
    q.record_path = tmp / "edited.toml";
    CHECK(error_of([&] { require_pass_record(q); }).find(" is not validated: validation record") !=
          std::string::npos);
  }
  // Re-signing with another key gives another signer, which the trusted key refuses.
  Record forged = read_record(path);
  forged.settings[1].verdict = Verdict::kPass;
  write_record(forged, tmp / "forged.toml", &other);
  q.record_path = tmp / "forged.toml";
  q.setting = "k=q4,v=q4";
  CHECK(error_of([&] { require_pass_record(q); }).find("not by the trusted key") !=
        std::string::npos);

  // A missing signature: the line removed leaves a record whose hash still matches.
  const size_t sig = text.find("signature = ");
  std::string unsigned_text = text;
  unsigned_text.erase(sig, text.find('\n', sig) + 1 - sig);
  write(tmp / "unsigned.toml", unsigned_text);
  CHECK(read_record(tmp / "unsigned.toml").signer.empty());
  q.record_path = tmp / "unsigned.toml";
  q.setting = "k=q8,v=q8";
  const std::string missing = error_of([&] { require_pass_record(q); });
  CHECK(missing.find("is not signed, and only records signed by the trusted key " +
                     key.public_key().id()) != std::string::npos);
  q.trusted.reset();
  CHECK(
      require_pass_record(q).signer_id.empty());  // unsigned records work where no key is required

  // The signature line anywhere but before the content hash is refused, not ignored.
  const std::string line = text.substr(sig, text.find('\n', sig) + 1 - sig);
  write(tmp / "moved.toml",
        rehash(replaced(unsigned_text, "max_len = 512\n", "max_len = 512\n" + line)));
  CHECK(error_of([&] { read_record(tmp / "moved.toml"); }).find("unknown key 'signature'") !=
        std::string::npos);
  write(tmp / "bad.toml", replaced(text, "signature = \"ed25519:", "signature = \"ed25519:zz"));
  CHECK(error_of([&] { read_record(tmp / "bad.toml"); }).find("malformed signature line") !=
        std::string::npos);
}

TEST_CASE("a signed record replayed for another model file is refused") {
  test::TempDir tmp;
  const std::string dir = default_validation_dir();
  const SecretKey key = SecretKey::generate();
  const Record r = gate_record(dir + "/settings.toml");
  write_record(r, tmp / "rec.toml", &key);
  GateQuery q = query(r, tmp / "rec.toml");
  q.trusted = key.public_key();
  q.model_path = dir + "/thresholds.toml";  // another "model file" on the same device
  const std::string e = error_of([&] { require_pass_record(q); });
  CHECK(e.find("was made for another model file") != std::string::npos);
}

TEST_CASE("a record listing a setting twice is refused: the first match would win") {
  test::TempDir tmp;
  Record r = gate_record(default_validation_dir() + "/settings.toml");
  r.settings.insert(r.settings.begin(), {"k=q4,v=q4", "q4/q4", Verdict::kPass, 240, 512});
  write_record(r, tmp / "dup.toml");
  const std::string e = error_of([&] { read_record(tmp / "dup.toml"); });
  INFO(e);
  CHECK(e.find("'k=q4,v=q4' with f32 products is listed twice") != std::string::npos);
  // The same KV setting with other products is another setting; a tune name used twice is not.
  r.settings[0].matmul = ops::MatmulPrecision::kBf16;
  write_record(r, tmp / "two.toml");
  CHECK(read_record(tmp / "two.toml").settings.size() == 3);
  r.settings[0].tune_name = r.settings[1].tune_name = "tuned";
  write_record(r, tmp / "names.toml");
  CHECK(error_of([&] { read_record(tmp / "names.toml"); }).find("'tuned' names two settings") !=
        std::string::npos);
}

TEST_CASE(
    "key files: keygen's pair reads back, a secret key others can read or a special file is "
    "refused") {
  test::TempDir tmp;
  const SecretKey key = SecretKey::generate();
  const std::string path = tmp / "k";
  write_key_pair(key, path);
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(read_public_key(path + ".pub") == key.public_key());
  const SecretKey back = read_secret_key(path);
  CHECK(back.public_key() == key.public_key());
  const std::string msg = "the record";
  CHECK(verify_signature(key.public_key(), msg, back.sign(msg)));
  CHECK(!verify_signature(key.public_key(), msg + " ", back.sign(msg)));
  // Never replaced, and nothing half-written is left.
  const std::string again = error_of([&] { write_key_pair(SecretKey::generate(), path); });
  CHECK(again.find("already exists") != std::string::npos);
  CHECK(read_public_key(path + ".pub") == key.public_key());

  REQUIRE(chmod(path.c_str(), 0644) == 0);
  const std::string readable = error_of([&] { (void)read_secret_key(path); });
  CHECK(readable.find("other users may read or write this secret key (mode 0644); make it private "
                      "with chmod 600") != std::string::npos);
  REQUIRE(mkfifo((tmp / "fifo").c_str(), 0600) == 0);
  CHECK(error_of([&] {
          (void)read_secret_key(tmp / "fifo");
        }).find("it is a FIFO, not a regular file") != std::string::npos);
  CHECK(error_of([&] { (void)read_public_key(tmp.path()); }).find("it is a directory") !=
        std::string::npos);
  // A public key where the secret key belongs, and malformed keys, name the file and line.
  write(tmp / "swap", test::read_file(path + ".pub"));
  REQUIRE(chmod((tmp / "swap").c_str(), 0600) == 0);
  CHECK(error_of([&] {
          (void)read_secret_key(tmp / "swap");
        }).find("holds a kvrt-ed25519-public-key") != std::string::npos);
  write(tmp / "short.pub", "# a comment\nkvrt-ed25519-public-key abcd\n");
  CHECK(error_of([&] {
          (void)read_public_key(tmp / "short.pub");
        }).find("short.pub':2: the key must be exactly 64 hex") != std::string::npos);
  write(tmp / "empty.pub", "# nothing\n");
  CHECK(error_of([&] {
          (void)read_public_key(tmp / "empty.pub");
        }).find("holds no 'kvrt-ed25519-public-key' line") != std::string::npos);
}

TEST_CASE("replacing a record keeps or names every earlier verdict, and never another model's") {
  const std::string model = default_validation_dir() + "/settings.toml";
  const Record old = gate_record(model);
  Record next = gate_record(model);
  next.settings = {{"k=q4s,v=q4s", "q4s/q4s", Verdict::kPass, 240, 512}};

  // Same bindings: earlier verdicts of other settings are kept, a changed one is named.
  Record same = next;
  same.settings.push_back({"k=q8,v=q8", "q8/q8", Verdict::kPass, 400, 160});
  const std::vector<std::string> notes = merge_earlier("r.toml", old, same, nullptr);
  CHECK(same.settings.size() == 3);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "record 'r.toml': the earlier verdict q8/q8 (PASS at 512 positions) is replaced by this "
        "run's "
        "PASS at 160 positions");

  // Other thresholds: the earlier verdicts go, by name.
  Record other_thresholds = next;
  other_thresholds.thresholds_sha256 = std::string(64, 'f');
  const std::vector<std::string> dropped = merge_earlier("r.toml", old, other_thresholds, nullptr);
  CHECK(other_thresholds.settings.size() == 1);
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0].find(
            "dropping the earlier verdicts of q8/q8 (PASS at 512 positions), q4/q4 (FAIL at 512 "
            "positions): it was made with other thresholds") != std::string::npos);

  // Signing vouches for what is kept: only verdicts signed by the same key.
  const SecretKey key = SecretKey::generate();
  Record signed_next = next;
  const std::vector<std::string> unsigned_old =
      merge_earlier("r.toml", old, signed_next, &key.public_key());
  CHECK(signed_next.settings.size() == 1);
  REQUIRE(unsigned_old.size() == 1);
  CHECK(unsigned_old[0].find("it is not signed, and this run signs what it keeps") !=
        std::string::npos);
  Record signed_old = old;
  signed_old.signer = key.public_key().hex();
  signed_next = next;
  CHECK(merge_earlier("r.toml", signed_old, signed_next, &key.public_key()).empty());
  CHECK(signed_next.settings.size() == 3);

  // Another model's record is never replaced.
  Record other_model = next;
  other_model.model_sha256 = std::string(64, 'e');
  const std::string e = error_of([&] { merge_earlier("r.toml", old, other_model, nullptr); });
  CHECK(e.find("validation record 'r.toml' holds the verdicts of another model file (" + model) ==
        0);
}

namespace {

using test::run_kvrt;

std::string model_arg() { return "-m " + test::stories_path(); }

}  // namespace

TEST_CASE(
    "validate refuses a lock file that is not a regular file before any work, and other models' "
    "records") {
  test::TempDir tmp;
  const std::string rec = tmp / "r.toml";
  REQUIRE(mkfifo((rec + ".lock").c_str(), 0600) == 0);
  const std::string v = "validate " + model_arg() + " -c 160 -t 1 --record " + rec;
  const auto fifo = run_kvrt(v + " --kv q8", tmp);
  INFO(fifo.err);
  CHECK(fifo.exit_code == 2);
  CHECK(fifo.err.find("cannot lock '" + rec + ".lock': it is not a regular file") !=
        std::string::npos);
  CHECK(fifo.err.find("validating") == std::string::npos);  // before the first case
  CHECK(test::read_file(rec).empty());
  REQUIRE(unlink((rec + ".lock").c_str()) == 0);

  // q8 under the bundled thresholds, then q4s under others: q8's verdict is dropped by name.
  REQUIRE(run_kvrt(v + " --kv q8", tmp).exit_code == 0);
  const std::string thresholds = tmp / "t.toml";
  write(thresholds,
        test::read_file(default_validation_dir() + "/thresholds.toml") + "# another file\n");
  const auto q4s = run_kvrt(v + " --kv q4s --config " + thresholds, tmp);
  INFO(q4s.err);
  REQUIRE((q4s.exit_code == 0 || q4s.exit_code == 1));
  CHECK(q4s.err.find("kvrt validate: note: record '" + rec +
                     "': dropping the earlier verdicts of q8/q8 (PASS at 160 "
                     "positions): it was made with other thresholds") != std::string::npos);
  const auto gone =
      run_kvrt("run " + model_arg() + " -c 160 -p Once -n 2 --kv q8 --record " + rec, tmp);
  CHECK(gone.exit_code == 3);
  CHECK(gone.err.find("does not cover it") != std::string::npos);
  // run says when the record was made with thresholds other than the bundled ones.
  if (q4s.exit_code == 0) {
    const auto note =
        run_kvrt("run " + model_arg() + " -c 160 -p Once -n 2 --kv q4s --record " + rec, tmp);
    CHECK(note.exit_code == 0);
    CHECK(note.err.find("note: that record was made with the thresholds of " + thresholds +
                        ", not the bundled ones") != std::string::npos);
  }

  // Another model into the same record: refused before the run, the record left as it is.
  const std::string before = test::read_file(rec);
  const auto other = run_kvrt(
      "validate -m " + test::models_dir() + "/canary.gguf -c 160 -t 1 --kv q8 --record " + rec,
      tmp);
  INFO(other.err);
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("holds the verdicts of another model file (" + test::stories_path()) !=
        std::string::npos);
  CHECK(other.err.find("validating") == std::string::npos);
  CHECK(test::read_file(rec) == before);

  // A misspelt category in the thresholds is an error naming the line, before the run.
  write(thresholds, "[metric.kl]\nmax = 0.01\n\n[metric.kl.category]\nrecal = 1e-7\n");
  const auto typo = run_kvrt(v + " --kv q8 --config " + thresholds, tmp);
  CHECK(typo.exit_code == 2);
  CHECK(
      typo.err.find(thresholds +
                    ":5: metric.kl.category: no case of the acceptance set has category 'recal'") !=
      std::string::npos);
}

TEST_CASE("signed records end to end: keygen, validate --sign, run --trust") {
  test::TempDir tmp;
  const std::string rec = tmp / "r.toml", key = tmp / "vendor";
  const auto keygen = run_kvrt("keygen -o " + key, tmp);
  INFO(keygen.out, keygen.err);
  REQUIRE(keygen.exit_code == 0);
  REQUIRE(run_kvrt("keygen -o " + tmp / "other", tmp).exit_code == 0);
  CHECK(run_kvrt("keygen -o " + key, tmp).exit_code == 2);  // never replaced

  // A secret key others can read is refused before any work.
  REQUIRE(chmod(key.c_str(), 0604) == 0);
  const std::string v = "validate " + model_arg() + " -c 160 -t 1 --kv q8 --record " + rec;
  const auto open_key = run_kvrt(v + " --sign " + key, tmp);
  CHECK(open_key.exit_code == 2);
  CHECK(open_key.err.find("chmod 600") != std::string::npos);
  CHECK(open_key.err.find("validating") == std::string::npos);
  REQUIRE(chmod(key.c_str(), 0600) == 0);

  const auto signed_run = run_kvrt(v + " --sign " + key, tmp);
  INFO(signed_run.out, signed_run.err);
  REQUIRE(signed_run.exit_code == 0);
  CHECK(signed_run.out.find(" (signed by key ") != std::string::npos);
  const std::string run = "run " + model_arg() + " -c 160 -p Once -n 2 --kv q8 --record " + rec;
  const auto trusted = run_kvrt(run + " --trust " + key + ".pub", tmp);
  CHECK(trusted.exit_code == 0);
  CHECK(trusted.err.find(", signed by key ") != std::string::npos);
  CHECK(run_kvrt(run, tmp).exit_code == 0);  // no key required: any valid record
  const auto wrong = run_kvrt(run + " --trust " + tmp / "other.pub", tmp);
  CHECK(wrong.exit_code == 3);
  CHECK(wrong.err.find("not by the trusted key") != std::string::npos);
  CHECK(run_kvrt(run + " --trust " + key + ".pub --allow-unvalidated", tmp).exit_code == 2);
  CHECK(run_kvrt(run + " --trust " + key, tmp).exit_code ==
        2);  // a secret key file is not a public key

  // Tampered and rehashed: refused with or without a trusted key.
  const std::string text = test::read_file(rec);
  write(rec, rehash(replaced(text, "n_ctx = 160", "n_ctx = 2048")));
  const auto tampered = run_kvrt(run + " -c 2048", tmp);
  CHECK(tampered.exit_code == 3);
  CHECK(tampered.err.find("does not match its signature") != std::string::npos);

  // Unsigned: fine without a key, refused with one.
  write(rec, text);
  REQUIRE(run_kvrt(v, tmp).exit_code ==
          0);  // re-validated without --sign: the new record is unsigned
  const auto unsigned_run = run_kvrt(run + " --trust " + key + ".pub", tmp);
  CHECK(unsigned_run.exit_code == 3);
  CHECK(unsigned_run.err.find("is not signed") != std::string::npos);
  CHECK(run_kvrt(run, tmp).exit_code == 0);
}
