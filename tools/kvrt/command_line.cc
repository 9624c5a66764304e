#include "command_line.h"

#include <sstream>

#include "common/error.h"
#include "flag_numbers.h"

namespace kvrt::cli {
namespace {

std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::stringstream ss(names);
  for (std::string n; std::getline(ss, n, ',');) out.push_back(n);
  return out;
}

[[noreturn]] void bad_value(const std::string& flag, std::string_view v, const std::string& why) {
  throw Error("invalid value '" + std::string(v) + "' for " + flag + ": " + why, ErrorKind::kUsage);
}

}  // namespace

CommandLine::CommandLine(std::string usage, std::string description)
    : usage_(std::move(usage)), description_(std::move(description)) {}

void CommandLine::add(const std::string& names, const std::string& metavar, const std::string& help,
                      std::string* out, bool allow_empty) {
  std::string flag = split_names(names).back();
  options_.push_back({split_names(names), metavar, help, false, [=](std::string_view v) {
                        if (v.empty() && !allow_empty) bad_value(flag, v, "must not be empty");
                        *out = std::string(v);
                      }});
}

void CommandLine::add(const std::string& names, const std::string& metavar, const std::string& help,
                      int* out, int min, int max) {
  std::string flag = split_names(names).back();
  options_.push_back({split_names(names), metavar, help, false,
                      [=](std::string_view v) { *out = int(parse_flag_int(flag, v, min, max)); }});
}

void CommandLine::add(const std::string& names, const std::string& metavar, const std::string& help,
                      float* out, float min, float max) {
  std::string flag = split_names(names).back();
  options_.push_back({split_names(names), metavar, help, false,
                      [=](std::string_view v) { *out = parse_flag_float(flag, v, min, max); }});
}

void CommandLine::add(const std::string& names, const std::string& metavar, const std::string& help,
                      uint64_t* out) {
  std::string flag = split_names(names).back();
  options_.push_back({split_names(names), metavar, help, false,
                      [=](std::string_view v) { *out = parse_flag_u64(flag, v); }});
}

void CommandLine::add(const std::string& names, const std::string& metavar, const std::string& help,
                      std::optional<uint64_t>* out) {
  std::string flag = split_names(names).back();
  options_.push_back({split_names(names), metavar, help, false,
                      [=](std::string_view v) { *out = parse_flag_u64(flag, v); }});
}

void CommandLine::add_flag(const std::string& names, const std::string& help, bool* out) {
  options_.push_back(
      {split_names(names), "", help, false, [out](std::string_view) { *out = true; }});
}

void CommandLine::add_hidden(const std::string& names, std::function<void(std::string_view)> set) {
  options_.push_back({split_names(names), "X", "", true, std::move(set)});
}

const CommandLine::Option* CommandLine::find(std::string_view name) const {
  for (const auto& o : options_)
    for (const auto& n : o.names)
      if (n == name) return &o;
  return nullptr;
}

bool CommandLine::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    std::string_view value;
    bool inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    const Option* o = find(arg);
    if (!o)
      throw Error("unknown option '" + std::string(arg) + "' (see --help)", ErrorKind::kUsage);
    if (o->metavar.empty()) {
      if (inline_value)
        throw Error("option " + std::string(arg) + " takes no value", ErrorKind::kUsage);
    } else if (!inline_value) {
      if (i + 1 >= argc)
        throw Error("option " + std::string(arg) + " needs a value", ErrorKind::kUsage);
      value = argv[++i];
    }
    o->set(value);
  }
  return true;
}

std::string CommandLine::help() const {
  std::string out = "usage: " + usage_ + "\n\n" + description_ + "\n\noptions:\n";
  for (const auto& o : options_) {
    if (o.hidden) continue;
    std::string left = "  ";
    for (size_t i = 0; i < o.names.size(); ++i) left += (i ? ", " : "") + o.names[i];
    if (!o.metavar.empty()) left += " " + o.metavar;
    if (left.size() < 26) left.resize(26, ' ');
    else left += "\n" + std::string(26, ' ');
    out += left + o.help + "\n";
  }
  out += std::string("  -h, --help").append(26 - 12, ' ') + "show this help\n";
  return out;
}

}  // namespace kvrt::cli
