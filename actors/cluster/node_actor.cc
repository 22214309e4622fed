#include "actors/cluster/node_actor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <caf/atom.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message_view.hpp>
#include <caf/response_promise.hpp>
#include <caf/result.hpp>
#include <caf/sec.hpp>
#include <caf/system_messages.hpp>
#include <cerrno>
#include <chrono>
#include <functional>
#include <initializer_list>
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

namespace {

// `tag`, then each part as "\0<size>:<bytes>" (no part can pass for another).
std::string Framed(const char* tag,
                   std::initializer_list<const std::string*> parts) {
  std::string m = tag;
  for (const std::string* part : parts) {
    m += '\0';
    m += std::to_string(part->size());
    m += ':';
    m += *part;
  }
  return m;
}

}  // namespace

std::string HandshakeMessage(const std::string& nonce,
                             const std::string& prover,
                             const std::string& verifier,
                             const std::string& info,
                             const std::string& challenge) {
  return Framed("parex-handshake",
                {&nonce, &prover, &verifier, &info, &challenge});
}

std::string VerdictMessage(const std::string& challenge,
                           const std::string& prover,
                           const std::string& verifier,
                           const ProofVerdict& verdict) {
  const std::string flags =
      std::string(verdict.accepted ? "A" : "R") + (verdict.retry ? "r" : "-");
  const std::string clock = std::to_string(verdict.clock_us);
  return Framed("parex-verdict", {&challenge, &prover, &verifier, &flags,
                                  &verdict.text, &clock});
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

// Logs `text` (unless empty) with the address of `sender`'s node (asked of
// the middleman, which knows the connection), then runs `after` (if any)
// with that address ("127.0.0.1:42710", or what stands for it).
void LogWithAddressOf(caf::event_based_actor* self,
                      const caf::strong_actor_ptr& sender,
                      const std::string& text,
                      std::function<void(const std::string& where)> after) {
  auto log = [text, after](const std::string& where) {
    if (!text.empty())
      LogError(Subsystem::kNode, text + " (from " + where + ")");
    if (after) after(where);
  };
  if (sender == nullptr || sender->node() == self->node()) {
    log(sender ? "this process" : "no sender");
    return;
  }
  const std::string unknown = "an address the middleman no longer knows";
  self->request(self->system().middleman().actor_handle(),
                std::chrono::seconds(2), caf::get_atom::value, sender->node())
      .then(
          [log, unknown](const caf::node_id&, const std::string& addr,
                         uint16_t port) {
            log(addr.empty() ? unknown : addr + ":" + std::to_string(port));
          },
          [log, unknown](caf::error&) { log(unknown); });
}

// The same for the sender of the message being handled.
void LogWithAddress(caf::event_based_actor* self, const std::string& text) {
  LogWithAddressOf(self, self->current_sender(), text, nullptr);
}

// A request without a valid token (for `what`): logged, and refused.
caf::error NoToken(caf::event_based_actor* self, const NodeShared& shared,
                   const std::string& what) {
  LogWithAddress(self, "node '" + shared.name + "' refused a request for " +
                           what + " without a valid token");
  return caf::make_error(caf::sec::invalid_argument);
}

// What stands for a message the guard dropped (GuardedActor::enqueue): its
// description, for the default handler to log with the sender's address.
using dropped_atom = caf::atom_constant<caf::atom("pxdropped")>;

// An actor that ignores what any connected process could otherwise do to
// it (SpawnGuarded in node_actor.h).
class GuardedActor : public caf::event_based_actor {
 public:
  GuardedActor(caf::actor_config& cfg, std::shared_ptr<NodeShared> shared,
               bool stops_when_leaving,
               std::function<caf::behavior(caf::event_based_actor*)> make)
      : caf::event_based_actor(cfg),
        shared_(std::move(shared)),
        stops_when_leaving_(stops_when_leaving),
        make_(std::move(make)) {}

  // CAF hands exit messages to no handler when their reason is kill, so
  // they are caught here, as they arrive: one this process did not mean
  // is replaced by a note of it.
  void enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit* eu) override {
    if (ptr != nullptr && ptr->content().match_elements<caf::exit_msg>() &&
        !MayStop()) {
      const caf::error& why = ptr->content().get_as<caf::exit_msg>(0).reason;
      const std::string reason =
          why.category() == caf::atom("exit")
              ? to_string(static_cast<caf::exit_reason>(why.code()))
              : to_string(why);
      ptr = caf::make_mailbox_element(
          std::move(ptr->sender), caf::make_message_id(), {},
          dropped_atom::value,
          "an exit message (" + reason + ") it did not send itself");
    }
    caf::event_based_actor::enqueue(std::move(ptr), eu);
  }

  caf::behavior make_behavior() override {
    const std::string name = "node '" + shared_->name + "'";
    set_error_handler([this, name](caf::error& e) {
      LogWithAddress(this, name +
                               " ignored an error message that answers "
                               "nothing: " +
                               Excerpt(to_string(e)));
    });
    set_down_handler([this, name](caf::down_msg&) {
      LogWithAddress(this, name + " ignored a down message it did not ask for");
    });
    set_default_handler(
        [name](caf::scheduled_actor* self,
               caf::message_view& x) -> caf::result<caf::message> {
          auto* me = static_cast<GuardedActor*>(self);
          caf::message msg = x.move_content_to_message();
          if (msg.match_elements<dropped_atom, std::string>()) {
            LogWithAddress(me, name + " ignored " + msg.get_as<std::string>(1));
            return caf::message{};
          }
          LogWithAddress(me, name + " ignored a message it does not know: " +
                                 Excerpt(to_string(msg)));
          return caf::sec::unexpected_message;
        });
    return make_(this);  // (may set its own down handler)
  }

 private:
  bool MayStop() {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->stopping || (stops_when_leaving_ && shared_->leaving);
  }

  std::shared_ptr<NodeShared> shared_;
  const bool stops_when_leaving_;
  std::function<caf::behavior(caf::event_based_actor*)> make_;
};

using ProofReply = caf::result<ProofVerdict>;

// A verdict on `msg`, signed over the prover's challenge (ProofVerdict).
ProofVerdict Signed(const NodeShared& shared, const Proof& msg, bool accepted,
                    std::string text, int64_t clock_us = 0,
                    bool retry = false) {
  ProofVerdict verdict;
  verdict.accepted = accepted;
  verdict.text = std::move(text);
  verdict.clock_us = clock_us;
  verdict.retry = retry;
  verdict.mac =
      HmacSha256(shared.secret,
                 VerdictMessage(msg.challenge, msg.from, shared.name, verdict));
  return verdict;
}

// A refused proof: logged with the sender's address first, then answered.
// The refused node waits for the answer, so its connection, and the
// address the middleman knows for it, last until the address is logged
// (answered at once, a refused node that exits at once was logged as "an
// address the middleman no longer knows"). `then` runs after the answer
// went, with the sender's address: a refusal that ends this node's Join
// must not end its actor system before the refused node heard why.
ProofReply RefuseProof(
    caf::event_based_actor* self, const std::string& log_text,
    ProofVerdict verdict,
    std::function<void(const std::string& where)> then = nullptr) {
  // (The sender first: the promise takes the message's sender over.)
  caf::strong_actor_ptr sender = self->current_sender();
  auto promise = self->make_response_promise<ProofVerdict>();
  LogWithAddressOf(self, sender, log_text,
                   [promise, verdict, then](const std::string& where) mutable {
                     promise.deliver(verdict);
                     if (then) then(where);
                   });
  return promise;
}

// Where the nonce for `from` is kept: the challenger's name and process
// (a stranger's challenge in the same name cannot replace the real node's).
std::string NonceKey(caf::event_based_actor* self, const std::string& from) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  return from + "@" + (sender ? to_string(sender->node()) : "");
}

// A Challenge: a fresh nonce for a node of the topology (at most 64
// outstanding: a flood of challenges costs a retry, not memory).
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
  const std::string key = NonceKey(self, msg.from);
  if (shared.nonces.count(key) == 0 && shared.nonces.size() >= 64) {
    auto oldest = std::min_element(shared.nonces.begin(), shared.nonces.end(),
                                   [](const auto& a, const auto& b) {
                                     return a.second.issued < b.second.issued;
                                   });
    shared.nonces.erase(oldest);
  }
  shared.nonces[key] = {*nonce, ++shared.nonces_issued};
  return *nonce;
}

// A proof whose HMAC failed: refused, and remembered with the address it
// came from (a timeout names it; logged once per address), never fatal:
// whoever sent it proved nothing, so it cannot end this node's wait for the
// real node of that name.
ProofReply RefuseUnproven(caf::event_based_actor* self,
                          const std::shared_ptr<NodeShared>& shared,
                          const Proof& msg) {
  const std::string reason =
      "node '" + Excerpt(msg.from) +
      "' does not know the cluster secret (HMAC mismatch)";
  const std::string name = Excerpt(msg.from);
  const std::string log = "node '" + shared->name + "' refused " + reason;
  return RefuseProof(
      self, "",
      // Signed with `retry`: a prover that can check the signature shares
      // the secret, so the mismatch is a stale or replaced nonce (a stranger
      // may have asked for a challenge in its name), never a reason to end.
      Signed(*shared, msg, false,
             "node '" + shared->name + "' refused this node: " + reason, 0,
             /*retry=*/true),
      [shared, name, log](const std::string& where) {
        const std::string seen =
            "a process at " + where + " claimed to be '" + name +
            "' but did not prove the cluster secret (HMAC mismatch; a "
            "different secret file?)";
        std::lock_guard<std::mutex> lock(shared->mu);
        std::vector<std::string>& r = shared->rejected;
        if (std::find(r.begin(), r.end(), seen) != r.end()) return;
        LogError(Subsystem::kNode, log + " (from " + where + ")");
        if (r.size() < 8) r.push_back(seen);
      });
}

// A Proof: checked against the nonce last issued to its sender (used
// once), then the identities compared. Accepted: a session token, and the
// sender's node actor recorded (the joining thread waits for it). A
// mismatched identity (of a peer that proved the secret) is fatal to this
// node's Join once the sender heard why; a failed HMAC is only remembered.
// Every verdict is signed (Signed).
ProofReply CheckProof(caf::event_based_actor* self,
                      const std::shared_ptr<NodeShared>& shared,
                      const Proof& msg) {
  std::unique_lock<std::mutex> lock(shared->mu);
  auto nonce = shared->nonces.find(NonceKey(self, msg.from));
  if (nonce == shared->nonces.end()) {
    lock.unlock();
    return RefuseProof(
        self,
        "node '" + shared->name + "' refused a proof from '" +
            Excerpt(msg.from) + "', which it had not challenged",
        Signed(*shared, msg, false,
               "node '" + shared->name + "': no challenge was issued to '" +
                   Excerpt(msg.from) + "'",
               0, /*retry=*/true));
  }
  const std::string expected = HmacSha256(
      shared->secret, HandshakeMessage(nonce->second.nonce, msg.from,
                                       shared->name, msg.info, msg.challenge));
  shared->nonces.erase(nonce);  // one proof per challenge
  if (!ConstantTimeEqual(expected, msg.mac)) {
    lock.unlock();
    return RefuseUnproven(self, shared, msg);
  }
  const std::string reason =
      CompareInfo(msg.from, shared->info, DecodeInfo(msg.info));
  if (!reason.empty()) {
    lock.unlock();
    return RefuseProof(
        self, "node '" + shared->name + "' refused " + reason,
        Signed(*shared, msg, false,
               "node '" + shared->name + "' refused this node: " + reason),
        [shared, reason](const std::string&) {
          std::lock_guard<std::mutex> lock(shared->mu);
          if (shared->refused.empty()) shared->refused = "refused " + reason;
          shared->changed.notify_all();
        });
  }
  StatusOr<std::string> token = RandomBytes(16);
  if (!token.ok())
    return Signed(*shared, msg, false, "no random bytes for a token");
  shared->tokens.insert(*token);
  shared->accepted[msg.from] = msg.node;
  shared->changed.notify_all();
  return Signed(*shared, msg, true, *token, SteadyMicros());
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
      [self, shared, kv](const RendezvousSet& msg) -> caf::result<bool> {
        if (!TokenValid(*shared, msg.token))
          return NoToken(self, *shared, "a rendezvous key");
        kv->values[msg.key] = msg.value;
        auto range = kv->waiting.equal_range(msg.key);
        for (auto it = range.first; it != range.second; ++it)
          it->second.deliver(msg.value);
        kv->waiting.erase(range.first, range.second);
        return true;
      },
      [self, shared, kv](const RendezvousGet& msg) -> caf::result<std::string> {
        if (!TokenValid(*shared, msg.token))
          return NoToken(self, *shared, "a rendezvous key's value");
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
      [self, shared](const ProgressQuery& msg) -> caf::result<Progress> {
        if (!TokenValid(*shared, msg.token))
          return NoToken(self, *shared, "this node's progress");
        std::lock_guard<std::mutex> lock(shared->mu);
        return Progress{shared->seq.load(std::memory_order_relaxed),
                        shared->call,
                        shared->in_call.load(std::memory_order_acquire)};
      },
  };
}

caf::actor SpawnGuarded(
    caf::actor_system& system, std::shared_ptr<NodeShared> shared,
    bool stops_when_leaving,
    std::function<caf::behavior(caf::event_based_actor*)> make) {
  return system.spawn<GuardedActor>(std::move(shared), stops_when_leaving,
                                    std::move(make));
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
    // Any connected process can send a down message naming a peer; the
    // peer's handle says whether it ended.
    if (!caf::actor_cast<caf::abstract_actor*>(peers.at(it->second).handle)
             ->getf(caf::abstract_actor::is_terminated_flag)) {
      LogWithAddress(self, "node '" + shared->name +
                               "' ignored a down message for node '" +
                               it->second + "', which did not end");
      return;
    }
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
