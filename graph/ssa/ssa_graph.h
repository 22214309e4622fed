// The SSA graph (seed 000, "Static single assignment Graph"): block 0 of a
// program replicated over N places, every write of a variable a new version.
//
//   SsaVar  (name, version, place): its generating op (-1 for version 0 of a
//           var nothing in the graph writes: parameters, feeds) and the ops
//           reading it. Control vars carry no data; they only order two ops
//           (data hazards, ops without outputs, sequential execution).
//   SsaOp   a computation op (one program op on one place), or one of the
//           handles the multi-device pass inserts: scale_loss_grad, the
//           collectives (all_reduce, fused_all_reduce, reduce, broadcast,
//           all_gather for sparse gradients) and fetch.
//
// The graph is pure data: ops and vars are addressed by their index (`id`)
// in `ops()` / `vars()`; it holds the program its computation ops come from.
// Building (multi_device_builder.h), the passes, validation and the dumps are
// free functions over it. Thread-safety: const methods may run concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/place.h"
#include "base/status.h"
#include "graph/ir/program.h"
#include "graph/ssa/build_strategy.h"
#include "graph/ssa/memory_plan.h"

namespace parex {

enum class SsaOpKind {
  kComputation,
  kScaleLossGrad,
  kAllReduce,
  kFusedAllReduce,
  kReduce,
  kBroadcast,
  kAllGather,
  kFetch,
};
// "computation", "scale_loss_grad", "all_reduce", "fused_all_reduce",
// "reduce", "broadcast", "all_gather", "fetch".
const char* SsaOpKindName(SsaOpKind kind);
bool IsCollective(SsaOpKind kind);

// Why a control var exists.
enum class ControlReason {
  kNone,             // a data var
  kWriteAfterRead,   // reader of version k  ->  writer of version k+1
  kWriteAfterWrite,  // writer of version k  ->  writer of version k+1
  kReadAfterWrite,   // shared storage: its writer on one place -> a
                     // later reader on another place
  kNoOutput,         // the dummy output of an op that writes nothing
  kSequential,       // enable_sequential_execution: program order per place
  kOptimizerSlice,   // an optimizer's slice: after what the optimizer
                     // waits for, before the op that finishes it
};
const char* ControlReasonName(ControlReason reason);

struct SsaVar {
  int id = -1;
  std::string name;  // program var name; control vars: "@CONTROL@<id>"
  int version = 0;   // 0 for control vars
  int place = 0;     // index into SsaGraph::places()
  ControlReason control = ControlReason::kNone;
  int generator = -1;        // op id, -1 for an input of the graph
  std::vector<int> readers;  // op ids ("pending ops"), in insertion order

  bool is_control() const { return control != ControlReason::kNone; }
};

struct SsaOp {
  int id = -1;
  SsaOpKind kind = SsaOpKind::kComputation;
  // Computation: the program op's type ("mul_grad"); others: the kind name.
  std::string type;
  // The place a computation / scale_loss_grad op runs on; -1 for ops that
  // span places (collectives, fetch).
  int place = -1;
  // The places it touches, ascending: {place} or every place of the op.
  std::vector<int> places;
  // Computation ops: index of the OpDesc in block 0 of SsaGraph::program();
  // scale_loss_grad: the op it replaces. -1 otherwise.
  int program_op = -1;
  std::vector<int> inputs;   // var ids, data and control
  std::vector<int> outputs;  // var ids, data and control
  // Collectives and fetch: the var names they move, in order (a fused
  // all-reduce: its bucket's gradients in production order).
  std::vector<std::string> var_names;
  // reduce: the destination place; broadcast: the source place; else -1.
  int root = -1;
  // scale_loss_grad: the value written into loss@GRAD on each place.
  double scale = 0;
  // Reduce mode's sliced optimizer (graph/ssa/optimizer_slices.h): a slice
  // has slice in [0, num_slices) and updates that range of its parameter's
  // elements, reading the optimizer's inputs on place `root` (the owner);
  // the optimizer op itself has slice -1 and num_slices > 0: it runs after
  // every slice, on no elements, and writes the scalar outputs (beta powers).
  int slice = -1;
  int num_slices = 0;
  // The reduce of the gradient, when its slices do it (each sums its own
  // range of the places' gradients before updating it: a reduce-scatter
  // fused into the update; that reduce op then has num_slices > 0 and only
  // prepares the sum). -1 otherwise.
  int sliced_reduce = -1;
  // Parameter-server training's sends and receives (types "send" and
  // "recv"): true when they move rows (ids and values) instead of whole
  // tensors: a sparse gradient's rows, and back the rows of its parameter
  // that an update of touched rows only (sgd, lazy adam) changed.
  bool rows = false;
};

// A parameter gradient the multi-device pass merges, in production order.
struct GradInfo {
  std::string param;
  std::string grad;
  int program_op = -1;  // block-0 index of the op producing its final value
  int64_t numel = 0;    // elements of the parameter
  int64_t bytes = 0;    // numel * element size
  bool sparse = false;  // SELECTED_ROWS (lookup_table is_sparse)
  int owner = -1;       // Reduce mode: the place that owns it; else -1
  int collective = -1;  // op id of the collective that merges it
};

// fuse_all_reduce_ops: one bucket, in the order buckets are issued.
struct GradBucket {
  std::vector<std::string> grads;  // production order
  int64_t bytes = 0;
  int op = -1;  // the fused_all_reduce op
};

class SsaGraph {
 public:
  SsaGraph(std::shared_ptr<const Program> program, std::vector<Place> places);

  const Program& program() const { return *program_; }
  std::shared_ptr<const Program> shared_program() const { return program_; }
  const std::vector<Place>& places() const { return places_; }
  int num_places() const { return static_cast<int>(places_.size()); }

  const std::vector<SsaOp>& ops() const { return ops_; }
  const std::vector<SsaVar>& vars() const { return vars_; }
  const SsaOp& op(int id) const { return ops_[id]; }
  const SsaVar& var(int id) const { return vars_[id]; }
  SsaOp& mutable_op(int id) { return ops_[id]; }

  // The VarDesc of a program var (block 0), or nullptr.
  const VarDesc* FindVarDesc(const std::string& name) const;

  // Versions of `name` on `place`, oldest first (var ids); empty if none.
  const std::vector<int>& Versions(const std::string& name, int place) const;
  // The newest version of `name` on `place`, or -1.
  int Latest(const std::string& name, int place) const;
  // Every data var name in the graph, sorted.
  std::vector<std::string> VarNames() const;

  // "fc_0.w_0@GRAD@2@cpu:1": how errors and dumps name a var handle;
  // control vars: "@CONTROL@17@cpu:0 (write-after-read)".
  std::string VarLabel(int var_id) const;
  // "op #12 all_reduce(fc_0.w_0@GRAD)", "op #3 mul_grad@cpu:1 (program op #7)".
  std::string OpLabel(int op_id) const;

  // --- building --------------------------------------------------------
  // A new op with no inputs or outputs yet; returns its id.
  int AddOp(SsaOpKind kind, std::string type, int place,
            std::vector<int> places);
  // The newest version of `name` on `place`, creating version 0 (an input
  // of the graph) when there is none.
  int ReadVar(const std::string& name, int place);
  // Makes `op` read var `var_id`.
  void AddInput(int op, int var_id);
  // A new version of `name` on `place` written by `op`; returns its id.
  int WriteVar(int op, const std::string& name, int place);
  // A control var from `from` to `to` (placed on `to`'s place, or `from`'s
  // when `to` spans places); returns its id.
  int AddControlEdge(int from, int to, ControlReason reason);
  // A control var written by `op` and read by nobody: the output of an op
  // that writes nothing else (fetch), so its completion is observable.
  int AddDummyOutput(int op);
  // Removes a control var (tests remove hazard edges one at a time). The var
  // keeps its id with no generator and no readers and is skipped by
  // validation, ordering and dumps.
  void RemoveControlVar(int var_id);
  bool removed(int var_id) const;

  // --- derived facts ---------------------------------------------------
  // Ops in an order where every op follows the generators of its inputs;
  // FailedPrecondition naming the ops of a cycle when there is one.
  StatusOr<std::vector<int>> TopologicalOrder() const;
  // Ops the graph orders before `op` (its ancestors), as a bitmap.
  std::vector<bool> Ancestors(int op) const;

  // Results of the passes (filled by the builder and PlanMemory).
  std::string loss_name;
  BuildStrategy strategy;
  std::vector<GradInfo> grads;      // production order
  std::vector<GradBucket> buckets;  // fuse_all_reduce_ops
  // Reduce mode with share_cpu_parameters on CPU places: every place uses
  // one buffer per parameter; hazards and races are then judged across
  // places for these names.
  bool shared_parameters = false;
  MemoryPlan memory_plan;

  // Whether `name` is one storage shared by every place.
  bool IsSharedStorage(const std::string& name) const;

 private:
  std::shared_ptr<const Program> program_;
  std::vector<Place> places_;
  std::vector<SsaOp> ops_;
  std::vector<SsaVar> vars_;
  std::vector<bool> removed_;
  // name -> per place -> var ids by version.
  std::map<std::string, std::vector<std::vector<int>>> versions_;
};

// Every pair of accesses to one storage ((var name, place), or the var name
// for shared parameters) where one is a write, unordered by the graph, is a
// race. OK when there is none; otherwise FailedPrecondition naming the
// storage and both ops of the first race found (and how many there are).
Status CheckRaces(const SsaGraph& graph);

// Reachability between ops (bitset transitive closure over a topological
// order): O(ops^2 / 8) bytes, meant for checkers and tests.
class SsaReachability {
 public:
  static StatusOr<SsaReachability> Create(const SsaGraph& graph);
  // Whether a path of one or more edges leads from op `from` to op `to`.
  bool Reaches(int from, int to) const;
  bool Ordered(int a, int b) const { return Reaches(a, b) || Reaches(b, a); }

 private:
  int n_ = 0;
  size_t words_ = 0;
  std::vector<uint64_t> bits_;  // row `from`: ops reachable from it
};

}  // namespace parex
