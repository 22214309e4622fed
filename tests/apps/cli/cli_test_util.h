// Runs the `parex` binary as a user would (a subprocess in a scratch
// directory) and captures what it printed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace parex::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `parex args...` with the working directory `cwd` (created when
// missing), stdin from /dev/null, under a 240 s timeout(1); `prefix` runs
// it (mpirun -np 2, say).
CliRun RunParex(const std::vector<std::string>& args, const std::string& cwd,
                const std::vector<std::string>& prefix = {});

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

// The persistables parex saved in `saved_dir` are Paddle's at the end of a
// training fixture (`fixture`/final, for `fixture`/main.pdmodel): its
// parameters, optimizer moments, batch norm's statistics, at least
// `min_compared` fp32 tensors (learning rates left out).
void ExpectPaddlesFinalPersistables(const std::string& saved_dir,
                                    const std::string& fixture,
                                    int min_compared = 20);

// Writes `dir`/cluster.pbtxt (and its secret file): nodes a, b, c, ... on
// free ports of 127.0.0.1 (or of `hosts[i]`, when given) with `places[i]`
// CPU places each. Returns its path. `extra` is appended (more topology
// fields: timeouts, tls).
std::string WriteTopology(const std::string& dir,
                          const std::vector<int>& places,
                          const std::string& extra = "",
                          const std::vector<std::string>& hosts = {});

// --- Nodes of a cluster run as children (the cluster_*_test.cc files). ---

using Clock = std::chrono::steady_clock;

// A `parex` child with its stdout and stderr in `log`, killed (SIGKILL)
// when the test lets go of it. `prefix` runs it through another command
// that execs it in the same process (`ip netns exec NS`).
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& cwd,
        const std::string& log, const std::vector<std::string>& prefix = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  std::string Log() const { return ReadFile(log_); }
  // Waits until the log holds `text` (true) or `limit` passed.
  bool WaitFor(const std::string& text, std::chrono::milliseconds limit) const;
  // Polls for the exit (does not wait); true once it exited.
  bool Poll();
  bool exited() const { return exited_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
};

// `parex node --topology T --node N --no-progress` and `more`.
std::vector<std::string> NodeArgs(const std::string& topology,
                                  const std::string& node,
                                  std::vector<std::string> more);

// Waits for every child in `children` to exit, up to `limit` from `start`;
// each one's time to exit (ms from `start`), -1 if it did not.
std::vector<int64_t> WaitAll(std::vector<Child*> children,
                             Clock::time_point start,
                             std::chrono::milliseconds limit);

// Connects to 127.0.0.1:`port`, sends `bytes`, closes.
void Send(int port, const std::string& bytes);

// The port of `node` in the topology file at `topology` (WriteTopology's).
int PortOf(const std::string& topology, char node);

// The trainable parameters' sha256 that `parex train`/`node` printed in
// `output` ("" when it printed none).
std::string ParametersDigest(const std::string& output);
// Every such sha256 in `output` (the nodes of a launch), in order.
std::vector<std::string> ParameterDigests(const std::string& output);

// The parameters' sha256 after `parex launch --topology T --no-progress
// train...` in `cwd`: a run nobody disturbed ("" with a gtest failure when
// it failed).
std::string UndisturbedDigest(const std::string& topology,
                              const std::vector<std::string>& train,
                              const std::string& cwd);

// The batches of PaddlePaddle's CNN fixture (tests/apps/fixtures/
// paddle_cnn_bn_adam/batches: ten of 16 rows) as `dir`/x.npy and
// `dir`/label.npy, in order.
void WritePaddleCnnFixtureData(const std::string& dir);

}  // namespace parex::testing
