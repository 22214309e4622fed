#include "actors/node_actor.h"

#include <chrono>
#include <utility>
#include <vector>

#include <caf/response_promise.hpp>
#include <caf/result.hpp>
#include <caf/sec.hpp>

#include "base/digest.h"
#include "base/logging.h"
#include "base/text.h"

namespace parex {

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string HandshakeMessage(const std::string& nonce, const std::string& prover,
                             const std::string& verifier, const std::string& info) {
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

std::string CompareInfo(const std::string& peer, const std::map<std::string, std::string>& ours,
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
    return "node '" + peer + "' " + (what == kWhat.end() ? key : what->second) + " " +
           Excerpt(their, 200) + ", this node " + Excerpt(value, 200);
  }
  for (const auto& [key, value] : theirs) {
    if (ours.count(key) == 0) {
      return "node '" + peer + "' sent '" + Excerpt(key) + "', which this node does not know";
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

}  // namespace

caf::behavior NodeActor(caf::event_based_actor* self, std::shared_ptr<NodeShared> shared) {
  auto kv = std::make_shared<KvState>();
  return {
      [shared](challenge_atom, const std::string& from) -> caf::result<std::string> {
        if (shared->peers.count(from) == 0) {
          LogWarn(Subsystem::kNode,
                     "handshake from '" + Excerpt(from) + "', not a node of the topology");
          return caf::make_error(caf::sec::invalid_argument);
        }
        StatusOr<std::string> nonce = RandomBytes(32);
        if (!nonce.ok()) return caf::make_error(caf::sec::runtime_error);
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->nonces[from] = *nonce;
        return *nonce;
      },
      [shared](prove_atom, const std::string& from, const std::string& info,
               const std::string& mac,
               const caf::actor& peer) -> caf::result<bool, std::string, int64_t> {
        std::unique_lock<std::mutex> lock(shared->mu);
        auto nonce = shared->nonces.find(from);
        if (nonce == shared->nonces.end()) {
          return {false, "node '" + shared->name + "': no challenge was issued to '" +
                             Excerpt(from) + "'",
                  int64_t{0}};
        }
        const std::string expected = HmacSha256(
            shared->secret, HandshakeMessage(nonce->second, from, shared->name, info));
        shared->nonces.erase(nonce);  // one proof per challenge
        std::string reason;
        if (!ConstantTimeEqual(expected, mac)) {
          reason = "node '" + from + "' does not know the cluster secret (HMAC mismatch)";
        } else {
          reason = CompareInfo(from, shared->info, DecodeInfo(info));
        }
        if (!reason.empty()) {
          if (shared->refused.empty()) shared->refused = "refused " + reason;
          shared->changed.notify_all();
          lock.unlock();
          LogError(Subsystem::kNode, "handshake: refused " + reason);
          return {false, "node '" + shared->name + "' refused this node: " + reason,
                  int64_t{0}};
        }
        StatusOr<std::string> token = RandomBytes(16);
        if (!token.ok()) return {false, "no random bytes for a token", int64_t{0}};
        shared->tokens.insert(*token);
        shared->accepted[from] = peer;
        shared->changed.notify_all();
        return {true, *token, SteadyMicros()};
      },
      [shared, kv](kv_set_atom, const std::string& token, const std::string& key,
                   const std::string& value) -> caf::result<bool> {
        if (!TokenValid(*shared, token)) return caf::make_error(caf::sec::invalid_argument);
        kv->values[key] = value;
        auto range = kv->waiting.equal_range(key);
        for (auto it = range.first; it != range.second; ++it) it->second.deliver(value);
        kv->waiting.erase(range.first, range.second);
        return true;
      },
      [self, shared, kv](kv_get_atom, const std::string& token,
                         const std::string& key) -> caf::result<std::string> {
        if (!TokenValid(*shared, token)) return caf::make_error(caf::sec::invalid_argument);
        auto it = kv->values.find(key);
        if (it != kv->values.end()) return it->second;
        caf::response_promise rp = self->make_response_promise();
        kv->waiting.emplace(key, rp);
        return rp;
      },
  };
}

}  // namespace parex
