// The one path from a KV setting to a session: the setting is resolved for the model (a setting
// given, or a name `kvrt tune` wrote into the record), gated (validate/gate.h), and only then is
// anything allocated. run, chat, serve and bench open their sessions here, and the C API its
// sessions and its validation checks, so a refused setting costs no cache and every caller
// applies one rule.
//
// The rule: only the baseline runs without a PASS record. The baseline is the setting validate
// measures every other one against, the default f32 cache as the model resolves it (canonical
// name k=f32,v=f32,g=G,axis=token,r=0,rot=0, G the model's default group) with f32 products. Any
// other setting needs a PASS, f32 ones with another field too (rot=1 changes the numbers; the gate
// does not judge which fields would not).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "model/model.h"
#include "model/session.h"
#include "validate/gate.h"
#include "validate/named_setting.h"

namespace kvrt::validate {

struct SessionRequest {
  std::string model_path;  // the file the model was read from: records bind its sha256
  // n_ctx (0: the model's context), threads, batch, and the setting asked for: kv and matmul.
  model::SessionOptions session;
  // Not empty: the setting `kvrt tune` named so in the record, with its matmul precision, in place
  // of session.kv and session.matmul (validate/named_setting.h).
  std::string name;
  std::string record_path;       // empty: the default record of the model file and ISA
  std::string trusted_key_path;  // not empty: only a record signed by this public key counts
  // Skip the record: the caller takes the responsibility (--allow-unvalidated, which warns; bench,
  // which prints no text; kvrt_session_create, whose caller checks).
  bool allow_unvalidated = false;
  // Called with the named setting as soon as it is found, before the gate decides (run prints it).
  std::function<void(const NamedSetting&)> on_named;
};

// What let a setting through, and the options to make its sessions with.
struct Admission {
  enum class Kind {
    kBaseline,     // needs no record
    kUnvalidated,  // SessionRequest::allow_unvalidated skipped the record
    kRecord,       // a PASS record: pass says which
  } kind = Kind::kBaseline;
  // The request's options with n_ctx and the setting resolved for the model: what the session's
  // cache reports as its config().
  model::SessionOptions session;
  GatePass pass;  // kRecord only
};

// Resolves the setting for the model and gates it, allocating nothing the size of a cache. A
// setting that does not fit the model (a group, a layer index, a rotation), or a name that is not
// one, is kvrt::Error(kUsage); a refusal kvrt::Error(kRefused) saying why; an unreadable trusted
// key file kvrt::Error(kInput), even for the baseline.
Admission admit(const model::Model& model, const SessionRequest& request);

// A session with the admitted options.
std::unique_ptr<model::Session> open_session(const model::Model& model, const Admission& admitted);

struct OpenedSession {
  std::unique_ptr<model::Session> session;
  Admission admission;
};

// admit, then the session.
OpenedSession open_session(const model::Model& model, const SessionRequest& request);

}  // namespace kvrt::validate
