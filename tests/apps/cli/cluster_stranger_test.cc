// Issue 28: a process that does not know the cluster secret speaks CAF to
// the nodes' ports as a node would and sends each message a peer can send
// (actors/cluster/node_messages.h) without a valid proof or token, CAF's
// system messages (exit, kill included; error; down) and messages a node
// does not know: to a node that waits for its peer (before authentication)
// and to both nodes while they train (after it). Each is refused or
// ignored and logged with the stranger's address, and the cluster trains
// to the parameters of a run nobody disturbed.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actors/cluster/node_actor.h"
#include "actors/cluster/node_messages.h"
#include "base/digest.h"
#include "tests/apps/cli/cli_test_util.h"
#include "tests/listening_ports.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

// A process of its own (its own CAF actor system) that knows the topology
// but not the secret.
class Stranger {
 public:
  Stranger() {
    config_.add_message_types<caf::id_block::parex_node>();
    config_.load<caf::io::middleman>();
    system_ = std::make_unique<caf::actor_system>(config_);
  }

  // Claims to be node `claim` to node `node` at 127.0.0.1:`port` and sends
  // it everything; `secret` (the real one) checks the verdicts' signature.
  void Pester(int port, const std::string& node, const std::string& claim,
              const std::string& secret) {
    caf::actor to;
    for (int i = 0; i < 100 && !to; ++i) {  // (the node may still start)
      caf::expected<caf::actor> found =
          system_->middleman().remote_actor("127.0.0.1", port);
      if (found)
        to = *found;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(to) << "nothing answers at port " << port;
    SCOPED_TRACE("node " + node + " told it is " + claim);
    // Before authentication: a challenge is answered; a proof without the
    // secret is refused (signed: a peer can verify it) with `retry`, so that
    // not even a prover sharing the secret ends on it (its nonce may have
    // been replaced by a stranger's challenge in its name), and is not
    // fatal to the node.
    EXPECT_EQ(Ask<std::string>(to, Challenge{claim}).size(), 32u);
    const ProofVerdict v = Ask<ProofVerdict>(
        to, Proof{claim, "version=0\n", "not-a-mac", caf::actor{}, "mine"});
    EXPECT_FALSE(v.accepted);
    EXPECT_TRUE(v.retry);
    EXPECT_THAT(v.text, HasSubstr("does not know the cluster secret"));
    EXPECT_EQ(v.mac,
              HmacSha256(secret, VerdictMessage("mine", claim, node, v)));
    // No challenge left for it: "try again", as a real node would be told.
    EXPECT_TRUE(
        Ask<ProofVerdict>(to, Proof{claim, "", "", caf::actor{}, ""}).retry);
    EXPECT_EQ(AskError(to, Challenge{"zz"}), "invalid_argument");
    // After authentication, without a token (the Gloo rendezvous included:
    // a stranger can neither read nor set its keys).
    for (const std::string token : {"", "forged-token-1234"}) {
      EXPECT_EQ(AskError(to, RendezvousSet{token, "gloo/0", "x"}),
                "invalid_argument");
      EXPECT_EQ(AskError(to, RendezvousGet{token, "gloo/0"}),
                "invalid_argument");
      EXPECT_FALSE(Ask<bool>(to, PeerLost{token, claim, "a stranger says"}));
      EXPECT_EQ(AskError(to, ProgressQuery{token}), "invalid_argument");
    }
    // Replies nobody asked for, messages it does not know, system messages.
    EXPECT_EQ(AskError(to, ProofVerdict{true, "token", 1, false, ""}),
              "unexpected_message");
    EXPECT_EQ(AskError(to, Progress{7, "allreduce 'x'", true}),
              "unexpected_message");
    caf::anon_send(to, std::string("garbage"), 42);
    caf::anon_send(to, caf::make_error(caf::sec::runtime_error));
    caf::anon_send(to, caf::down_msg{to.address(), caf::exit_reason::kill});
    caf::anon_send_exit(to, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(to, caf::exit_reason::kill);
    // It still answers.
    EXPECT_EQ(Ask<std::string>(to, Challenge{claim}).size(), 32u);
  }

 private:
  template <class Reply, class Message>
  Reply Ask(const caf::actor& to, Message msg) {
    caf::scoped_actor self{*system_};
    Reply reply{};
    self->request(to, std::chrono::seconds(5), std::move(msg))
        .receive([&](const Reply& r) { reply = r; },
                 [&](caf::error& e) {
                   ADD_FAILURE() << "error: " << system_->render(e);
                 });
    return reply;
  }
  template <class Message>
  std::string AskError(const caf::actor& to, Message msg) {
    caf::scoped_actor self{*system_};
    std::string error = "(an answer)";
    self->request(to, std::chrono::seconds(5), std::move(msg))
        .receive([](const caf::message&) {},
                 [&](caf::error& e) { error = to_string(caf::sec(e.code())); });
    return error;
  }

  caf::actor_system_config config_;
  std::unique_ptr<caf::actor_system> system_;
};

// The TCP ports process `pid` listens on (its node actor's and Gloo's).
std::set<int> ListeningPorts(pid_t pid) {
  std::set<int> ports;
  for (const std::string& local :
       ListeningAddresses(SocketInodes(std::to_string(pid))))
    ports.insert(PortOfAddress(local));
  return ports;
}

// Garbage (random bytes, nothing, a CAF-like header) to each port.
void SendGarbage(const std::set<int>& ports) {
  std::mt19937 rng(11);
  std::string noise(2048, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  for (int port : ports) {
    for (int i = 0; i < 3; ++i) {
      Send(port, noise.substr(0, 1 + rng() % noise.size()));
      Send(port, "");
      Send(port, std::string(8, '\0'));
    }
  }
}

TEST(ClusterStrangerTest, AStrangersMessagesChangeNothing) {
  const std::string dir = ScratchDir("cluster_stranger");
  const std::string topology = WriteTopology(dir, {1, 1});
  const std::string secret = ReadFile(dir + "/cluster.secret");
  const std::vector<std::string> train = {"--model", "fashion_mlp", "--steps",
                                          "1500"};
  const std::string want = UndisturbedDigest(topology, train, dir + "/quiet");
  ASSERT_EQ(want.size(), 64u);

  Child a(NodeArgs(topology, "a", train), dir + "/a", dir + "/a.log");
  Stranger().Pester(PortOf(topology, 'a'), "a", "b", secret);
  ASSERT_FALSE(a.Poll()) << a.Log();
  Child b(NodeArgs(topology, "b", train), dir + "/b", dir + "/b.log");
  ASSERT_TRUE(a.WaitFor("parex node: a, rank", std::chrono::seconds(60)))
      << a.Log();
  {
    Stranger stranger;
    stranger.Pester(PortOf(topology, 'a'), "a", "b", secret);
    stranger.Pester(PortOf(topology, 'b'), "b", "a", secret);
  }
  // The parameter broadcasts go through Gloo, whose rendezvous (where the
  // pairs' addresses are) a stranger can neither read nor set (above). Its
  // pairs listen only while they connect (this Gloo has no lasting
  // listener); whatever either process listens on now gets garbage.
  std::set<int> ports = ListeningPorts(a.pid());
  const std::set<int> b_ports = ListeningPorts(b.pid());
  ports.insert(b_ports.begin(), b_ports.end());
  EXPECT_EQ(ports.count(PortOf(topology, 'a')), 1u);
  EXPECT_EQ(ports.count(PortOf(topology, 'b')), 1u);
  SendGarbage(ports);
  EXPECT_FALSE(a.Poll()) << "training ended before the stranger was done";
  const std::vector<int64_t> ms =
      WaitAll({&a, &b}, Clock::now(), std::chrono::seconds(120));
  ASSERT_GE(ms[0], 0);
  ASSERT_GE(ms[1], 0);
  EXPECT_EQ(a.exit_code(), 0) << a.Log();
  EXPECT_EQ(b.exit_code(), 0) << b.Log();
  EXPECT_EQ(ParametersDigest(a.Log()), want) << a.Log();
  EXPECT_EQ(ParametersDigest(b.Log()), want) << b.Log();
  for (const Child* node : {&a, &b}) {
    const std::string log = node->Log();
    for (const char* logged :
         {"does not know the cluster secret (HMAC mismatch) (from 127.0.0.1:",
          "which it had not challenged (from 127.0.0.1:",
          "refused a request for a rendezvous key without a valid token "
          "(from 127.0.0.1:",
          "refused a request for this node's progress without a valid token "
          "(from 127.0.0.1:",
          "ignored a report of a lost node without a valid token (from "
          "127.0.0.1:",
          "ignored a message it does not know",
          "ignored an error message that answers nothing",
          "ignored a down message it did not ask for",
          "ignored an exit message (user_shutdown) it did not send itself",
          "ignored an exit message (kill) it did not send itself"}) {
      EXPECT_THAT(log, HasSubstr(logged)) << log;
    }
  }
}

}  // namespace
}  // namespace parex::testing
