// The messages a node actor (actors/cluster/node_actor.h) answers, and its
// replies, declared once (DESIGN.md §4). They travel between the nodes'
// processes through CAF's middleman (TCP, or TLS with the topology's tls).
//
// Each is a small struct with an `inspect` overload and a CAF type id (the
// `parex_node` type id block below, after the runtime's `parex` block in
// actors/runtime/messages.h), registered with each node's actor system
// (actors/cluster/cluster.cc), so CAF can serialise them. Every message is a
// request: the sender waits for the reply named beside it (or an error).
//
// Before authentication (any process that reaches the node's address):
//   joining node ──Challenge──▶ peer's node actor   reply: nonce (string)
//   joining node ──Proof──────▶ peer's node actor   reply: ProofVerdict
// After it (each carries the session token the sender's accepted Proof
// earned; without a valid one the node refuses it):
//   any rank's CafStore ──RendezvousSet──▶ rank 0's node actor   reply: bool
//   any rank's CafStore ──RendezvousGet──▶ rank 0's node actor   reply: value
//   a node (watcher, AnnounceFailure) ──PeerLost──▶ peer          reply: bool
//   a node (Cluster::Explain) ──ProgressQuery──▶ peer    reply: Progress
//
// The trust rule (issue 28): what a process says counts only once it proved
// that it knows the cluster secret, both ways. A verifier believes a Proof
// only when its HMAC over the verifier's fresh nonce checks; a prover
// believes a ProofVerdict (accepted or refused) only when its `mac`, the
// verifier's HMAC over the prover's own fresh `challenge`, checks. Anything
// else a process says before that (a refusal it cannot back, an error, a
// dropped connection, garbage) is logged with its address and ignored: the
// node goes on waiting for the real peer until connect_timeout_ms, whose
// error names what it saw. After the handshake only token holders count.
#pragma once

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>
#include <cstdint>
#include <string>

namespace parex {

// "Give me a nonce to sign": the first step of node `from`'s proof to the
// receiver. Refused (an error) when `from` is not a node of the topology.
// Replied with a fresh 32-byte nonce for `from` (the last one replaces any
// earlier).
struct Challenge {
  std::string from;
};

// Node `from` proves it knows the cluster secret and has the same identity:
// `mac` is HMAC-SHA-256(secret, HandshakeMessage(nonce, from, receiver,
// info, challenge)) over the receiver's last nonce for `from` from the sender's
// process (used once), `info` its identity (EncodeInfo: version, program,
// options, topology). `node` is the sender's node actor: where the receiver
// sends its own proof and requests. `challenge` is the sender's fresh nonce,
// which the receiver signs its verdict over.
struct Proof {
  std::string from;
  std::string info;
  std::string mac;
  caf::actor node;
  std::string challenge;
};

// The answer to a Proof. Accepted: `text` is the session token the prover
// shows from now on and `clock_us` the verifier's steady clock (µs) when it
// answered (rank 0's gives the clock offset). Refused: `text` says why, for
// the prover's error message (`clock_us` 0); `retry` when the proof only
// missed its nonce (no challenge for it, or a later one replaced it), so a
// new challenge may pass. `mac` is HMAC-SHA-256(secret, VerdictMessage(...))
// over the Proof's `challenge`: without a valid one the prover believes
// nothing of the verdict (the verifier did not prove the secret).
struct ProofVerdict {
  bool accepted = false;
  std::string text;
  int64_t clock_us = 0;
  bool retry = false;
  std::string mac;
};

// Gloo's rendezvous (CafStore): rank 0's node actor keeps `key` = `value`
// and answers every RendezvousGet waiting for it.
struct RendezvousSet {
  std::string token;
  std::string key;
  std::string value;
};

// The value of `key` at rank 0's node actor; the reply waits until some
// rank set it (the requester's timeout bounds the wait).
struct RendezvousGet {
  std::string token;
  std::string key;
};

// The sender lost node `node` (`why`: what it saw, or that the sender itself
// ends with an error); the receiver records it as its own loss unless it
// knows already. Replied with true (false: the token was not valid).
struct PeerLost {
  std::string token;
  std::string node;
  std::string why;
};

// Where is the receiver in the cross-node collectives? For a stall report.
struct ProgressQuery {
  std::string token;
};

// The answer to a ProgressQuery: the number of the receiver's last
// cross-node collective, what it is ("allreduce 'x'"), and whether the
// receiver is inside it.
struct Progress {
  int64_t seq = 0;
  std::string call;
  bool in_call = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Challenge& x) {
  return f(caf::meta::type_name("parex.Challenge"), x.from);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Proof& x) {
  return f(caf::meta::type_name("parex.Proof"), x.from, x.info, x.mac, x.node,
           x.challenge);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProofVerdict& x) {
  return f(caf::meta::type_name("parex.ProofVerdict"), x.accepted, x.text,
           x.clock_us, x.retry, x.mac);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousSet& x) {
  return f(caf::meta::type_name("parex.RendezvousSet"), x.token, x.key,
           x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousGet& x) {
  return f(caf::meta::type_name("parex.RendezvousGet"), x.token, x.key);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PeerLost& x) {
  return f(caf::meta::type_name("parex.PeerLost"), x.token, x.node, x.why);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProgressQuery& x) {
  return f(caf::meta::type_name("parex.ProgressQuery"), x.token);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Progress& x) {
  return f(caf::meta::type_name("parex.Progress"), x.seq, x.call, x.in_call);
}

}  // namespace parex

// The runtime's `parex` block starts at caf::first_custom_type_id (200) and
// holds a handful of ids; this one starts 100 after it.
CAF_BEGIN_TYPE_ID_BLOCK(parex_node, caf::first_custom_type_id + 100)
CAF_ADD_TYPE_ID(parex_node, (parex::Challenge))
CAF_ADD_TYPE_ID(parex_node, (parex::Proof))
CAF_ADD_TYPE_ID(parex_node, (parex::ProofVerdict))
CAF_ADD_TYPE_ID(parex_node, (parex::RendezvousSet))
CAF_ADD_TYPE_ID(parex_node, (parex::RendezvousGet))
CAF_ADD_TYPE_ID(parex_node, (parex::PeerLost))
CAF_ADD_TYPE_ID(parex_node, (parex::ProgressQuery))
CAF_ADD_TYPE_ID(parex_node, (parex::Progress))
CAF_END_TYPE_ID_BLOCK(parex_node)
