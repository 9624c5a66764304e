// Settings by name: `kvrt tune` writes the setting it found into the validation record under a name
// ("tuned" by default), and `kvrt run --kv NAME` (chat too) finds it there. The setting found goes
// through the gate like any other (validate/gate.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ops/matmul.h"
#include "validate/record.h"

namespace kvrt::validate {

// A name, not a setting: a letter, then letters, digits, '_' or '-', neither a format name nor a
// letter followed by digits only (q8, and q3 a mistyped format). Names never parse as settings, so
// `--kv` reads either without ambiguity.
bool is_setting_name(std::string_view text);
// kvrt::Error(kUsage) saying what a name may be when `text` is not one.
void check_setting_name(std::string_view text);

struct NamedSetting {
  std::string setting;  // canonical KvConfig::name(), as the record holds it
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kF32;
  std::string record_path;
};

// The setting named `name` in the record at `record_path` (empty: the default record of the model
// file at `model_path` on `isa`). kvrt::Error(kRefused) when the record cannot be read or names no
// such setting, saying which names it has and the `kvrt tune` command that writes one.
NamedSetting find_named_setting(const std::string& model_path, const std::string& record_path,
                                const std::string& isa, const std::string& name);

struct NamedSettings {
  std::string record_path;
  std::vector<RecordSetting> settings;  // those with a tune_name, in the record's order
};

// The named settings of the record at `record_path` (empty: the default record of the model file at
// `model_path` on `isa`), with their verdicts and contexts as recorded (the gate still checks the
// other bindings when one is used). kvrt::Error(kRefused) when the record cannot be read or was
// made for another model file.
NamedSettings list_named_settings(const std::string& model_path, const std::string& record_path,
                                  const std::string& isa);

}  // namespace kvrt::validate
