// NodeActor: one per process of a cluster (DESIGN.md §3.4 "node actor", §4).
// Published on the node's topology address (and only there), it is what the
// peers talk to before any collective runs. Its messages, who sends them and
// what they carry are in actors/cluster/node_messages.h:
//
//   Challenge, Proof: a peer proves the cluster secret (HMAC-SHA-256 over a
//        fresh nonce) and its identity (version, program, topology, options),
//        which must equal this node's; an accepted proof earns a session
//        token
//   RendezvousSet, RendezvousGet: the Gloo rendezvous (rank 0's node)
//   PeerLost: the peer lost a node
//   ProgressQuery: this node's progress through the cross-node collectives
//        (what a stall report compares)
//
// Messages after the proof without a token issued by an accepted proof are
// refused. A refused handshake is logged with the peer's address.
//
// The trust rule (issue 28; node_messages.h): nothing a process says changes
// this node's state or ends it before the process proved the cluster secret.
// A failed proof is refused and remembered (with the address it came from)
// for the message of a handshake that times out, never fatal; only a peer
// that proved the secret can end a handshake early (its identity differs).
// Every verdict is signed over the prover's own challenge, so the prover can
// tell a peer that knows the secret from one that only claims its name.
// CAF lets any process connected to this one send any actor it can name by
// id system messages too: the node actor and the watcher are spawned guarded
// (SpawnGuarded): an exit message before this process stops them, an error
// message that answers nothing, a down message from an actor that did not
// end and any message they do not know are logged and ignored.
//
// WatchActor monitors the peers' node actors once the handshake is done: a
// peer whose connection closes (its process exited or crashed) or falls
// silent for the heartbeat timeout (hung, stopped, partitioned) is lost;
// NodeShared::on_lost hears it, and the other peers are told (PeerLost), so
// every node names the node that was lost first.
// Nothing here blocks; the joining thread (actors/cluster/peer_handshake.h)
// watches the handshake through NodeShared.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/cluster/node_messages.h"

namespace parex {

// What a node's actor and its joining thread share. Thread-safe (mu).
struct NodeShared {
  // Fixed before the actor is spawned.
  std::string secret;
  std::string name;                         // this node
  std::set<std::string> peers;              // the other nodes of the topology
  std::map<std::string, std::string> info;  // this node's identity, key by key
  bool tls = false;  // peers speak TLS (a lost one's probe waits for nothing)

  std::mutex mu;
  std::condition_variable changed;  // notified on every change below
  // Challenger's name and process ("name@node id") -> the nonce issued and
  // when (a count): the oldest goes first when 64 are outstanding.
  struct IssuedNonce {
    std::string nonce;
    uint64_t issued = 0;
  };
  std::map<std::string, IssuedNonce> nonces;
  uint64_t nonces_issued = 0;
  std::map<std::string, caf::actor> accepted;  // peers whose proof passed
  std::set<std::string> tokens;                // issued session tokens
  // The first refusal of a peer that proved the secret (its identity
  // differs): it ends this node's handshake.
  std::string refused;
  // Proofs that failed the HMAC, each with the address it came from
  // (refused, but not fatal: the sender proved nothing), for the message
  // of a handshake that times out.
  std::vector<std::string> rejected;

  // This node's progress through the cross-node collectives (the
  // communicator's observer sets it, one call at a time): the call's
  // number and whether it is inside it, written without the lock (a
  // microsecond all-reduce pays for every lock), and what it is (`call`,
  // under mu, made anew only when a call of another name or kind begins).
  std::atomic<int64_t> seq{0};
  std::atomic<bool> in_call{false};
  std::string call;       // "all_reduce 'w@GRAD'"
  std::string call_name;  // "w@GRAD", and its kind: what `call` was made of
  int call_kind = -1;     // (the observer's own: read and written by it)
  // Time inside those calls (in CycleClock ticks: base/cycle_clock.h): the
  // steps' (the graph's collectives) and Cluster's own (own_calls > 0 while
  // one of its methods calls the communicator).
  int64_t call_began = 0;  // the observer's own
  std::atomic<int> own_calls{0};
  std::atomic<int64_t> step_call_ticks{0}, own_call_ticks{0};
  bool leaving = false;   // Leave began: peers that go are no longer lost
  bool stopping = false;  // this process stops its actors (exit messages)
  // Peers lost, in the order they were (node, why).
  std::vector<std::pair<std::string, std::string>> lost;
  // Called once per lost peer, from an actor's thread; set before the
  // watcher starts.
  std::function<void(const std::string& node, const std::string& why)> on_lost;
};

// The message a prover signs: the verifier's nonce, both names, the
// prover's identity and the challenge the verifier is to sign its verdict
// over (so that no one on the way can swap it).
std::string HandshakeMessage(const std::string& nonce,
                             const std::string& prover,
                             const std::string& verifier,
                             const std::string& info,
                             const std::string& challenge);
// What a verifier signs (all of `verdict` but its mac), over the prover's
// challenge.
std::string VerdictMessage(const std::string& challenge,
                           const std::string& prover,
                           const std::string& verifier,
                           const ProofVerdict& verdict);
// info as "key=value\n" lines (sorted), and back.
std::string EncodeInfo(const std::map<std::string, std::string>& info);
std::map<std::string, std::string> DecodeInfo(const std::string& text);
// "" when `theirs` equals `ours`; otherwise what differs, naming `peer`.
std::string CompareInfo(const std::string& peer,
                        const std::map<std::string, std::string>& ours,
                        const std::map<std::string, std::string>& theirs);

// The node actor's behaviour (spawn it guarded, with the shared state).
caf::behavior NodeActor(caf::event_based_actor* self,
                        std::shared_ptr<NodeShared> shared);

// Spawns the actor `make` returns the behaviour of, guarded: what CAF would
// let any connected process do to it is logged (with the sender's address)
// and ignored: exit messages (even exit_reason::kill) until this process
// stops it (shared->stopping, or shared->leaving too when
// `stops_when_leaving`), error messages that are no response, down
// messages whose sender is not the actor that ended, and messages it has
// no handler for.
caf::actor SpawnGuarded(
    caf::actor_system& system, std::shared_ptr<NodeShared> shared,
    bool stops_when_leaving,
    std::function<caf::behavior(caf::event_based_actor*)> make);

// A peer to watch: its node actor and the token it gave this node.
struct WatchedPeer {
  caf::actor handle;
  std::string token;
  std::string host;  // its topology address (probed when it is lost)
  int port = 0;
};
// Monitors `peers` (by name) until it is told to exit (spawn it guarded).
caf::behavior WatchActor(caf::event_based_actor* self,
                         std::shared_ptr<NodeShared> shared,
                         std::map<std::string, WatchedPeer> peers);

int64_t SteadyMicros();

}  // namespace parex
