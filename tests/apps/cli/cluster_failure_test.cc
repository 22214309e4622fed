// A cluster that fails loudly (issue 16): a node killed at a random moment
// ends the others within 5 s naming it; a stopped node gets a stall report
// (or, past the heartbeat timeout, is named as lost); the cluster restarts
// from rank 0's checkpoint and reproduces the uninterrupted run. (Intruders,
// secrets, TLS and garbage: cluster_security_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
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

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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

// Rounds of the kill test: issue 16's 20 in the plain build; 5 under the
// sanitizers, where each round costs about 9 s of CI's 60 minutes (the
// plain build's 20 rounds cover the timing, the sanitized ones the memory
// and threads of a node that loses a peer).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kKillRounds = 5;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kKillRounds = 5;
#else
constexpr int kKillRounds = 20;
#endif
#else
constexpr int kKillRounds = 20;
#endif

// Acceptance 1: SIGKILL of one node of three at a random moment of training,
// 20 times: the other two exit nonzero within 5 s, naming it.
TEST(ClusterFailureTest, ANodeKilledMidTrainingEndsTheOthersWithin5sNamingIt) {
  std::mt19937 rng(static_cast<unsigned>(time(nullptr)));
  const char* names[] = {"a", "b", "c"};
  for (int round = 0; round < kKillRounds; ++round) {
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

}  // namespace
}  // namespace parex::testing
