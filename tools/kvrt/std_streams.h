// The standard streams of the CLI: output that cannot be written is an error, never a success
// with the text lost (a full disk, a closed descriptor, /dev/full).
#pragma once

#include <string>
#include <string_view>

namespace kvrt::cli {

// Fills descriptors 0, 1 and 2 when the process started with one closed, so that no file kvrt
// opens takes a standard stream's number: stdin opened write-only and stdout and stderr read-only,
// so every use of them fails instead of reading or writing another file.
void reserve_standard_fds();

// Gives stdout, where it is not a terminal, a buffer of 1 MiB: a command's printed text then meets
// the descriptor in close_stdout's flush (or write_stdout's), which sees the errno of a failing
// write; glibc keeps none of a write that failed inside printf, once the default 4 KiB filled.
void buffer_stdout();

// Writes `text` to stdout and flushes it (streamed output); kvrt::Error(kResource) when it cannot
// be written, so generation stops instead of running on into the void.
void write_stdout(std::string_view text);

// Flushes and closes stdout; returns "" or why the output was lost.
std::string close_stdout();

}  // namespace kvrt::cli
