#include "actors/cluster/caf_store.h"

#include <gloo/common/error.h>

#include <caf/scoped_actor.hpp>

#include "actors/cluster/node_messages.h"

namespace parex {

CafStore::CafStore(caf::actor_system& system, caf::actor holder,
                   std::string token, std::string prefix,
                   std::chrono::milliseconds timeout)
    : system_(system),
      holder_(std::move(holder)),
      token_(std::move(token)),
      prefix_(std::move(prefix)),
      timeout_(timeout) {}

void CafStore::set(const std::string& key, const std::vector<char>& data) {
  caf::scoped_actor self{system_};
  std::string failure;
  self->request(holder_, timeout_,
                RendezvousSet{token_, prefix_ + key,
                              std::string(data.begin(), data.end())})
      .receive([](bool) {},
               [&](caf::error& e) { failure = system_.render(e); });
  if (!failure.empty()) {
    throw gloo::IoException("rendezvous set '" + key +
                            "' at rank 0's node: " + failure);
  }
}

std::vector<char> CafStore::Get(const std::string& key,
                                std::chrono::milliseconds timeout) {
  caf::scoped_actor self{system_};
  std::string failure;
  std::vector<char> value;
  self->request(holder_, timeout, RendezvousGet{token_, prefix_ + key})
      .receive([&](const std::string& v) { value.assign(v.begin(), v.end()); },
               [&](caf::error& e) { failure = system_.render(e); });
  if (!failure.empty()) {
    throw gloo::IoException("rendezvous get '" + key +
                            "' from rank 0's node: " + failure);
  }
  return value;
}

std::vector<char> CafStore::get(const std::string& key) {
  return Get(key, timeout_);
}

void CafStore::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void CafStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  // Gloo passes kNoTimeout (0) for "the default".
  const std::chrono::milliseconds t = timeout.count() > 0 ? timeout : timeout_;
  for (const std::string& key : keys) Get(key, t);
}

}  // namespace parex
