#include "actors/cluster/node_actor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/io/middleman.hpp>
#include <caf/response_promise.hpp>
#include <caf/result.hpp>
#include <caf/sec.hpp>
#include <caf/system_messages.hpp>
#include <cerrno>
#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include "base/digest.h"
#include "base/logging.h"
#include "base/text.h"

namespace parex {

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string HandshakeMessage(const std::string& nonce,
                             const std::string& prover,
                             const std::string& verifier,
                             const std::string& info) {
  std::string m = "parex-handshake";
  for (const std::string* part : {&nonce, &prover, &verifier, &info}) {
    m += '\0';
    m += std::to_string(part->size());
    m += ':';
    m += *part;
  }
  return m;
}

std::string EncodeInfo(const std::map<std::string, std::string>& info) {
  std::string text;
  for (const auto& [key, value] : info) text += key + "=" + value + "\n";
  return text;
}

std::map<std::string, std::string> DecodeInfo(const std::string& text) {
  std::map<std::string, std::string> info;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) info[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  return info;
}

std::string CompareInfo(const std::string& peer,
                        const std::map<std::string, std::string>& ours,
                        const std::map<std::string, std::string>& theirs) {
  static const std::map<std::string, std::string> kWhat = {
      {"version", "runs parex"},
      {"program", "trains a different program: sha256"},
      {"topology", "read a different topology file: sha256"},
      {"options", "trains with other options:"},
  };
  for (const auto& [key, value] : ours) {
    auto it = theirs.find(key);
    const std::string their = it == theirs.end() ? "(none)" : it->second;
    if (their == value) continue;
    auto what = kWhat.find(key);
    return "node '" + peer + "' " + (what == kWhat.end() ? key : what->second) +
           " " + Excerpt(their, 200) + ", this node " + Excerpt(value, 200);
  }
  for (const auto& [key, value] : theirs) {
    if (ours.count(key) == 0) {
      return "node '" + peer + "' sent '" + Excerpt(key) +
             "', which this node does not know";
    }
  }
  return "";
}

namespace {

// The Gloo rendezvous keys and the requests waiting for them (only the
// actor touches them).
struct KvState {
  std::map<std::string, std::string> values;
  std::multimap<std::string, caf::response_promise> waiting;
};

bool TokenValid(NodeShared& shared, const std::string& token) {
  std::lock_guard<std::mutex> lock(shared.mu);
  return shared.tokens.count(token) > 0;
}

// Logs `text` with the address of `sender`'s node (asked of the
// middleman, which knows the connection), then runs `after` (if any).
void LogWithAddressOf(caf::event_based_actor* self,
                      const caf::strong_actor_ptr& sender,
                      const std::string& text, std::function<void()> after) {
  if (sender == nullptr || sender->node() == self->node()) {
    LogError(Subsystem::kNode,
             text + " (from " + (sender ? "this process" : "no sender") + ")");
    if (after) after();
    return;
  }
  self->request(self->system().middleman().actor_handle(),
                std::chrono::seconds(2), caf::get_atom::value, sender->node())
      .then(
          [text, after](const caf::node_id&, const std::string& addr,
                        uint16_t port) {
            LogError(Subsystem::kNode,
                     text + " (from " +
                         (addr.empty()
                              ? std::string(
                                    "an address the middleman no longer knows")
                              : addr + ":" + std::to_string(port)) +
                         ")");
            if (after) after();
          },
          [text, after](caf::error&) {
            LogError(Subsystem::kNode,
                     text + " (from an address the middleman no longer knows)");
            if (after) after();
          });
}

// The same for the sender of the message being handled.
void LogWithAddress(caf::event_based_actor* self, const std::string& text) {
  LogWithAddressOf(self, self->current_sender(), text, nullptr);
}

using ProofReply = caf::result<ProofVerdict>;

// A refused proof: logged with the sender's address first, then answered.
// The refused node waits for the answer, so its connection, and the
// address the middleman knows for it, last until the address is logged
// (answered at once, a refused node that exits at once was logged as "an
// address the middleman no longer knows"). `then` runs after the answer
// went: a refusal that ends this node's Join must not end its actor system
// before the refused node heard why.
ProofReply RefuseProof(caf::event_based_actor* self,
                       const std::string& log_text, const std::string& reply,
                       std::function<void()> then = nullptr) {
  // (The sender first: the promise takes the message's sender over.)
  caf::strong_actor_ptr sender = self->current_sender();
  auto promise = self->make_response_promise<ProofVerdict>();
  LogWithAddressOf(self, sender, log_text, [promise, reply, then]() mutable {
    promise.deliver(ProofVerdict{false, reply, 0});
    if (then) then();
  });
  return promise;
}

// A Challenge: a fresh nonce for a node of the topology.
caf::result<std::string> AnswerChallenge(caf::event_based_actor* self,
                                         NodeShared& shared,
                                         const Challenge& msg) {
  if (shared.peers.count(msg.from) == 0) {
    LogWithAddress(
        self, "node '" + shared.name + "' refused a handshake from '" +
                  Excerpt(msg.from) + "', which is not a node of the topology");
    return caf::make_error(caf::sec::invalid_argument);
  }
  StatusOr<std::string> nonce = RandomBytes(32);
  if (!nonce.ok()) return caf::make_error(caf::sec::runtime_error);
  std::lock_guard<std::mutex> lock(shared.mu);
  shared.nonces[msg.from] = *nonce;
  return *nonce;
}

// A Proof: checked against the nonce last issued to its sender (used
// once), then the identities compared. Accepted: a session token, and the
// sender's node actor recorded (the joining thread waits for it). A
// mismatched identity is fatal to this node's Join once the sender heard
// why; a failed HMAC is only remembered (the sender proved nothing).
ProofReply CheckProof(caf::event_based_actor* self,
                      const std::shared_ptr<NodeShared>& shared,
                      const Proof& msg) {
  std::unique_lock<std::mutex> lock(shared->mu);
  auto nonce = shared->nonces.find(msg.from);
  if (nonce == shared->nonces.end()) {
    lock.unlock();
    return RefuseProof(self,
                       "node '" + shared->name + "' refused a proof from '" +
                           Excerpt(msg.from) + "', which it had not challenged",
                       "node '" + shared->name +
                           "': no challenge was issued to '" +
                           Excerpt(msg.from) + "'");
  }
  const std::string expected = HmacSha256(
      shared->secret,
      HandshakeMessage(nonce->second, msg.from, shared->name, msg.info));
  shared->nonces.erase(nonce);  // one proof per challenge
  std::string reason;
  if (!ConstantTimeEqual(expected, msg.mac)) {
    // Whoever sent it proved nothing, so it cannot end this node's
    // wait for the real node of that name: refused and remembered
    // (a timeout names it), not fatal.
    reason = "node '" + msg.from +
             "' does not know the cluster secret (HMAC mismatch)";
    if (shared->rejected.size() < 8) shared->rejected.push_back(reason);
    lock.unlock();
    return RefuseProof(
        self, "node '" + shared->name + "' refused " + reason,
        "node '" + shared->name + "' refused this node: " + reason);
  }
  reason = CompareInfo(msg.from, shared->info, DecodeInfo(msg.info));
  if (!reason.empty()) {
    lock.unlock();
    return RefuseProof(
        self, "node '" + shared->name + "' refused " + reason,
        "node '" + shared->name + "' refused this node: " + reason,
        [shared, reason] {
          std::lock_guard<std::mutex> lock(shared->mu);
          if (shared->refused.empty()) shared->refused = "refused " + reason;
          shared->changed.notify_all();
        });
  }
  StatusOr<std::string> token = RandomBytes(16);
  if (!token.ok()) return ProofVerdict{false, "no random bytes for a token", 0};
  shared->tokens.insert(*token);
  shared->accepted[msg.from] = msg.node;
  shared->changed.notify_all();
  return ProofVerdict{true, *token, SteadyMicros()};
}

// What a lost peer's address says, within a second: its port refuses
// connections (the process is gone); a connection opens and its actor
// system greets it (CAF's server handshake: the process runs but stopped
// answering this node); a connection opens and says nothing (the process
// is stopped or hung, or something on the way accepts connections for it:
// a firewall or proxy does, where a partition sends packets another way);
// or nothing answers (its machine or the network). With TLS the server
// waits for the client, so an open connection says no more than that.
std::string Probe(const std::string& host, int port, bool tls) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) !=
          0 ||
      found == nullptr) {
    return "its address " + host + " no longer resolves";
  }
  const std::string where = host + ":" + std::to_string(port);
  std::string result =
      "nothing answers at " + where +
      " within 500 ms (its machine is down or the network is partitioned)";
  const int fd =
      socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int rc = connect(fd, found->ai_addr, found->ai_addrlen);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 500) == 1) {
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      } else {
        err = ETIMEDOUT;
      }
    }
    if (err == 0 && tls) {
      result = "a connection to " + where +
               " still opens (its process may be stopped or hung, or something "
               "on the way "
               "accepts connections for it)";
    } else if (err == 0) {
      pollfd p{fd, POLLIN, 0};
      char byte = 0;
      if (poll(&p, 1, 500) == 1 && recv(fd, &byte, 1, 0) == 1) {
        result = "its process still runs at " + where +
                 " (its actor system answers a new connection) but stopped "
                 "answering this node";
      } else {
        result = "a connection to " + where +
                 " still opens but nothing answers on it within 500 ms (its "
                 "process is stopped "
                 "or hung, or something on the way accepts connections for it)";
      }
    } else if (err == ECONNREFUSED) {
      result = "nothing listens at " + where +
               " any more (it exited, crashed or was killed)";
    }
    close(fd);
  }
  freeaddrinfo(found);
  return result;
}

}  // namespace

caf::behavior NodeActor(caf::event_based_actor* self,
                        std::shared_ptr<NodeShared> shared) {
  auto kv = std::make_shared<KvState>();
  return {
      [self, shared](const Challenge& msg) {
        return AnswerChallenge(self, *shared, msg);
      },
      [self, shared](const Proof& msg) {
        return CheckProof(self, shared, msg);
      },
      [shared, kv](const RendezvousSet& msg) -> caf::result<bool> {
        if (!TokenValid(*shared, msg.token))
          return caf::make_error(caf::sec::invalid_argument);
        kv->values[msg.key] = msg.value;
        auto range = kv->waiting.equal_range(msg.key);
        for (auto it = range.first; it != range.second; ++it)
          it->second.deliver(msg.value);
        kv->waiting.erase(range.first, range.second);
        return true;
      },
      [self, shared, kv](const RendezvousGet& msg) -> caf::result<std::string> {
        if (!TokenValid(*shared, msg.token))
          return caf::make_error(caf::sec::invalid_argument);
        auto it = kv->values.find(msg.key);
        if (it != kv->values.end()) return it->second;
        caf::response_promise rp = self->make_response_promise();
        kv->waiting.emplace(msg.key, rp);
        return rp;
      },
      [self, shared](const PeerLost& msg) -> bool {
        if (!TokenValid(*shared, msg.token)) {
          LogWithAddress(
              self,
              "node '" + shared->name +
                  "' ignored a report of a lost node without a valid token");
          return false;
        }
        if (shared->on_lost) shared->on_lost(msg.node, msg.why);
        return true;
      },
      [shared](const ProgressQuery& msg) -> caf::result<Progress> {
        if (!TokenValid(*shared, msg.token))
          return caf::make_error(caf::sec::invalid_argument);
        std::lock_guard<std::mutex> lock(shared->mu);
        return Progress{shared->seq, shared->call, shared->in_call};
      },
  };
}

caf::behavior WatchActor(caf::event_based_actor* self,
                         std::shared_ptr<NodeShared> shared,
                         std::map<std::string, WatchedPeer> peers) {
  auto watched = std::make_shared<std::map<caf::actor_addr, std::string>>();
  for (const auto& [name, peer] : peers) {
    self->monitor(peer.handle);
    (*watched)[peer.handle.address()] = name;
  }
  self->set_down_handler([self, shared, peers, watched](caf::down_msg& m) {
    auto it = watched->find(m.source);
    if (it == watched->end()) return;
    const std::string node = it->second;
    watched->erase(it);
    {
      // The cluster is leaving: peers go because they finished.
      std::lock_guard<std::mutex> lock(shared->mu);
      if (shared->leaving) return;
    }
    const WatchedPeer& peer = peers.at(node);
    const std::string why = "its connection closed or fell silent; " +
                            Probe(peer.host, peer.port, shared->tls);
    if (shared->on_lost) shared->on_lost(node, why);
    // The others hear it from this node too: whoever sees a loss first,
    // every node names the same node.
    for (const auto& [name, other] : peers) {
      bool alive = false;
      for (const auto& [addr, n] : *watched) alive = alive || n == name;
      if (alive) {
        self->send(other.handle,
                   PeerLost{other.token, node,
                            why + " (as node '" + shared->name + "' saw it)"});
      }
    }
  });
  // (Peers acknowledge a PeerLost with a bool.)
  return {[](caf::ok_atom) {}, [](bool) {}};
}

}  // namespace parex
