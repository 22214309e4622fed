#include "actors/runtime/actor_runner.h"

#include <caf/actor_system.hpp>
#include <caf/execution_unit.hpp>
#include <caf/logger.hpp>
#include <caf/resumable.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <limits>
#include <utility>
#include <vector>

#include "actors/runtime/collective_actor.h"
#include "actors/runtime/coordinator_actor.h"
#include "actors/runtime/job_ring.h"
#include "actors/runtime/op_actor.h"
#include "actors/runtime/runner_state.h"
#include "actors/runtime/stream_actor.h"
#include "base/spin_lock.h"

namespace parex {

namespace {

// Run's caller as a CAF execution unit (ActorRunnerOptions::caller_runs):
// CAF hands an actor made runnable by a message sent from this unit to
// exec_later, and Drain resumes it on the calling thread, as the worker
// loop (scheduler_policy.cc) resumes its jobs. Only the calling thread
// touches the ring: CAF calls exec_later from an actor this unit is running
// or from a send the caller makes through it.
class CallerUnit final : public caf::execution_unit {
 public:
  explicit CallerUnit(caf::actor_system* system)
      : caf::execution_unit(system) {}

  void exec_later(caf::resumable* job) override { jobs_.push_back(job); }

  // Resumes jobs until none is left.
  void Drain() {
#if CAF_LOG_LEVEL == CAF_LOG_LEVEL_QUIET
    // As the workers do: no logger bookkeeping per resume.
    caf::logger::set_current_actor_system(nullptr);
#endif
    while (!jobs_.empty()) {
      caf::resumable* job = jobs_.front();
      jobs_.pop_front();
      switch (job->resume(this, std::numeric_limits<size_t>::max())) {
        case caf::resumable::resume_later:
          jobs_.push_back(job);  // still runnable: it keeps its reference
          break;
        case caf::resumable::done:
        case caf::resumable::awaiting_message:
        case caf::resumable::shutdown_execution_unit:
          intrusive_ptr_release(job);
          break;
      }
    }
  }

 private:
  JobRing jobs_;
};

}  // namespace

struct ActorRunner::Impl {
  // Declared in destruction order's reverse: the state (which owns the
  // message pool the actors' mailboxes return elements to) goes last.
  std::shared_ptr<WorkerPool> owner;
  std::unique_ptr<RunnerState> state;
  StepControl control;
  int caller_poll_us = 0;
  std::unique_ptr<CallerUnit> caller_unit;  // when the caller runs steps
  std::unique_ptr<caf::scoped_actor> caller;

  std::vector<caf::actor> AllActors() const {
    std::vector<caf::actor> all = state->op_actors;
    all.insert(all.end(), state->collective_actors.begin(),
               state->collective_actors.end());
    all.insert(all.end(), state->stream_actors.begin(),
               state->stream_actors.end());
    all.push_back(state->coordinator);
    return all;
  }
};

namespace {

// The chains of `g` (RunnerState::chains); every node its own chain when
// `fuse` is off. Collectives belong to their communicator's actor.
void BuildChains(const TaskGraph& g, bool fuse, RunnerState* rt) {
  const int n = g.size();
  const std::vector<int> next = fuse ? ChainNext(g) : std::vector<int>(n, -1);
  std::vector<bool> has_prev(n, false);
  for (int u = 0; u < n; ++u) {
    if (next[u] >= 0) has_prev[next[u]] = true;
  }
  rt->chain_of.assign(n, -1);
  rt->chain_pos.assign(n, -1);
  for (int head = 0; head < n; ++head) {
    if (g.nodes[head].num_predecessors == 0) rt->roots.push_back(head);
    if (has_prev[head] || g.nodes[head].communicator >= 0) continue;
    const int chain = static_cast<int>(rt->chains.size());
    rt->chains.emplace_back();
    for (int u = head; u >= 0; u = next[u]) {
      rt->chain_pos[u] = static_cast<int>(rt->chains.back().size());
      rt->chains.back().push_back(u);
      rt->chain_of[u] = chain;
    }
  }
}

// Per node, its asynchronous predecessors on another stream.
Status BuildStreamInputs(const TaskGraph& g, RunnerState* rt) {
  const int n = g.size();
  rt->cross_stream_inputs.assign(n, {});
  for (int u = 0; u < n; ++u) {
    const int su = g.nodes[u].stream_actor;
    if (su < 0) continue;
    for (int v : g.nodes[u].successors) {
      const int sv = g.nodes[v].stream_actor;
      if (sv < 0) {
        return Unimplemented("actor runner: " + g.nodes[v].label +
                             " runs synchronously but reads the output of " +
                             g.nodes[u].label + " on stream " +
                             g.streams[su].name);
      }
      if (sv != su) rt->cross_stream_inputs[v].push_back(u);
    }
  }
  rt->wait_marks.assign(n, {});
  for (int v = 0; v < n; ++v) {
    rt->wait_marks[v].assign(rt->cross_stream_inputs[v].size(), 0);
  }
  return Status::Ok();
}

// The per-node and per-stream counters of `g`'s steps, its events, and the
// message elements a step needs.
void AllocateStepState(const TaskGraph& g, RunnerState* state) {
  RunnerState& rt = *state;
  rt.pending = std::make_unique<std::atomic<int>[]>(g.size());
  rt.completed = std::make_unique<std::atomic<int64_t>[]>(g.size());
  for (int i = 0; i < g.size(); ++i) rt.completed[i].store(0);
  const size_t streams = g.streams.size();
  rt.stream_issued = std::make_unique<std::atomic<int64_t>[]>(streams);
  rt.stream_done = std::make_unique<std::atomic<int64_t>[]>(streams);
  for (size_t s = 0; s < streams; ++s) {
    rt.stream_issued[s].store(0);
    rt.stream_done[s].store(0);
  }
  rt.node_clock.assign(static_cast<size_t>(g.size()) * streams, 0);
  rt.node_events.resize(g.size());
  for (int i = 0; i < g.size(); ++i) {
    const int s = g.nodes[i].stream_actor;
    if (s >= 0 && g.streams[s].device != nullptr) {
      rt.node_events[i] = g.streams[s].device->CreateEvent();
    }
  }
  // A node is sent at most one RunNode and one StreamWork per step; a few
  // of the previous step's may not be back in the pool yet.
  rt.pool.Reserve<RunNode>(g.size() + 8);
  if (!g.streams.empty()) rt.pool.Reserve<StreamWork>(g.size() + 8);
  rt.pool.Reserve<StepStart>(2);
  rt.pool.Reserve<StepDone>(2);
}

// The step's actors, spawned in `system`, and who receives each node's
// RunNode.
void SpawnActors(caf::actor_system& system, StepControl* control,
                 RunnerState* state) {
  RunnerState& rt = *state;
  const TaskGraph& g = *rt.graph;
  const size_t streams = g.streams.size();
  // The coordinator first: every other actor may message it.
  // The actors start lazily, on their first message: one the step's first
  // message reaches starts on the thread that runs it (the caller, with
  // caller_runs), not on a worker that takes its start job first.
  rt.coordinator = system.spawn<CoordinatorActor, caf::lazy_init>(&rt, control);
  for (size_t s = 0; s < streams; ++s) {
    rt.stream_actors.push_back(
        system.spawn<StreamActor, caf::detached>(&rt, static_cast<int>(s)));
  }
  for (size_t c = 0; c < g.communicators.size(); ++c) {
    auto order = std::make_unique<CollectiveOrder>();
    order->position.assign(g.size(), -1);
    for (int id = 0; id < g.size(); ++id) {
      if (g.nodes[id].communicator != static_cast<int>(c)) continue;
      order->position[id] = static_cast<int>(order->order.size());
      order->order.push_back(id);
    }
    const size_t n = order->order.size();
    order->slots = std::make_unique<CollectiveOrder::Slot[]>(n);
    rt.collective_order.push_back(std::move(order));
  }
  for (size_t c = 0; c < g.communicators.size(); ++c) {
    const int id = static_cast<int>(c);
    rt.collective_actors.push_back(
        g.communicators[c].blocking
            ? system.spawn<CollectiveActor, caf::detached>(&rt, id)
            : system.spawn<CollectiveActor, caf::lazy_init>(&rt, id));
  }
  for (size_t c = 0; c < rt.chains.size(); ++c) {
    rt.op_actors.push_back(
        system.spawn<OpActor, caf::lazy_init>(&rt, static_cast<int>(c)));
  }
  rt.feeds_local_collective.assign(g.size(), 0);
  for (int i = 0; i < g.size(); ++i) {
    for (int succ : g.nodes[i].successors) {
      const int comm = g.nodes[succ].communicator;
      if (comm >= 0 && !g.communicators[comm].blocking) {
        rt.feeds_local_collective[i] = 1;
      }
    }
  }
  rt.receiver.resize(g.size());
  for (int i = 0; i < g.size(); ++i) {
    const int comm = g.nodes[i].communicator;
    if (comm >= 0) {
      rt.receiver[i] = rt.collective_actors[comm];
    } else if (rt.chain_of[i] >= 0) {
      rt.receiver[i] = rt.op_actors[rt.chain_of[i]];
    }
  }
}

}  // namespace

StatusOr<std::unique_ptr<ActorRunner>> ActorRunner::Create(
    std::shared_ptr<const TaskGraph> graph, ActorRunnerOptions options) {
  if (graph == nullptr) return InvalidArgument("ActorRunner: no task graph");
  auto impl = std::make_unique<Impl>();
  impl->caller_poll_us = options.caller_poll_us;
  impl->state = std::make_unique<RunnerState>();
  RunnerState& rt = *impl->state;
  rt.graph = std::move(graph);
  rt.trace = options.trace;
  rt.stream_wait = options.stream_wait;
  rt.skip_wait_producer = options.skip_wait_producer;
  rt.skip_wait_consumer = options.skip_wait_consumer;
  rt.caller_runs = options.caller_runs;
  const TaskGraph& g = *rt.graph;
  BuildChains(g, options.fuse_chains, &rt);
  if (g.size() > 0 && rt.roots.empty()) {
    return InvalidArgument("ActorRunner: the task graph has no root node");
  }
  PAREX_RETURN_IF_ERROR(BuildStreamInputs(g, &rt));
  impl->owner =
      options.system != nullptr
          ? options.system
          : WorkerPool::Create(options.num_threads, options.scheduler);
  caf::actor_system& system = impl->owner->system();
  AllocateStepState(g, &rt);
  SpawnActors(system, &impl->control, &rt);
  impl->caller = std::make_unique<caf::scoped_actor>(system);
  if (options.caller_runs) {
    impl->caller_unit = std::make_unique<CallerUnit>(&system);
  }
  return std::unique_ptr<ActorRunner>(new ActorRunner(std::move(impl)));
}

ActorRunner::ActorRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ActorRunner::~ActorRunner() {
  // The actors point at this runner's state: stop them and wait until they
  // are gone (the system may be shared and live on).
  RunnerState& rt = *impl_->state;
  rt.failed.store(true);
  rt.WakeWaiters();  // a stream waiting for an event
  std::vector<caf::actor> all = impl_->AllActors();
  for (const caf::actor& a : all) {
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  (*impl_->caller)->wait_for(all);
  all.clear();
  rt.receiver.clear();
  rt.op_actors.clear();
  rt.collective_actors.clear();
  rt.stream_actors.clear();
  rt.coordinator = nullptr;
  impl_->caller.reset();
  impl_->state.reset();
  impl_->owner.reset();  // the last reference to the system stops it
}

int ActorRunner::num_actors() const {
  return static_cast<int>(impl_->state->op_actors.size());
}
int ActorRunner::num_collective_actors() const {
  return static_cast<int>(impl_->state->collective_actors.size());
}
int ActorRunner::num_stream_actors() const {
  return static_cast<int>(impl_->state->stream_actors.size());
}

RunnerState* ActorRunner::state() const { return impl_->state.get(); }

void ActorRunner::set_stream_wait(StreamWaitStrategy strategy) {
  impl_->state->stream_wait = strategy;
}

void ActorRunner::Abort(const Status& reason) {
  caf::anon_send(
      impl_->state->coordinator,
      AbortStep{-1, static_cast<int32_t>(reason.code()), reason.message()});
}

Status ActorRunner::Run(int64_t step, const StepHooks* hooks) {
  Impl& impl = *impl_;
  if (impl.state->graph->size() == 0 && hooks == nullptr) return Status::Ok();
  StepControl& control = impl.control;
  control.hooks = hooks;
  control.done = false;  // no actor touches it between steps
  control.finished.store(false, std::memory_order_relaxed);
  if (impl.caller_unit != nullptr) {
    impl.state->pool.SendVia(impl.caller_unit.get(), impl.state->coordinator,
                             StepStart{step});
    impl.caller_unit->Drain();
  } else {
    impl.state->pool.Send(nullptr, impl.state->coordinator, StepStart{step});
  }
  // A step that ends within the poll wakes no thread (caller_poll_us).
  if (impl.caller_poll_us > 0) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::microseconds(impl.caller_poll_us);
    for (int i = 0; !control.finished.load(std::memory_order_acquire); ++i) {
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) break;
      CpuRelax();
    }
  }
  std::unique_lock<std::mutex> lock(control.mu);
  control.waiting = true;
  control.cv.wait(lock, [&control] { return control.done; });
  control.waiting = false;
  return control.result;
}

}  // namespace parex
