#include "apps/exit_codes.h"

#include <cstdio>

namespace parex {

int Fail(const std::string& command, const Status& status, int code) {
  // One line, whatever a crafted file put into the names the message quotes
  // (an op type or variable name with a newline or escape sequence).
  std::string message;
  for (const char ch : status.message()) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      message += hex;
    } else {
      message += ch;
    }
  }
  std::fprintf(stderr, "parex %s: error: %s\n", command.c_str(),
               message.c_str());
  return code;
}

}  // namespace parex
