#include "actors/actor_runner.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

namespace parex {
namespace {

using run_atom = caf::atom_constant<caf::atom("px_run")>;
using start_atom = caf::atom_constant<caf::atom("px_start")>;
using done_atom = caf::atom_constant<caf::atom("px_done")>;

}  // namespace

struct ActorSystem::Impl {
  // The config outlives the system.
  std::unique_ptr<caf::actor_system_config> config;
  std::unique_ptr<caf::actor_system> system;
};

ActorSystem::ActorSystem(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ActorSystem::~ActorSystem() {
  impl_->system.reset();  // waits for every actor of the system
}

std::shared_ptr<ActorSystem> ActorSystem::Create(int num_threads,
                                                 bool sharing_policy) {
  if (num_threads <= 0) {
    num_threads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  auto impl = std::make_unique<Impl>();
  impl->config = std::make_unique<caf::actor_system_config>();
  impl->config->set("scheduler.max-threads", static_cast<size_t>(num_threads));
  impl->config->set("scheduler.policy", sharing_policy ? caf::atom("sharing")
                                                       : caf::atom("stealing"));
  impl->system = std::make_unique<caf::actor_system>(*impl->config);
  return std::shared_ptr<ActorSystem>(new ActorSystem(std::move(impl)));
}

struct ActorRunner::Impl {
  std::shared_ptr<const TaskGraph> graph;
  std::vector<int> roots;
  TraceRecorder* trace = nullptr;

  // Declared in destruction order's reverse: actors and the scoped actor
  // go before the system.
  std::shared_ptr<ActorSystem> owner;
  caf::actor_system* system = nullptr;
  std::unique_ptr<caf::scoped_actor> caller;
  std::vector<caf::actor> node_actors;
  caf::actor coordinator;

  // Per-step state, reset by Run before the step's first message (message
  // passing orders the reset before every read).
  std::unique_ptr<std::atomic<int>[]> pending;
  std::atomic<int> remaining{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status error;
  // Touched by the coordinator actor only.
  caf::typed_response_promise<caf::ok_atom> promise;

  void RecordError(Status s) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (error.ok()) error = std::move(s);
    failed.store(true, std::memory_order_release);
  }

  // Sends node `to` its run message (`from` -1: the coordinator).
  void SendRun(int from, int to, int64_t step) {
    const uint64_t flow = tracing() ? trace->RecordSend(step, from, to) : 0;
    caf::anon_send(node_actors[to], run_atom::value, step, flow);
  }

  bool tracing() const { return trace != nullptr && trace->enabled(); }

  void RunNode(int id, int64_t step, uint64_t flow) {
    const bool traced = tracing();
    TraceSpan span;
    if (traced) {
      span.begin_ns = trace->Now();
      if (flow != 0) trace->RecordReceive(flow, id, span.begin_ns);
    }
    span.ok = !failed.load(std::memory_order_acquire);
    if (span.ok) {
      Status s = graph->task(id, step);
      if (!s.ok()) {
        span.ok = false;
        RecordError(std::move(s));
      }
    }
    if (traced) span.task_end_ns = trace->Now();
    for (int succ : graph->nodes[id].successors) {
      if (pending[succ].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        SendRun(id, succ, step);
      }
    }
    if (traced) {
      span.step = step;
      span.node = id;
      span.bytes = graph->nodes[id].bytes;
      span.end_ns = trace->Now();
      trace->RecordSpan(span);
    }
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      caf::anon_send(coordinator, done_atom::value, step);
    }
  }
};

namespace {

// The id comes first: CAF takes a leading pointer argument for `self`.
caf::behavior NodeActor(int id, ActorRunner::Impl* impl) {
  return {[impl, id](run_atom, int64_t step, uint64_t flow) {
    impl->RunNode(id, step, flow);
  }};
}

caf::behavior CoordinatorActor(caf::event_based_actor* self,
                               ActorRunner::Impl* impl) {
  return {
      [self, impl](start_atom, int64_t step) -> caf::result<caf::ok_atom> {
        if (impl->roots.empty()) return caf::ok_atom::value;
        impl->promise = self->make_response_promise<caf::ok_atom>();
        for (int r : impl->roots) impl->SendRun(-1, r, step);
        return impl->promise;
      },
      [impl](done_atom, int64_t) { impl->promise.deliver(caf::ok_atom::value); },
  };
}

}  // namespace

StatusOr<std::unique_ptr<ActorRunner>> ActorRunner::Create(
    std::shared_ptr<const TaskGraph> graph, ActorRunnerOptions options) {
  if (graph == nullptr) return InvalidArgument("ActorRunner: no task graph");
  auto impl = std::make_unique<Impl>();
  impl->graph = std::move(graph);
  impl->trace = options.trace;
  const TaskGraph& g = *impl->graph;
  for (int i = 0; i < g.size(); ++i) {
    if (g.nodes[i].num_predecessors == 0) impl->roots.push_back(i);
  }
  if (g.size() > 0 && impl->roots.empty()) {
    return InvalidArgument("ActorRunner: the task graph has no root node");
  }
  impl->owner = options.system != nullptr
                    ? options.system
                    : ActorSystem::Create(options.num_threads,
                                          options.sharing_policy);
  impl->system = impl->owner->impl()->system.get();
  impl->pending = std::make_unique<std::atomic<int>[]>(g.size());
  impl->node_actors.reserve(g.size());
  // Every spawned function takes at least one argument (ARCHITECTURE.md:
  // CAF 0.17's init_fun_factory trap).
  for (int i = 0; i < g.size(); ++i) {
    impl->node_actors.push_back(impl->system->spawn(NodeActor, i, impl.get()));
  }
  impl->coordinator = impl->system->spawn(CoordinatorActor, impl.get());
  impl->caller = std::make_unique<caf::scoped_actor>(*impl->system);
  return std::unique_ptr<ActorRunner>(new ActorRunner(std::move(impl)));
}

ActorRunner::ActorRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ActorRunner::~ActorRunner() {
  // The actors point at this runner's state: stop them and wait until they
  // are gone (the system may be shared and live on).
  std::vector<caf::actor> all = impl_->node_actors;
  all.push_back(impl_->coordinator);
  for (const caf::actor& a : all) {
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  (*impl_->caller)->wait_for(all);
  all.clear();
  impl_->node_actors.clear();
  impl_->coordinator = nullptr;
  impl_->caller.reset();
  impl_->owner.reset();  // the last reference to the system stops it
}

Status ActorRunner::Run(int64_t step) {
  Impl& impl = *impl_;
  const TaskGraph& g = *impl.graph;
  for (int i = 0; i < g.size(); ++i) {
    impl.pending[i].store(g.nodes[i].num_predecessors, std::memory_order_relaxed);
  }
  impl.remaining.store(g.size(), std::memory_order_relaxed);
  impl.failed.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(impl.error_mu);
    impl.error = Status::Ok();
  }
  Status result;
  (*impl.caller)
      ->request(impl.coordinator, caf::infinite, start_atom::value, step)
      .receive([](caf::ok_atom) {},
               [&](caf::error& e) {
                 result = Internal("actor runtime: step " + std::to_string(step) +
                                   " failed in CAF: " + caf::to_string(e));
               });
  if (!result.ok()) return result;
  std::lock_guard<std::mutex> lock(impl.error_mu);
  return impl.error;
}

}  // namespace parex
