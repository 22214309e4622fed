#include "actors/executor/parallel_executor.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <utility>

#include "actors/executor/device_places.h"
#include "actors/executor/executor_impl.h"
#include "actors/executor/op_handle_tasks.h"
#include "actors/runtime/actor_runner.h"
#include "actors/runtime/task_graph.h"
#include "base/logging.h"
#include "graph/ssa/multi_device_builder.h"
#include "kernels/cpu/blas.h"

namespace parex {
namespace {

// The task graph of an SsaGraph: one node per op handle, an edge to every
// reader of every var it writes (data or control). The collectives are the
// communicator's (slot 0): its collective actor issues them in op-id order,
// the order the builder inserted them, which is the order of the program's
// gradients and the same on every rank (DESIGN.md §3.4). On asynchronous
// places (`places` sim:N) every op handle runs on a stream: the compute
// stream of its place; collectives on the communication stream and fetch
// handles on the fetch stream of the first place (they span the places).
// Places with memory of their own (`devices`) drive the streams of their
// device contexts the same way.
// The stream slots of asynchronous places: each place's compute stream,
// then the communication and the fetch stream.
void AddStreams(const std::vector<Place>& places, int64_t delay_ns,
                const DevicePlaces* devices, TaskGraph* tasks) {
  for (int p = 0; p < static_cast<int>(places.size()); ++p) {
    tasks->streams.push_back({places[p].ToString() + "/compute", p,
                              TaskStream::kCompute, delay_ns,
                              devices ? devices->compute(p) : nullptr});
  }
  tasks->streams.push_back({places[0].ToString() + "/communication", 0,
                            TaskStream::kCommunication, delay_ns,
                            devices ? devices->communication() : nullptr});
  tasks->streams.push_back({places[0].ToString() + "/fetch", 0,
                            TaskStream::kFetch, delay_ns,
                            devices ? devices->fetch() : nullptr});
}

// Op handle `op`'s successors (the readers of what it writes, each edge
// labelled with the vars it waits for) and, for a collective, the bytes of
// the gradients it carries.
void AddEdges(const SsaGraph& g, const SsaOp& op, TaskNode* node) {
  std::map<int, std::string> succ;  // reader -> the vars it waits for
  for (int v : op.outputs) {
    for (int r : g.var(v).readers) {
      std::string& label = succ[r];
      label += (label.empty() ? "" : ", ") + g.VarLabel(v);
    }
  }
  for (const auto& [reader, label] : succ) {
    node->successors.push_back(reader);
    node->edge_labels.push_back(label);
  }
  if (!IsCollective(op.kind)) return;
  for (const std::string& name : op.var_names) {
    for (const GradInfo& info : g.grads) {
      if (info.grad == name) node->bytes += info.bytes;
    }
  }
}

std::shared_ptr<TaskGraph> TaskGraphOf(const SsaGraph& g,
                                       const std::vector<Place>& places,
                                       const Communicator& comm,
                                       int64_t sim_delay_us,
                                       const DevicePlaces* devices) {
  auto tasks = std::make_shared<TaskGraph>();
  tasks->nodes.resize(g.ops().size());
  tasks->communicators.push_back({comm.backend(), comm.blocking()});
  const bool async =
      (!places.empty() && places[0].is_sim()) || devices != nullptr;
  const int num_places = static_cast<int>(places.size());
  if (async) {
    AddStreams(places, devices != nullptr ? 0 : sim_delay_us * 1000, devices,
               tasks.get());
  }
  for (const SsaOp& op : g.ops()) {
    TaskNode& node = tasks->nodes[op.id];
    node.label = g.OpLabel(op.id);
    node.place = op.place;
    node.stream = op.kind == SsaOpKind::kFetch ? TaskStream::kFetch
                  : IsCollective(op.kind)      ? TaskStream::kCommunication
                                               : TaskStream::kCompute;
    if (IsCollective(op.kind)) node.communicator = 0;
    if (async) {
      node.stream_actor =
          node.stream == TaskStream::kCompute         ? std::max(op.place, 0)
          : node.stream == TaskStream::kCommunication ? num_places
                                                      : num_places + 1;
    }
    AddEdges(g, op, &node);
  }
  return tasks;
}

}  // namespace

StatusOr<CompiledStep*> ParallelExecutor::Impl::Compile(
    const std::vector<std::string>& fetches) {
  auto it = compiled.find(fetches);
  if (it != compiled.end()) return it->second.get();
  PAREX_ASSIGN_OR_RETURN(
      SsaGraph graph,
      BuildMultiDeviceGraph(program, device_places, loss_name, build, fetches));
  auto step = std::make_unique<CompiledStep>();
  step->graph = std::make_unique<SsaGraph>(std::move(graph));
  step->ops = std::make_unique<OpHandleTasks>(step->graph.get(), &exec_scopes,
                                              exec.dry_run, comm,
                                              exec.first_place, devices.get());
  std::shared_ptr<TaskGraph> tasks = TaskGraphOf(
      *step->graph, places, *comm, exec.sim_delay_us, devices.get());
  OpHandleTasks* ops = step->ops.get();
  tasks->task = [ops](int node, int64_t) { return ops->Run(node); };
  Communicator* c = comm.get();
  tasks->interrupt = [c](const Status& reason) { c->Interrupt(reason); };
  tasks->resume = [c]() { c->Resume(); };
  PAREX_RETURN_IF_ERROR(tasks->Finalize());
  ActorRunnerOptions options;
  if (system == nullptr)
    system = WorkerPool::Create(num_threads, exec.scheduler);
  options.system = system;
  options.fuse_chains = exec.fuse_chains;
  // A core the workers and their oneDNN threads leave idle: the caller
  // polls there for a short step's end (parex infer at batch 1, cpu:1:
  // MobileNet-v2 0.426 -> 0.403 ms; where the cores are all busy polling
  // took one from oneDNN, 0.30 -> 0.37 ms).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (!devices &&
      static_cast<unsigned>(num_threads * cpu::IntraOpThreads()) < cores) {
    options.caller_poll_us = 1000;
  }
  // One worker: the caller runs the step in its place (caller_runs), and
  // no thread wakes at a step's start or end.
  options.caller_runs = !devices && system->num_threads() == 1;
  options.trace = exec.trace;
  options.stream_wait = exec.stream_wait;
  options.skip_wait_producer = exec.skip_wait_producer;
  options.skip_wait_consumer = exec.skip_wait_consumer;
  step->tasks = tasks;
  PAREX_ASSIGN_OR_RETURN(step->runner, ActorRunner::Create(tasks, options));
  std::string fetch_list;
  for (const std::string& f : fetches)
    fetch_list += (fetch_list.empty() ? "" : ", ") + f;
  LogInfo(Subsystem::kActor,
          "compiled the step fetching [" + fetch_list +
              "]: " + std::to_string(tasks->size()) + " op handles on " +
              std::to_string(n()) + " places, " +
              std::to_string(step->runner->num_actors()) + " op actors, " +
              std::to_string(step->runner->num_collective_actors()) +
              " collective actor (" + comm->backend() + "), " +
              std::to_string(step->runner->num_stream_actors()) +
              " stream actors, " + std::to_string(num_threads) + " workers (" +
              SchedulerPolicyName(exec.scheduler) + ")");
  CompiledStep* raw = step.get();
  compiled[fetches] = std::move(step);
  return raw;
}

Status ParallelExecutor::Impl::ResetExecutionScopes(const SsaGraph& graph) {
  // Every var the graph touches that no ancestor scope holds is created
  // here, before the step: kernels then only look variables up, which is
  // safe from many workers at once.
  for (int p = 0; p < n(); ++p) {
    holder[p]->DropKids();
    exec_scopes[p] = holder[p]->NewScope();
    for (const std::string& name : graph.VarNames()) {
      if (exec_scopes[p]->FindVar(name) == nullptr) exec_scopes[p]->Var(name);
    }
  }
  // memory_optimize: the temporaries of one planned buffer start out
  // sharing one allocation; Tensor::Allocate keeps it while it is large
  // enough (a larger batch than planned gets its own memory, safely).
  const MemoryPlan& plan = graph.memory_plan;
  if (!plan.empty()) {
    std::vector<Tensor> buffers;
    for (size_t b = 0; b < plan.buffer_bytes.size(); ++b) {
      buffers.emplace_back(DType::kUInt8, Dims{plan.buffer_bytes[b]},
                           device_places[plan.buffer_place[b]]);
    }
    for (int p = 0; p < n(); ++p) {
      for (const auto& [name, b] : plan.buffer_of[p]) {
        Variable* v = exec_scopes[p]->FindLocalVar(name);
        if (v != nullptr) *v->GetMutableTensor() = buffers[b];
      }
    }
  }
  steps_since_drop = 0;
  return Status::Ok();
}

void ParallelExecutor::Impl::ClearArrays() {
  if (!array_vars.has_value()) {
    array_vars.emplace();
    for (const auto& var : program.global_block().vars()) {
      if (var->type() == proto::VarType::LOD_TENSOR_ARRAY &&
          !var->persistable()) {
        array_vars->push_back(var->name());
      }
    }
  }
  for (const std::string& name : *array_vars) {
    for (int p = 0; p < n(); ++p) {
      Variable* v = exec_scopes[p]->FindVar(name);
      if (v == nullptr) v = exec_scopes[p]->Var(name);
      v->GetMutableTensorList()->clear();
    }
  }
}

Status ParallelExecutor::Impl::FeedPlace(int p, const FeedMap& feed) {
  const Block& block = program.global_block();
  for (const auto& [name, value] : feed) {
    const VarDesc* var = block.FindVar(name);
    if (var == nullptr) {
      return NotFound("feed '" + name + "' is not a variable of the program");
    }
    PAREX_RETURN_IF_ERROR(
        CheckFeed(*var, value).WithContext("place " + places[p].ToString()));
    Variable* v = exec_scopes[p]->FindVar(name);
    if (v == nullptr) v = exec_scopes[p]->Var(name);
    if (devices != nullptr) {
      PAREX_RETURN_IF_ERROR(
          devices->Feed(p, name, value, v->GetMutableTensor())
              .WithContext("feed '" + name + "' to " + places[p].ToString()));
    } else {
      if (!written_vars.has_value()) written_vars = VarsWrittenByOps(program);
      // Assigned, not through a conditional: a Tensor temporary would copy
      // its dims (an allocation a steady step must not make).
      if (written_vars->count(name) > 0) {
        *v->GetMutableTensor() = value.Clone();
      } else {
        *v->GetMutableTensor() = value;
      }
    }
  }
  return Status::Ok();
}

Status ParallelExecutor::Impl::BeginStep(CompiledStep* step,
                                         const std::vector<FeedMap>& feeds,
                                         bool fed) {
  if (last != step || steps_since_drop >= exec.num_iteration_per_drop_scope ||
      exec_scopes[0] == nullptr) {
    PAREX_RETURN_IF_ERROR(ResetExecutionScopes(*step->graph));
    step->ops->ScopesChanged();
    for (auto& [s, g] : graphs) {  // their tensors went with the scopes
      g.graph.reset();
      g.warm_steps = 0;
    }
  }
  last = step;
  ClearArrays();
  for (int p = 0; p < n() && !fed; ++p) {
    PAREX_RETURN_IF_ERROR(FeedPlace(p, feeds[p]));
  }
  step->ops->BeginStep(next_step);
  return Status::Ok();
}

void ParallelExecutor::Impl::EndStep(
    CompiledStep* step, bool ok, std::vector<std::vector<Tensor>>* fetched) {
  ++steps;
  ++next_step;
  ++steps_since_drop;
  // A failed step may leave temporaries half written: start afresh.
  if (!ok) exec_scopes[0] = nullptr;
  // Device places: the fetched values are read after the streams are.
  if (ok && devices == nullptr) *fetched = step->ops->TakeFetched();
}

bool ParallelExecutor::Impl::EndCapture(CompiledStep* step, Status* status,
                                        int64_t steps_before,
                                        int64_t next_before) {
  StatusOr<std::unique_ptr<DeviceGraph>> graph =
      devices->compute(0)->EndCapture(JoinedStreams());
  if (status->ok() && graph.ok()) {
    graphs[step].graph = std::move(graph).value();
    *status = LaunchAfterFeeds(&graphs[step]);
    return true;
  }
  LogWarn(Subsystem::kActor,
          "a step could not be captured as a device graph; its steps run "
          "on the actors: " +
              (status->ok() ? graph.status() : *status).ToString());
  graphs[step].off = true;
  steps = steps_before;
  next_step = next_before;
  exec_scopes[0] = nullptr;  // what the recording wrote is not real
  return false;
}

StatusOr<std::vector<std::vector<Tensor>>> ParallelExecutor::Impl::Step(
    const std::vector<FeedMap>& feeds, const std::vector<std::string>& fetch) {
  const Block& block = program.global_block();
  for (const std::string& name : fetch) {
    if (block.FindVar(name) == nullptr) {
      return NotFound("fetch target '" + name +
                      "' is not a variable of the program");
    }
  }
  PAREX_ASSIGN_OR_RETURN(CompiledStep * step, Compile(fetch));
  std::vector<std::vector<Tensor>> replayed;
  PAREX_ASSIGN_OR_RETURN(bool was_replayed, Replay(step, feeds, &replayed));
  if (was_replayed) return Answer(*step, fetch, replayed);
  const bool capture = WantsCapture(step, feeds);
  if (capture) PAREX_RETURN_IF_ERROR(FeedCapturedStep(step, feeds));
  // The coordinator actor feeds the places, keeps the drop-scope count and
  // gathers the fetches (DESIGN.md §3.4); this thread waits.
  // The hooks capture two pointers, which std::function holds without a
  // heap allocation (a steady step allocates nothing).
  struct Frame {
    CompiledStep* step;
    const std::vector<FeedMap>* feeds;
    std::vector<std::vector<Tensor>> fetched;
    bool fed;  // before a capture
  } frame{step, &feeds, {}, capture};
  StepHooks hooks;
  hooks.begin = [this, &frame]() -> Status {
    return BeginStep(frame.step, *frame.feeds, frame.fed);
  };
  hooks.end = [this, &frame](bool ran, bool ok) -> Status {
    // (Not ran: a bad feed, nothing ran.)
    if (ran) EndStep(frame.step, ok, &frame.fetched);
    return Status::Ok();
  };
  Status status;
  if (capture) status = devices->compute(0)->BeginCapture(JoinedStreams());
  const bool capturing = capture && status.ok();
  if (capture && !status.ok()) {
    graphs[step].off = true;  // no graphs on this device: run as usual
    status = Status::Ok();
  }
  const int64_t steps_before = steps, next_before = next_step;
  running.store(step->runner.get(), std::memory_order_release);
  status = step->runner->Run(steps, &hooks);
  running.store(nullptr, std::memory_order_release);
  if (capturing) {
    // The step was recorded, not run: run it as the graph now, or, when it
    // could not be captured, undo its count and run it on the actors.
    if (!EndCapture(step, &status, steps_before, next_before)) {
      return Step(feeds, fetch);
    }
  }
  if (devices != nullptr) {
    // The next step's work must not overtake this one's on another stream
    // (a gradient written while a collective still reads it).
    Status synced = SyncDevices();
    if (status.ok()) status = synced;
    if (status.ok()) {
      step->ops->FinishFetches();
      frame.fetched = step->ops->TakeFetched();
      ++graphs[step].warm_steps;
    }
  }
  PAREX_RETURN_IF_ERROR(status);
  return Answer(*step, fetch, frame.fetched);
}

std::vector<std::vector<Tensor>> ParallelExecutor::Impl::Answer(
    const CompiledStep& step, const std::vector<std::string>& fetch,
    const std::vector<std::vector<Tensor>>& fetched) const {
  // The graph fetches the program's own fetch targets too: answer the
  // fetch list, in its order.
  const std::vector<std::string>& names = step.ops->fetch_names();
  std::vector<std::vector<Tensor>> result;
  for (const std::string& name : fetch) {
    const size_t slot =
        std::find(names.begin(), names.end(), name) - names.begin();
    result.push_back(fetched.at(slot));  // shallow: a name may repeat
  }
  return result;
}

ParallelExecutor::ParallelExecutor(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

ParallelExecutor::~ParallelExecutor() {
  impl_->compiled.clear();  // actors first: they use the scopes
  for (size_t p = 0; p < impl_->local.size(); ++p) {
    impl_->parents[p]->DeleteScope(impl_->local[p]);
  }
}

StatusOr<std::vector<Tensor>> ParallelExecutor::Run(
    const FeedMap& feed, const std::vector<std::string>& fetch_list) {
  const int n = impl_->n();
  std::vector<FeedMap> feeds(n);
  for (const auto& [name, value] : feed) {
    const int64_t batch = value.rank() == 0 ? 0 : value.dim(0);
    if (batch < n) {
      return InvalidArgument(
          "feed '" + name + "' has " + std::to_string(batch) +
          " samples, fewer than the " + std::to_string(n) + " places");
    }
    const int64_t chunk = batch / n;
    for (int p = 0; p < n; ++p) {
      const int64_t begin = p * chunk;
      const int64_t end = p == n - 1 ? batch : begin + chunk;
      feeds[p][name] = value.Slice(begin, end);
    }
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> per_place,
                         impl_->Step(feeds, fetch_list));
  std::vector<Tensor> merged;
  for (size_t i = 0; i < per_place.size(); ++i) {
    PAREX_ASSIGN_OR_RETURN(Tensor t, ConcatAlongDim0(per_place[i]));
    merged.push_back(std::move(t));
  }
  return merged;
}

StatusOr<std::vector<std::vector<Tensor>>> ParallelExecutor::RunPerPlace(
    const std::vector<FeedMap>& feeds,
    const std::vector<std::string>& fetch_list) {
  if (static_cast<int>(feeds.size()) != impl_->n()) {
    return InvalidArgument("RunPerPlace: " + std::to_string(feeds.size()) +
                           " feed dicts for " + std::to_string(impl_->n()) +
                           " places");
  }
  return impl_->Step(feeds, fetch_list);
}

const std::vector<Place>& ParallelExecutor::places() const {
  return impl_->places;
}

Allocator* ParallelExecutor::feed_allocator() const {
  const DevicePlaces* d = impl_->devices.get();
  return d != nullptr ? d->compute(0)->host_allocator() : nullptr;
}

const SsaGraph& ParallelExecutor::graph() const {
  const CompiledStep* s = impl_->last != nullptr
                              ? impl_->last
                              : impl_->compiled.begin()->second.get();
  return *s->graph;
}

std::string ParallelExecutor::TraceJson(
    const std::map<std::string, std::string>& metadata) const {
  if (impl_->exec.trace == nullptr) return "{}";
  const CompiledStep* s = impl_->last != nullptr
                              ? impl_->last
                              : impl_->compiled.begin()->second.get();
  std::vector<std::string> names;
  for (const Place& p : impl_->places) names.push_back(p.ToString());
  return impl_->exec.trace->ToChromeJson(*s->tasks, names, metadata);
}

void ParallelExecutor::Abort(const Status& reason) {
  ActorRunner* runner = impl_->running.load(std::memory_order_acquire);
  if (runner != nullptr) runner->Abort(reason);
}

void ParallelExecutor::set_stream_wait(StreamWaitStrategy strategy) {
  impl_->exec.stream_wait = strategy;
  for (auto& [fetches, step] : impl_->compiled) {
    step->runner->set_stream_wait(strategy);
  }
}

Scope* ParallelExecutor::local_scope(int place) const {
  return impl_->local[place];
}

int64_t ParallelExecutor::steps_run() const { return impl_->steps; }

void ParallelExecutor::SetNextStep(int64_t step) { impl_->next_step = step; }

int ParallelExecutor::num_threads() const { return impl_->num_threads; }

}  // namespace parex
