// OpHandleTasks: what each op handle of an SsaGraph does when the actor
// runtime fires it, on the per-place execution scopes of a ParallelExecutor:
// computation ops run their kernel (RunOp) with a device context of their
// own (seeded from PAREX_SEED, the place's index among all nodes' places and
// the op, and keyed by the step: random ops draw the same numbers whatever
// the schedule, and a resumed run draws what an uninterrupted one would);
// scale_loss_grad fills loss@GRAD; collectives merge gradients over the places
// through the Communicator interface (whatever backend is behind it; in place
// order, bit for bit repeatable); fetch copies each place's value out.
//
// Thread-safety: Run may be called concurrently for distinct ops whose
// accesses the graph orders (the runtime guarantees it); BeginStep and
// TakeFetched only between steps.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "actors/comm/communicator.h"
#include "actors/comm/in_process_communicator.h"
#include "actors/executor/device_places.h"
#include "base/status.h"
#include "graph/ssa/ssa_graph.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "kernels/prepared_op.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex {

class OpHandleTasks {
 public:
  // `exec_scopes` (one per place) is read at every Run: the executor may
  // replace the scopes between steps.
  // `comm` joins the graph's places; the collective op handles call it one
  // at a time (their collective actor serialises them).
  // `first_place`: the global index of the graph's place 0 (a node's first
  // place among every node's).
  // `devices` (not owned, outlives this): places with memory of their own;
  // each computation op then runs on a context on its place's compute
  // stream, scale_loss_grad's value is copied in and fetched values are
  // copied out on the fetch stream. Null: host memory (cpu, sim).
  OpHandleTasks(const SsaGraph* graph, const std::vector<Scope*>* exec_scopes,
                bool dry_run, std::shared_ptr<Communicator> comm,
                int first_place = 0, const DevicePlaces* devices = nullptr);
  ~OpHandleTasks();

  // The executor replaced the execution scopes: tensors bound from the old
  // ones are forgotten. REQUIRES: between steps.
  void ScopesChanged();
  // `step`: the step's number, which keys the random ops' draws.
  void BeginStep(int64_t step);
  // Runs op handle `op`; errors name the op and the place.
  Status Run(int op);
  // On device places: the fetched values' copies queued during the step
  // become host tensors. REQUIRES: the step's work finished (the streams
  // synchronised). Nothing to do on the host path.
  void FinishFetches();
  // result[i][p]: the i-th fetch handle's value on place p.
  std::vector<std::vector<Tensor>> TakeFetched();
  // The var each fetch handle reads, in the order of TakeFetched.
  const std::vector<std::string>& fetch_names() const { return fetch_names_; }

 private:
  Status RunComputation(const SsaOp& op);
  Status RunScaleLossGrad(const SsaOp& op);
  Status RunCollective(const SsaOp& op);
  // A placed send or receive of rows (SsaOp::rows).
  Status RunRows(const SsaOp& op);
  // A prefetch of a table's rows (var_names: the table, then the ids).
  Status RunPrefetch(const SsaOp& op);
  Status BindCollective(const SsaOp& op);
  // A collective over sparse gradients (SelectedRows, lookup_table's
  // is_sparse): in one process an all_gather concatenates the places' rows
  // in place order onto every place (`*done`); otherwise (across nodes, or
  // a reduce) each place's rows become their dense sum first and the dense
  // collective follows.
  Status GatherSparseRows(const SsaOp& op, bool* done);
  // How many places hold `name` as rows.
  int SparsePlaces(const std::string& name) const;
  // A broadcast's receivers allocated to the root's dtype and shape.
  Status ShapeBroadcastReceivers(const SsaOp& op);
  // The name a collective of `op` is called by (made on its first run).
  const std::string& CallName(const SsaOp& op);
  Status RunFetch(const SsaOp& op);
  // A sliced optimizer's views, refreshed before each run.
  Status RefreshSliceViews(const SsaOp& op);
  // The tensor of `name` in place p's execution scope.
  StatusOr<Tensor*> PlaceTensor(const SsaOp& op, const std::string& name,
                                int place) const;

  const SsaGraph* graph_;
  const std::vector<Scope*>* exec_scopes_;
  bool dry_run_;
  const DevicePlaces* devices_;
  std::vector<std::unique_ptr<DeviceContext>> contexts_;  // per op
  // Per computation op: bound to the current execution scope on its first
  // run after the scopes changed (kernels/prepared_op.h).
  std::vector<std::unique_ptr<PreparedOp>> prepared_;
  // Per op of a sliced optimizer (a slice, or the optimizer op that finishes
  // them; graph/ssa/optimizer_slices.h): a scope of its own under the
  // owner's execution scope (made between steps, in ScopesChanged), where
  // each sliced var is a view of the owner's tensor (its slice's elements;
  // none for the finishing op), and, for a slice, the op without its scalar
  // outputs (the finishing op writes them once).
  struct SliceState {
    Scope* scope = nullptr;
    std::unique_ptr<proto::OpDesc> proto;
    std::unique_ptr<OpDesc> desc;
    std::vector<std::pair<const Variable*, Variable*>> views;  // source, view
    Status error;  // a var missing when the scope was made
    // The slice reads every place's gradient (OptimizerSlots::grad_addends)
    // instead of running its range of the reduce first.
    bool sums_gradient = false;
  };
  // A sliced optimizer op's scope, views and (for a slice) desc, made
  // under its owner's current execution scope.
  std::unique_ptr<SliceState> MakeSliceState(const SsaOp& op) const;
  std::vector<std::unique_ptr<SliceState>> slices_;
  std::vector<std::string> call_names_;  // per collective op: CallName
  // The in-process backend, when that is comm_: a reduce its optimizer's
  // slices finish (SsaOp::sliced_reduce) only prepares its plan here, and
  // each slice runs its range of it. Null for another backend: the reduce
  // then runs whole and the slices only update.
  InProcessCommunicator* in_process_ = nullptr;
  std::vector<std::unique_ptr<InProcessPlan>> plans_;  // per reduce op
  std::shared_ptr<Communicator> comm_;
  // Per collective op: its tensors (one group of per-place tensors per
  // var), bound on its first run after the scopes changed, so a steady
  // step looks nothing up and allocates nothing.
  std::vector<std::vector<PlaceTensors>> groups_;
  std::vector<uint8_t> maybe_sparse_;  // per op: a sparse gradient's collective
  std::vector<char> bound_;
  std::vector<int> fetch_slot_;  // per op, or -1
  std::vector<std::vector<Tensor>> fetched_;
  // Device places: per fetch slot and place, the host buffer its value is
  // copied into during the step, and what it holds.
  struct PendingFetch {
    const void* data = nullptr;
    DType dtype = DType::kUndefined;
    Dims dims;
    LoD lod;
  };
  std::vector<std::vector<PendingFetch>> pending_;
  std::vector<std::string> fetch_names_;
};

// The tensors concatenated along dim 0 (rank-0 tensors count as [1]).
// InvalidArgument when dtypes or trailing extents differ.
StatusOr<Tensor> ConcatAlongDim0(const std::vector<Tensor>& parts);

}  // namespace parex
