// parex launch / parex node: 2 and 3 processes on 127.0.0.1 train as one
// process with the same places does (issue 14, acceptance 1), and refuse a
// node that differs (acceptance 3).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/apps/cli/cli_test_util.h"
#include "tests/free_port.h"

namespace parex::testing {
namespace {

using ::parex::testing::FreePort;
using ::testing::HasSubstr;
using ::testing::Not;

// The digest each node printed ("[a] parameters      sha256 ...").
// A "step account" line of parex train / node (ms a step).
struct StepAccount {
  double total = 0, compute = 0, collectives = 0, waiting = 0, other = 0,
         feeding = 0;
  int steps = 0;
};

// Every "step account" line in `out`, in order.
std::vector<StepAccount> StepAccounts(const std::string& out) {
  const std::regex line(
      "step account +([0-9.]+) ms a step over ([0-9]+) steps: compute "
      "([0-9.]+) ms, gradient collectives ([0-9.]+) ms \\(waiting for peers "
      "([0-9.]+) ms\\), other collectives ([0-9.]+) ms, feeding ([0-9.]+) ms");
  std::vector<StepAccount> found;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    StepAccount a;
    a.total = std::stod(m[1]);
    a.steps = std::stoi(m[2]);
    a.compute = std::stod(m[3]);
    a.collectives = std::stod(m[4]);
    a.waiting = std::stod(m[5]);
    a.other = std::stod(m[6]);
    a.feeding = std::stod(m[7]);
    found.push_back(a);
  }
  return found;
}

struct ClusterCase {
  std::string name;
  std::vector<int> places;  // per node
  std::string model;
  std::string mode;
  int steps;
};

class ClusterTrainTest : public ::testing::TestWithParam<ClusterCase> {};

// Sums run in a fixed order: inside a node in place order, across nodes by
// Gloo's ring (for 2 nodes a + b, which equals b + a), so the losses match a
// single process (((p0 + p1) + p2) + p3) within rounding; every node ends
// with the same parameters.
TEST_P(ClusterTrainTest, EveryStepsLossMatchesOneProcessWithTheSamePlaces) {
  const ClusterCase& c = GetParam();
  const std::string dir = ScratchDir("cluster_" + c.name);
  const std::string topology = WriteTopology(dir, c.places);
  int total = 0;
  for (int p : c.places) total += p;
  const std::vector<std::string> common = {
      "--model", c.model,   "--mode",
      c.mode,    "--steps", std::to_string(c.steps),
      "--batch", "64",      "--no-progress"};
  std::vector<std::string> launch = {"launch", "--topology", topology};
  launch.insert(launch.end(), common.begin(), common.end());
  launch.insert(launch.end(),
                {"--metrics", dir + "/nodes.jsonl", "--save", dir + "/model"});
  CliRun nodes = RunParex(launch, dir);
  ASSERT_EQ(nodes.exit_code, 0) << nodes.out << nodes.err;
  EXPECT_THAT(nodes.out, ::testing::HasSubstr("nodes finished"));

  std::vector<std::string> train = {"train", "--places",
                                    "cpu:" + std::to_string(total)};
  train.insert(train.end(), common.begin(), common.end());
  train.insert(train.end(),
               {"--metrics", dir + "/one.jsonl", "--save", dir + "/one"});
  CliRun one = RunParex(train, dir + "/one_process");
  ASSERT_EQ(one.exit_code, 0) << one.err;

  const std::vector<double> got = Losses(dir + "/nodes.jsonl");
  const std::vector<double> want = Losses(dir + "/one.jsonl");
  ASSERT_EQ(got.size(), static_cast<size_t>(c.steps));
  ASSERT_EQ(want.size(), static_cast<size_t>(c.steps));
  for (int s = 0; s < c.steps; ++s) {
    EXPECT_NEAR(got[s], want[s], 1e-5 * std::abs(want[s])) << "step " << s + 1;
  }
  const std::vector<std::string> digests = ParameterDigests(nodes.out);
  ASSERT_EQ(digests.size(), c.places.size()) << nodes.out;
  for (const std::string& d : digests) EXPECT_EQ(d, digests[0]);
  if (c.places.size() == 2 && c.places[0] == c.places[1] && c.places[0] == 1) {
    // Two ranks of one place: the very sums of one process, so the very bits.
    const std::vector<std::string> single = ParameterDigests(one.out);
    ASSERT_EQ(single.size(), 1u);
    EXPECT_EQ(digests[0], single[0]);
  }
  // Rank 0 saved the model; nobody else did.
  EXPECT_FALSE(ReadFile(dir + "/model/__model__").empty());

  // The step account (issue 33): every node's steps spent time in the
  // gradients' collectives, the slowest to arrive waited for no one; one
  // process has no collectives. The parts add up to the step.
  const std::vector<StepAccount> accounts = StepAccounts(nodes.out);
  ASSERT_EQ(accounts.size(), c.places.size()) << nodes.out;
  double least_wait = 1e9;
  for (const StepAccount& a : accounts) {
    EXPECT_EQ(a.steps, c.steps);
    EXPECT_GT(a.collectives, 0) << nodes.out;
    EXPECT_LE(a.waiting, a.collectives);
    EXPECT_NEAR(a.compute + a.collectives + a.other + a.feeding, a.total, 0.01);
    least_wait = std::min(least_wait, a.waiting);
  }
  EXPECT_EQ(least_wait, 0);
  const std::vector<StepAccount> alone = StepAccounts(one.out);
  ASSERT_EQ(alone.size(), 1u) << one.out;
  EXPECT_EQ(alone[0].collectives, 0);
  EXPECT_EQ(alone[0].other, 0);
  EXPECT_GT(alone[0].compute, 0);
  // --metrics: each step's own account, its collectives included.
  const std::string lines = ReadFile(dir + "/nodes.jsonl");
  const std::regex step_collective("\"collective_ms\": ([0-9.]+)");
  int with_collective = 0;
  for (auto it =
           std::sregex_iterator(lines.begin(), lines.end(), step_collective);
       it != std::sregex_iterator(); ++it) {
    with_collective += std::stod((*it)[1]) > 0;
  }
  EXPECT_EQ(with_collective, c.steps) << lines;
  // Each step's wait for peers is a part of its collectives' time; the
  // cluster's own collectives since the step before are on the line too.
  const std::regex waiting(
      "\"collective_ms\": ([0-9.]+), \"waiting_ms\": ([0-9.]+), "
      "\"other_collective_ms\": ([0-9.]+)");
  int with_waiting = 0;
  for (auto it = std::sregex_iterator(lines.begin(), lines.end(), waiting);
       it != std::sregex_iterator(); ++it) {
    ++with_waiting;
    EXPECT_LE(std::stod((*it)[2]), std::stod((*it)[1])) << it->str();
  }
  EXPECT_EQ(with_waiting, c.steps) << lines;
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, ClusterTrainTest,
    ::testing::Values(
        ClusterCase{"mlp_1x2", {1, 1}, "fashion_mlp", "allreduce", 20},
        ClusterCase{"cnn_2x2", {2, 2}, "fashion_cnn", "allreduce", 4},
        ClusterCase{
            "mlp_3_nodes_reduce", {2, 1, 1}, "fashion_mlp", "reduce", 20},
        ClusterCase{"cnn_3_nodes", {1, 1, 1}, "fashion_cnn", "allreduce", 4}),
    [](const ::testing::TestParamInfo<ClusterCase>& info) {
      return info.param.name;
    });

TEST(ClusterCliTest, ANodeWithAnotherLearningRateIsRefusedAtTheHandshake) {
  const std::string dir = ScratchDir("cluster_refused");
  const std::string topology = WriteTopology(dir, {1, 1});
  CliRun a, b;
  std::thread ta([&] {
    a = RunParex({"node", "--topology", topology, "--node", "a", "--model",
                  "fashion_mlp", "--steps", "2", "--lr", "0.01"},
                 dir + "/a");
  });
  std::thread tb([&] {
    b = RunParex({"node", "--topology", topology, "--node", "b", "--model",
                  "fashion_mlp", "--steps", "2", "--lr", "0.02"},
                 dir + "/b");
  });
  ta.join();
  tb.join();
  for (const CliRun* r : {&a, &b}) {
    EXPECT_EQ(r->exit_code, 1) << r->err;
    EXPECT_THAT(r->err, ::testing::HasSubstr("trains a different program"));
  }
  EXPECT_THAT(b.err, ::testing::HasSubstr("refused node 'a'"));
}

// Each node writes its trace with what merging needs; `parex trace merge`
// gives one process per node and joins each step's all-reduce (one fused
// bucket per step by default across nodes) from a to b; a trace that is
// not a node's is refused naming the file.
TEST(ClusterCliTest, NodeTracesMergeIntoOneTimeline) {
  const std::string dir = ScratchDir("cluster_trace");
  const std::string topology = WriteTopology(dir, {1, 1});
  CliRun run = RunParex(
      {"launch", "--topology", topology, "--model", "fashion_mlp", "--steps",
       "8", "--trace", "trace-{node}.json", "--trace-steps", "5"},
      dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, ::testing::HasSubstr("% behind backward)"));
  for (const char* node : {"a", "b"}) {
    nlohmann::json t =
        nlohmann::json::parse(ReadFile(dir + "/trace-" + node + ".json"));
    EXPECT_EQ(t["metadata"]["parex_node"], node);
    EXPECT_TRUE(t["metadata"].contains("parex_clock_offset_us"));
  }
  CliRun merge = RunParex(
      {"trace", "merge", "trace-a.json", "trace-b.json", "-o", "all.json"},
      dir);
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  EXPECT_THAT(merge.out,
              ::testing::HasSubstr("merged 2 node traces into all.json"));
  nlohmann::json all = nlohmann::json::parse(ReadFile(dir + "/all.json"));
  std::set<std::string> processes;
  int arrow_starts = 0;
  for (const auto& e : all["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      processes.insert(e["args"]["name"]);
    if (e.value("cat", "") == "cross-node" && e["ph"] == "s") ++arrow_starts;
  }
  EXPECT_EQ(processes,
            (std::set<std::string>{"node 'a' (rank 0)", "node 'b' (rank 1)"}));
  EXPECT_EQ(arrow_starts, 5);  // one bucket in each of the 5 traced steps

  std::ofstream(dir + "/plain.json") << R"({"traceEvents": []})";
  CliRun bad = RunParex(
      {"trace", "merge", "trace-a.json", "plain.json", "-o", "x.json"}, dir);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("plain.json: not a node's trace"));
}

// The nodes sum their steps' losses in windows, not every step; a loss
// that diverges still stops every node, naming the epoch and step, the
// same on each (the launch fails as a whole).
TEST(ClusterCliTest, DivergenceStopsEveryNodeAtTheSameStep) {
  const std::string dir = ScratchDir("cluster_diverged");
  const std::string topology = WriteTopology(dir, {1, 1});
  CliRun run = RunParex(
      {"launch", "--topology", topology, "--model", "fit_a_line", "--lr", "1e9",
       "--epochs", "3", std::string("--data-dir=") + PAREX_DATA_DIR},
      dir);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  std::vector<std::string> messages;
  std::istringstream in(run.out + run.err);
  std::string line;
  while (std::getline(in, line)) {
    // Each node's own error (a peer's report of it, logged too, says more).
    const size_t at = line.find("the loss is ");
    if (at != std::string::npos &&
        line.find("parex node: error:") != std::string::npos) {
      messages.push_back(line.substr(at));
    }
  }
  ASSERT_FALSE(messages.empty()) << run.out << run.err;
  EXPECT_THAT(messages[0], ::testing::HasSubstr("training diverged"));
  for (const std::string& m : messages) EXPECT_EQ(m, messages[0]);
}

// A node killed mid-training: its peer sees the connection close, stops
// with an error naming the lost node, and exits nonzero long before the
// collective timeout (60 s here).
TEST(ClusterCliTest, APeerKilledMidTrainingEndsTheOtherPromptly) {
  const std::string dir = ScratchDir("cluster_killed");
  const std::string topology = WriteTopology(dir, {1, 1});
  const std::string parex = PAREX_CLI;
  const std::string node =
      " node --topology " + topology +
      " --model fashion_cnn --epochs 1 --no-progress --node ";
  // b is killed once a has joined and a second has passed; a's exit is
  // timed from the kill. Every wait is bounded.
  const std::string script =
      "cd " + dir + " || exit 1; " + parex + node +
      "b > b.out 2>&1 & bpid=$!; " + "timeout 120 " + parex + node +
      "a > a.out 2>&1 & apid=$!; " +
      "for i in $(seq 1 600); do grep -q \"parex node: a, rank\" " + dir +
      "/a.out 2>/dev/null && break; sleep 0.1; done; sleep 1; kill -9 $bpid; " +
      "start=$(date +%s%N); wait $apid; echo $? > " + dir + "/a.rc; " +
      "echo $(( ($(date +%s%N) - start) / 1000000 )) > " + dir + "/a.ms";
  ASSERT_EQ(std::system(("bash -c '" + script + "'").c_str()), 0);
  const std::string out = ReadFile(dir + "/a.out");
  EXPECT_EQ(std::stoi(ReadFile(dir + "/a.rc")), 1) << out;
  EXPECT_LT(std::stoi(ReadFile(dir + "/a.ms")), 20000) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("node 'b' (rank 1, 127.0.0.1:")) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("was lost")) << out;
}

// A launcher killed with SIGKILL takes its nodes with it (they get
// SIGTERM): nothing of the cluster keeps running or holds its ports.
TEST(ClusterCliTest, KillingTheLauncherEndsItsNodes) {
  const std::string dir = ScratchDir("cluster_launcher_killed");
  const std::string topology = WriteTopology(dir, {1, 1});
  const std::string script =
      "cd " + dir + " || exit 1; " + PAREX_CLI +
      std::string(" launch --topology ") + topology +
      " --model fashion_cnn --epochs 1 --no-progress > launch.out 2>&1 & "
      "lpid=$!; " +
      "for i in $(seq 1 600); do grep -q \"rank 1 of 2\" launch.out "
      "2>/dev/null && break; " +
      "sleep 0.1; done; sleep 1; kill -9 $lpid; " +
      // "[n]ode": the pattern must not match this script's own command line.
      "for i in $(seq 1 30); do pgrep -f \"[n]ode --topology " + topology +
      "\" > /dev/null || break; sleep 0.1; done; pgrep -f \"[n]ode "
      "--topology " +
      topology + "\" > left.txt; echo done";
  ASSERT_EQ(std::system(("bash -c '" + script + "'").c_str()), 0);
  EXPECT_THAT(ReadFile(dir + "/launch.out"),
              ::testing::HasSubstr("rank 1 of 2"));
  EXPECT_EQ(ReadFile(dir + "/left.txt"), "")
      << "nodes still running after the launcher died";
}

// parex launch pins each node to its share of the CPUs it may use (when they
// divide into whole shares); each node says where it runs; --no-pin, given
// among the training options, leaves them free.
TEST(ClusterCliTest, LaunchPinsEachNodeToItsShareOfTheCores) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: nothing to share out";
  const std::string dir = ScratchDir("cluster_pins");
  const std::string topology = WriteTopology(dir, {1, 1});
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "2", "--no-progress"};
  std::vector<std::string> launch = {"launch", "--topology", topology};
  launch.insert(launch.end(), train.begin(), train.end());
  CliRun pinned = RunParex(launch, dir);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.out << pinned.err;
  const size_t per = cpus.size() / 2;
  auto list = [&](size_t k) {
    if (per == 1) return "cpu " + std::to_string(cpus[k]);
    return "cpus " + std::to_string(cpus[k * per]) + "-" +
           std::to_string(cpus[k * per + per - 1]);
  };
  const bool contiguous =
      cpus.back() - cpus.front() + 1 == static_cast<int>(cpus.size());
  if (contiguous) {
    EXPECT_THAT(pinned.out,
                HasSubstr("here: a (" + list(0) + ") b (" + list(1) + ")"));
    EXPECT_THAT(pinned.out, HasSubstr(", on " + list(0)));
    EXPECT_THAT(pinned.out, HasSubstr(", on " + list(1)));
  } else {
    EXPECT_THAT(pinned.out, HasSubstr("here: a (cpu"));
  }
  launch.push_back("--no-pin");
  CliRun free = RunParex(launch, dir);
  ASSERT_EQ(free.exit_code, 0) << free.out << free.err;
  EXPECT_THAT(free.out, HasSubstr("here: a b\n"));
  EXPECT_THAT(free.out, Not(HasSubstr(", on cpu")));
}

TEST(ClusterCliTest, BadTopologiesAndNodesAreUsageErrors) {
  const std::string dir = ScratchDir("cluster_bad");
  const std::string topology = WriteTopology(dir, {1, 1});
  std::ofstream(dir + "/bad.pbtxt")
      << "cluster: \"x\"\nnode { name: \"a\" port: 99999 }\n";
  ExpectFailures(
      {
          {{"node", "--topology", dir + "/bad.pbtxt", "--node", "a"},
           2,
           "bad.pbtxt:2: node 'a'"},
          {{"node", "--topology", topology, "--node", "zz"},
           2,
           "no node 'zz' (nodes: a, b)"},
          {{"node", "--topology", dir + "/missing.pbtxt", "--node", "a"},
           2,
           "missing.pbtxt"},
          {{"launch", "--topology", topology, "--only", "zz"},
           2,
           "no node 'zz'"},
          {{"launch", "--topology", topology, "--node", "a"},
           2,
           "is set by launch"},
          {{"node", "--topology", topology}, 2, "--node is required"},
      },
      dir);
}

TEST(ClusterCliTest, LaunchFailsAsAWholeWhenANodeFails) {
  const std::string dir = ScratchDir("cluster_fails");
  const std::string topology = WriteTopology(dir, {1, 1});
  // Every node fails to read its data: launch reports the first one and
  // exits nonzero (and returns: nobody waits for a peer that is gone).
  CliRun run = RunParex({"launch", "--topology", topology, "--model",
                         "fashion_mlp", "--fashion-dir", "/nonexistent/f"},
                        dir);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, ::testing::HasSubstr("exited with status 1"));
  EXPECT_THAT(run.out, ::testing::HasSubstr("/nonexistent/f"));
}

}  // namespace
}  // namespace parex::testing
