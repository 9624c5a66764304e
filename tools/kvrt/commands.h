// The subcommands of the kvrt CLI. Each returns the process exit code and throws kvrt::Error
// for bad input; main() turns errors into one line on stderr and the matching exit code.
#pragma once

namespace kvrt::cli {

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;       // validate: at least one setting refused; tune: none found
constexpr int kExitUsage = 2;         // bad flag, bad value, bad or missing input file
constexpr int kExitNotValidated = 3;  // run: compressed setting without a matching PASS record
constexpr int kExitResource = 4;      // context too small for the prompt, memory cap exceeded
constexpr int kExitInternal = 5;      // a library failed

int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_validate(int argc, char** argv);
int cmd_tune(int argc, char** argv);
int cmd_keygen(int argc, char** argv);
int cmd_serve(int argc, char** argv);  // only in a build with the feature `serve`

}  // namespace kvrt::cli
