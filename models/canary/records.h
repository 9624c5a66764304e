// Records of the canary tools: one per line, fields separated by tabs, with \\, \n, \t and \r
// escaped inside fields, so texts with newlines fit on one line. Python writes and reads the same
// format (models/canary/records.py).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvrt::canary {

using Record = std::vector<std::string>;  // unescaped fields

// Every record of the file; throws kvrt::Error naming the file and line on a bad escape or an
// unreadable file, and when a record has fewer than `min_fields` fields.
std::vector<Record> read_records(const std::string& path, size_t min_fields);

// `text` with backslash, newline, tab and carriage return escaped.
std::string escape_field(std::string_view text);

}  // namespace kvrt::canary
