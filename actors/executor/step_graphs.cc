// A step of a ParallelExecutor captured as one device graph and replayed
// (issue 29: a whole step as a CUDA graph). Only device places whose
// contexts capture (CUDA: DeviceContext::BeginCapture) take part.
//
// When: the fetch list's step ran twice on the actors since the execution
// scopes were made (allocations settled, every kernel's state made), the
// scopes are not about to be dropped, the stream wait is by events (a full
// Wait blocks the host, which a capture forbids), no trace is recorded, and
// no op of the graph does host work each step that a replay would skip:
// dropout (its mask is drawn on the host) and top_k_v2 (sorted on the host).
// The captured step itself is then run as the graph.
//
// Feeds are not in the graph: the captured step is fed before its capture
// begins, and a replay feeds as a step on the actors does (a feed in the
// place's pinned host memory is copied from where it is, any other through
// its staging buffer; DevicePlaces::Feed) into the same device buffers.
// Replay: the feeds of the step must have the captured dtypes and dims and
// land where the captured step's did; the graph is launched on place 0's
// compute stream after every place's copies (other places' by an event),
// the streams drained, and the fetched values read from the buffers the
// captured copies wrote. The step counters advance as for a step on the
// actors. Anything else (other shapes, a scope drop,
// another fetch list run in between) drops the graph and the step runs on
// the actors, to be captured again later.
#include <set>
#include <string>

#include "actors/executor/executor_impl.h"
#include "base/config.h"

namespace parex {
namespace {

constexpr int kWarmSteps = 2;

// Ops whose kernels do host work every step that a replay would skip.
bool HasHostWork(const SsaGraph& graph) {
  static const std::set<std::string> kHostWork = {"dropout", "top_k_v2"};
  for (const SsaOp& op : graph.ops()) {
    if (op.kind == SsaOpKind::kComputation && kHostWork.count(op.type) != 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

Status ParallelExecutor::Impl::SyncDevices() {
  if (!comm->asynchronous()) return devices->SynchronizeAll();
  Status s = devices->SynchronizeAll([this] { return comm->Health(); },
                                     GetConfigInt("PAREX_NCCL_TIMEOUT_MS"));
  // Collective work that failed or hangs must be aborted before the
  // streams are used again.
  if (!s.ok()) comm->Interrupt(s);
  return s;
}

std::vector<DeviceContext*> ParallelExecutor::Impl::JoinedStreams() const {
  std::vector<DeviceContext*> joined;
  for (int p = 1; p < n(); ++p) joined.push_back(devices->compute(p));
  joined.push_back(devices->communication());
  joined.push_back(devices->fetch());
  return joined;
}

bool ParallelExecutor::Impl::WantsCapture(CompiledStep* step,
                                          const std::vector<FeedMap>& feeds) {
  // Collectives between GPUs (NCCL) are not captured: a graph of several
  // devices' streams is not what the capture joins. Places sharing a GPU
  // (cuda:0x2) are: their streams are one device's.
  if (devices == nullptr || !exec.cuda_graphs || !places[0].is_cuda() ||
      comm->asynchronous() || exec.stream_wait != StreamWaitStrategy::kEvent ||
      exec.trace != nullptr || exec.dry_run) {
    return false;
  }
  StepGraph& g = graphs[step];
  if (g.off || g.graph != nullptr || g.warm_steps < kWarmSteps ||
      last != step || exec_scopes[0] == nullptr ||
      steps_since_drop + 1 >= exec.num_iteration_per_drop_scope) {
    return false;
  }
  if (HasHostWork(*step->graph)) {
    g.off = true;
    return false;
  }
  g.feeds.assign(n(), {});
  for (int p = 0; p < n(); ++p) {
    for (const auto& [name, value] : feeds[p]) {
      g.feeds[p][name] = {value.dtype(), value.dims(), nullptr};
    }
  }
  return true;
}

Status ParallelExecutor::Impl::FeedCapturedStep(
    CompiledStep* step, const std::vector<FeedMap>& feeds) {
  StepGraph& g = graphs[step];
  for (int p = 0; p < n(); ++p) {
    PAREX_RETURN_IF_ERROR(FeedPlace(p, feeds[p]));
    for (auto& [name, captured] : g.feeds[p]) {
      captured.data =
          exec_scopes[p]->FindVar(name)->GetMutableTensor()->raw_data();
    }
  }
  return Status::Ok();
}

Status ParallelExecutor::Impl::LaunchAfterFeeds(StepGraph* g) {
  while (static_cast<int>(g->fed.size()) + 1 < n()) {
    g->fed.push_back(
        devices->compute(static_cast<int>(g->fed.size()) + 1)->CreateEvent());
  }
  for (int p = 1; p < n(); ++p) {
    PAREX_RETURN_IF_ERROR(
        devices->compute(p)->RecordEvent(g->fed[p - 1].get()));
    PAREX_RETURN_IF_ERROR(devices->compute(0)->WaitEvent(g->fed[p - 1].get()));
  }
  return g->graph->Launch();
}

StatusOr<bool> ParallelExecutor::Impl::Replay(
    CompiledStep* step, const std::vector<FeedMap>& feeds,
    std::vector<std::vector<Tensor>>* fetched) {
  auto it = graphs.find(step);
  if (it == graphs.end() || it->second.graph == nullptr) return false;
  StepGraph& g = it->second;
  bool same = last == step && exec_scopes[0] != nullptr &&
              steps_since_drop < exec.num_iteration_per_drop_scope &&
              static_cast<int>(feeds.size()) == n() &&
              g.feeds.size() == feeds.size();
  for (int p = 0; same && p < n(); ++p) {
    same = feeds[p].size() == g.feeds[p].size();
    for (auto f = g.feeds[p].begin(); same && f != g.feeds[p].end(); ++f) {
      auto value = feeds[p].find(f->first);
      same = value != feeds[p].end() &&
             value->second.dtype() == f->second.dtype &&
             value->second.dims() == f->second.dims;
    }
  }
  // Fed as a step on the actors is, into the buffers the graph reads.
  for (int p = 0; same && p < n(); ++p) {
    PAREX_RETURN_IF_ERROR(FeedPlace(p, feeds[p]));
    for (auto f = g.feeds[p].begin(); same && f != g.feeds[p].end(); ++f) {
      same =
          exec_scopes[p]->FindVar(f->first)->GetMutableTensor()->raw_data() ==
          f->second.data;
    }
  }
  if (!same) {
    g.graph.reset();
    g.warm_steps = 0;
    return false;
  }
  Status status = LaunchAfterFeeds(&g);
  Status synced = SyncDevices();
  if (status.ok()) status = synced;
  ++steps;
  ++next_step;
  ++steps_since_drop;
  if (!status.ok()) {
    exec_scopes[0] = nullptr;
    g.graph.reset();
    return status;
  }
  step->ops->FinishFetches();
  *fetched = step->ops->TakeFetched();
  return true;
}

}  // namespace parex
