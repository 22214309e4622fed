// Checkpoints and resume of parex train (issue 15): a run killed with
// SIGKILL at random moments, often in the middle of writing a checkpoint,
// resumes from its newest complete one to the very parameters of a run
// never interrupted; SIGTERM finishes the step, checkpoints and exits 143.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kData = std::string("--data-dir=") + PAREX_DATA_DIR;

// The digits MLP (Adam) for 3 epochs (about 1200 steps), in `mode`.
std::vector<std::string> TrainArgs(const std::string& save,
                                   const std::string& mode = "allreduce") {
  return {"train", "--epochs", "3", "--no-progress", kData, "--save",
          save,    "--mode",   mode};
}

std::string Digest(const std::string& out) {
  const size_t at = out.find("parameters      sha256 ");
  return at == std::string::npos ? "" : out.substr(at + 23, 64);
}

// Starts `parex args...` in `cwd` with its output in `cwd`/`log`.
pid_t Spawn(const std::vector<std::string>& args, const std::string& cwd,
            const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(126);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    std::vector<std::string> argv = {PAREX_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  return pid;
}

// Waits at most `seconds` for `pid`; its exit code, 128 + signal, or -1
// (then it is killed).
int WaitFor(pid_t pid, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// In both modes: in Reduce mode Adam's moments and beta powers live with
// each parameter's owner place, and a checkpoint must hold them (issue 28).
TEST(CliCheckpointTest, KilledAtRandomMomentsResumesToTheSameParameters) {
  const std::string dir = ScratchDir("checkpoint_kill");
  std::map<std::string, std::string> want;
  for (const char* mode : {"allreduce", "reduce"}) {
    CliRun whole = RunParex(TrainArgs("whole", mode), dir);
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    want[mode] = Digest(whole.out);
    ASSERT_EQ(want[mode].size(), 64u);
  }

  std::mt19937 rng(2026);
  int mid_write = 0;
  for (int round = 0; round < 4; ++round) {
    const std::string mode = round % 2 == 0 ? "allreduce" : "reduce";
    const std::string ckpt = "ck" + std::to_string(round);
    // A checkpoint after every step: most moments fall inside a write.
    std::vector<std::string> args = TrainArgs("killed", mode);
    args.insert(args.end(),
                {"--checkpoint-dir", ckpt, "--checkpoint-every", "1"});
    const pid_t pid = Spawn(args, dir, dir + "/killed.log");
    // Killed once it wrote a checkpoint, at a random moment after. (Any
    // ckpt-N: with --keep 3, ckpt-1 is gone three steps later, which a
    // loaded machine's polling can miss.)
    auto wrote_one = [&]() {
      std::error_code ec;
      for (const auto& e :
           std::filesystem::directory_iterator(dir + "/" + ckpt, ec)) {
        if (e.path().filename().string().rfind("ckpt-", 0) == 0) return true;
      }
      return false;
    };
    for (int i = 0; i < 3000 && !wrote_one(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    kill(pid, SIGKILL);
    ASSERT_EQ(WaitFor(pid, 30), 128 + SIGKILL) << ReadFile(dir + "/killed.log");
    for (const auto& e :
         std::filesystem::directory_iterator(dir + "/" + ckpt)) {
      mid_write += e.path().filename().string().rfind(".tmp-", 0) == 0;
    }
    std::vector<std::string> resume = TrainArgs("resumed", mode);
    resume.insert(resume.end(), {"--resume", ckpt});
    CliRun resumed = RunParex(resume, dir);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
    EXPECT_THAT(resumed.out, HasSubstr("resuming from " + ckpt + "/ckpt-"));
    EXPECT_EQ(Digest(resumed.out), want[mode])
        << "round " << round << ", " << mode;
  }
  // An interrupted write, for certain: a half-written checkpoint of a later
  // step beside the complete ones is ignored (and not a crash).
  const std::string ckpt = "ck0";
  std::filesystem::create_directories(dir + "/" + ckpt + "/.tmp-ckpt-99999");
  std::ofstream(dir + "/" + ckpt + "/.tmp-ckpt-99999/fc_0.w_0") << "half";
  std::filesystem::create_directories(dir + "/" + ckpt +
                                      "/ckpt-99998");  // no state file
  CliRun again = RunParex({"train", "--epochs", "3", "--no-progress", kData,
                           "--save", "again", "--resume", ckpt},
                          dir);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Digest(again.out), want["allreduce"]);
  EXPECT_THAT(again.out, Not(HasSubstr("ckpt-9999")));
  std::printf("kills that left a half-written checkpoint: %d of 4\n",
              mid_write);
}

TEST(CliCheckpointTest, SigtermFinishesTheStepCheckpointsAndExits143) {
  const std::string dir = ScratchDir("checkpoint_term");
  CliRun whole = RunParex(TrainArgs("whole"), dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::vector<std::string> args = TrainArgs("stopped");
  args.insert(args.end(), {"--checkpoint-dir", "ck", "--metrics", "m.jsonl"});
  const pid_t pid = Spawn(args, dir, dir + "/stopped.log");
  for (int i = 0; i < 3000; ++i) {
    if (ReadFile(dir + "/stopped.log").find("epoch 1/3") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGTERM);
  ASSERT_EQ(WaitFor(pid, 60), 143);
  const std::string log = ReadFile(dir + "/stopped.log");
  EXPECT_THAT(log, HasSubstr("stopped by SIGTERM after step "));
  EXPECT_THAT(log, HasSubstr("; checkpoint ck/ckpt-"));
  std::vector<std::string> resume = TrainArgs("resumed");
  resume.insert(resume.end(), {"--resume", "ck", "--metrics", "m.jsonl"});
  CliRun resumed = RunParex(resume, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Digest(resumed.out), Digest(whole.out));
  // One metrics line per step of the whole run, the stopped run's first.
  std::istringstream lines(ReadFile(dir + "/m.jsonl"));
  std::string line;
  int64_t count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_THAT(line, HasSubstr("{\"step\": " + std::to_string(count) + ","));
  }
  EXPECT_EQ(count, 1215);  // 3 epochs of 405 batches
}

TEST(CliCheckpointTest, BadCheckpointOptionsAndDirectories) {
  const std::string dir = ScratchDir("checkpoint_bad");
  CliRun first = RunParex({"train", "--steps", "20", "--no-progress", kData,
                           "--save", "m", "--checkpoint-dir", "ck"},
                          dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ExpectFailures(
      {
          {{"train", "--checkpoint-every", "5", kData},
           2,
           "--checkpoint-every needs"},
          {{"train", "--checkpoint-dir", "x", "--keep", "0", kData},
           2,
           "--keep"},
          {{"train", "--resume", "nowhere", kData},
           1,
           "'nowhere' is not a directory"},
          {{"train", "--resume", "m", kData},
           1,
           "no complete checkpoint in 'm'"},
          {{"train", "--resume", "ck", "--batch", "64", kData},
           1,
           "was written with"},
          {{"train", "--resume", "ck", "--model", "fit_a_line", kData},
           1,
           "written by another program"},
          {{"train", "--steps", "3", "--checkpoint-dir", "/dev/null/ck", kData},
           1,
           "/dev/null/ck"},
      },
      dir);
  // The checkpoint written before is still there and whole.
  EXPECT_TRUE(std::filesystem::exists(dir + "/ck/ckpt-20/parex_state"));
}

// Across nodes: rank 0 writes the checkpoints and alone reads them back;
// every node resumes at its position with its persistables. Here each node
// names its own directory (ck-{node}), so node b has none to read, as on
// another machine.
TEST(CliCheckpointTest, NodesResumeFromRankZerosCheckpoint) {
  const std::string dir = ScratchDir("checkpoint_nodes");
  const std::string topology = WriteTopology(dir, {1, 1});
  auto args = [&topology](const char* steps, std::vector<std::string> more) {
    std::vector<std::string> a = {"launch",  "--topology",    topology,
                                  "--model", "fashion_mlp",   "--batch",
                                  "32",      "--no-progress", "--seed",
                                  "3",       "--steps",       steps};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  CliRun whole = RunParex(args("12", {"--save", "whole"}), dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  // The first 5 steps, checkpointed; then the rest from the checkpoint.
  CliRun part = RunParex(
      args("5", {"--save", "first", "--checkpoint-dir", "ck-{node}"}), dir);
  ASSERT_EQ(part.exit_code, 0) << part.out << part.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/ck-a/ckpt-5"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/ck-b"));
  CliRun resumed =
      RunParex(args("12", {"--save", "resumed", "--resume", "ck-{node}"}), dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out,
              HasSubstr("[a] parex node: resuming from ck-a/ckpt-5: step 5"));
  EXPECT_THAT(resumed.out,
              HasSubstr("[b] parex node: resuming with rank 0 at step 5"));
  const std::string want = Digest(whole.out);
  ASSERT_FALSE(want.empty());
  // Both nodes end with the uninterrupted run's parameters.
  std::istringstream lines(resumed.out);
  int digests = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("parameters      sha256 ") == std::string::npos) continue;
    EXPECT_EQ(Digest(line), want) << line;
    ++digests;
  }
  EXPECT_EQ(digests, 2);
}

}  // namespace
}  // namespace parex::testing
