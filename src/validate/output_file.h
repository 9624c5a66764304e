// Output files of `kvrt validate` (reports, records): checked before the run, so a bad path fails
// in a second rather than after minutes, and written whole or not at all.
#pragma once

#include <string>

namespace kvrt::validate {

// Throws kvrt::Error(kUsage) naming `path` when it cannot be written: it is a directory, or its
// nearest existing ancestor is not a writable directory. `what` names the file in the message.
void check_output_path(const std::string& path, const std::string& what);

// Writes `text` to a temporary file beside `path` and renames it over `path`, creating missing
// parent directories: readers see the old file or the whole new one, and a failure leaves no
// partial file (the temporary is removed). Throws kvrt::Error naming `path`.
void write_file_atomic(const std::string& path, const std::string& text, const std::string& what);

}  // namespace kvrt::validate
