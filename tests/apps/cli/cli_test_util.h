// Runs the `parex` binary as a user would (a subprocess in a scratch
// directory) and captures what it printed.
#pragma once

#include <string>
#include <vector>

namespace parex::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `parex args...` with the working directory `cwd` (created when
// missing), stdin from /dev/null, under a 240 s timeout(1).
CliRun RunParex(const std::vector<std::string>& args, const std::string& cwd);

// A command that must fail: its exit code and a piece of its stderr.
struct BadRun {
  std::vector<std::string> args;
  int exit_code;
  std::string message;
};
// Runs each in `cwd`, expecting (gtest) its exit code and message.
void ExpectFailures(const std::vector<BadRun>& cases, const std::string& cwd);

// A fresh scratch directory under the tests' tmp dir.
std::string ScratchDir(const std::string& name);

std::string ReadFile(const std::string& path);

// The "loss" of each line of a metrics file (JSON lines), in order.
std::vector<double> Losses(const std::string& metrics_path);

// Writes `dir`/cluster.pbtxt (and its secret file): nodes a, b, c, ... on
// free ports of 127.0.0.1 (or of `hosts[i]`, when given) with `places[i]`
// CPU places each. Returns its path. `extra` is appended (more topology
// fields: timeouts, tls).
std::string WriteTopology(const std::string& dir,
                          const std::vector<int>& places,
                          const std::string& extra = "",
                          const std::vector<std::string>& hosts = {});

}  // namespace parex::testing
