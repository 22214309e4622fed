// The one registry of parex's configuration: every environment variable parex
// reads is declared in config.cc with its default and one line of doc, and
// nothing else in the tree calls getenv.
#pragma once

#include <string>
#include <vector>

namespace parex {

struct ConfigVar {
  const char* name;
  const char* default_value;
  const char* doc;
};

// Every declared variable, in declaration order.
const std::vector<ConfigVar>& ConfigVars();

// The value from the environment, or the declared default when unset.
// REQUIRES: `name` is declared in config.cc (checked).
std::string GetConfig(const char* name);
// Whether the environment sets `name` (to anything, "" included).
// REQUIRES: `name` is declared in config.cc (checked).
bool ConfigIsSet(const char* name);
// Same, parsed as an integer; the default when unset or not a number.
long GetConfigInt(const char* name);

}  // namespace parex
