// Validation records: the verdicts of one `kvrt validate` run, bound to the exact model file,
// thresholds, acceptance set, kvrt version and ISA. A record carries a SHA-256 of its own
// content, so an edited or truncated record is refused. The hash detects edits and corruption,
// not forgery: whoever can write the file can rehash it. A record written with a secret key
// (`kvrt validate --sign`) also carries an Ed25519 signature of its canonical bytes, which
// `kvrt run --trust PUBKEY` requires (validate/signing_key.h, docs/signed-records.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/matmul.h"
#include "validate/signing_key.h"
#include "validate/verdict.h"

namespace kvrt::validate {

struct RecordSetting {
  std::string name;  // canonical KvConfig::name()
  std::string label;
  Verdict verdict = Verdict::kInconclusive;
  double bytes_per_token = 0;
  int n_ctx = 0;  // the context (positions) it was validated at: run may use up to this many
  ops::MatmulPrecision matmul =
      ops::MatmulPrecision::kF32;  // the precision of its prefill products
  std::string
      tune_name{};  // the name `kvrt tune` gave it ("tuned"; `run --kv NAME` finds it), or empty
};

struct Record {
  std::string kvrt_version, isa;
  std::string model_path, model_sha256;
  std::string thresholds_path, thresholds_sha256;
  std::vector<std::string> case_dirs;
  std::string acceptance_sha256;
  int max_len = 0;  // context of the run that wrote the record (each setting keeps its own n_ctx)
  std::vector<RecordSetting> settings;  // one entry per (name, matmul); a second is refused
  std::string
      signer;  // read_record: the hex public key whose signature verified; empty when unsigned
};

// 2: each setting binds the context it was validated at (n_ctx).
// 3: each setting binds the precision of its prefill products (matmul = "f32" or "bf16").
// 4: a setting may carry the name kvrt tune gave it (tune_name); format 3 records are still read.
constexpr int kRecordFormat = 4;

// TOML with the content hash line, and with `key` the signature line before it: `signature =
// "ed25519:<public key hex>:<signature hex>"`, the signature of the text without that line.
std::string record_text(const Record& r, const SecretKey* key = nullptr);
// Creates parent directories; the file is replaced atomically.
void write_record(const Record& r, const std::string& path, const SecretKey* key = nullptr);

// Reads and verifies the content hash and, when the record is signed, the signature (Record::signer
// names the key). A missing file, bad TOML, a hash mismatch, a signature that does not verify or a
// setting listed twice is a kvrt::Error(kRefused) naming the file; a path that cannot be read (a
// FIFO, device or directory, over kMaxTomlFileBytes, no permission) is a kvrt::Error(kInput).
Record read_record(const std::string& path);

// $KVRT_STATE_DIR, else $XDG_STATE_HOME/kvrt, else $HOME/.local/state/kvrt (XDG_STATE_HOME and
// HOME only when absolute, as the XDG base directory rules say); without any of them a
// kvrt::Error(kUsage) asking for one or for --record, never a directory relative to the working
// one.
std::string state_dir();
// Where validate writes, and run looks, by default: one record per model file and ISA.
std::string default_record_path(const std::string& model_sha256, const std::string& isa);

}  // namespace kvrt::validate
