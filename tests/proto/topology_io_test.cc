#include "proto/topology_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>

namespace parex {
namespace {

std::string Scratch() {
  std::string dir =
      std::string(PAREX_TEST_TMP_DIR) + "/topology_io_" +
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/cluster.secret") << "0123456789abcdef-a-test-secret";
  std::ofstream(dir + "/short.secret") << "short";
  chmod((dir + "/cluster.secret").c_str(), 0600);
  chmod((dir + "/short.secret").c_str(), 0600);
  return dir;
}

const char* kGood = R"(cluster: "demo"
secret_file: "cluster.secret"
collective_timeout_ms: 5000
node { name: "a" host: "127.0.0.1" port: 47100 places: "cpu:0-1" }
node {
  name: "b"
  host: "127.0.0.1"
  port: 47101
  places: "cpu:1"
}
)";

TEST(TopologyIoTest, ParsesNodesPlacesAndRanks) {
  const std::string dir = Scratch();
  StatusOr<Topology> t = ParseTopology(kGood, dir + "/two.pbtxt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->cluster, "demo");
  ASSERT_EQ(t->nodes.size(), 2u);
  EXPECT_EQ(t->nodes[0].name, "a");
  EXPECT_EQ(t->nodes[0].places.size(), 2u);
  EXPECT_EQ(t->nodes[1].places.size(), 1u);
  EXPECT_EQ(t->nodes[1].line, 5);
  EXPECT_EQ(t->Rank("b"), 1);
  EXPECT_EQ(t->Rank("c"), -1);
  EXPECT_EQ(t->TotalPlaces(), 3);
  EXPECT_EQ(t->FirstPlace(1), 2);
  EXPECT_EQ(t->collective_timeout_ms, 5000);
  EXPECT_EQ(t->connect_timeout_ms, 60000);
  EXPECT_EQ(t->secret, "0123456789abcdef-a-test-secret");
  EXPECT_EQ(t->fingerprint.size(), 64u);
}

// collective: MPI is its own backend (and part of the fingerprint: every
// node must say the same); parameter servers need Gloo.
TEST(TopologyIoTest, CollectiveMpiIsABackendOfTrainersOnly) {
  const std::string dir = Scratch();
  const std::string mpi = std::string(kGood).insert(
      std::string(kGood).find("node {"), "collective: MPI\n");
  StatusOr<Topology> t = ParseTopology(mpi, dir + "/mpi.pbtxt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->backend, "mpi");
  StatusOr<Topology> gloo = ParseTopology(kGood, dir + "/gloo.pbtxt");
  ASSERT_TRUE(gloo.ok());
  EXPECT_EQ(gloo->backend, "gloo");
  EXPECT_NE(t->fingerprint, gloo->fingerprint);
  const std::string ps =
      mpi +
      "node { name: \"p\" host: \"127.0.0.1\" port: 47102 places: "
      "\"cpu:1\" role: PSERVER }\n";
  StatusOr<Topology> refused =
      ParseTopology(ps, dir + "/ps.pbtxt", /*allow_pservers=*/true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "ps.pbtxt:12: node 'p': role PSERVER: parameter servers "
                "talk over Gloo"),
            std::string::npos)
      << refused.status().message();
}

// Pserver nodes parse for the placement commands; the training commands
// (the default) refuse them.
TEST(TopologyIoTest, PserverNodesParseOnlyWhenAllowed) {
  const std::string dir = Scratch();
  const std::string text =
      std::string(kGood) +
      "node { name: \"ps0\" host: \"127.0.0.1\" port: 47102 places: "
      "\"cpu:1\" role: PSERVER }\n";
  StatusOr<Topology> t = ParseTopology(text, dir + "/ps.pbtxt", true);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->nodes.size(), 3u);
  EXPECT_FALSE(t->nodes[0].pserver);
  EXPECT_TRUE(t->nodes[2].pserver);
  StatusOr<Topology> refused = ParseTopology(text, dir + "/ps.pbtxt");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("node 'ps0': role PSERVER"),
            std::string::npos)
      << refused.status().message();
}

// A cluster of cuda places parses here; whether a machine can run them is
// the running process's check (parex node, parex launch).
TEST(TopologyIoTest, CudaPlacesParse) {
  const std::string dir = Scratch();
  StatusOr<Topology> t = ParseTopology(
      "cluster: \"gpus\"\nsecret_file: \"cluster.secret\"\n"
      "node { name: \"a\" host: \"127.0.0.1\" port: 1 places: \"cuda:0x2\" }\n"
      "node { name: \"b\" host: \"127.0.0.1\" port: 2 places: \"cuda:1\" }\n",
      dir + "/gpus.pbtxt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->nodes[0].places.size(), 2u);
  EXPECT_EQ(t->nodes[0].places[1], Place::CUDA(0, 1));
  EXPECT_EQ(t->nodes[0].places_text, "cuda:0x2");
  EXPECT_EQ(t->nodes[1].places, std::vector<Place>{Place::CUDA(1)});
  EXPECT_EQ(t->TotalPlaces(), 3);
}

TEST(TopologyIoTest, FingerprintCoversTheClusterButNotTheSecretsPath) {
  const std::string dir = Scratch();
  std::ofstream(dir + "/other.secret") << "0123456789abcdef-a-test-secret";
  chmod((dir + "/other.secret").c_str(), 0600);
  std::string moved = kGood;
  moved.replace(moved.find("cluster.secret"), 14, "other.secret");
  std::string port = kGood;
  port.replace(port.find("47101"), 5, "47102");
  StatusOr<Topology> a = ParseTopology(kGood, dir + "/t.pbtxt");
  StatusOr<Topology> b = ParseTopology(moved, dir + "/t.pbtxt");
  StatusOr<Topology> c = ParseTopology(port, dir + "/t.pbtxt");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->fingerprint, b->fingerprint);
  EXPECT_NE(a->fingerprint, c->fingerprint);
}

TEST(TopologyIoTest, ErrorsNameTheFileLineAndNode) {
  const std::string dir = Scratch();
  const std::string path = dir + "/bad.pbtxt";
  struct Case {
    std::string text;
    std::string message;
  };
  const std::string head =
      "cluster: \"demo\"\nsecret_file: \"cluster.secret\"\n";
  const std::string a =
      "node { name: \"a\" host: \"127.0.0.1\" port: 47100 places: \"cpu:1\" "
      "}\n";
  const std::vector<Case> cases = {
      {head + a +
           "node { name: \"a\" host: \"127.0.0.1\" port: 47101 places: "
           "\"cpu:1\" }\n",
       path + ":4: node 'a' is listed twice (also line 3)"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\"\n port: 70000 places: "
           "\"cpu:1\" }\n",
       path + ":5: node 'b': port 70000 is not in 1..65535"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\" port: 47100 places: "
           "\"cpu:1\" }\n",
       "node 'b': address 127.0.0.1:47100 is already another node's"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\" port: 1\n places: "
           "\"cpu:3-1\" }\n",
       path + ":5: node 'b': places 'cpu:3-1'"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\" port: 2 places: \"cuda:1\" "
           "}\n",
       "node 'b': places 'cuda:1' are cuda places but node 'a' has cpu places: "
       "a cluster's places are of one kind"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\" port: 2 places: "
           "\"cuda:all\" }\n",
       "node 'b': places 'cuda:all': a topology names each node's places"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\" port: 2 places: \"sim:2\" "
           "}\n",
       "node 'b': place sim:0 is simulated"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\" port: 2 places: "
           "\"cpu:0x2\" }\n",
       "node 'b': places 'cpu:0x2'"},
      {head + a + "node { name: \"b\" host: \"127.0.0.1\" port: 2 }\n",
       "node 'b': no places"},
      {head + a +
           "node { name: \"b\" host: \"127.0.0.1\" port: 2 places: \"cpu\" "
           "role: PSERVER }\n",
       "node 'b': role PSERVER: this command does not run parameter servers"},
      {head + a +
           "node { name: \"b c\" host: \"h\" port: 2 places: \"cpu\" }\n",
       path + ":4: node #1: name 'b c'"},
      {head + a +
           "node { name: \"b\" host: \"h;rm\" port: 2 places: \"cpu\" }\n",
       "node 'b': host 'h;rm' is not an address"},
      {head + "collective: NCCL\n" + a,
       path + ":3: collective NCCL is not supported yet"},
      {head + a + "node { name: \"b\" hots: \"x\" }\n", path + ":4:"},
      {head + "connect_timeout_ms: 5\n" + a,
       path + ":3: connect_timeout_ms 5 is not in"},
      {"cluster: \"demo\"\n" + a, path + ": secret_file is missing"},
      {"cluster: \"demo\"\nsecret_file: \"missing.secret\"\n" + a,
       path + ":2: secret_file:"},
      {"cluster: \"demo\"\nsecret_file: \"short.secret\"\n" + a,
       "holds 5 bytes"},
      {head, path + ": no node { ... } listed"},
      {"secret_file: \"cluster.secret\"\n" + a, "cluster name ''"},
  };
  for (const Case& c : cases) {
    StatusOr<Topology> t = ParseTopology(c.text, path);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.status().message().find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << t.status().message();
  }
}

// A secret file (or TLS key) others may read is refused, naming the file,
// its mode and the fix; a private one is read.
TEST(TopologyIoTest, SecretsOthersCanReadAreRefused) {
  const std::string dir = Scratch();
  for (mode_t mode : {0644, 0640, 0604, 0660, 0602}) {
    chmod((dir + "/cluster.secret").c_str(), mode);
    StatusOr<Topology> t = ParseTopology(kGood, dir + "/t.pbtxt");
    ASSERT_FALSE(t.ok()) << std::oct << mode;
    EXPECT_NE(
        t.status().message().find("cluster.secret' is a secret but its mode"),
        std::string::npos)
        << t.status().message();
    EXPECT_NE(t.status().message().find("chmod 600"), std::string::npos);
    EXPECT_NE(t.status().message().find(":2: secret_file"), std::string::npos);
  }
  chmod((dir + "/cluster.secret").c_str(), 0400);
  EXPECT_TRUE(ParseTopology(kGood, dir + "/t.pbtxt").ok());
}

TEST(TopologyIoTest, HeartbeatAndTls) {
  const std::string dir = Scratch();
  for (const char* f : {"c.pem", "ca.pem", "k.pem", "bad.pem"}) {
    std::ofstream(dir + "/" + f)
        << (std::string(f) == "bad.pem"
                ? "garbage"
                : "-----BEGIN X-----\n-----END X-----\n");
  }
  chmod((dir + "/k.pem").c_str(), 0600);
  const std::string tls =
      "tls { cert: \"c.pem\" key: \"k.pem\" ca: \"ca.pem\" }\n";
  StatusOr<Topology> t =
      ParseTopology(std::string(kGood) + "heartbeat_timeout_ms: 1500\n" + tls,
                    dir + "/t.pbtxt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->heartbeat_timeout_ms, 1500);
  EXPECT_TRUE(t->tls());
  EXPECT_EQ(t->tls_key, dir + "/k.pem");
  EXPECT_EQ(t->tls_ca, dir + "/ca.pem");
  StatusOr<Topology> plain = ParseTopology(kGood, dir + "/t.pbtxt");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->heartbeat_timeout_ms, 4000);
  EXPECT_FALSE(plain->tls());
  EXPECT_NE(plain->fingerprint,
            t->fingerprint);  // TLS on one side only: refused
  const std::string path = dir + "/t.pbtxt";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"heartbeat_timeout_ms: 50\n", ":11: heartbeat_timeout_ms 50 is not in"},
      {"tls { cert: \"c.pem\" key: \"k.pem\" }\n", ":11: tls: ca is missing"},
      {"tls { cert: \"c.pem\" key: \"k.pem\" ca: \"none.pem\" }\n",
       "tls ca: cannot open '" + dir + "/none.pem'"},
      {"tls { cert: \"bad.pem\" key: \"k.pem\" ca: \"ca.pem\" }\n",
       "is not a PEM file"},
      {"tls { cert: \"c.pem\" key: \"c.pem\" ca: \"ca.pem\" }\n",
       "tls key: '" + dir + "/c.pem' is a secret but its mode"},
  };
  for (const auto& [text, message] : bad) {
    StatusOr<Topology> b = ParseTopology(std::string(kGood) + text, path);
    ASSERT_FALSE(b.ok()) << text;
    EXPECT_NE(b.status().message().find(message), std::string::npos)
        << "expected '" << message << "' in: " << b.status().message();
  }
}

TEST(TopologyIoTest, LoadNamesAMissingFile) {
  StatusOr<Topology> t =
      LoadTopology(std::string(PAREX_TEST_TMP_DIR) + "/no/such.pbtxt");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("no/such.pbtxt"), std::string::npos);
}

TEST(TopologyIoTest, TheExampleTopologiesLoad) {
  // The examples name a secret file each user makes (parex secret), which
  // the repository does not hold: parse their text beside a scratch one.
  const std::string dir = Scratch();
  for (const char* name : {"two_nodes.pbtxt", "three_nodes.pbtxt"}) {
    std::ifstream in(std::string(PAREX_SOURCE_DIR) + "/examples/topology/" +
                     name);
    const std::string text((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << name;
    StatusOr<Topology> t = ParseTopology(text, dir + "/" + name);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    for (const TopologyNode& n : t->nodes) EXPECT_EQ(n.host, "127.0.0.1");
  }
}

}  // namespace
}  // namespace parex
