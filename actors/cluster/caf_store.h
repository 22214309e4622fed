// CafStore: Gloo's rendezvous store over CAF messages (no file store, no
// Redis): the keys live in rank 0's node actor (actors/cluster/node_actor.h);
// every rank's set and get are requests to it carrying the session token its
// handshake earned. get blocks the calling (Gloo) thread until the key is
// set or the timeout passes; then it throws gloo::IoException, as Gloo's
// own stores do.
#pragma once

#include <gloo/rendezvous/store.h>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace parex {

class CafStore final : public gloo::rendezvous::Store {
 public:
  // Keys are prefixed with `prefix`. The system must outlive the store.
  CafStore(caf::actor_system& system, caf::actor holder, std::string token,
           std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  std::vector<char> Get(const std::string& key,
                        std::chrono::milliseconds timeout);

  caf::actor_system& system_;
  caf::actor holder_;
  std::string token_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace parex
