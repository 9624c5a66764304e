#include "validate/named_setting.h"

#include <cctype>

#include "common/error.h"
#include "common/sha256.h"
#include "kv/formats.h"
#include "validate/record.h"

namespace kvrt::validate {
namespace {

bool is_format_name(std::string_view text) {
  for (int f = 0; f < kv::kNumFormats; ++f)
    if (text == kv::format_traits(kv::Format(f)).name) return true;
  return false;
}

// A letter and digits only: the shape of a format name (q8, f16), so a mistyped format stays an
// unknown format rather than a name to look up.
bool looks_like_format(std::string_view text) {
  return text.size() > 1 && text.find_first_not_of("0123456789", 1) == std::string_view::npos;
}

}  // namespace

bool is_setting_name(std::string_view text) {
  if (text.empty() || !std::isalpha(static_cast<unsigned char>(text[0])) || is_format_name(text) ||
      looks_like_format(text))
    return false;
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

void check_setting_name(std::string_view text) {
  if (!is_setting_name(text))
    throw Error("'" + std::string(text) +
                    "' cannot name a setting: a name is a letter followed by letters, digits, "
                    "'_' or '-', neither a format name (" +
                    kv::format_names() + ") nor shaped like one (a letter and digits)",
                ErrorKind::kUsage);
}

NamedSettings list_named_settings(const std::string& model_path, const std::string& record_path,
                                  const std::string& isa) {
  const std::string model_sha = sha256_file(model_path);
  NamedSettings n;
  n.record_path = record_path.empty() ? default_record_path(model_sha, isa) : record_path;
  const Record r = read_record(n.record_path);
  if (r.model_sha256 != model_sha)
    throw Error("validation record '" + n.record_path +
                    "' was made for another model file (sha256 " + r.model_sha256.substr(0, 12) +
                    "...)",
                ErrorKind::kRefused);
  for (const RecordSetting& s : r.settings)
    if (!s.tune_name.empty()) n.settings.push_back(s);
  return n;
}

NamedSetting find_named_setting(const std::string& model_path, const std::string& record_path,
                                const std::string& isa, const std::string& name) {
  const std::string path =
      record_path.empty() ? default_record_path(sha256_file(model_path), isa) : record_path;
  const std::string tune = "run `kvrt tune -m " + model_path + " --name " + name + "` to find one";
  Record r;
  try {
    r = read_record(path);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kRefused) throw;
    throw Error("no KV setting named '" + name + "': " + e.what() + "; " + tune,
                ErrorKind::kRefused);
  }
  std::string names;
  for (const RecordSetting& s : r.settings) {
    if (s.tune_name == name) return {s.name, s.matmul, path};
    if (!s.tune_name.empty()) names += (names.empty() ? "" : ", ") + s.tune_name;
  }
  throw Error("validation record '" + path + "' has no KV setting named '" + name + "' (" +
                  (names.empty() ? std::string("it names none") : "it names " + names) + "); " +
                  tune,
              ErrorKind::kRefused);
}

}  // namespace kvrt::validate
