// A small option parser shared by the subcommands: typed options with ranges, -h/--help,
// and one clear sentence for every bad flag or value (kvrt::Error of kind kUsage).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt::cli {

class CommandLine {
 public:
  CommandLine(std::string usage, std::string description);

  // A string value; an empty one is a usage error unless allow_empty (e.g. an empty prompt).
  void add(const std::string& names, const std::string& metavar, const std::string& help,
           std::string* out, bool allow_empty = false);
  void add(const std::string& names, const std::string& metavar, const std::string& help, int* out,
           int min, int max);
  void add(const std::string& names, const std::string& metavar, const std::string& help,
           float* out, float min, float max);
  // Any integer from 0 to 2^64 - 1.
  void add(const std::string& names, const std::string& metavar, const std::string& help,
           uint64_t* out);
  void add(const std::string& names, const std::string& metavar, const std::string& help,
           std::optional<uint64_t>* out);
  void add_flag(const std::string& names, const std::string& help, bool* out);
  // Options that tests use but users should not see in --help.
  void add_hidden(const std::string& names, std::function<void(std::string_view)> set);

  // Parses argv[0..argc) (the words after the subcommand). Returns false when help was asked
  // for (it is printed to stdout). Throws kvrt::Error(kUsage) on a bad flag or value.
  bool parse(int argc, char** argv);
  std::string help() const;

 private:
  struct Option {
    std::vector<std::string> names;
    std::string metavar;  // empty for flags
    std::string help;
    bool hidden = false;
    std::function<void(std::string_view)> set;
  };
  const Option* find(std::string_view name) const;

  std::string usage_, description_;
  std::vector<Option> options_;
};

}  // namespace kvrt::cli
