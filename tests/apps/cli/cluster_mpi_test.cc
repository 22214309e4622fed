// Topologies of collective MPI (issue 33): nodes started by mpirun train as
// one process, as Gloo's nodes do; what cannot run that way is refused, with
// how to start it, before any node waits for a peer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/apps/cli/cli_test_util.h"
#include "tests/apps/cli/pserver_test_util.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

// mpirun as the tests start it (as tests/mpirun_test.sh does): as root too
// (CI's containers), more processes than this machine's 2 cores, shared
// memory without the single-copy path that needs ptrace rights. Under
// LeakSanitizer the ranks unwind malloc's stacks whole, so that OpenMPI's
// leaks at exit match tests/lsan.supp.
std::vector<std::string> Mpirun(int processes) {
  std::vector<std::string> args = {PAREX_MPIRUN,
                                   "--allow-run-as-root",
                                   "--oversubscribe",
                                   "--mca",
                                   "btl_vader_single_copy_mechanism",
                                   "none",
                                   "-np",
                                   std::to_string(processes)};
  if (const char* lsan = std::getenv("LSAN_OPTIONS")) {
    args.insert(args.end() - 2, {"-x", std::string("LSAN_OPTIONS=") + lsan +
                                           ":fast_unwind_on_malloc=0"});
  }
  return args;
}

// Two nodes of one place each sum as one process of two places does (a + b,
// which is b + a), so they end with its very bits; three nodes of 1, 2 and 1
// places, in reduce mode, match one process of 4 places within rounding on
// every step's loss. Every node ends with the same parameters, and the
// step account shows the gradients' collectives.
TEST(ClusterMpiTest, NodesStartedByMpirunTrainAsOneProcess) {
  for (const std::vector<int>& places :
       std::vector<std::vector<int>>{{1, 1}, {1, 2, 1}}) {
    const std::string mode = places.size() == 2 ? "allreduce" : "reduce";
    int total = 0;
    std::string name = "mpi_" + mode;
    for (int p : places) {
      total += p;
      name += "_" + std::to_string(p);
    }
    SCOPED_TRACE(name);
    const std::string dir = ScratchDir(name);
    const std::string topology =
        WriteTopology(dir, places, "collective: MPI\n");
    const std::vector<std::string> common = {
        "--model", "fashion_mlp", "--mode", mode,           "--steps",
        "30",      "--batch",     "64",     "--no-progress"};
    std::vector<std::string> node = {"node", "--topology", topology};
    node.insert(node.end(), common.begin(), common.end());
    node.insert(node.end(), {"--metrics", dir + "/nodes.jsonl"});
    CliRun nodes = RunParex(node, dir, Mpirun(static_cast<int>(places.size())));
    ASSERT_EQ(nodes.exit_code, 0) << nodes.out << nodes.err;

    std::vector<std::string> train = {"train", "--places",
                                      "cpu:" + std::to_string(total)};
    train.insert(train.end(), common.begin(), common.end());
    train.insert(train.end(), {"--metrics", dir + "/one.jsonl"});
    CliRun one = RunParex(train, dir + "/one_process");
    ASSERT_EQ(one.exit_code, 0) << one.err;

    const std::vector<double> got = Losses(dir + "/nodes.jsonl");
    const std::vector<double> want = Losses(dir + "/one.jsonl");
    ASSERT_EQ(got.size(), 30u);
    ASSERT_EQ(want.size(), 30u);
    for (size_t s = 0; s < got.size(); ++s) {
      EXPECT_NEAR(got[s], want[s], 1e-5 * std::abs(want[s])) << "step " << s;
    }
    const std::vector<std::string> digests = ParameterDigests(nodes.out);
    ASSERT_EQ(digests.size(), places.size()) << nodes.out;
    for (const std::string& d : digests) EXPECT_EQ(d, digests[0]);
    if (places.size() == 2) {
      EXPECT_EQ(digests[0], ParametersDigest(one.out));
    }
    EXPECT_THAT(nodes.out, HasSubstr("gradient collectives"));
    EXPECT_THAT(nodes.out, ::testing::Not(HasSubstr("gradient collectives "
                                                    "0.000 ms")));
  }
}

// A node killed mid-training (its process gone, as a crash): the other
// names it, from its CAF connection, and the job ends nonzero long before
// any timeout (mpirun stops what is left). Every wait is bounded.
TEST(ClusterMpiTest, AKilledNodeEndsTheJobNamingIt) {
  const std::string dir = ScratchDir("mpi_killed");
  const std::string topology = WriteTopology(dir, {1, 1}, "collective: MPI\n");
  std::string mpirun;
  for (const std::string& a : Mpirun(2)) mpirun += "'" + a + "' ";
  const std::string script =
      "cd " + dir + " || exit 1; timeout 120 " + mpirun + "'" + PAREX_CLI +
      "' node --topology " + topology +
      " --model fashion_cnn --epochs 1 --no-progress > job.out 2>&1 & "
      "job=$!; for i in $(seq 1 600); do grep -q 'parex node: b, rank' "
      "job.out 2>/dev/null && break; sleep 0.1; done; sleep 1; "
      "pkill -9 -n -f '^" +
      std::string(PAREX_CLI) + " node --topology " + topology +
      "'; start=$(date +%s%N); wait $job; echo $? > job.rc; "
      "echo $(( ($(date +%s%N) - start) / 1000000 )) > job.ms";
  std::ofstream(dir + "/kill.sh") << script << "\n";
  ASSERT_EQ(std::system(("bash " + dir + "/kill.sh").c_str()), 0);
  const std::string out = ReadFile(dir + "/job.out");
  EXPECT_NE(std::stoi(ReadFile(dir + "/job.rc")), 0) << out;
  EXPECT_LT(std::stoi(ReadFile(dir + "/job.ms")), 20000) << out;
  EXPECT_THAT(out, HasSubstr("was lost")) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex("node '[ab]' \\(rank [01], "
                                            "127\\.0\\.0\\.1:"))
      << out;
}

// parex launch starts an MPI topology's nodes through mpirun: they train
// as the nodes mpirun starts by hand, to the same parameters.
TEST(ClusterMpiTest, LaunchStartsTheNodesThroughMpirun) {
  const std::string dir = ScratchDir("mpi_launch");
  const std::string topology = WriteTopology(dir, {1, 1}, "collective: MPI\n");
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "20", "--no-progress"};
  std::vector<std::string> launch = {"launch", "--topology", topology};
  launch.insert(launch.end(), train.begin(), train.end());
  // As Mpirun's: without the single-copy path (mpirun reads OMPI_MCA_*),
  // whole stacks under LeakSanitizer (mpirun's children inherit them).
  std::vector<std::string> env = {
      "env", "OMPI_MCA_btl_vader_single_copy_mechanism=none"};
  if (const char* lsan = std::getenv("LSAN_OPTIONS")) {
    env.push_back(std::string("LSAN_OPTIONS=") + lsan +
                  ":fast_unwind_on_malloc=0");
  }
  CliRun launched = RunParex(launch, dir, env);
  ASSERT_EQ(launched.exit_code, 0) << launched.out << launched.err;
  EXPECT_THAT(launched.out, HasSubstr("2 nodes of " + topology +
                                      " through mpirun (collective MPI)"));
  std::vector<std::string> node = {"node", "--topology", topology};
  node.insert(node.end(), train.begin(), train.end());
  CliRun by_hand = RunParex(node, dir + "/by_hand", Mpirun(2));
  ASSERT_EQ(by_hand.exit_code, 0) << by_hand.err;
  const std::vector<std::string> digests = ParameterDigests(launched.out);
  ASSERT_EQ(digests.size(), 2u) << launched.out;
  EXPECT_EQ(digests[0], digests[1]);
  EXPECT_EQ(digests[0], ParametersDigest(by_hand.out));
}

// Each way of starting a topology of collective MPI that cannot work fails
// at once with a usage error saying how to start it.
TEST(ClusterMpiTest, WhatMpiCannotRunIsRefusedBeforeAnyNodeWaits) {
  const std::string dir = ScratchDir("mpi_refused");
  const std::string topology = WriteTopology(dir, {1, 1}, "collective: MPI\n");
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "3", "--no-progress"};
  auto node = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"node", "--topology", topology};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), train.begin(), train.end());
    return args;
  };
  struct Case {
    std::string what;
    CliRun run;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"a node started without mpirun", RunParex(node({"--node", "a"}), dir),
       "collective MPI: its nodes are started by mpirun (mpirun -np 2 parex "
       "node"},
      {"parex launch of a node on another machine",
       RunParex({"launch", "--topology",
                 WriteTopology(ScratchDir("mpi_refused_remote"), {1, 1},
                               "collective: MPI\n", {"127.0.0.1", "192.0.2.7"}),
                 "--steps", "3"},
                dir),
       "node 'b' (192.0.2.7) is not here"},
      {"mpirun -np 3 for 2 nodes", RunParex(node({}), dir, Mpirun(3)),
       "2 nodes, but mpirun started 3 processes (mpirun -np 2)"},
      {"--node b on rank 0", RunParex(node({"--node", "b"}), dir, Mpirun(2)),
       "--node b: mpirun started this process as rank 0, which is node 'a'"},
      {"parex launch --only",
       RunParex({"launch", "--topology", topology, "--only", "a"}, dir),
       "--only: " + topology + " is of collective MPI"},
      {"no --node with Gloo",
       RunParex({"node", "--topology",
                 WriteTopology(ScratchDir("mpi_refused_gloo"), {1, 1}),
                 "--steps", "3"},
                dir),
       "--node is required"},
  };
  for (const Case& c : cases) {
    EXPECT_NE(c.run.exit_code, 0) << c.what;
    EXPECT_THAT(c.run.err, HasSubstr(c.message)) << c.what;
  }

  // Parameter servers talk over Gloo: a pserver node in an MPI topology is
  // an error of the file, naming its line.
  const std::string pservers = PserverTopology(dir, {1}, 1);
  std::string text = ReadFile(pservers);
  text.insert(text.find("node {"), "collective: MPI\n");
  std::ofstream(pservers) << text;
  CliRun ps = RunParex({"node", "--topology", pservers, "--node", "a"}, dir);
  EXPECT_EQ(ps.exit_code, 2);
  EXPECT_THAT(ps.err, HasSubstr("role PSERVER: parameter servers talk over "
                                "Gloo (collective GLOO)"));
}

}  // namespace
}  // namespace parex::testing
