// The cluster's defences (issues 16 and 28), each with processes of the
// `parex` command: garbage on a node's port, intruders (a name the topology
// does not have, a wrong secret: refused and logged with their address), a
// secret file others can read, TLS; and the trust rule of the handshake
// (actors/cluster/node_messages.h): an intruder started as node b with
// another secret cannot end node a, which trains with the real b as if
// nobody had come, and two honest nodes with different secret files both
// end within the join timeout, naming the likely cause. (A stranger's CAF
// messages: cluster_stranger_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/apps/cli/cli_test_util.h"
#include "tests/free_port.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

// `topology` with the secret file `secret_file` (written with `secret`,
// 0600) and connect_timeout_ms `timeout_ms`, as dir/`name`.pbtxt.
std::string Variant(const std::string& topology, const std::string& dir,
                    const std::string& name, const std::string& secret_file,
                    const std::string& secret, int timeout_ms) {
  std::ofstream(dir + "/" + secret_file) << secret;
  std::filesystem::permissions(
      dir + "/" + secret_file,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::string text = ReadFile(topology);
  text.replace(text.find("cluster.secret"), 14, secret_file);
  text.replace(text.find("connect_timeout_ms: 30000"), 25,
               "connect_timeout_ms: " + std::to_string(timeout_ms));
  const std::string path = dir + "/" + name + ".pbtxt";
  std::ofstream(path) << text;
  return path;
}

const char kOtherSecret[] = "another-secret-of-more-than-16-bytes";

// Starts `args` as a Child that logs at level info (its "listening on" line
// marks where its handshake, and the join timeout, begins).
std::unique_ptr<Child> Verbose(const std::vector<std::string>& args,
                               const std::string& cwd, const std::string& log) {
  setenv("PAREX_LOG_LEVEL", "info", 1);
  auto child = std::make_unique<Child>(args, cwd, log);
  unsetenv("PAREX_LOG_LEVEL");
  return child;
}

// For each of `children`: the ms from its log first showing "listening on"
// (its join began) to its exit, -1 if either did not come within `limit`.
std::vector<int64_t> JoinToExitMs(std::vector<Child*> children,
                                  std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  std::vector<Clock::time_point> joined(children.size());
  std::vector<int64_t> ms(children.size(), -1);
  while (Clock::now() < end) {
    bool all = true;
    for (size_t i = 0; i < children.size(); ++i) {
      if (joined[i] == Clock::time_point() &&
          children[i]->Log().find("listening on") != std::string::npos)
        joined[i] = Clock::now();
      if (ms[i] < 0 && children[i]->Poll() &&
          joined[i] != Clock::time_point()) {
        ms[i] = std::chrono::duration_cast<std::chrono::milliseconds>(
                    Clock::now() - joined[i])
                    .count();
      }
      all = all && (ms[i] >= 0 || children[i]->exited());
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ms;
}

// Issue 28, acceptance 2: a process started as node b with another secret
// connects to a, which waits for b. Neither believes the other: the
// intruder exits 1 within its join timeout naming what it saw, a logs the
// intruder's address and goes on waiting, and with the real b it trains to
// the undisturbed run's parameters.
TEST(ClusterSecurityTest, AnIntruderWithAnotherSecretCannotEndTheCluster) {
  const std::string dir = ScratchDir("cluster_intruder_b");
  const std::string topology = WriteTopology(dir, {1, 1});
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "30"};
  const std::string want = UndisturbedDigest(topology, train, dir + "/quiet");
  ASSERT_EQ(want.size(), 64u);

  const int join_ms = 4000;
  const std::string wrong =
      Variant(topology, dir, "intruder", "other.secret", kOtherSecret, join_ms);
  Child a(NodeArgs(topology, "a", train), dir + "/a", dir + "/a.log");
  std::unique_ptr<Child> started =
      Verbose(NodeArgs(wrong, "b", train), dir + "/i", dir + "/i.log");
  Child& intruder = *started;
  const std::vector<int64_t> ms =
      JoinToExitMs({&intruder}, std::chrono::seconds(30));
  ASSERT_GE(ms[0], 0) << intruder.Log();
  std::printf(
      "the intruder exited %lld ms after its join began (join "
      "timeout %d ms)\n",
      static_cast<long long>(ms[0]), join_ms);
  EXPECT_EQ(intruder.exit_code(), 1) << intruder.Log();
  EXPECT_LT(ms[0], join_ms + 1000);
  EXPECT_THAT(intruder.Log(),
              HasSubstr("node 'a' did not connect within connect_timeout_ms "
                        "4000"));
  EXPECT_THAT(intruder.Log(),
              HasSubstr("refused meanwhile: a process at 127.0.0.1:"));
  EXPECT_THAT(intruder.Log(),
              HasSubstr("claimed to be 'a' but did not prove the cluster "
                        "secret (HMAC mismatch; a different secret file?)"));
  ASSERT_FALSE(a.Poll()) << a.Log();
  EXPECT_THAT(a.Log(), HasSubstr("node 'a': a process at 127.0.0.1:" +
                                 std::to_string(PortOf(topology, 'b')) +
                                 " claimed to be 'b' but did not prove the "
                                 "cluster secret"));
  EXPECT_THAT(a.Log(), HasSubstr("ignored, waiting for the real node"));

  Child b(NodeArgs(topology, "b", train), dir + "/b", dir + "/b.log");
  const std::vector<int64_t> done =
      WaitAll({&a, &b}, Clock::now(), std::chrono::seconds(120));
  ASSERT_GE(done[0], 0);
  ASSERT_GE(done[1], 0);
  EXPECT_EQ(a.exit_code(), 0) << a.Log();
  EXPECT_EQ(b.exit_code(), 0) << b.Log();
  EXPECT_EQ(ParametersDigest(a.Log()), want) << a.Log();
  EXPECT_EQ(ParametersDigest(b.Log()), want) << b.Log();
}

// Issue 28, acceptance 3: two honest nodes whose secret files differ. Each
// sees a peer that does not prove the secret; both exit 1 within the join
// timeout, naming the peer, its address and the likely cause.
TEST(ClusterSecurityTest,
     DifferentSecretFilesEndBothNodesWithinTheJoinTimeout) {
  const std::string dir = ScratchDir("cluster_two_secrets");
  const std::string topology = WriteTopology(dir, {1, 1});
  const int join_ms = 3000;
  const std::string one =
      Variant(topology, dir, "one", "one.secret",
              "a-test-secret-of-more-than-16-bytes", join_ms);
  const std::string two =
      Variant(topology, dir, "two", "two.secret", kOtherSecret, join_ms);
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "5"};
  std::unique_ptr<Child> node_a =
      Verbose(NodeArgs(one, "a", train), dir + "/a", dir + "/a.log");
  std::unique_ptr<Child> node_b =
      Verbose(NodeArgs(two, "b", train), dir + "/b", dir + "/b.log");
  Child& a = *node_a;
  Child& b = *node_b;
  const std::vector<int64_t> ms =
      JoinToExitMs({&a, &b}, std::chrono::seconds(30));
  ASSERT_GE(ms[0], 0) << a.Log();
  ASSERT_GE(ms[1], 0) << b.Log();
  std::printf(
      "a exited %lld ms, b %lld ms after its join began (join "
      "timeout %d ms)\n",
      static_cast<long long>(ms[0]), static_cast<long long>(ms[1]), join_ms);
  for (Child* node : {&a, &b}) {
    EXPECT_EQ(node->exit_code(), 1) << node->Log();
    EXPECT_THAT(node->Log(), HasSubstr("did not prove the cluster secret"));
    EXPECT_THAT(node->Log(), HasSubstr("a different secret file?"));
    EXPECT_THAT(node->Log(), HasSubstr("within connect_timeout_ms 3000"));
  }
  EXPECT_LT(std::max(ms[0], ms[1]), join_ms + 1000);
  // (a's error says "did not prove that it knows the cluster secret", or,
  // when b exited first, "did not answer ...; meanwhile" and what it saw.)
  EXPECT_THAT(a.Log(), HasSubstr("parex node: error: node 'a': node 'b' at "
                                 "127.0.0.1:" +
                                 std::to_string(PortOf(topology, 'b'))));
  EXPECT_THAT(a.Log(), HasSubstr("a process at 127.0.0.1:" +
                                 std::to_string(PortOf(topology, 'b')) +
                                 " claimed to be 'b' but did not prove"));
  EXPECT_THAT(b.Log(), HasSubstr("parex node: error: node 'b': node 'a' did "
                                 "not connect"));
  EXPECT_THAT(b.Log(), HasSubstr("claimed to be 'a' but did not prove"));
}

// Acceptance 3: garbage, truncated and lying BASP frames sent to a training
// node's port are dropped with their connection; training goes on and ends
// with the same losses as an undisturbed run.
TEST(ClusterSecurityTest, GarbageAndTruncatedFramesDoNotStopTraining) {
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
TEST(ClusterSecurityTest, IntrudersAreRefusedAndLoggedWithTheirAddress) {
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
  // It cannot tell a refusal it cannot verify from a stranger's (issue 28).
  EXPECT_THAT(liar.err,
              HasSubstr("claimed to be 'a' but did not prove the cluster "
                        "secret"));
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
TEST(ClusterSecurityTest, ASecretFileOthersCanReadIsRefused) {
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
TEST(ClusterSecurityTest, TlsNodesTrainAndAForeignCertificateIsRefused) {
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
