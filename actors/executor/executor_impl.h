// What a ParallelExecutor holds (its Impl) and one compiled fetch list, for
// the executor's own files: parallel_executor.cc (creation, compiling, the
// step on actors), executor_persistables.cc (persistables in and out of
// the places), step_graphs.cc (a step captured as a device graph and
// replayed). Not a public header.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "actors/comm/communicator.h"
#include "actors/executor/device_places.h"
#include "actors/executor/op_handle_tasks.h"
#include "actors/executor/parallel_executor.h"
#include "actors/runtime/actor_runner.h"
#include "actors/runtime/task_graph.h"
#include "actors/runtime/worker_pool.h"

namespace parex {

// One compiled fetch list: its graph, the op handles' state and the actors.
struct CompiledStep {
  std::unique_ptr<SsaGraph> graph;
  std::unique_ptr<OpHandleTasks> ops;
  std::shared_ptr<TaskGraph> tasks;
  std::unique_ptr<ActorRunner> runner;
};

struct ParallelExecutor::Impl {
  std::vector<Place> places;
  // The places the graph, kernels and tensors use: `places`, with each
  // simulated place standing as the CPU place of its id (host memory).
  std::vector<Place> device_places;
  std::shared_ptr<Communicator> comm;
  // The runner of the step in flight (Abort's target), or null.
  std::atomic<ActorRunner*> running{nullptr};
  Program program;
  std::string loss_name;
  Scope* scope = nullptr;
  BuildStrategy build;
  ExecutionStrategy exec;
  int num_threads = 1;
  std::vector<Scope*> local;    // per place: persistables
  std::vector<Scope*> parents;  // per place: the scope `local` is a kid of
  // Per place, under `local`: the parent of the execution scope, so that
  // dropping temporaries leaves other kids of `local` (a test executor's
  // scopes) alone.
  std::vector<Scope*> holder;
  std::vector<Scope*> exec_scopes;  // per place, dropped every k steps
  // Places with memory of their own (device_places.h), or null; declared
  // before `compiled`, so the runners (whose stream actors use its
  // contexts) go first.
  std::unique_ptr<DevicePlaces> devices;
  // One worker pool for every compiled step; declared before `compiled` so
  // the runners go first.
  std::shared_ptr<WorkerPool> system;
  std::map<std::vector<std::string>, std::unique_ptr<CompiledStep>> compiled;
  const CompiledStep* last = nullptr;
  int64_t steps = 0;
  int64_t next_step = 0;  // the number random ops key the next step's draws by
  int64_t steps_since_drop = 0;

  int n() const { return static_cast<int>(places.size()); }

  // A compiled step captured as a device graph (step_graphs.cc).
  struct StepGraph {
    bool off = false;    // cannot be captured, or a capture failed
    int warm_steps = 0;  // steps run on the actors since the scopes changed
    std::unique_ptr<DeviceGraph> graph;
    // Per place, each feed as captured: its dtype and dims, and the
    // device buffer the graph reads it from.
    struct Feed {
      DType dtype = DType::kUndefined;
      Dims dims;
      const void* data = nullptr;
    };
    std::vector<std::map<std::string, Feed>> feeds;
    // Recorded after places 1..'s feed copies, waited for by place 0's
    // stream before the graph is launched there.
    std::vector<std::unique_ptr<Event>> fed;
  };
  std::map<const CompiledStep*, StepGraph> graphs;

  // Create's parts: the communicator (the strategy's, or one for the
  // places: NCCL's across devices, in-device, in-process); each place's
  // scopes under `scope` or under share_vars_from's.
  Status MakeCommunicator(bool on_devices);
  void MakeScopes(const ParallelExecutor* share_vars_from);
  StatusOr<CompiledStep*> Compile(const std::vector<std::string>& fetches);
  // Step's parts: the coordinator's hooks at a step's start (fresh
  // execution scopes when due, the feeds unless a capture fed them) and end
  // (counts, the fetched values); after a captured step (`status` the
  // recording's), its graph launched (true, `status` the launch's) or, when
  // the capture failed, the counts undone (false: run the step again on the
  // actors).
  Status BeginStep(CompiledStep* step, const std::vector<FeedMap>& feeds,
                   bool fed);
  void EndStep(CompiledStep* step, bool ok,
               std::vector<std::vector<Tensor>>* fetched);
  bool EndCapture(CompiledStep* step, Status* status, int64_t steps_before,
                  int64_t next_before);
  // step_graphs.cc: whether this step of `step` is to be captured; the
  // replay of a captured step (false: none applies, run on the actors);
  // the bookkeeping after a step on the actors (`ok`, `captured`).
  bool WantsCapture(CompiledStep* step, const std::vector<FeedMap>& feeds);
  // The step to be captured is fed before the capture begins (a graph
  // starts from its fed tensors, so a replay can copy a feed from wherever
  // it is); notes where each feed went.
  Status FeedCapturedStep(CompiledStep* step,
                          const std::vector<FeedMap>& feeds);
  // Launches `g` on place 0's compute stream after every place's feeds.
  Status LaunchAfterFeeds(StepGraph* g);
  StatusOr<bool> Replay(CompiledStep* step, const std::vector<FeedMap>& feeds,
                        std::vector<std::vector<Tensor>>* fetched);
  std::vector<DeviceContext*> JoinedStreams() const;
  // Waits for the device work of a step: polling the communicator's
  // health when it is asynchronous (NCCL), which it interrupts on failure.
  Status SyncDevices();
  // The fetch list's values in its order, from the step's fetch handles.
  std::vector<std::vector<Tensor>> Answer(
      const CompiledStep& step, const std::vector<std::string>& fetch,
      const std::vector<std::vector<Tensor>>& fetched) const;
  Status ResetExecutionScopes(const SsaGraph& graph);
  Status FeedPlace(int p, const FeedMap& feed);
  // Empties each place's non-persistable tensor arrays (LOD_TENSOR_ARRAY
  // variables of the global block) before a step: in Paddle such a variable
  // starts every run empty, and a to_static loop appends at its length.
  void ClearArrays();
  std::optional<std::vector<std::string>> array_vars;  // found on first use
  // Variables the program's ops write: a feed of one is copied, not shared
  // (VarsWrittenByOps); found on first use.
  std::optional<std::unordered_set<std::string>> written_vars;
  StatusOr<std::vector<std::vector<Tensor>>> Step(
      const std::vector<FeedMap>& feeds, const std::vector<std::string>& fetch);
};

// The persistables places share instead of copying (see the definition),
// and in *persistables every persistable tensor of block 0, sorted.
std::set<std::string> SharedPersistables(
    const Program& program, bool share_params, bool on_devices,
    std::vector<std::string>* persistables);

// Place p's copies of the initialised persistables of `scope` (sorted
// names), in its local scope `local`: plain copies on the host, or copies
// onto the place's device. `skip`: names the places share (no copy).
Status CopyPersistables(const Scope& scope,
                        const std::vector<std::string>& persistables,
                        const std::set<std::string>& skip, Scope* local,
                        const DevicePlaces* devices, int p);

}  // namespace parex
