// A cluster that fails loudly (issue 16): a node killed at a random moment
// ends the others within 5 s naming it; a stopped node gets a stall report
// (or, past the heartbeat timeout, is named as lost); the cluster restarts
// from rank 0's checkpoint and reproduces the uninterrupted run; garbage on
// a node's port does not stop its training; refused peers are logged with
// their address.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "tests/apps/cli/cli_test_util.h"
#include "tests/free_port.h"

extern char** environ;

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// A `parex` child with its stdout and stderr in `log`, killed (SIGKILL)
// when the test lets go of it. `prefix` runs it through another command
// that execs it in the same process (`ip netns exec NS`).
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& cwd,
        const std::string& log, const std::vector<std::string>& prefix = {})
      : log_(log) {
    std::filesystem::create_directories(cwd);
    std::vector<std::string> argv = {"/bin/sh", "-c", ""};
    std::string cmd = "cd '" + cwd + "' && exec";
    for (const std::string& p : prefix) cmd += " '" + p + "'";
    cmd += " '" + std::string(PAREX_CLI) + "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " </dev/null >'" + log + "' 2>&1";
    argv[2] = cmd;
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    if (posix_spawn(&pid_, "/bin/sh", nullptr, nullptr, raw.data(), environ) !=
        0)
      pid_ = -1;
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGCONT);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  std::string Log() const { return ReadFile(log_); }
  // Waits until the log holds `text` (true) or `limit` passed.
  bool WaitFor(const std::string& text, std::chrono::milliseconds limit) const {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      if (Log().find(text) != std::string::npos) return true;
      if (exited_) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // Polls for the exit until `deadline`; true once it exited.
  bool Poll() {
    if (exited_) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      exit_code_ =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return exited_;
  }
  bool exited() const { return exited_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
};

std::vector<std::string> NodeArgs(const std::string& topology,
                                  const std::string& node,
                                  std::vector<std::string> more) {
  std::vector<std::string> a = {"node",   "--topology", topology,
                                "--node", node,         "--no-progress"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// Waits for every child in `children` to exit, up to `limit` from `start`;
// each one's time to exit (ms from `start`), -1 if it did not.
std::vector<int64_t> WaitAll(std::vector<Child*> children,
                             Clock::time_point start,
                             std::chrono::milliseconds limit) {
  std::vector<int64_t> ms(children.size(), -1);
  while (Clock::now() < start + limit) {
    bool all = true;
    for (size_t i = 0; i < children.size(); ++i) {
      if (ms[i] < 0 && children[i]->Poll()) {
        ms[i] = std::chrono::duration_cast<std::chrono::milliseconds>(
                    Clock::now() - start)
                    .count();
      }
      all = all && ms[i] >= 0;
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ms;
}

// Nodes a, b, c training fashion_mlp for long, each past its join (empty,
// with a gtest failure, when one did not get there within 60 s).
std::vector<std::unique_ptr<Child>> StartTraining(const std::string& topology,
                                                  const std::string& dir) {
  std::vector<std::unique_ptr<Child>> nodes;
  for (const char* n : {"a", "b", "c"}) {
    nodes.push_back(std::make_unique<Child>(
        NodeArgs(topology, n, {"--model", "fashion_mlp", "--epochs", "20"}),
        dir, dir + "/" + n + ".log"));
  }
  for (int i = 0; i < 3; ++i) {
    if (!nodes[i]->WaitFor(std::string("parex node: ") + "abc"[i] + ", rank",
                           std::chrono::seconds(60))) {
      ADD_FAILURE() << nodes[i]->Log();
      return {};
    }
  }
  return nodes;
}

// Acceptance 1: SIGKILL of one node of three at a random moment of training,
// 20 times: the other two exit nonzero within 5 s, naming it.
TEST(ClusterFailureTest, ANodeKilledMidTrainingEndsTheOthersWithin5sNamingIt) {
  std::mt19937 rng(static_cast<unsigned>(time(nullptr)));
  const char* names[] = {"a", "b", "c"};
  for (int round = 0; round < 20; ++round) {
    const std::string dir = ScratchDir("cluster_kill_" + std::to_string(round));
    const std::string topology = WriteTopology(dir, {1, 1, 1});
    const int victim = static_cast<int>(rng() % 3);
    const int delay_ms = static_cast<int>(rng() % 1500);
    std::vector<std::unique_ptr<Child>> nodes = StartTraining(topology, dir);
    ASSERT_EQ(nodes.size(), 3u);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ASSERT_EQ(kill(nodes[victim]->pid(), SIGKILL), 0);
    const auto killed = Clock::now();
    std::vector<Child*> others;
    for (int i = 0; i < 3; ++i) {
      if (i != victim) others.push_back(nodes[i].get());
    }
    const std::vector<int64_t> ms =
        WaitAll(others, killed, std::chrono::seconds(30));
    const std::string what = "round " + std::to_string(round) +
                             ": killed node '" + names[victim] + "' " +
                             std::to_string(delay_ms) + " ms into training";
    for (size_t i = 0; i < others.size(); ++i) {
      const std::string log = others[i]->Log();
      ASSERT_GE(ms[i], 0) << what << ": a survivor did not exit\n" << log;
      EXPECT_LT(ms[i], 5000) << what << "\n" << log;
      EXPECT_EQ(others[i]->exit_code(), 1) << what << "\n" << log;
      EXPECT_THAT(log, HasSubstr(std::string("node '") + names[victim] +
                                 "' (rank " + std::to_string(victim)))
          << what;
      EXPECT_THAT(log, HasSubstr("was lost")) << what;
      // Which cross-node call (or that it was computing) it was in.
      EXPECT_THAT(log, ::testing::AnyOf(HasSubstr("collective #"),
                                        HasSubstr("computing")))
          << what;
    }
    if (HasFailure()) return;
  }
}

// Acceptance 1: a node stopped (SIGSTOP) while the others wait for it in a
// collective: each of them reports the stall once collective_timeout_ms
// passed, naming the stopped node as the one that had not joined.
TEST(ClusterFailureTest, AStoppedNodeGetsAStallReportNamingIt) {
  const std::string dir = ScratchDir("cluster_stall");
  const std::string topology = WriteTopology(
      dir, {1, 1, 1},
      "collective_timeout_ms: 2000\nheartbeat_timeout_ms: 60000\n");
  std::vector<std::unique_ptr<Child>> nodes = StartTraining(topology, dir);
  ASSERT_EQ(nodes.size(), 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(kill(nodes[2]->pid(), SIGSTOP), 0);
  const auto stopped = Clock::now();
  const std::vector<int64_t> ms = WaitAll({nodes[0].get(), nodes[1].get()},
                                          stopped, std::chrono::seconds(30));
  for (int i = 0; i < 2; ++i) {
    const std::string log = nodes[i]->Log();
    ASSERT_GE(ms[i], 0) << log;
    // The timeout, then a second for the peers' answers and a margin.
    EXPECT_LT(ms[i], 2000 + 6000) << log;
    EXPECT_EQ(nodes[i]->exit_code(), 1) << log;
    EXPECT_THAT(log, HasSubstr("stall report")) << log;
    EXPECT_THAT(log, HasSubstr("not joined by node 'c' (rank 2: no answer"))
        << log;
  }
}

// A stopped node stays silent: past heartbeat_timeout_ms the others count
// it lost (as they would a partitioned machine) and say it still listens.
TEST(ClusterFailureTest, ASilentNodeIsLostAfterTheHeartbeatTimeout) {
  const std::string dir = ScratchDir("cluster_silent");
  const std::string topology = WriteTopology(
      dir, {1, 1},
      "collective_timeout_ms: 60000\nheartbeat_timeout_ms: 1500\n");
  Child a(NodeArgs(topology, "a", {"--model", "fashion_mlp", "--epochs", "20"}),
          dir, dir + "/a.log");
  Child b(NodeArgs(topology, "b", {"--model", "fashion_mlp", "--epochs", "20"}),
          dir, dir + "/b.log");
  ASSERT_TRUE(a.WaitFor("parex node: a, rank", std::chrono::seconds(60)))
      << a.Log();
  ASSERT_TRUE(b.WaitFor("parex node: b, rank", std::chrono::seconds(60)))
      << b.Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(kill(b.pid(), SIGSTOP), 0);
  const std::vector<int64_t> ms =
      WaitAll({&a}, Clock::now(), std::chrono::seconds(30));
  ASSERT_GE(ms[0], 0) << a.Log();
  EXPECT_LT(ms[0], 1500 + 3000) << a.Log();
  EXPECT_EQ(a.exit_code(), 1) << a.Log();
  EXPECT_THAT(a.Log(), HasSubstr("node 'b' (rank 1, 127.0.0.1:"));
  // Its port: the kernel still accepts a connection, the stopped process
  // says nothing on it.
  EXPECT_THAT(a.Log(), HasSubstr("still opens but nothing answers on it"));
}

// A network namespace joined to this one by a veth pair (10.77.N.1 here,
// 10.77.N.2 inside), removed with everything in it when it goes. Needs root
// (CAP_NET_ADMIN); `ok()` false where it cannot be made.
class VethNamespace {
 public:
  VethNamespace() {
    const int id = static_cast<int>(getpid() % 250);
    name_ = "pxns" + std::to_string(getpid());
    host_link_ = "pxh" + std::to_string(getpid());
    inner_link_ = "pxi" + std::to_string(getpid());
    const std::string& inner = inner_link_;
    host_ = "10.77." + std::to_string(id) + ".1";
    inside_ = "10.77." + std::to_string(id) + ".2";
    ok_ = geteuid() == 0 && Sh("ip netns add " + name_) &&
          Sh("ip link add " + host_link_ + " type veth peer name " + inner) &&
          Sh("ip link set " + inner + " netns " + name_) &&
          Sh("ip addr add " + host_ + "/24 dev " + host_link_) &&
          Sh("ip link set " + host_link_ + " up") &&
          Sh("ip netns exec " + name_ + " ip addr add " + inside_ + "/24 dev " +
             inner) &&
          Sh("ip netns exec " + name_ + " ip link set " + inner + " up") &&
          Sh("ip netns exec " + name_ + " ip link set lo up");
  }
  ~VethNamespace() {
    Sh("ip link del " + host_link_);
    Sh("ip netns del " + name_);
  }
  bool ok() const { return ok_; }
  const std::string& host() const { return host_; }      // this side's address
  const std::string& inside() const { return inside_; }  // the namespace's
  std::vector<std::string> Exec() const {
    return {"ip", "netns", "exec", name_};
  }
  // Cuts the link from inside: packets both ways are lost and no connection
  // is reset. (This side keeps its route over the link, now without
  // carrier, so nothing leaves by the default route, where a proxy or a
  // firewall could answer for the namespace.)
  bool Cut() const {
    return Sh("ip netns exec " + name_ + " ip link set " + inner_link_ +
              " down");
  }

 private:
  static bool Sh(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
  }
  std::string name_, host_link_, inner_link_, host_, inside_;
  bool ok_ = false;
};

// Acceptance 1, a partition: node c runs in its own network namespace, and
// its link is cut mid-training (no process ends, no connection is reset).
// Past heartbeat_timeout_ms both sides count the other lost: a and b name
// c, c names a peer; each exits nonzero.
TEST(ClusterFailureTest, APartitionedNodeIsLostOnBothSidesOfTheCut) {
  VethNamespace ns;
  if (!ns.ok()) {
    GTEST_SKIP()
        << "needs root to make a network namespace and a veth pair (ip netns); "
           "the 127.0.0.1 tests cover a silent node (SIGSTOP) instead";
  }
  const std::string dir = ScratchDir("cluster_partition");
  const std::string topology =
      WriteTopology(dir, {1, 1, 1}, "heartbeat_timeout_ms: 2000\n",
                    {ns.host(), ns.host(), ns.inside()});
  std::vector<std::unique_ptr<Child>> nodes;
  for (int i = 0; i < 3; ++i) {
    const std::string name(1, "abc"[i]);
    nodes.push_back(std::make_unique<Child>(
        NodeArgs(topology, name, {"--model", "fashion_mlp", "--epochs", "20"}),
        dir, dir + "/" + name + ".log",
        i == 2 ? ns.Exec() : std::vector<std::string>{}));
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        nodes[i]->WaitFor(std::string("parex node: ") + "abc"[i] + ", rank",
                          std::chrono::seconds(60)))
        << nodes[i]->Log();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(ns.Cut());
  const auto cut = Clock::now();
  const std::vector<int64_t> ms =
      WaitAll({nodes[0].get(), nodes[1].get(), nodes[2].get()}, cut,
              std::chrono::seconds(30));
  for (int i = 0; i < 3; ++i) {
    const std::string log = nodes[i]->Log();
    ASSERT_GE(ms[i], 0) << "node "
                        << "abc"[i] << " did not exit\n"
                        << log;
    // The heartbeat timeout, the port probe and a margin.
    EXPECT_LT(ms[i], 2000 + 5000) << log;
    EXPECT_EQ(nodes[i]->exit_code(), 1) << log;
    EXPECT_THAT(log, HasSubstr("was lost")) << log;
    // The lost peer's port was probed: the cut link drops the packets.
    EXPECT_THAT(log, HasSubstr("nothing answers at")) << log;
    EXPECT_THAT(log, HasSubstr("the network is partitioned")) << log;
    EXPECT_THAT(log, Not(HasSubstr("nothing listens"))) << log;
    EXPECT_THAT(log, Not(HasSubstr("still opens"))) << log;
  }
  EXPECT_THAT(nodes[0]->Log(),
              HasSubstr("node 'c' (rank 2, " + ns.inside() + ":"));
  EXPECT_THAT(nodes[1]->Log(),
              HasSubstr("node 'c' (rank 2, " + ns.inside() + ":"));
  EXPECT_THAT(nodes[2]->Log(),
              ::testing::AnyOf(HasSubstr("node 'a' (rank 0, " + ns.host()),
                               HasSubstr("node 'b' (rank 1, " + ns.host())));
}

// Acceptance 2: three nodes checkpointing every 10 steps; one is killed
// after the second checkpoint; the cluster restarted with --resume ends the
// run, and every step's loss equals the uninterrupted run's.
TEST(ClusterFailureTest,
     RestartWithResumeAfterAKillReproducesTheUninterruptedRun) {
  const std::string dir = ScratchDir("cluster_kill_resume");
  const std::string topology = WriteTopology(dir, {1, 1, 1});
  const std::vector<std::string> common = {
      "--model", "fashion_mlp", "--batch", "32",           "--seed",
      "5",       "--steps",     "400",     "--no-progress"};
  std::vector<std::string> whole = {"launch", "--topology", topology};
  whole.insert(whole.end(), common.begin(), common.end());
  whole.insert(whole.end(), {"--metrics", "whole.jsonl"});
  CliRun uninterrupted = RunParex(whole, dir);
  ASSERT_EQ(uninterrupted.exit_code, 0)
      << uninterrupted.out << uninterrupted.err;

  std::vector<std::string> node_opts = common;
  node_opts.insert(node_opts.end(),
                   {"--metrics", "run.jsonl", "--checkpoint-dir", "ck",
                    "--checkpoint-every", "10", "--keep", "100"});
  std::vector<std::unique_ptr<Child>> nodes;
  for (const char* n : {"a", "b", "c"}) {
    nodes.push_back(std::make_unique<Child>(NodeArgs(topology, n, node_opts),
                                            dir, dir + "/" + n + ".log"));
  }
  const auto end = Clock::now() + std::chrono::seconds(120);
  while (!std::filesystem::exists(dir + "/ck/ckpt-20") && Clock::now() < end &&
         !nodes[0]->Poll()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(std::filesystem::exists(dir + "/ck/ckpt-20")) << nodes[0]->Log();
  ASSERT_EQ(kill(nodes[1]->pid(), SIGKILL), 0);
  const std::vector<int64_t> ms = WaitAll(
      {nodes[0].get(), nodes[2].get()}, Clock::now(), std::chrono::seconds(30));
  for (int i : {0, 2}) {
    ASSERT_GE(ms[i == 0 ? 0 : 1], 0);
    ASSERT_NE(nodes[i]->exit_code(), 0)
        << "the run ended before the kill reached it";
    EXPECT_EQ(nodes[i]->exit_code(), 1) << nodes[i]->Log();
    EXPECT_THAT(nodes[i]->Log(), HasSubstr("node 'b' (rank 1"));
  }
  std::vector<std::string> resume = {"launch", "--topology", topology};
  resume.insert(resume.end(), node_opts.begin(), node_opts.end());
  resume.insert(resume.end(), {"--resume", "ck"});
  CliRun resumed = RunParex(resume, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("[a] parex node: resuming from ck/ckpt-"));
  const std::vector<double> want = Losses(dir + "/whole.jsonl");
  const std::vector<double> got = Losses(dir + "/run.jsonl");
  ASSERT_EQ(want.size(), 400u);
  ASSERT_EQ(got.size(), 400u);
  for (size_t s = 0; s < want.size(); ++s) {
    EXPECT_NEAR(got[s], want[s], 1e-5 * std::max(1.0, std::abs(want[s])))
        << "step " << s + 1;
  }
}

// Connects to 127.0.0.1:`port`, sends `bytes`, closes.
void Send(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      !bytes.empty()) {
    (void)!write(fd, bytes.data(), bytes.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  close(fd);
}

int PortOf(const std::string& topology, char node) {
  const std::string text = ReadFile(topology);
  const size_t at = text.find(std::string("name: \"") + node + "\"");
  const size_t port = text.find("port: ", at);
  return std::stoi(text.substr(port + 6));
}

// Acceptance 3: garbage, truncated and lying BASP frames sent to a training
// node's port are dropped with their connection; training goes on and ends
// with the same losses as an undisturbed run.
TEST(ClusterFailureTest, GarbageAndTruncatedFramesDoNotStopTraining) {
  const std::string dir = ScratchDir("cluster_garbage");
  const std::string topology = WriteTopology(dir, {1, 1});
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "300",     "--metrics",   "m.jsonl"};
  Child a(NodeArgs(topology, "a", train), dir + "/run", dir + "/a.log");
  Child b(NodeArgs(topology, "b", train), dir + "/run", dir + "/b.log");
  ASSERT_TRUE(a.WaitFor("parex node: a, rank", std::chrono::seconds(60)))
      << a.Log();
  std::mt19937 rng(7);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  // A BASP header (CAF 0.17) is 32 bytes: operation, 2 padding bytes, flags,
  // payload length, operation data, source and destination actor ids. This
  // one is a client handshake announcing a 64 MiB payload that never comes.
  std::string header(32, '\0');
  header[0] = 1;
  header[4] = '\x04';
  for (int port : {PortOf(topology, 'a'), PortOf(topology, 'b')}) {
    for (int i = 0; i < 5; ++i) {
      Send(port, noise.substr(0, 1 + rng() % noise.size()));
      Send(port, header.substr(0, 1 + rng() % 31));  // truncated
      Send(port, "");                                // connect, say nothing
    }
    Send(port, header + "short payload");
    Send(port, std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  const std::vector<int64_t> ms =
      WaitAll({&a, &b}, Clock::now(), std::chrono::seconds(120));
  ASSERT_GE(ms[0], 0);
  ASSERT_GE(ms[1], 0);
  ASSERT_EQ(a.exit_code(), 0) << a.Log();
  ASSERT_EQ(b.exit_code(), 0) << b.Log();
  // The same losses as a run nobody disturbed.
  CliRun quiet =
      RunParex({"launch", "--topology", topology, "--model", "fashion_mlp",
                "--steps", "300", "--metrics", "m.jsonl"},
               dir + "/quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out << quiet.err;
  EXPECT_EQ(Losses(dir + "/run/m.jsonl"), Losses(dir + "/quiet/m.jsonl"));
}

// Acceptance 3: a node that does not know the secret, or names itself with
// a name the topology does not have, is refused; the refusing node logs it
// with the peer's address and goes on to train with its real peer.
TEST(ClusterFailureTest, IntrudersAreRefusedAndLoggedWithTheirAddress) {
  const std::string dir = ScratchDir("cluster_intruders");
  const std::string topology = WriteTopology(dir, {1, 1});
  const int a_port = PortOf(topology, 'a');
  // An intruder's own topology: it is rank 0 (so it connects to a), a is
  // rank 1 at a's real address.
  auto intruder = [&](const std::string& name, const std::string& secret) {
    const std::string d = dir + "/" + name;
    std::filesystem::create_directories(d);
    std::ofstream(d + "/s.secret") << secret;
    std::filesystem::permissions(d + "/s.secret",
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::owner_write);
    std::ofstream(d + "/t.pbtxt")
        << "cluster: \"test\"\nsecret_file: \"s.secret\"\nconnect_timeout_ms: "
           "5000\n"
        << "node { name: \"" << name
        << "\" host: \"127.0.0.1\" port: " << FreePort()
        << " places: \"cpu:1\" }\n"
        << "node { name: \"a\" host: \"127.0.0.1\" port: " << a_port
        << " places: \"cpu:1\" }\n";
    return RunParex({"node", "--topology", d + "/t.pbtxt", "--node", name,
                     "--model", "fashion_mlp", "--steps", "5"},
                    d);
  };
  Child a(NodeArgs(topology, "a", {"--model", "fashion_mlp", "--steps", "5"}),
          dir + "/a", dir + "/a.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CliRun stranger = intruder("zz", "a-test-secret-of-more-than-16-bytes");
  EXPECT_EQ(stranger.exit_code, 1) << stranger.err;
  EXPECT_TRUE(a.WaitFor(
      "refused a handshake from 'zz', which is not a node of the topology "
      "(from 127.0.0.1:",
      std::chrono::seconds(10)))
      << a.Log();
  // A node named b (rank 0 of its own file) with the wrong secret.
  CliRun liar = intruder("b", "not-the-secret-of-this-cluster!!");
  EXPECT_EQ(liar.exit_code, 1) << liar.err;
  EXPECT_THAT(liar.out + liar.err, HasSubstr("refused"));
  EXPECT_TRUE(a.WaitFor(
      "does not know the cluster secret (HMAC mismatch) (from 127.0.0.1:",
      std::chrono::seconds(10)))
      << a.Log() << "\nthe intruder's output:\n"
      << liar.out << liar.err;
  // a was not hurt: the real b joins and they train.
  CliRun b = RunParex(
      NodeArgs(topology, "b", {"--model", "fashion_mlp", "--steps", "5"}),
      dir + "/b");
  EXPECT_EQ(b.exit_code, 0) << b.out << b.err;
  const std::vector<int64_t> ms =
      WaitAll({&a}, Clock::now(), std::chrono::seconds(60));
  ASSERT_GE(ms[0], 0);
  EXPECT_EQ(a.exit_code(), 0) << a.Log();
}

// Acceptance 3: a secret file others may read is refused before anything
// listens, naming the file and the fix.
TEST(ClusterFailureTest, ASecretFileOthersCanReadIsRefused) {
  const std::string dir = ScratchDir("cluster_secret_mode");
  const std::string topology = WriteTopology(dir, {1, 1});
  std::filesystem::permissions(dir + "/cluster.secret",
                               std::filesystem::perms::group_read,
                               std::filesystem::perm_options::add);
  CliRun run =
      RunParex(NodeArgs(topology, "a", {"--model", "fashion_mlp"}), dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err,
              HasSubstr("cluster.secret' is a secret but its mode 0640"));
  EXPECT_THAT(run.err, HasSubstr("chmod 600"));
  // parex secret makes a private one, and will not overwrite it.
  CliRun made = RunParex({"secret", "new.secret"}, dir);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(
      std::filesystem::status(dir + "/new.secret").permissions() &
          std::filesystem::perms::all,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(ReadFile(dir + "/new.secret").size(), 65u);
  CliRun again = RunParex({"secret", "new.secret"}, dir);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("exists"));
}

// Makes a CA (`ca`.pem, `ca`.key) and a node certificate it signed
// (`cert`.pem, `cert`.key, 0600) in `dir` with the openssl command.
void MakeCertificates(const std::string& dir, const std::string& ca,
                      const std::string& cert) {
  const std::string script =
      "cd '" + dir + "' && umask 077 && " +
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + ca +
      " -keyout " + ca + ".key -out " + ca + ".pem && " +
      "openssl req -newkey rsa:2048 -nodes -subj /CN=parex-node -keyout " +
      cert + ".key -out " + cert + ".csr && " + "openssl x509 -req -in " +
      cert + ".csr -CA " + ca + ".pem -CAkey " + ca + ".key " +
      "-CAcreateserial -days 2 -out " + cert + ".pem";
  ASSERT_EQ(std::system(("(" + script + ") > /dev/null 2>&1").c_str()), 0)
      << script;
}

// Acceptance 3, TLS: nodes with `tls { cert key ca }` train over CAF's
// OpenSSL transport as they do over TCP (the same losses); a node whose
// certificate another CA signed is refused, and so is a certificate that
// does not match its key, before anything listens.
TEST(ClusterFailureTest, TlsNodesTrainAndAForeignCertificateIsRefused) {
  const std::string dir = ScratchDir("cluster_tls");
  MakeCertificates(dir, "ca", "node");
  MakeCertificates(dir, "rogue_ca", "rogue");
  const std::string tls =
      "tls { cert: \"node.pem\" key: \"node.key\" ca: \"ca.pem\" }\n";
  const std::string topology = WriteTopology(dir, {1, 1}, tls);
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "30", "--no-progress"};
  std::vector<std::string> launch = {"launch", "--topology", topology,
                                     "--metrics", "tls.jsonl"};
  launch.insert(launch.end(), train.begin(), train.end());
  CliRun secure = RunParex(launch, dir);
  ASSERT_EQ(secure.exit_code, 0) << secure.out << secure.err;
  std::vector<std::string> one = {"train", "--places", "cpu:2", "--metrics",
                                  "one.jsonl"};
  one.insert(one.end(), train.begin(), train.end());
  CliRun local = RunParex(one, dir);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const std::vector<double> got = Losses(dir + "/tls.jsonl"),
                            want = Losses(dir + "/one.jsonl");
  ASSERT_EQ(got.size(), 30u);
  ASSERT_EQ(want.size(), 30u);
  for (size_t s = 0; s < got.size(); ++s)
    EXPECT_NEAR(got[s], want[s], 1e-5) << s;

  // b presents a certificate of another CA (and trusts only that CA).
  std::string text = ReadFile(topology);
  text.replace(text.find("connect_timeout_ms: 30000"), 25,
               "connect_timeout_ms: 3000");
  std::ofstream(dir + "/short.pbtxt") << text;
  std::string rogue = text;
  rogue.replace(
      rogue.find(tls), tls.size(),
      "tls { cert: \"rogue.pem\" key: \"rogue.key\" ca: \"rogue_ca.pem\" }\n");
  std::ofstream(dir + "/rogue.pbtxt") << rogue;
  Child a(NodeArgs(dir + "/short.pbtxt", "a", train), dir + "/a",
          dir + "/a.log");
  CliRun b = RunParex(NodeArgs(dir + "/rogue.pbtxt", "b", train), dir + "/b");
  EXPECT_EQ(b.exit_code, 1) << b.err;
  EXPECT_THAT(
      b.err,
      HasSubstr("node 'a' did not connect within connect_timeout_ms 3000"));
  const std::vector<int64_t> ms =
      WaitAll({&a}, Clock::now(), std::chrono::seconds(30));
  ASSERT_GE(ms[0], 0);
  EXPECT_EQ(a.exit_code(), 1) << a.Log();
  EXPECT_THAT(a.Log(), HasSubstr("node 'b' at 127.0.0.1:"));
  EXPECT_THAT(a.Log(), HasSubstr("TLS")) << a.Log();
  EXPECT_THAT(a.Log(), ::testing::Not(HasSubstr("parex node: fashion_mlp")));

  // A certificate that is not its key's, and a key others may read.
  std::string mismatched = text;
  mismatched.replace(
      mismatched.find(tls), tls.size(),
      "tls { cert: \"node.pem\" key: \"rogue.key\" ca: \"ca.pem\" }\n");
  std::ofstream(dir + "/mismatched.pbtxt") << mismatched;
  CliRun bad =
      RunParex(NodeArgs(dir + "/mismatched.pbtxt", "a", train), dir + "/m");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("tls: key " + dir +
                                 "/rogue.key is not a private key or "
                                 "does not match cert " +
                                 dir + "/node.pem"));
  std::filesystem::permissions(dir + "/node.key",
                               std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  CliRun open_key = RunParex(NodeArgs(topology, "a", train), dir + "/k");
  EXPECT_EQ(open_key.exit_code, 2);
  EXPECT_THAT(open_key.err,
              HasSubstr("tls key: '" + dir + "/node.key' is a secret"));
}

}  // namespace
}  // namespace parex::testing
