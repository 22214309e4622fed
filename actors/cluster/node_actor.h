// NodeActor: one per process of a cluster (DESIGN.md §3.4 "node actor", §4).
// Published on the node's topology address (and only there), it is what the
// peers talk to before any collective runs:
//
//   peer ──(pxchal, name)──────────────▶ node: a fresh nonce for `name`
//   peer ──(pxprove, name, info, mac, actor)▶ node: accepted when mac is
//        HMAC-SHA-256(secret, "parex-handshake" | nonce | name | this node |
//        info) and info (version, program, topology, options) equals this
//        node's; replies (ok, session token or the reason, clock in µs)
//   peer ──(pxset, token, key, value)──▶ rank 0's node: the Gloo rendezvous
//   peer ──(pxget, token, key)─────────▶ rank 0's node: the value, once set
//   peer ──(pxlost, token, node, why)──▶ node: the peer lost `node`
//   peer ──(pxstat, token)─────────────▶ node: its progress through the
//        cross-node collectives (number, what, whether inside it): what a
//        stall report compares
//
// Store, lost and status messages without a token issued by an accepted
// proof are refused. A refused handshake is logged with the peer's address.
//
// WatchActor monitors the peers' node actors once the handshake is done: a
// peer whose connection closes (its process exited or crashed) or falls
// silent for the heartbeat timeout (hung, stopped, partitioned) is lost;
// NodeShared::on_lost hears it, and the other peers are told (pxlost), so
// every node names the node that was lost first.
// Nothing here blocks; the joining thread (actors/cluster/cluster.cc) watches
// the handshake through NodeShared.
#pragma once

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace parex {

using challenge_atom = caf::atom_constant<caf::atom("pxchal")>;
using prove_atom = caf::atom_constant<caf::atom("pxprove")>;
using kv_set_atom = caf::atom_constant<caf::atom("pxset")>;
using kv_get_atom = caf::atom_constant<caf::atom("pxget")>;
using lost_atom = caf::atom_constant<caf::atom("pxlost")>;
using stat_atom = caf::atom_constant<caf::atom("pxstat")>;

// What a node's actor and its joining thread share. Thread-safe (mu).
struct NodeShared {
  // Fixed before the actor is spawned.
  std::string secret;
  std::string name;                         // this node
  std::set<std::string> peers;              // the other nodes of the topology
  std::map<std::string, std::string> info;  // this node's identity, key by key
  bool tls = false;  // peers speak TLS (a lost one's probe waits for nothing)

  std::mutex mu;
  std::condition_variable changed;             // notified on every change below
  std::map<std::string, std::string> nonces;   // challenger -> nonce
  std::map<std::string, caf::actor> accepted;  // peers whose proof passed
  std::set<std::string> tokens;                // issued session tokens
  std::string refused;                         // the first refusal
  // Proofs that failed the HMAC (refused, but not fatal: the sender proved
  // nothing), for the message of a handshake that times out.
  std::vector<std::string> rejected;

  // This node's progress through the cross-node collectives (the Gloo
  // communicator's observer sets it): the call's number, what it is, and
  // whether it is inside it.
  int64_t seq = 0;
  std::string call;
  bool in_call = false;
  bool leaving = false;  // Leave began: peers that go are no longer lost
  // Peers lost, in the order they were (node, why).
  std::vector<std::pair<std::string, std::string>> lost;
  // Called once per lost peer, from an actor's thread; set before the
  // watcher starts.
  std::function<void(const std::string& node, const std::string& why)> on_lost;
};

// The message a prover signs.
std::string HandshakeMessage(const std::string& nonce,
                             const std::string& prover,
                             const std::string& verifier,
                             const std::string& info);
// info as "key=value\n" lines (sorted), and back.
std::string EncodeInfo(const std::map<std::string, std::string>& info);
std::map<std::string, std::string> DecodeInfo(const std::string& text);
// "" when `theirs` equals `ours`; otherwise what differs, naming `peer`.
std::string CompareInfo(const std::string& peer,
                        const std::map<std::string, std::string>& ours,
                        const std::map<std::string, std::string>& theirs);

// The node actor's behaviour (spawn with the shared state).
caf::behavior NodeActor(caf::event_based_actor* self,
                        std::shared_ptr<NodeShared> shared);

// A peer to watch: its node actor and the token it gave this node.
struct WatchedPeer {
  caf::actor handle;
  std::string token;
  std::string host;  // its topology address (probed when it is lost)
  int port = 0;
};
// Monitors `peers` (by name) until it is told to exit.
caf::behavior WatchActor(caf::event_based_actor* self,
                         std::shared_ptr<NodeShared> shared,
                         std::map<std::string, WatchedPeer> peers);

int64_t SteadyMicros();

}  // namespace parex
