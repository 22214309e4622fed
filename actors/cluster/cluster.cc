#include "actors/cluster/cluster.h"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <utility>

#include "actors/cluster/caf_store.h"
#include "actors/cluster/node_actor.h"
#include "actors/cluster/tls_material.h"
#include "actors/comm/gloo_communicator.h"
#include "actors/comm/hierarchical_communicator.h"
#include "base/digest.h"
#include "base/logging.h"

#ifndef PAREX_VERSION
#define PAREX_VERSION "0.0.0"
#endif

namespace parex {

std::string ParexVersion() { return PAREX_VERSION; }

struct Cluster::Impl {
  std::unique_ptr<caf::actor_system_config> config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor node_actor;
  caf::actor watcher;  // monitors the peers once the handshake is done
  // What a lost peer interrupts (set once they exist; `mu` guards them).
  std::mutex mu;
  std::shared_ptr<GlooCommunicator> gloo_target;
  std::function<void(const Status&)> on_lost;
  std::shared_ptr<NodeShared> shared;
  std::map<std::string, caf::actor> peers;  // name -> node actor
  std::shared_ptr<GlooCommunicator> gloo;
  uint16_t port = 0;
  caf::actor holder;  // rank 0's node actor (the rendezvous keys)
  std::map<std::string, std::string>
      tokens;         // peer -> the token it gave this node
  std::string token;  // what this node shows it
  int64_t timeout_ms = 60000;
  // Set as each witnessed actor ends (see Witness).
  std::vector<std::future<void>> ended;

  // CAF 0.17 shutdown race (LeakSanitizer in CI, about 1 two-node run in
  // 10 under load): a peer that holds a proxy of a local actor has the BASP
  // broker monitor it; when the actor ends while the middleman stops, its
  // down message reaches the broker's mailbox after the multiplexer thread
  // has gone, and the broker with its connections is never freed. ~Impl
  // therefore ends every such actor (ours and CAF's SpawnServ and
  // ConfigServ, which peers query) and waits for its witness before the
  // system stops. CAF calls an actor's attachables newest first, so a
  // witness attached before any peer could ask for a proxy runs after the
  // broker's monitor: once it ran, that down message is queued while the
  // broker still runs.
  void Witness(const caf::strong_actor_ptr& actor) {
    if (actor == nullptr) return;
    auto done = std::make_shared<std::promise<void>>();
    ended.push_back(done->get_future());
    caf::actor_cast<caf::abstract_actor*>(actor)->attach_functor(
        [done](const caf::error&) { done->set_value(); });
  }
  void Witness(const caf::actor& actor) {
    Witness(caf::actor_cast<caf::strong_actor_ptr>(actor));
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu);
      gloo_target.reset();
      on_lost = nullptr;
    }
    gloo.reset();
    if (system != nullptr) {
      if (watcher)
        caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
      watcher = nullptr;
      if (node_actor) {
        system->middleman().unpublish(node_actor, port);
        caf::anon_send_exit(node_actor, caf::exit_reason::user_shutdown);
      }
      peers.clear();
      node_actor = nullptr;
      for (caf::atom_value name :
           {caf::atom("SpawnServ"), caf::atom("ConfigServ")}) {
        caf::strong_actor_ptr internal = system->registry().get(name);
        if (internal)
          caf::anon_send_exit(internal, caf::exit_reason::user_shutdown);
      }
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(10);
      for (std::future<void>& f : ended) {
        if (f.wait_until(deadline) != std::future_status::ready) {
          LogWarn(Subsystem::kNode,
                  "an actor of this node did not end within 10 s of leaving");
          break;
        }
      }
      system.reset();
    }
  }
};

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds Left(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - Clock::now()));
}

}  // namespace

StatusOr<std::unique_ptr<Cluster>> Cluster::Join(
    const Topology& topology, const std::string& node_name,
    std::map<std::string, std::string> identity) {
  const int rank = topology.Rank(node_name);
  if (rank < 0) {
    std::string names;
    for (const TopologyNode& n : topology.nodes)
      names += (names.empty() ? "" : ", ") + n.name;
    return NotFound(topology.path + ": no node '" + node_name +
                    "' (nodes: " + names + ")");
  }
  IgnoreSigpipeUnlessHandled();  // a vanished peer is an error, not a signal
  std::unique_ptr<Cluster> cluster(new Cluster());
  cluster->topology_ = topology;
  cluster->rank_ = rank;
  cluster->impl_ = std::make_unique<Impl>();
  Impl& impl = *cluster->impl_;
  const TopologyNode& me = topology.nodes[rank];
  const std::string label = "node '" + me.name + "'";

  identity["version"] = ParexVersion();
  identity["topology"] = topology.fingerprint;
  auto shared = std::make_shared<NodeShared>();
  shared->secret = topology.secret;
  shared->name = me.name;
  for (const TopologyNode& n : topology.nodes) {
    if (n.name != me.name) shared->peers.insert(n.name);
  }
  shared->info = identity;
  shared->tls = topology.tls();
  const std::string info = EncodeInfo(identity);
  impl.shared = shared;

  // A lost peer (the watcher or a peer's report): recorded once, then
  // every wait of this node on the cluster is interrupted with an error
  // naming it and where this node was.
  // (Raw pointers: the actors that call it hold `shared`, and ~Impl clears
  // what it reaches of Impl and waits for them; the topology is a copy.)
  Impl* impl_ptr = &impl;
  NodeShared* shared_ptr = shared.get();
  shared->on_lost = [impl_ptr, shared = shared_ptr, topo = topology, label](
                        const std::string& node, const std::string& why) {
    std::string where;
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      if (shared->leaving) return;
      for (const auto& [name, reason] : shared->lost) {
        if (name == node) return;
      }
      shared->lost.emplace_back(node, why);
      shared->changed.notify_all();
      where = shared->in_call
                  ? "in " + shared->call + " (collective #" +
                        std::to_string(shared->seq) + ")"
                  : "while computing (its last collective: " +
                        (shared->seq == 0 ? std::string("none")
                                          : "#" + std::to_string(shared->seq) +
                                                " " + shared->call) +
                        ")";
    }
    const int r = topo.Rank(node);
    const std::string who =
        r < 0 ? "node '" + node + "'"
              : "node '" + node + "' (rank " + std::to_string(r) + ", " +
                    topo.nodes[r].host + ":" +
                    std::to_string(topo.nodes[r].port) + ")";
    const Status status =
        Aborted(who + " was lost: " + why + "; " + label + " stopped " + where);
    LogError(Subsystem::kNode, status.message());
    std::shared_ptr<GlooCommunicator> gloo;
    {
      std::lock_guard<std::mutex> lock(impl_ptr->mu);
      gloo = impl_ptr->gloo_target;
    }
    if (gloo != nullptr) gloo->Interrupt(status);
    // Under the lock: SetLostHandler(nullptr) returns only once no handler
    // runs (its target may be destroyed next).
    std::lock_guard<std::mutex> lock(impl_ptr->mu);
    if (impl_ptr->on_lost) impl_ptr->on_lost(status);
  };

  if (topology.tls()) PAREX_RETURN_IF_ERROR(CheckTlsMaterial(topology));
  impl.config = std::make_unique<caf::actor_system_config>();
  impl.config->load<caf::io::middleman>();
  if (topology.tls()) {
    impl.config->load<caf::openssl::manager>();
    impl.config->openssl_certificate = topology.tls_cert;
    impl.config->openssl_key = topology.tls_key;
    impl.config->openssl_cafile = topology.tls_ca;
  }
  impl.config->set("scheduler.max-threads", static_cast<size_t>(2));
  impl.config->set("scheduler.policy", caf::atom("sharing"));
  // Heartbeats: a peer silent for heartbeat_timeout_ms (hung, stopped,
  // partitioned) is disconnected, which its monitors see as lost.
  impl.config->set("middleman.heartbeat-interval",
                   caf::timespan{std::chrono::milliseconds(
                       topology.heartbeat_timeout_ms / 4)});
  impl.config->set(
      "middleman.connection-timeout",
      caf::timespan{std::chrono::milliseconds(topology.heartbeat_timeout_ms)});
  impl.system = std::make_unique<caf::actor_system>(*impl.config);
  caf::actor_system& system = *impl.system;
  impl.Witness(system.registry().get(caf::atom("SpawnServ")));
  impl.Witness(system.registry().get(caf::atom("ConfigServ")));
  impl.node_actor = system.spawn(NodeActor, shared);
  impl.Witness(impl.node_actor);
  // The topology's address only: CAF binds the listening socket to `host`
  // (SO_REUSEADDR, so a restarted node gets its port back while the last
  // run's connections linger in TIME_WAIT; Linux still refuses a second
  // listener).
  caf::expected<uint16_t> port =
      topology.tls() ? caf::openssl::publish(impl.node_actor,
                                             static_cast<uint16_t>(me.port),
                                             me.host.c_str(), /*reuse=*/true)
                     : system.middleman().publish(
                           impl.node_actor, static_cast<uint16_t>(me.port),
                           me.host.c_str(), /*reuse=*/true);
  if (!port) {
    return IoError(label + ": cannot listen on " + me.host + ":" +
                   std::to_string(me.port) + ": " +
                   system.render(port.error()));
  }
  impl.port = *port;
  LogInfo(Subsystem::kNode, label + " (rank " + std::to_string(rank) +
                                ") listening on " + me.host + ":" +
                                std::to_string(me.port));

  const auto deadline =
      Clock::now() + std::chrono::milliseconds(topology.connect_timeout_ms);
  const std::string timeout_text = " within connect_timeout_ms " +
                                   std::to_string(topology.connect_timeout_ms) +
                                   " of " + topology.path;
  std::map<std::string, std::string> tokens;  // peer -> the token it gave us
  caf::scoped_actor self{system};

  // Proves this node to `peer` (challenge, HMAC, identity).
  auto prove = [&](const TopologyNode& peer,
                   const caf::actor& handle) -> Status {
    std::string nonce, failure;
    self->request(handle, Left(deadline), challenge_atom::value, me.name)
        .receive([&](const std::string& n) { nonce = n; },
                 [&](caf::error& e) { failure = system.render(e); });
    if (!failure.empty()) {
      return Aborted(label + ": handshake with node '" + peer.name + "' at " +
                     peer.host + ":" + std::to_string(peer.port) +
                     " failed: " + failure);
    }
    const std::string mac = HmacSha256(
        topology.secret, HandshakeMessage(nonce, me.name, peer.name, info));
    bool ok = false;
    std::string text;
    int64_t their_clock = 0;
    const int64_t t0 = SteadyMicros();
    self->request(handle, Left(deadline), prove_atom::value, me.name, info, mac,
                  impl.node_actor)
        .receive(
            [&](bool accepted, const std::string& t, int64_t clock) {
              ok = accepted;
              text = t;
              their_clock = clock;
            },
            [&](caf::error& e) { failure = system.render(e); });
    const int64_t t1 = SteadyMicros();
    if (!failure.empty()) {
      return Aborted(label + ": handshake with node '" + peer.name +
                     "' failed: " + failure);
    }
    if (!ok) return FailedPrecondition(text);
    tokens[peer.name] = text;
    if (topology.Rank(peer.name) == 0) {
      cluster->clock_offset_us_ = their_clock - (t0 + t1) / 2;
      cluster->clock_rtt_us_ = t1 - t0;
    }
    return Status::Ok();
  };
  // Waits until `done` holds of the shared state, a proof was refused, or
  // the deadline passed.
  auto wait_for = [&](const std::function<bool()>& done,
                      const std::string& what) -> Status {
    std::unique_lock<std::mutex> lock(shared->mu);
    while (true) {
      if (!shared->refused.empty()) {
        return FailedPrecondition(label + " " + shared->refused);
      }
      if (done()) return Status::Ok();
      if (shared->changed.wait_until(lock, deadline) ==
              std::cv_status::timeout &&
          !done()) {
        if (!shared->refused.empty())
          return FailedPrecondition(label + " " + shared->refused);
        std::string seen;
        for (const std::string& r : shared->rejected)
          seen += (seen.empty() ? "" : "; ") + r;
        return Aborted(
            label + ": " + what + timeout_text +
            (seen.empty() ? "" : " (refused meanwhile: " + seen + ")"));
      }
    }
  };

  // 1. Connect to the nodes ranked after this one and prove this node.
  for (int r = rank + 1; r < cluster->size(); ++r) {
    const TopologyNode& peer = topology.nodes[r];
    caf::actor handle;
    std::string last_error;
    while (true) {
      caf::expected<caf::actor> remote =
          topology.tls()
              ? caf::openssl::remote_actor<caf::actor>(
                    system, peer.host, static_cast<uint16_t>(peer.port))
              : system.middleman().remote_actor(
                    peer.host, static_cast<uint16_t>(peer.port));
      if (remote) {
        handle = *remote;
        break;
      }
      last_error = system.render(remote.error());
      if (Clock::now() >= deadline) {
        return Aborted(
            label + ": node '" + peer.name + "' at " + peer.host + ":" +
            std::to_string(peer.port) + " did not answer" + timeout_text +
            " (last: " + last_error + ")" +
            (topology.tls()
                 ? "; with TLS, a node whose certificate the topology's "
                   "ca did not sign, or that does not trust this node's, "
                   "is disconnected during the TLS handshake"
                 : ""));
      }
      {
        // A refusal seen meanwhile ends the wait early.
        std::lock_guard<std::mutex> lock(shared->mu);
        if (!shared->refused.empty())
          return FailedPrecondition(label + " " + shared->refused);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    PAREX_RETURN_IF_ERROR(prove(peer, handle));
    impl.peers[peer.name] = handle;
  }
  // 2. The nodes ranked before this one prove themselves first; then this
  //    node proves itself to each of them.
  for (int r = 0; r < rank; ++r) {
    const TopologyNode& peer = topology.nodes[r];
    PAREX_RETURN_IF_ERROR(
        wait_for([&] { return shared->accepted.count(peer.name) > 0; },
                 "node '" + peer.name + "' did not connect"));
    caf::actor handle;
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      handle = shared->accepted[peer.name];
    }
    PAREX_RETURN_IF_ERROR(prove(peer, handle));
    impl.peers[peer.name] = handle;
  }
  // 3. Every peer proved itself to this node.
  PAREX_RETURN_IF_ERROR(
      wait_for([&] { return shared->accepted.size() == shared->peers.size(); },
               "not every node completed the handshake"));
  LogInfo(Subsystem::kNode, label + ": handshake complete with " +
                                std::to_string(shared->peers.size()) +
                                " peers");
  {
    // From now on a peer that goes is lost (and named).
    std::map<std::string, WatchedPeer> watched;
    for (const auto& [name, handle] : impl.peers) {
      const TopologyNode& n = topology.nodes[topology.Rank(name)];
      watched[name] = WatchedPeer{handle, tokens[name], n.host, n.port};
    }
    impl.watcher = system.spawn(WatchActor, shared, std::move(watched));
    impl.Witness(impl.watcher);
  }

  // 4. Gloo, rendezvous at rank 0's node actor.
  std::vector<std::string> names;
  for (const TopologyNode& n : topology.nodes)
    names.push_back("node '" + n.name + "'");
  caf::actor holder;
  std::string token;
  if (rank == 0) {
    StatusOr<std::string> own = RandomBytes(16);
    if (!own.ok()) return own.status();
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->tokens.insert(*own);
    token = *own;
    holder = impl.node_actor;
  } else {
    holder = impl.peers[topology.nodes[0].name];
    token = tokens[topology.nodes[0].name];
  }
  impl.holder = holder;
  impl.token = token;
  impl.tokens = tokens;
  impl.timeout_ms = topology.connect_timeout_ms;
  // One node too: a Gloo context of one rank is what the executor talks to.
  // The communicator keeps the store: each collective's first call meets
  // its peers through it (a Gloo context per collective).
  auto store = std::make_shared<CafStore>(
      system, holder, token, "gloo/",
      std::chrono::milliseconds(topology.connect_timeout_ms));
  StatusOr<std::shared_ptr<GlooCommunicator>> gloo = GlooCommunicator::Connect(
      store, rank, cluster->size(), me.host,
      std::chrono::milliseconds(topology.collective_timeout_ms), names);
  if (!gloo.ok()) return gloo.status();
  impl.gloo = *gloo;
  // Progress for the peers' stall reports, and what this node knows added
  // to a failed call.
  impl.gloo->SetObserver(
      [shared = shared_ptr](int64_t seq, Collective collective,
                            std::string_view name, bool entering) {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->seq = seq;
        shared->in_call = entering;
        if (entering) {
          shared->call.assign(CollectiveName(collective));
          shared->call += " '";
          shared->call.append(name.data(), name.size());
          shared->call += "'";
        }
      });
  impl.gloo->SetExplainer(
      [cluster_ptr = cluster.get()](const GlooCommunicator::Failure& f) {
        return cluster_ptr->Explain(f.seq, f.timed_out);
      });
  {
    std::lock_guard<std::mutex> lock(impl.mu);
    impl.gloo_target = impl.gloo;
  }
  {
    // A peer lost before now (during the rendezvous) interrupts it too.
    std::lock_guard<std::mutex> lock(shared->mu);
    if (!shared->lost.empty()) {
      return Aborted(
          label + ": node '" + shared->lost[0].first +
          "' was lost while the cluster connected: " + shared->lost[0].second);
    }
  }
  return cluster;
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
    self->request(handle, std::chrono::milliseconds(500), lost_atom::value,
                  token->second, node().name,
                  "it ended with an error: " + error.message())
        .receive([](bool) {}, [](caf::error&) {});
  }
}

void Cluster::SetLostHandler(std::function<void(const Status&)> handler) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->on_lost = std::move(handler);
}

std::string Cluster::Explain(int64_t seq, bool timed_out) {
  NodeShared& shared = *impl_->shared;
  auto lost_text = [&]() {
    std::string text;
    for (const auto& [node, why] : shared.lost) {
      const int r = topology_.Rank(node);
      text += (text.empty() ? "" : "; ") +
              ("node '" + node + "' (rank " + std::to_string(r) +
               ") was lost: " + why);
    }
    return text;
  };
  {
    // A closed connection reaches Gloo and the peer monitors at about the
    // same moment: give the monitors a moment to name the node.
    std::unique_lock<std::mutex> lock(shared.mu);
    const auto wait = std::chrono::milliseconds(timed_out ? 0 : 2000);
    shared.changed.wait_for(lock, wait, [&] { return !shared.lost.empty(); });
    if (!shared.lost.empty()) return lost_text();
  }
  // A stall report: where every peer is, asked over the nodes' own
  // connections (not Gloo's): all asked at once, each given a second. (Also
  // when a connection closed and no node was lost: a peer that timed out first
  // closes its connections, and the others must still name the stalled
  // node.)
  caf::scoped_actor self{*impl_->system};
  // Not joined: the silent first (the likely cause), then those behind
  // (often waiting on the silent one, in the collective before).
  std::vector<std::string> silent, behind, joined;
  joined.push_back("node '" + node().name + "' (rank " + std::to_string(rank_) +
                   ", this node)");
  using Asked = decltype(self->request(caf::actor{}, std::chrono::seconds(1),
                                       stat_atom::value, std::string()));
  std::vector<std::pair<int, Asked>> asked;
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    const std::string& name = topology_.nodes[r].name;
    auto it = impl_->peers.find(name);
    if (it == impl_->peers.end()) continue;
    const std::string token =
        impl_->tokens.count(name) ? impl_->tokens.at(name) : "";
    asked.emplace_back(r, self->request(it->second, std::chrono::seconds(1),
                                        stat_atom::value, token));
  }
  for (auto& [r, answer] : asked) {
    const std::string who =
        "node '" + topology_.nodes[r].name + "' (rank " + std::to_string(r);
    bool answered = false;
    int64_t their_seq = 0;
    std::string their_call;
    bool their_in_call = false;
    answer.receive(
        [&](int64_t s, const std::string& call, bool in_call) {
          answered = true;
          their_seq = s;
          their_call = call;
          their_in_call = in_call;
        },
        [&](caf::error&) {});
    if (!answered) {
      silent.push_back(who +
                       ": no answer within 1 s: stopped, hung or unreachable)");
    } else if (their_seq > seq || (their_seq == seq && their_in_call)) {
      joined.push_back(who +
                       (their_seq == seq ? ", waiting in it)" : ", past it)"));
    } else if (their_seq == seq) {
      joined.push_back(who + ", done with it)");
    } else {
      behind.push_back(
          who + ": " + (their_in_call ? "waiting in" : "computing after") +
          " collective #" + std::to_string(their_seq) + " " + their_call + ")");
    }
  }
  std::string report =
      timed_out
          ? "stall report: no progress for collective_timeout_ms " +
                std::to_string(topology_.collective_timeout_ms) + " ms; "
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

Cluster::~Cluster() = default;

std::shared_ptr<Communicator> Cluster::MakeCommunicator() const {
  return std::make_shared<HierarchicalCommunicator>(
      node().places, impl_->gloo, world_places(), first_place());
}

Communicator& Cluster::cross() const { return *impl_->gloo; }

Status Cluster::BroadcastPersistables(Scope* scope,
                                      const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    Variable* var = scope->FindVar(name);
    if (var == nullptr || !var->IsTensor() || !var->GetTensor()->defined()) {
      return NotFound("node '" + node().name + "': persistable '" + name +
                      "' is not initialised, so rank 0's cannot replace it");
    }
    Tensor* t = var->GetMutableTensor();
    PlaceTensors one = {t};
    PAREX_RETURN_IF_ERROR(impl_->gloo->Broadcast("init:" + name, one, 0));
  }
  return Status::Ok();
}

Status Cluster::SumAcrossNodes(std::vector<double>* values,
                               const std::string& what) {
  Tensor t(DType::kFP64, {static_cast<int64_t>(values->size())});
  std::copy(values->begin(), values->end(), t.data<double>());
  PlaceTensors one = {&t};
  PAREX_RETURN_IF_ERROR(impl_->gloo->AllReduce(what, one));
  std::copy(t.data<double>(), t.data<double>() + values->size(),
            values->begin());
  return Status::Ok();
}

Status Cluster::Leave() {
  PAREX_RETURN_IF_ERROR(Barrier("leave"));
  {
    // Every node reached the end: a peer that goes now has finished.
    std::lock_guard<std::mutex> lock(impl_->shared->mu);
    impl_->shared->leaving = true;
  }
  if (impl_->watcher) {
    caf::anon_send_exit(impl_->watcher, caf::exit_reason::user_shutdown);
    impl_->watcher = nullptr;
  }
  if (size() == 1) return Status::Ok();
  CafStore store(*impl_->system, impl_->holder, impl_->token, "leave/",
                 std::chrono::milliseconds(impl_->timeout_ms));
  try {
    store.set(std::to_string(rank_), {'1'});
    for (int r = 0; r < size(); ++r) store.get(std::to_string(r));
  } catch (const std::exception& e) {
    LogWarn(Subsystem::kNode,
            "node '" + node().name + "' leaving: " + e.what());
  }
  return Status::Ok();
}

Status Cluster::Barrier(const std::string& what) {
  std::vector<double> one = {1};
  PAREX_RETURN_IF_ERROR(SumAcrossNodes(&one, what));
  if (one[0] != size()) {
    return Internal("barrier '" + what + "': " + std::to_string(one[0]) +
                    " of " + std::to_string(size()) + " nodes");
  }
  return Status::Ok();
}

}  // namespace parex
