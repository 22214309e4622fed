#include "actors/cluster/cluster.h"

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <chrono>
#include <utility>

#include "actors/cluster/caf_store.h"
#include "actors/cluster/cluster_impl.h"
#include "actors/cluster/node_messages.h"
#include "actors/cluster/peer_handshake.h"
#include "actors/cluster/tls_material.h"
#include "actors/comm/hierarchical_communicator.h"
#include "actors/comm/mpi_communicator.h"
#include "base/cycle_clock.h"
#include "base/digest.h"
#include "base/logging.h"

#ifndef PAREX_VERSION
#define PAREX_VERSION "0.0.0"
#endif

namespace parex {

std::string ParexVersion() { return PAREX_VERSION; }

Cluster::Impl::Impl(const Topology& topology, int rank)
    : topology(topology),
      rank(rank),
      label("node '" + topology.nodes[rank].name + "'") {}

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
void Cluster::Impl::Witness(const caf::strong_actor_ptr& actor) {
  if (actor == nullptr) return;
  auto done = std::make_shared<std::promise<void>>();
  ended.push_back(done->get_future());
  caf::actor_cast<caf::abstract_actor*>(actor)->attach_functor(
      [done](const caf::error&) { done->set_value(); });
}

void Cluster::Impl::Witness(const caf::actor& actor) {
  Witness(caf::actor_cast<caf::strong_actor_ptr>(actor));
}

Cluster::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(mu);
    cross_target.reset();
    on_lost = nullptr;
  }
  cross.reset();
  gloo.reset();
  if (system == nullptr) return;
  {
    // From now on the guarded actors take exit messages (SpawnGuarded).
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->stopping = true;
  }
  if (watcher) caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
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
  AwaitWitnessed(deadline);
  KeepBaspBroker(*system);
  system.reset();
}

// CAF 0.17.6's brokers never close their mailbox: abstract_broker::cleanup
// calls local_actor::cleanup, skipping scheduled_actor::cleanup, which closes
// and empties it. The BASP broker sends itself a heartbeat tick through the
// system's clock every heartbeat interval, so one tick is always pending;
// when it comes due after the broker ended and before the clock stops (a
// window of a few milliseconds in system.reset(): about 1 node exit in 20
// for a pserver, measured), it stays in the mailbox, and the tick's sender is
// the broker itself. That cycle is never freed: LeakSanitizer reported the
// broker, its tables and the tick. So every node keeps a reference to its
// BASP broker until the process ends, held from a never-destroyed list:
// reachable, never destroyed after its system (which would be
// use-after-free), a few KB per cluster a process makes.
void Cluster::Impl::KeepBaspBroker(caf::actor_system& system) {
  static auto* const mu = new std::mutex();
  static auto* const kept = new std::vector<caf::actor>();
  caf::actor basp =
      system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  std::lock_guard<std::mutex> lock(*mu);
  kept->push_back(std::move(basp));
}

void Cluster::Impl::AwaitWitnessed(
    std::chrono::steady_clock::time_point deadline) {
  for (std::future<void>& f : ended) {
    if (f.wait_until(deadline) != std::future_status::ready) {
      LogWarn(Subsystem::kNode,
              "an actor of this node did not end within 10 s of leaving");
      return;
    }
  }
}

void Cluster::Impl::Share(const std::map<std::string, std::string>& identity) {
  const TopologyNode& me = topology.nodes[rank];
  shared = std::make_shared<NodeShared>();
  shared->secret = topology.secret;
  shared->name = me.name;
  for (const TopologyNode& n : topology.nodes) {
    if (n.name != me.name) shared->peers.insert(n.name);
  }
  shared->info = identity;
  shared->tls = topology.tls();
  // (`this`: the actors that call it hold `shared`, and ~Impl clears what
  // it reaches of Impl and waits for them before its members go.)
  shared->on_lost = [this](const std::string& node, const std::string& why) {
    OnLost(node, why);
  };
}

Status Cluster::Impl::StartSystem() {
  if (topology.tls()) PAREX_RETURN_IF_ERROR(CheckTlsMaterial(topology));
  config = std::make_unique<caf::actor_system_config>();
  config->add_message_types<caf::id_block::parex_node>();
  config->load<caf::io::middleman>();
  if (topology.tls()) {
    config->load<caf::openssl::manager>();
    config->openssl_certificate = topology.tls_cert;
    config->openssl_key = topology.tls_key;
    config->openssl_cafile = topology.tls_ca;
  }
  config->set("scheduler.max-threads", static_cast<size_t>(2));
  config->set("scheduler.policy", caf::atom("sharing"));
  // Heartbeats: a peer silent for heartbeat_timeout_ms (hung, stopped,
  // partitioned) is disconnected, which its monitors see as lost.
  config->set("middleman.heartbeat-interval",
              caf::timespan{std::chrono::milliseconds(
                  topology.heartbeat_timeout_ms / 4)});
  config->set(
      "middleman.connection-timeout",
      caf::timespan{std::chrono::milliseconds(topology.heartbeat_timeout_ms)});
  system = std::make_unique<caf::actor_system>(*config);
  Witness(system->registry().get(caf::atom("SpawnServ")));
  Witness(system->registry().get(caf::atom("ConfigServ")));
  return Status::Ok();
}

Status Cluster::Impl::Publish() {
  const TopologyNode& me = topology.nodes[rank];
  node_actor = SpawnGuarded(*system, shared, /*stops_when_leaving=*/false,
                            [shared = shared](caf::event_based_actor* self) {
                              return NodeActor(self, shared);
                            });
  Witness(node_actor);
  // The topology's address only: CAF binds the listening socket to `host`
  // (SO_REUSEADDR, so a restarted node gets its port back while the last
  // run's connections linger in TIME_WAIT; Linux still refuses a second
  // listener).
  caf::expected<uint16_t> published =
      topology.tls()
          ? caf::openssl::publish(node_actor, static_cast<uint16_t>(me.port),
                                  me.host.c_str(), /*reuse=*/true)
          : system->middleman().publish(node_actor,
                                        static_cast<uint16_t>(me.port),
                                        me.host.c_str(), /*reuse=*/true);
  if (!published) {
    return IoError(label + ": cannot listen on " + me.host + ":" +
                   std::to_string(me.port) + ": " +
                   system->render(published.error()));
  }
  port = *published;
  LogInfo(Subsystem::kNode, label + " (rank " + std::to_string(rank) +
                                ") listening on " + me.host + ":" +
                                std::to_string(me.port));
  return Status::Ok();
}

void Cluster::Impl::StartWatcher(const PeerHandshake& handshake) {
  peers = handshake.peers();
  tokens = handshake.tokens();
  std::map<std::string, WatchedPeer> watched;
  for (const auto& [name, handle] : peers) {
    const TopologyNode& n = topology.nodes[topology.Rank(name)];
    watched[name] = WatchedPeer{handle, tokens[name], n.host, n.port};
  }
  watcher =
      SpawnGuarded(*system, shared, /*stops_when_leaving=*/true,
                   [shared = shared, watched](caf::event_based_actor* self) {
                     return WatchActor(self, shared, watched);
                   });
  Witness(watcher);
}

Status Cluster::Impl::ChooseHolder() {
  if (rank != 0) {
    holder = peers[topology.nodes[0].name];
    token = tokens[topology.nodes[0].name];
    return Status::Ok();
  }
  StatusOr<std::string> own = RandomBytes(16);
  if (!own.ok()) return own.status();
  std::lock_guard<std::mutex> lock(shared->mu);
  shared->tokens.insert(*own);
  token = *own;
  holder = node_actor;
  return Status::Ok();
}

std::vector<std::string> Cluster::Impl::RankNames() const {
  std::vector<std::string> names;
  for (const TopologyNode& n : topology.nodes)
    names.push_back("node '" + n.name + "'");
  return names;
}

Status Cluster::Impl::ConnectGloo(Cluster* cluster) {
  const std::vector<std::string> names = RankNames();
  // One node too: a Gloo context of one rank is what the executor talks to.
  // The communicator keeps the store: each collective's first call meets
  // its peers through it (a Gloo context per collective).
  auto store = std::make_shared<CafStore>(
      *system, holder, token, "gloo/",
      std::chrono::milliseconds(topology.connect_timeout_ms));
  StatusOr<std::shared_ptr<GlooCommunicator>> connected =
      GlooCommunicator::Connect(
          store, rank, static_cast<int>(topology.nodes.size()),
          topology.nodes[rank].host,
          std::chrono::milliseconds(topology.collective_timeout_ms), names);
  if (!connected.ok()) return connected.status();
  gloo = *connected;
  gloo->SetObserver(Observer());
  gloo->SetExplainer([cluster](const GlooCommunicator::Failure& f) {
    return cluster->Explain(f.seq, f.timed_out);
  });
  cross = gloo;
  std::lock_guard<std::mutex> lock(mu);
  cross_target = cross;
  return Status::Ok();
}

Status Cluster::Impl::ConnectMpi() {
  PAREX_ASSIGN_OR_RETURN(
      std::shared_ptr<MpiCommunicator> mpi,
      MpiCommunicator::Connect(rank, static_cast<int>(topology.nodes.size()),
                               RankNames()));
  mpi->SetObserver(Observer());
  cross = mpi;
  std::lock_guard<std::mutex> lock(mu);
  cross_target = cross;
  return Status::Ok();
}

CollectiveObserver Cluster::Impl::Observer() {
  // Called around every call (one at a time): the lock is taken only when
  // the call's text is made anew, for a call of another name or kind (a
  // step's calls come round again by name).
  CycleClock::Start();
  return [shared = shared.get()](int64_t seq, Collective collective,
                                 std::string_view name, bool entering) {
    const int64_t now = CycleClock::Now();
    if (!entering) {
      shared->in_call.store(false, std::memory_order_release);
      // The observer is the sums' one writer (one call at a time): a load
      // and a store, not a locked read-modify-write.
      std::atomic<int64_t>& sum =
          shared->own_calls.load(std::memory_order_relaxed) > 0
              ? shared->own_call_ticks
              : shared->step_call_ticks;
      sum.store(sum.load(std::memory_order_relaxed) + now - shared->call_began,
                std::memory_order_relaxed);
      return;
    }
    if (shared->call_kind != static_cast<int>(collective) ||
        shared->call_name != name) {
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->call_kind = static_cast<int>(collective);
      shared->call_name.assign(name.data(), name.size());
      shared->call.assign(CollectiveName(collective));
      shared->call += " '";
      shared->call += ShownName(name);
      shared->call += "'";
    }
    shared->call_began = now;
    shared->seq.store(seq, std::memory_order_relaxed);
    shared->in_call.store(true, std::memory_order_release);
  };
}

Status Cluster::Impl::NoneLostWhileConnecting() {
  std::lock_guard<std::mutex> lock(shared->mu);
  if (shared->lost.empty()) return Status::Ok();
  return Aborted(
      label + ": node '" + shared->lost[0].first +
      "' was lost while the cluster connected: " + shared->lost[0].second);
}

namespace {

Status NoSuchNode(const Topology& topology, const std::string& node_name) {
  std::string names;
  for (const TopologyNode& n : topology.nodes)
    names += (names.empty() ? "" : ", ") + n.name;
  return NotFound(topology.path + ": no node '" + node_name +
                  "' (nodes: " + names + ")");
}

}  // namespace

StatusOr<std::unique_ptr<Cluster>> Cluster::Join(
    const Topology& topology, const std::string& node_name,
    std::map<std::string, std::string> identity) {
  const int rank = topology.Rank(node_name);
  if (rank < 0) return NoSuchNode(topology, node_name);
  IgnoreSigpipeUnlessHandled();  // a vanished peer is an error, not a signal
  std::unique_ptr<Cluster> cluster(new Cluster());
  cluster->topology_ = topology;
  cluster->rank_ = rank;
  cluster->impl_ = std::make_unique<Impl>(topology, rank);
  Impl& impl = *cluster->impl_;

  identity["version"] = ParexVersion();
  identity["topology"] = topology.fingerprint;
  impl.Share(identity);
  PAREX_RETURN_IF_ERROR(impl.StartSystem());
  PAREX_RETURN_IF_ERROR(impl.Publish());
  // (After `cluster`: its scoped actor goes before the actor system.)
  PeerHandshake handshake(*impl.system, impl.topology, rank, impl.shared,
                          impl.node_actor, EncodeInfo(identity));
  PAREX_RETURN_IF_ERROR(handshake.Run());
  cluster->clock_offset_us_ = handshake.clock_offset_us();
  cluster->clock_rtt_us_ = handshake.clock_rtt_us();
  impl.StartWatcher(handshake);
  PAREX_RETURN_IF_ERROR(impl.ChooseHolder());
  PAREX_RETURN_IF_ERROR(topology.backend == "mpi"
                            ? impl.ConnectMpi()
                            : impl.ConnectGloo(cluster.get()));
  // A peer lost before now (during the rendezvous) interrupts it too.
  PAREX_RETURN_IF_ERROR(impl.NoneLostWhileConnecting());
  return cluster;
}

Cluster::~Cluster() = default;

std::shared_ptr<Communicator> Cluster::MakeCommunicator() const {
  return std::make_shared<HierarchicalCommunicator>(
      node().places, impl_->cross, world_places(), first_place());
}

std::shared_ptr<Communicator> Cluster::MakePserverCommunicator(
    std::map<std::string, PserverShard> shards, int max_staleness) const {
  std::vector<std::string> names;
  std::vector<int> trainers;
  for (const TopologyNode& n : topology_.nodes) {
    if (!n.pserver) trainers.push_back(static_cast<int>(names.size()));
    names.push_back(n.name);
  }
  std::vector<Place> places = node().places;
  if (node().pserver) places.resize(1);
  return std::make_shared<PserverCommunicator>(
      std::move(places), impl_->gloo, std::move(names), node().pserver,
      std::move(trainers), std::move(shards), max_staleness);
}

Communicator& Cluster::cross() const { return *impl_->cross; }

// While alive, the Gloo calls this thread makes are the cluster's own (the
// observer's account, Cluster::collective_time).
class Cluster::OwnCalls {
 public:
  explicit OwnCalls(NodeShared* shared) : shared_(shared) {
    shared_->own_calls.fetch_add(1, std::memory_order_relaxed);
  }
  ~OwnCalls() { shared_->own_calls.fetch_sub(1, std::memory_order_relaxed); }
  OwnCalls(const OwnCalls&) = delete;
  OwnCalls& operator=(const OwnCalls&) = delete;

 private:
  NodeShared* shared_;
};

Cluster::CollectiveTime Cluster::collective_time() const {
  const NodeShared& shared = *impl_->shared;
  const double rate = CycleClock::TicksPerSecond();  // one rate for both
  return CollectiveTime{
      shared.step_call_ticks.load(std::memory_order_relaxed) / rate,
      shared.own_call_ticks.load(std::memory_order_relaxed) / rate};
}

Status Cluster::BroadcastPersistables(Scope* scope,
                                      const std::vector<std::string>& names) {
  OwnCalls own(impl_->shared.get());
  for (const std::string& name : names) {
    Variable* var = scope->FindVar(name);
    if (var == nullptr || !var->IsTensor() || !var->GetTensor()->defined()) {
      return NotFound("node '" + node().name + "': persistable '" + name +
                      "' is not initialised, so rank 0's cannot replace it");
    }
    Tensor* t = var->GetMutableTensor();
    PlaceTensors one = {t};
    PAREX_RETURN_IF_ERROR(impl_->cross->Broadcast("init:" + name, one, 0));
  }
  return Status::Ok();
}

Status Cluster::SumAcrossNodes(std::vector<double>* values,
                               const std::string& what) {
  OwnCalls own(impl_->shared.get());
  Tensor t(DType::kFP64, {static_cast<int64_t>(values->size())});
  std::copy(values->begin(), values->end(), t.data<double>());
  PlaceTensors one = {&t};
  PAREX_RETURN_IF_ERROR(impl_->cross->AllReduce(what, one));
  std::copy(t.data<double>(), t.data<double>() + values->size(),
            values->begin());
  return Status::Ok();
}

Status Cluster::FailTogether() {
  PAREX_RETURN_IF_ERROR(Barrier("failing together"));
  std::lock_guard<std::mutex> lock(impl_->shared->mu);
  impl_->shared->leaving = true;
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
                 std::chrono::milliseconds(topology_.connect_timeout_ms));
  try {
    store.set(std::to_string(rank_), {'1'});
    for (int r = 0; r < size(); ++r) store.get(std::to_string(r));
  } catch (const std::exception& e) {
    LogWarn(Subsystem::kNode,
            "node '" + node().name + "' leaving: " + e.what());
    return Status::Ok();
  }
  // Rank 0 holds the keys: it goes last, once every node has had its
  // answers (a reply still on its way when rank 0's system stops is lost,
  // and its asker would wait out connect_timeout_ms). The others' last word
  // is not waited for long: rank 0 may go as soon as it has it.
  CafStore gone(*impl_->system, impl_->holder, impl_->token, "gone/",
                std::chrono::milliseconds(500));
  try {
    if (rank_ != 0) {
      gone.set(std::to_string(rank_), {'1'});
    } else {
      for (int r = 1; r < size(); ++r) gone.get(std::to_string(r));
    }
  } catch (const std::exception& e) {
    LogDebug(Subsystem::kNode,
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
