// Cluster::Join with every node a thread of this process (each its own CAF
// actor system and Gloo context) on 127.0.0.1: ranks, the handshake's
// refusals, and where the process listens.
#include "actors/cluster/cluster.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "actors/cluster/node_actor.h"
#include "tests/free_port.h"
#include "tests/listening_ports.h"

namespace parex {
namespace {

using ::parex::testing::FreePort;
using ::parex::testing::ListeningAddresses;
using ::parex::testing::PortOfAddress;
using ::parex::testing::SocketInodes;

std::string Dir() {
  std::string dir =
      std::string(PAREX_TEST_TMP_DIR) + "/cluster_" +
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  mkdir(dir.c_str(), 0755);
  return dir;
}

// A topology of `n` nodes on 127.0.0.1 with fresh ports and `secret`.
Topology MakeTopology(int n, const std::string& secret,
                      const std::string& name = "t", int timeout_ms = 20000) {
  const std::string dir = Dir();
  std::ofstream(dir + "/" + name + ".secret") << secret;
  chmod((dir + "/" + name + ".secret").c_str(), 0600);
  std::ostringstream text;
  text << "cluster: \"test\"\nsecret_file: \"" << name << ".secret\"\n"
       << "connect_timeout_ms: " << timeout_ms
       << "\ncollective_timeout_ms: 20000\n";
  for (int i = 0; i < n; ++i) {
    text << "node { name: \"n" << i
         << "\" host: \"127.0.0.1\" port: " << FreePort()
         << " places: \"cpu:" << (i == 0 ? 2 : 1) << "\" }\n";
  }
  StatusOr<Topology> t = ParseTopology(text.str(), dir + "/" + name + ".pbtxt");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

struct NodeResult {
  Status status;
  std::unique_ptr<Cluster> cluster;
};

// Every node's Join failed with a message that says `what`.
void ExpectEveryNodeRefused(const std::vector<NodeResult>& r,
                            const std::string& what) {
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_FALSE(r[i].status.ok()) << "node " << i;
    EXPECT_NE(r[i].status.message().find(what), std::string::npos)
        << r[i].status.message();
  }
}

// Joins node i of topologies[i] with identities[i], all at once.
std::vector<NodeResult> JoinAll(
    const std::vector<Topology>& topologies,
    const std::vector<std::map<std::string, std::string>>& ids,
    const std::function<void(int, Cluster&)>& then = nullptr) {
  std::vector<NodeResult> results(topologies.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < topologies.size(); ++i) {
    threads.emplace_back([&, i] {
      StatusOr<std::unique_ptr<Cluster>> c =
          Cluster::Join(topologies[i], "n" + std::to_string(i), ids[i]);
      results[i].status = c.status();
      if (c.ok()) {
        results[i].cluster = std::move(*c);
        if (then) then(static_cast<int>(i), *results[i].cluster);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

const std::map<std::string, std::string> kId = {{"program", "abc"},
                                                {"options", "--batch 8"}};

TEST(ClusterTest, ThreeNodesAgreeOnRanksAndSumAcrossNodes) {
  const Topology topo = MakeTopology(3, "0123456789abcdef-secret");
  std::vector<std::vector<double>> sums(3);
  std::vector<NodeResult> r =
      JoinAll({topo, topo, topo}, {kId, kId, kId}, [&](int i, Cluster& c) {
        EXPECT_EQ(c.rank(), i);
        EXPECT_EQ(c.size(), 3);
        EXPECT_EQ(c.world_places(), 4);
        EXPECT_EQ(c.first_place(), i == 0 ? 0 : i + 1);
        EXPECT_EQ(c.cross().world_size(), 3);
        if (i > 0) {
          EXPECT_LT(std::abs(c.clock_offset_us()), c.clock_rtt_us() + 1000);
        }
        sums[i] = {1.0 * i, 2.0};
        EXPECT_TRUE(c.SumAcrossNodes(&sums[i], "test").ok());
        EXPECT_TRUE(c.Leave().ok());
      });
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(r[i].status.ok()) << r[i].status.ToString();
    EXPECT_EQ(sums[i], (std::vector<double>{3.0, 6.0}));
  }
}

TEST(ClusterTest, ANodeWithAnotherProgramIsRefusedByName) {
  const Topology topo = MakeTopology(2, "0123456789abcdef-secret");
  auto other = kId;
  other["program"] = "def";
  std::vector<NodeResult> r = JoinAll({topo, topo}, {kId, other});
  ExpectEveryNodeRefused(r, "trains a different program");
  // The verifier (n1, whom n0 proves itself to) names n0.
  EXPECT_NE(r[1].status.message().find("node 'n0'"), std::string::npos)
      << r[1].status.message();
}

TEST(ClusterTest, OtherOptionsAreRefused) {
  const Topology topo = MakeTopology(2, "0123456789abcdef-secret");
  auto other = kId;
  other["options"] = "--batch 16";
  std::vector<NodeResult> r = JoinAll({topo, topo}, {kId, other});
  ExpectEveryNodeRefused(r, "--batch");
}

TEST(ClusterTest, AWrongSecretIsRefused) {
  // Neither node can tell a misconfigured peer from a stranger, so neither
  // believes what the other says (issue 28): each keeps waiting for a node
  // that proves the secret, and its timeout names what it saw and where.
  const Topology topo = MakeTopology(2, "0123456789abcdef-secret", "t", 3000);
  Topology wrong = topo;
  wrong.secret = "0123456789abcdef-guess!";
  const auto start = std::chrono::steady_clock::now();
  std::vector<NodeResult> r = JoinAll({topo, wrong}, {kId, kId});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 5.0);
  ExpectEveryNodeRefused(r, "did not prove the cluster secret");
  ExpectEveryNodeRefused(r, "a different secret file?");
  ExpectEveryNodeRefused(r, "within connect_timeout_ms 3000");
  EXPECT_NE(r[0].status.message().find(
                "a process at 127.0.0.1:" + std::to_string(topo.nodes[1].port) +
                " claimed to be 'n1'"),
            std::string::npos)
      << r[0].status.message();
  EXPECT_NE(r[1].status.message().find("refused meanwhile: a process at "
                                       "127.0.0.1:"),
            std::string::npos)
      << r[1].status.message();
  EXPECT_NE(r[1].status.message().find("claimed to be 'n0'"), std::string::npos)
      << r[1].status.message();
}

TEST(ClusterTest, ADifferentTopologyIsRefused) {
  const Topology topo = MakeTopology(2, "0123456789abcdef-secret");
  Topology changed = topo;
  changed.fingerprint = "f00d";  // as if its file differed (a timeout, a place)
  std::vector<NodeResult> r = JoinAll({topo, changed}, {kId, kId});
  ExpectEveryNodeRefused(r, "read a different topology file");
}

TEST(ClusterTest, AnotherVersionIsNamed) {
  std::map<std::string, std::string> ours = {{"version", "0.1.0"},
                                             {"program", "a"}};
  std::map<std::string, std::string> theirs = {{"version", "0.2.0"},
                                               {"program", "a"}};
  EXPECT_EQ(CompareInfo("b", ours, theirs),
            "node 'b' runs parex 0.2.0, this node 0.1.0");
  EXPECT_EQ(CompareInfo("b", ours, ours), "");
  theirs = ours;
  theirs["extra"] = "1";
  EXPECT_NE(CompareInfo("b", ours, theirs).find("'extra'"), std::string::npos);
}

TEST(ClusterTest, AMissingPeerEndsJoinWithinTheConnectTimeout) {
  const Topology topo = MakeTopology(2, "0123456789abcdef-secret", "t", 1000);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<Cluster>> c = Cluster::Join(topo, "n0", kId);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("node 'n1' at 127.0.0.1:"),
            std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("did not answer"), std::string::npos);
  EXPECT_LT(seconds, 5.0);
  StatusOr<std::unique_ptr<Cluster>> unknown = Cluster::Join(topo, "zz", kId);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no node 'zz' (nodes: n0, n1)"),
            std::string::npos);
}

TEST(ClusterTest, NothingListensOffTheTopologysAddress) {
  const Topology topo = MakeTopology(2, "0123456789abcdef-secret");
  std::vector<std::string> listening;
  JoinAll({topo, topo}, {kId, kId}, [&](int i, Cluster& c) {
    if (i != 0) {
      EXPECT_TRUE(c.Barrier("b").ok());
      EXPECT_TRUE(c.Leave().ok());
      return;
    }
    EXPECT_TRUE(c.Barrier("b").ok());
    // Both nodes are up: every listening TCP socket of this process.
    listening = ListeningAddresses(SocketInodes("self"));
    EXPECT_TRUE(c.Leave().ok());
  });
  ASSERT_FALSE(listening.empty());
  std::set<int> ports;
  for (const std::string& local : listening) {
    // 0100007F:PORT is 127.0.0.1 (little-endian hex).
    EXPECT_EQ(local.substr(0, 9), "0100007F:") << "listening on " << local;
    ports.insert(PortOfAddress(local));
  }
  for (const TopologyNode& n : topo.nodes)
    EXPECT_EQ(ports.count(n.port), 1u) << n.port;
}

}  // namespace
}  // namespace parex
