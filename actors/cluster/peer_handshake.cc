#include "actors/cluster/peer_handshake.h"

#include <algorithm>
#include <caf/io/middleman.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <mutex>
#include <thread>
#include <utility>

#include "actors/cluster/node_messages.h"
#include "base/digest.h"
#include "base/logging.h"
#include "base/text.h"

namespace parex {

PeerHandshake::PeerHandshake(caf::actor_system& system,
                             const Topology& topology, int rank,
                             std::shared_ptr<NodeShared> shared,
                             caf::actor node_actor, std::string info)
    : system_(system),
      topology_(topology),
      rank_(rank),
      me_(topology.nodes[rank]),
      label_("node '" + me_.name + "'"),
      shared_(std::move(shared)),
      node_actor_(std::move(node_actor)),
      info_(std::move(info)),
      deadline_(Clock::now() +
                std::chrono::milliseconds(topology.connect_timeout_ms)),
      timeout_text_(" within connect_timeout_ms " +
                    std::to_string(topology.connect_timeout_ms) + " of " +
                    topology.path),
      self_(system) {}

Status PeerHandshake::Run() {
  PAREX_RETURN_IF_ERROR(ConnectToLaterNodes());
  PAREX_RETURN_IF_ERROR(AnswerEarlierNodes());
  PAREX_RETURN_IF_ERROR(AwaitEveryProof());
  LogInfo(Subsystem::kNode, label_ + ": handshake complete with " +
                                std::to_string(shared_->peers.size()) +
                                " peers");
  return Status::Ok();
}

std::chrono::milliseconds PeerHandshake::Left() const {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline_ - Clock::now()));
}

Status PeerHandshake::ConnectToLaterNodes() {
  for (int r = rank_ + 1; r < static_cast<int>(topology_.nodes.size()); ++r) {
    const TopologyNode& peer = topology_.nodes[r];
    PAREX_RETURN_IF_ERROR(
        ProveUntilAccepted(peer, [&] { return Connect(peer); }));
  }
  return Status::Ok();
}

Status PeerHandshake::AnswerEarlierNodes() {
  for (int r = 0; r < rank_; ++r) {
    const TopologyNode& peer = topology_.nodes[r];
    PAREX_RETURN_IF_ERROR(
        WaitFor([&] { return shared_->accepted.count(peer.name) > 0; },
                "node '" + peer.name + "' did not connect"));
    caf::actor handle;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      handle = shared_->accepted[peer.name];
    }
    PAREX_RETURN_IF_ERROR(ProveUntilAccepted(
        peer, [&]() -> StatusOr<caf::actor> { return handle; }));
  }
  return Status::Ok();
}

Status PeerHandshake::ProveUntilAccepted(
    const TopologyNode& peer,
    const std::function<StatusOr<caf::actor>()>& reach) {
  for (int attempt = 0;; ++attempt) {
    StatusOr<caf::actor> handle = reach();
    if (!handle.ok()) return handle.status();
    StatusOr<bool> accepted = Prove(peer, *handle);
    if (!accepted.ok()) return accepted.status();
    if (*accepted) {
      peers_[peer.name] = *handle;
      return Status::Ok();
    }
    if (Clock::now() >= deadline_) {
      return Aborted(label_ + ": node '" + peer.name + "' at " + peer.host +
                     ":" + std::to_string(peer.port) +
                     " did not prove that it knows the cluster secret" +
                     timeout_text_ + ": " +
                     (unproven_.empty()
                          ? "the process there did not answer in time"
                          : Noted()));
    }
    std::this_thread::sleep_for(std::min(
        Left(), std::chrono::milliseconds(100 << std::min(attempt, 4))));
  }
}

void PeerHandshake::NoteUnproven(const std::string& what) {
  if (unproven_.size() >= 8 ||
      std::find(unproven_.begin(), unproven_.end(), what) != unproven_.end())
    return;
  unproven_.push_back(what);
  LogError(Subsystem::kNode,
           label_ + ": " + what + "; ignored, waiting for the real node");
}

std::string PeerHandshake::Noted() const {
  std::string text;
  for (const std::string& u : unproven_) text += (text.empty() ? "" : "; ") + u;
  return text;
}

Status PeerHandshake::AwaitEveryProof() {
  return WaitFor(
      [&] { return shared_->accepted.size() == shared_->peers.size(); },
      "not every node completed the handshake");
}

StatusOr<caf::actor> PeerHandshake::Connect(const TopologyNode& peer) {
  std::string last_error;
  while (true) {
    caf::expected<caf::actor> remote =
        topology_.tls()
            ? caf::openssl::remote_actor<caf::actor>(
                  system_, peer.host, static_cast<uint16_t>(peer.port))
            : system_.middleman().remote_actor(
                  peer.host, static_cast<uint16_t>(peer.port));
    if (remote) return *remote;
    last_error = system_.render(remote.error());
    if (Clock::now() >= deadline_) {
      return Aborted(
          label_ + ": node '" + peer.name + "' at " + peer.host + ":" +
          std::to_string(peer.port) + " did not answer" + timeout_text_ +
          " (last: " + last_error + ")" +
          (unproven_.empty() ? "" : "; meanwhile " + Noted()) +
          (topology_.tls()
               ? "; with TLS, a node whose certificate the topology's "
                 "ca did not sign, or that does not trust this node's, "
                 "is disconnected during the TLS handshake"
               : ""));
    }
    {
      // A refusal seen meanwhile ends the wait early.
      std::lock_guard<std::mutex> lock(shared_->mu);
      if (!shared_->refused.empty())
        return FailedPrecondition(label_ + " " + shared_->refused);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

StatusOr<bool> PeerHandshake::Prove(const TopologyNode& peer,
                                    const caf::actor& handle) {
  const std::string process = "a process at " + peer.host + ":" +
                              std::to_string(peer.port) + " claimed to be '" +
                              peer.name + "' but ";
  std::string nonce, failure;
  self_->request(handle, Left(), Challenge{me_.name})
      .receive([&](const std::string& n) { nonce = n; },
               [&](caf::error& e) { failure = system_.render(e); });
  // (A request that ran into the deadline says nothing of the peer.)
  const auto note = [&](const std::string& what) {
    if (Clock::now() < deadline_) NoteUnproven(process + what);
    return false;
  };
  if (!failure.empty())
    return note("answered the challenge with an error: " + failure);
  StatusOr<std::string> challenge = RandomBytes(32);
  if (!challenge.ok()) return challenge.status();
  const std::string mac = HmacSha256(
      topology_.secret,
      HandshakeMessage(nonce, me_.name, peer.name, info_, *challenge));
  ProofVerdict verdict;
  const int64_t t0 = SteadyMicros();
  self_
      ->request(handle, Left(),
                Proof{me_.name, info_, mac, node_actor_, *challenge})
      .receive([&](const ProofVerdict& v) { verdict = v; },
               [&](caf::error& e) { failure = system_.render(e); });
  const int64_t t1 = SteadyMicros();
  if (!failure.empty())
    return note("answered the proof with an error: " + failure);
  const std::string expected =
      HmacSha256(topology_.secret,
                 VerdictMessage(*challenge, me_.name, peer.name, verdict));
  if (!ConstantTimeEqual(expected, verdict.mac)) {
    return note("did not prove the cluster secret (it answered: " +
                Excerpt(verdict.text, 200) + "; a different secret file?)");
  }
  if (verdict.retry) return false;  // a new challenge may pass
  if (!verdict.accepted) return FailedPrecondition(verdict.text);
  tokens_[peer.name] = verdict.text;
  if (topology_.Rank(peer.name) == 0) {
    // Rank 0's clock read halfway through the round trip.
    clock_offset_us_ = verdict.clock_us - (t0 + t1) / 2;
    clock_rtt_us_ = t1 - t0;
  }
  return true;
}

Status PeerHandshake::WaitFor(const std::function<bool()>& done,
                              const std::string& what) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  while (true) {
    if (!shared_->refused.empty()) {
      return FailedPrecondition(label_ + " " + shared_->refused);
    }
    if (done()) return Status::Ok();
    if (shared_->changed.wait_until(lock, deadline_) ==
            std::cv_status::timeout &&
        !done()) {
      if (!shared_->refused.empty())
        return FailedPrecondition(label_ + " " + shared_->refused);
      std::string seen;
      for (const std::string& r : shared_->rejected)
        seen += (seen.empty() ? "" : "; ") + r;
      return Aborted(
          label_ + ": " + what + timeout_text_ +
          (seen.empty() ? "" : " (refused meanwhile: " + seen + ")"));
    }
  }
}

}  // namespace parex
