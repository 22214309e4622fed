// PAREX_CHECK: aborts with file:line when an internal invariant is broken.
// Never use it for bad user input; that is a Status (base/status.h).
#pragma once

#include <string>

namespace parex::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr,
                              const std::string& message);
}  // namespace parex::internal

#define PAREX_CHECK(cond, ...)                                    \
  do {                                                            \
    if (!(cond))                                                  \
      ::parex::internal::CheckFailed(__FILE__, __LINE__, #cond,   \
                                     ::std::string(__VA_ARGS__)); \
  } while (0)
