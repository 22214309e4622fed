// The exit codes every parex subcommand ends with, and its one-line error:
//   0 success, 1 a runtime error ("parex <command>: error: ..."),
//   2 a usage error (bad argument values that CLI11 cannot check).
// apps/cli/ and apps/train/ both report through Fail.
#pragma once

#include <string>

#include "base/status.h"

namespace parex {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// Prints "parex <command>: error: <message>" to stderr, control characters
// of the message escaped (one line, whatever a crafted file put into the
// names it quotes); returns `code`.
int Fail(const std::string& command, const Status& status,
         int code = kExitRuntime);

}  // namespace parex
