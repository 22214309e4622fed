// Text from a file quoted in an error message: at most `max` characters,
// bytes that are not printable ASCII written as \xNN, so a binary or crafted
// file can neither garble the terminal nor break parex's one-line errors.
#pragma once

#include <cstdio>
#include <string>

namespace parex {

inline std::string Excerpt(const std::string& text, size_t max = 40) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

}  // namespace parex
