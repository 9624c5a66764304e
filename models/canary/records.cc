#include "models/canary/records.h"

#include <fstream>

#include "common/error.h"

namespace kvrt::canary {
namespace {

Record split_record(const std::string& line, const std::string& where) {
  Record fields(1);
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\t') {
      fields.emplace_back();
    } else if (c != '\\') {
      fields.back() += c;
    } else {
      const char e = i + 1 < line.size() ? line[++i] : '\0';
      if (e == '\\') fields.back() += '\\';
      else if (e == 'n') fields.back() += '\n';
      else if (e == 't') fields.back() += '\t';
      else if (e == 'r') fields.back() += '\r';
      else
        throw Error(
            where + ": bad escape '\\" + std::string(1, e) + "' (use \\\\, \\n, \\t or \\r)",
            ErrorKind::kUsage);
    }
  }
  return fields;
}

}  // namespace

std::vector<Record> read_records(const std::string& path, size_t min_fields) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read records file '" + path + "'", ErrorKind::kUsage);
  std::vector<Record> records;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    Record r = split_record(line, where);
    if (r.size() < min_fields)
      throw Error(where + ": " + std::to_string(r.size()) + " fields, expected at least " +
                      std::to_string(min_fields),
                  ErrorKind::kUsage);
    records.push_back(std::move(r));
  }
  if (in.bad()) throw Error("error reading records file '" + path + "'");
  return records;
}

std::string escape_field(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

}  // namespace kvrt::canary
