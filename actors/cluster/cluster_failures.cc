// Cluster's failure paths (Cluster::Impl in actors/cluster/cluster_impl.h):
// a lost peer recorded and what it interrupts, the failure this node
// announces before it exits, and what a failed cross-node call is told
// (the lost nodes, or a stall report).
#include <caf/scoped_actor.hpp>
#include <chrono>
#include <mutex>
#include <utility>

#include "actors/cluster/cluster.h"
#include "actors/cluster/cluster_impl.h"
#include "actors/cluster/node_messages.h"
#include "base/logging.h"

namespace parex {

void Cluster::Impl::OnLost(const std::string& node, const std::string& why) {
  std::string where;
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    if (shared->leaving) return;
    for (const auto& [name, reason] : shared->lost) {
      if (name == node) return;
    }
    shared->lost.emplace_back(node, why);
    shared->changed.notify_all();
    const int64_t seq = shared->seq.load(std::memory_order_relaxed);
    where =
        shared->in_call.load(std::memory_order_acquire)
            ? "in " + shared->call + " (collective #" + std::to_string(seq) +
                  ")"
            : "while computing (its last collective: " +
                  (seq == 0 ? std::string("none")
                            : "#" + std::to_string(seq) + " " + shared->call) +
                  ")";
  }
  const int r = topology.Rank(node);
  const std::string who =
      r < 0 ? "node '" + node + "'"
            : "node '" + node + "' (rank " + std::to_string(r) + ", " +
                  topology.nodes[r].host + ":" +
                  std::to_string(topology.nodes[r].port) + ")";
  const Status status =
      Aborted(who + " was lost: " + why + "; " + label + " stopped " + where);
  LogError(Subsystem::kNode, status.message());
  std::shared_ptr<Communicator> target;
  {
    std::lock_guard<std::mutex> lock(mu);
    target = cross_target;
  }
  if (target != nullptr) target->Interrupt(status);
  // Under the lock: SetLostHandler(nullptr) returns only once no handler
  // runs (its target may be destroyed next).
  std::lock_guard<std::mutex> lock(mu);
  if (on_lost) on_lost(status);
}

void Cluster::AnnounceFailure(const Status& error) {
  {
    std::lock_guard<std::mutex> lock(impl_->shared->mu);
    if (impl_->shared->leaving) return;
  }
  caf::scoped_actor self{*impl_->system};
  for (const auto& [name, handle] : impl_->peers) {
    auto token = impl_->tokens.find(name);
    if (token == impl_->tokens.end()) continue;
    self->request(handle, std::chrono::milliseconds(500),
                  PeerLost{token->second, node().name,
                           "it ended with an error: " + error.message()})
        .receive([](bool) {}, [](caf::error&) {});
  }
}

void Cluster::SetLostHandler(std::function<void(const Status&)> handler) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->on_lost = std::move(handler);
}

std::string Cluster::Explain(int64_t seq, bool timed_out) {
  NodeShared& shared = *impl_->shared;
  {
    // A closed connection reaches Gloo and the peer monitors at about the
    // same moment: give the monitors a moment to name the node.
    std::unique_lock<std::mutex> lock(shared.mu);
    const auto wait = std::chrono::milliseconds(timed_out ? 0 : 2000);
    shared.changed.wait_for(lock, wait, [&] { return !shared.lost.empty(); });
    if (!shared.lost.empty()) return impl_->LostNodesLocked();
  }
  // A stall report (also when a connection closed and no node was lost: a
  // peer that timed out first closes its connections, and the others must
  // still name the stalled node).
  return impl_->StallReport(seq, timed_out);
}

std::string Cluster::Impl::LostNodesLocked() const {
  std::string text;
  for (const auto& [node, why] : shared->lost) {
    const int r = topology.Rank(node);
    text +=
        (text.empty() ? "" : "; ") + ("node '" + node + "' (rank " +
                                      std::to_string(r) + ") was lost: " + why);
  }
  return text;
}

std::vector<std::pair<int, std::optional<Progress>>>
Cluster::Impl::AskProgress() {
  caf::scoped_actor self{*system};
  using Asked = decltype(self->request(caf::actor{}, std::chrono::seconds(1),
                                       ProgressQuery{}));
  std::vector<std::pair<int, Asked>> asked;
  for (int r = 0; r < static_cast<int>(topology.nodes.size()); ++r) {
    if (r == rank) continue;
    const std::string& name = topology.nodes[r].name;
    auto it = peers.find(name);
    if (it == peers.end()) continue;
    const std::string peer_token = tokens.count(name) ? tokens.at(name) : "";
    asked.emplace_back(r, self->request(it->second, std::chrono::seconds(1),
                                        ProgressQuery{peer_token}));
  }
  std::vector<std::pair<int, std::optional<Progress>>> answers;
  for (auto& [r, answer] : asked) {
    std::optional<Progress> progress;
    answer.receive([&](const Progress& p) { progress = p; },
                   [&](caf::error&) {});
    answers.emplace_back(r, std::move(progress));
  }
  return answers;
}

std::string Cluster::Impl::StallReport(int64_t seq, bool timed_out) {
  // Not joined: the silent first (the likely cause), then those behind
  // (often waiting on the silent one, in the collective before).
  std::vector<std::string> silent, behind, joined;
  joined.push_back("node '" + topology.nodes[rank].name + "' (rank " +
                   std::to_string(rank) + ", this node)");
  for (const auto& [r, progress] : AskProgress()) {
    const std::string who =
        "node '" + topology.nodes[r].name + "' (rank " + std::to_string(r);
    if (!progress) {
      silent.push_back(who +
                       ": no answer within 1 s: stopped, hung or unreachable)");
    } else if (progress->seq > seq ||
               (progress->seq == seq && progress->in_call)) {
      joined.push_back(
          who + (progress->seq == seq ? ", waiting in it)" : ", past it)"));
    } else if (progress->seq == seq) {
      joined.push_back(who + ", done with it)");
    } else {
      behind.push_back(who + ": " +
                       (progress->in_call ? "waiting in" : "computing after") +
                       " collective #" + std::to_string(progress->seq) + " " +
                       progress->call + ")");
    }
  }
  std::string report =
      timed_out
          ? "stall report: no progress for collective_timeout_ms " +
                std::to_string(topology.collective_timeout_ms) + " ms; "
          : std::string(
                "stall report (a Gloo connection closed, no node is lost): ");
  std::vector<std::string> missing = silent;
  missing.insert(missing.end(), behind.begin(), behind.end());
  if (missing.empty()) {
    report += "every node had joined this collective (a network stall?)";
  } else {
    report += "not joined by ";
    for (size_t i = 0; i < missing.size(); ++i)
      report += (i ? ", " : "") + missing[i];
  }
  report += "; joined by ";
  for (size_t i = 0; i < joined.size(); ++i)
    report += (i ? ", " : "") + joined[i];
  return report;
}

}  // namespace parex
