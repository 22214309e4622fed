#include "actors/actor_runner.h"

#include <atomic>
#include <condition_variable>
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
                                                 SchedulerPolicy policy,
                                                 int spin_us) {
  if (num_threads <= 0) {
    num_threads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  auto impl = std::make_unique<Impl>();
  impl->config = std::make_unique<caf::actor_system_config>();
  impl->config->set("scheduler.max-threads", static_cast<size_t>(num_threads));
  // Idle workers poll only when each can have a core: with more workers
  // than cores a polling worker takes time from a working one.
  if (static_cast<unsigned>(num_threads) > std::thread::hardware_concurrency()) {
    spin_us = 0;
  }
  UseSchedulerPolicy(*impl->config, policy, spin_us);
  impl->system = std::make_unique<caf::actor_system>(*impl->config);
  return std::shared_ptr<ActorSystem>(new ActorSystem(std::move(impl)));
}

struct ActorRunner::Impl {
  std::shared_ptr<const TaskGraph> graph;
  // Chains: maximal paths u -> v = ChainNext(graph)[u] (task_graph.h): v
  // runs on u's place and is ready the moment u finishes. A chain is one
  // actor that runs its nodes in order: after u it sends u's other
  // successors their messages, then runs v at once, as a thread pool runs
  // the first successor it made ready. Only chain heads are sent messages;
  // v's other predecessors (all before u) decrement its counter, which u
  // never brings to zero.
  std::vector<std::vector<int>> chains;
  std::vector<int> chain_of;  // node -> its chain
  std::vector<int> roots;     // heads without predecessors
  TraceRecorder* trace = nullptr;

  // Declared in destruction order's reverse: actors and the scoped actor
  // go before the system.
  std::shared_ptr<ActorSystem> owner;
  caf::actor_system* system = nullptr;
  std::unique_ptr<caf::scoped_actor> caller;
  std::vector<caf::actor> node_actors;  // one per chain
  caf::actor coordinator;

  // Per-step state, reset by Run before the step's first message (message
  // passing orders the reset before every read).
  std::unique_ptr<std::atomic<int>[]> pending;
  std::atomic<int> remaining{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status error;
  // The coordinator's answer to Run: set when a step's last node finished.
  // (A condition variable, not a CAF response to a scoped actor: waking a
  // thread this way costs the caller about a third of a request/receive.)
  std::mutex step_mu;
  std::condition_variable step_cv;
  bool step_done = false;  // guarded by step_mu

  // Set by Run before the start message (which orders it before every
  // read); read by the coordinator actor only.
  const StepHooks* hooks = nullptr;

  // The coordinator's part once a step's nodes are done (`ran`) or were
  // never started: the end hook, then the answer to Run.
  void EndStep(bool ran) {
    if (hooks != nullptr && hooks->end) {
      Status s = hooks->end(ran, !failed.load(std::memory_order_acquire));
      if (!s.ok()) RecordError(std::move(s));
    }
    FinishStep();
  }

  void FinishStep() {
    {
      std::lock_guard<std::mutex> lock(step_mu);
      step_done = true;
    }
    step_cv.notify_one();
  }

  void RecordError(Status s) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (error.ok()) error = std::move(s);
    failed.store(true, std::memory_order_release);
  }

  // `self` sends the chain headed by node `to` its run message (`from` -1:
  // the coordinator). Sent from an actor, the message carries the worker it
  // runs on, so the scheduler can run the receiver there next.
  void SendRun(caf::event_based_actor* self, int from, int to, int64_t step) {
    const uint64_t flow = tracing() ? trace->RecordSend(step, from, to) : 0;
    self->send(node_actors[chain_of[to]], run_atom::value, step, flow);
  }

  bool tracing() const { return trace != nullptr && trace->enabled(); }

  void RunChain(caf::event_based_actor* self, int chain, int64_t step,
                uint64_t flow) {
    const std::vector<int>& nodes = chains[chain];
    const bool traced = tracing();
    for (size_t k = 0; k < nodes.size(); ++k) {
      const int id = nodes[k];
      const bool tail = k + 1 == nodes.size();
      TraceSpan span;
      if (traced) {
        span.begin_ns = trace->Now();
        if (k == 0 && flow != 0) trace->RecordReceive(flow, id, span.begin_ns);
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
      const int next = tail ? -1 : nodes[k + 1];
      for (int succ : graph->nodes[id].successors) {
        if (succ == next) continue;
        if (pending[succ].fetch_sub(1, std::memory_order_acq_rel) == 1) {
          SendRun(self, id, succ, step);
        }
      }
      if (traced) {
        span.step = step;
        span.node = id;
        span.bytes = graph->nodes[id].bytes;
        span.end_ns = trace->Now();
        trace->RecordSpan(span);
      }
    }
    const int n = static_cast<int>(nodes.size());
    if (remaining.fetch_sub(n, std::memory_order_acq_rel) == n) {
      self->send(coordinator, done_atom::value, step);
    }
  }
};

namespace {

caf::behavior ChainActor(caf::event_based_actor* self, int chain,
                         ActorRunner::Impl* impl) {
  return {[self, impl, chain](run_atom, int64_t step, uint64_t flow) {
    impl->RunChain(self, chain, step, flow);
  }};
}

// The chains of `g` (see Impl::chains); every node its own chain when
// `fuse` is off.
void BuildChains(const TaskGraph& g, bool fuse, ActorRunner::Impl* impl) {
  const int n = g.size();
  const std::vector<int> next = fuse ? ChainNext(g) : std::vector<int>(n, -1);
  std::vector<bool> has_prev(n, false);
  for (int u = 0; u < n; ++u) {
    if (next[u] >= 0) has_prev[next[u]] = true;
  }
  impl->chain_of.assign(n, -1);
  for (int head = 0; head < n; ++head) {
    if (has_prev[head]) continue;
    const int chain = static_cast<int>(impl->chains.size());
    impl->chains.emplace_back();
    for (int u = head; u >= 0; u = next[u]) {
      impl->chains.back().push_back(u);
      impl->chain_of[u] = chain;
    }
    if (g.nodes[head].num_predecessors == 0) impl->roots.push_back(head);
  }
}

caf::behavior CoordinatorActor(caf::event_based_actor* self,
                               ActorRunner::Impl* impl) {
  return {
      [self, impl](start_atom, int64_t step) {
        if (impl->hooks != nullptr && impl->hooks->begin) {
          Status s = impl->hooks->begin();
          if (!s.ok()) {
            impl->RecordError(std::move(s));
            impl->EndStep(false);
            return;
          }
        }
        if (impl->roots.empty()) {
          impl->EndStep(true);
          return;
        }
        for (int r : impl->roots) impl->SendRun(self, -1, r, step);
      },
      [impl](done_atom, int64_t) { impl->EndStep(true); },
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
  BuildChains(g, options.fuse_chains, impl.get());
  if (g.size() > 0 && impl->roots.empty()) {
    return InvalidArgument("ActorRunner: the task graph has no root node");
  }
  impl->owner = options.system != nullptr
                    ? options.system
                    : ActorSystem::Create(options.num_threads,
                                          options.scheduler);
  impl->system = impl->owner->impl()->system.get();
  impl->pending = std::make_unique<std::atomic<int>[]>(g.size());
  impl->node_actors.reserve(impl->chains.size());
  // Every spawned function takes at least one argument (ARCHITECTURE.md:
  // CAF 0.17's init_fun_factory trap).
  for (size_t c = 0; c < impl->chains.size(); ++c) {
    impl->node_actors.push_back(
        impl->system->spawn(ChainActor, static_cast<int>(c), impl.get()));
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

int ActorRunner::num_actors() const {
  return static_cast<int>(impl_->node_actors.size());
}

Status ActorRunner::Run(int64_t step, const StepHooks* hooks) {
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
  if (g.size() == 0 && hooks == nullptr) return Status::Ok();
  impl.hooks = hooks;
  impl.step_done = false;  // no actor touches it between steps
  caf::anon_send(impl.coordinator, start_atom::value, step);
  {
    std::unique_lock<std::mutex> lock(impl.step_mu);
    impl.step_cv.wait(lock, [&impl] { return impl.step_done; });
  }
  std::lock_guard<std::mutex> lock(impl.error_mu);
  return impl.error;
}

}  // namespace parex
