#include "graph/ssa/multi_device_builder.h"

#include <algorithm>
#include <map>
#include <utility>

#include "base/dims.h"
#include "base/dtype.h"
#include "graph/builder/backward.h"
#include "graph/builder/channels_last.h"
#include "graph/builder/sync_batch_norm.h"
#include "graph/ir/op_schema.h"
#include "graph/ssa/memory_plan.h"
#include "graph/ssa/multi_device_builder_impl.h"
#include "graph/ssa/multi_device_checks.h"
#include "graph/ssa/optimizer_slices.h"
#include "graph/ssa/ssa_dump.h"
#include "graph/ssa/ssa_validate.h"

namespace parex {
namespace {

using GradientScale = BuildStrategy::GradientScale;

bool IsLossGradOp(const OpDesc& op) {
  return OpRole(op) == (kOpRoleBackward | kOpRoleLoss);
}

}  // namespace

namespace multi_device {

void Builder::Wire(int op,
                   const std::vector<std::pair<std::string, int>>& reads,
                   const std::vector<std::pair<std::string, int>>& writes) {
  std::vector<Hazard> hazards;
  for (const auto& [name, place] : reads) {
    graph_.AddInput(op, graph_.ReadVar(name, place));
    if (!graph_.IsSharedStorage(name)) continue;
    auto it = shared_writer_.find(name);
    if (it != shared_writer_.end()) {
      hazards.push_back({it->second, ControlReason::kReadAfterWrite});
    }
  }
  for (const auto& [name, place] : writes) {
    // The versions this write replaces: (name, place), or the name on every
    // place for a shared storage.
    std::vector<int> prev;
    const bool shared = graph_.IsSharedStorage(name);
    for (int p = 0; p < n_; ++p) {
      if ((shared || p == place) && graph_.Latest(name, p) >= 0) {
        prev.push_back(graph_.Latest(name, p));
      }
    }
    for (int v : prev) {
      for (int r : graph_.var(v).readers) {
        hazards.push_back({r, ControlReason::kWriteAfterRead});
      }
      const int g = graph_.var(v).generator;
      if (g >= 0) hazards.push_back({g, ControlReason::kWriteAfterWrite});
    }
    if (shared) {
      auto it = shared_writer_.find(name);
      if (it != shared_writer_.end()) {
        hazards.push_back({it->second, ControlReason::kWriteAfterWrite});
      }
    }
  }
  // Newest first; a reader before a writer of the same op id.
  std::stable_sort(
      hazards.begin(), hazards.end(),
      [](const Hazard& a, const Hazard& b) { return a.from > b.from; });
  std::vector<bool> ancestors;
  bool computed = false;
  for (const Hazard& h : hazards) {
    if (h.from == op) continue;
    if (!computed) {
      ancestors = graph_.Ancestors(op);
      computed = true;
    }
    if (ancestors[h.from]) continue;
    graph_.AddControlEdge(h.from, op, h.reason);
    const std::vector<bool> more = graph_.Ancestors(h.from);
    for (size_t i = 0; i < more.size(); ++i) {
      if (more[i]) ancestors[i] = true;
    }
    ancestors[h.from] = true;
  }
  for (const auto& [name, place] : writes) {
    graph_.WriteVar(op, name, place);
    if (graph_.IsSharedStorage(name)) shared_writer_[name] = op;
  }
}

Status Builder::CheckGradReads(int index, int place) {
  // Reduce mode merges a gradient on its owner only: elsewhere it holds the
  // place's own partial sum, which an optimizer must not read.
  if (!reduce_mode_) return Status::Ok();
  const OpDesc& op = block_.op(index);
  for (const std::string& name : op.InputArgumentNames()) {
    auto g = grad_index_.find(name);
    if (g == grad_index_.end()) continue;
    const int owner = graph_.grads[g->second].owner;
    if (owner != place && (OpRole(op) & kOpRoleOptimize) != 0) {
      return Unimplemented(
          op.Label() + " runs on " + graph_.places()[place].ToString() +
          " but reads gradient '" + name + "', which Reduce mode merges on " +
          graph_.places()[owner].ToString() +
          " only (ops over several parameters' gradients, such as clipping "
          "by global norm, need AllReduce mode)");
    }
  }
  return Status::Ok();
}

Status Builder::AddComputation(int index, int place, bool owner_only) {
  PAREX_RETURN_IF_ERROR(CheckGradReads(index, place));
  const OpDesc& desc = block_.op(index);
  for (const std::string& name : desc.InputArgumentNames()) {
    auto it = local_place_.find(name);
    if (it != local_place_.end() && it->second != place &&
        grad_index_.count(GradVarName(name)) != 0) {
      // A parameter its owner updated, read elsewhere: broadcast it now.
      Broadcast(name);
      continue;
    }
    if (it != local_place_.end() && it->second != place &&
        !graph_.IsSharedStorage(name)) {
      return Unimplemented(
          desc.Label() + " runs on " + graph_.places()[place].ToString() +
          " but reads '" + name + "', which Reduce mode computes on " +
          graph_.places()[it->second].ToString() +
          " only (ops over several parameters' gradients, such as clipping "
          "by global norm, need AllReduce mode)");
    }
  }
  for (const std::string& name : desc.OutputArgumentNames()) {
    if (owner_only) {
      local_place_[name] = place;
    } else {
      local_place_.erase(name);
    }
  }
  const int op =
      graph_.AddOp(SsaOpKind::kComputation, desc.type(), place, {place});
  graph_.mutable_op(op).program_op = index;
  std::vector<std::pair<std::string, int>> reads, writes;
  for (const std::string& name : desc.InputArgumentNames()) {
    reads.emplace_back(name, place);
  }
  for (const std::string& name : desc.OutputArgumentNames()) {
    writes.emplace_back(name, place);
  }
  Wire(op, reads, writes);
  if (writes.empty()) graph_.AddDummyOutput(op);
  return Status::Ok();
}

Status Builder::AddScaleLossGrad(int index) {
  const OpDesc& desc = block_.op(index);
  if (strategy_.gradient_scale == GradientScale::kCustomized) {
    return Status::Ok();  // loss@GRAD is fed on every place
  }
  double value = 1.0;
  if (desc.HasAttr("value")) {
    StatusOr<float> v = desc.GetAttr<float>("value");
    if (v.ok()) value = *v;
  }
  if (strategy_.gradient_scale == GradientScale::kCoeffNumDevice) {
    value /= strategy_.world_places > 0 ? strategy_.world_places : n_;
  }
  const std::string out = desc.OutputArgumentNames()[0];
  for (int p = 0; p < n_; ++p) {
    const int op =
        graph_.AddOp(SsaOpKind::kScaleLossGrad, "scale_loss_grad", p, {p});
    graph_.mutable_op(op).program_op = index;
    graph_.mutable_op(op).scale = value;
    Wire(op, {{graph_.loss_name, p}}, {{out, p}});
  }
  return Status::Ok();
}

void Builder::AddCollective(SsaOpKind kind, std::vector<std::string> grads,
                            int root) {
  const int op = graph_.AddOp(kind, SsaOpKindName(kind), -1, AllPlaces());
  graph_.mutable_op(op).root = root;
  std::vector<std::pair<std::string, int>> reads, writes;
  for (const std::string& g : grads) {
    for (int p = 0; p < n_; ++p) reads.emplace_back(g, p);
    for (int p = 0; p < n_; ++p) {
      if (kind != SsaOpKind::kReduce || p == root) writes.emplace_back(g, p);
    }
    auto info = grad_index_.find(g);
    if (info != grad_index_.end()) graph_.grads[info->second].collective = op;
  }
  Wire(op, reads, writes);
  graph_.mutable_op(op).var_names = std::move(grads);
}

void Builder::FlushBucket() {
  if (bucket_.empty()) return;
  graph_.buckets.push_back(GradBucket{bucket_, bucket_bytes_, -1});
  AddCollective(SsaOpKind::kFusedAllReduce, std::move(bucket_), -1);
  graph_.buckets.back().op = static_cast<int>(graph_.ops().size()) - 1;
  bucket_.clear();
  bucket_bytes_ = 0;
}

Status Builder::MergeGradient(const std::string& param, const std::string& grad,
                              int producer) {
  if (grad_index_.count(grad) != 0) {
    return InvalidArgument(block_.op(producer).Label() +
                           ": op_role_var names gradient '" + grad +
                           "' a second time (it was merged already)");
  }
  const VarDesc* p = block_.FindVar(param);
  GradInfo info;
  info.param = param;
  info.grad = grad;
  info.program_op = producer;
  const Dims dims = p->dims();
  if (p->dtype() == DType::kUndefined ||
      std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) {
    return InvalidArgument("parameter '" + param +
                           "' needs a known dtype and static dims to be "
                           "merged across places");
  }
  info.numel = Numel(dims);
  info.bytes = info.numel * static_cast<int64_t>(SizeOf(p->dtype()));
  info.sparse = IsSparseGradient(block_.op(producer), grad);
  if (reduce_mode_) {
    const int owner = static_cast<int>(
        std::min_element(owned_numel_.begin(), owned_numel_.end()) -
        owned_numel_.begin());
    owned_numel_[owner] += info.numel;
    info.owner = owner;
    owner_[param] = owner;
    owner_[grad] = owner;
  }
  if (placed_) return Status::Ok();  // AddPlacedSends
  grad_index_[grad] = static_cast<int>(graph_.grads.size());
  graph_.grads.push_back(info);
  if (reduce_mode_) {
    AddCollective(SsaOpKind::kReduce, {grad}, info.owner);
  } else if (info.sparse) {
    AddCollective(SsaOpKind::kAllGather, {grad}, -1);
  } else if (strategy_.fuse_all_reduce_ops) {
    if (!bucket_.empty() &&
        bucket_bytes_ + info.bytes > strategy_.fuse_bucket_bytes) {
      FlushBucket();
    }
    bucket_.push_back(grad);
    bucket_bytes_ += info.bytes;
  } else {
    AddCollective(SsaOpKind::kAllReduce, {grad}, -1);
  }
  return Status::Ok();
}

Status Builder::AddProgramOp(int index) {
  const OpDesc& desc = block_.op(index);
  if (placed_) {
    PAREX_ASSIGN_OR_RETURN(const bool here, RunsOnPlacedNode(desc, strategy_));
    if (!here) return Status::Ok();
  }
  if (desc.type() == "feed") return Status::Ok();  // its output is an input
  if (desc.type() == "fetch") {
    program_fetches_.push_back(desc.FirstInput("X"));
    return Status::Ok();
  }
  const int role = OpRole(desc);
  // An op touching a gradient of the open bucket, or the end of the
  // backward pass, issues the bucket first.
  if (!bucket_.empty()) {
    bool touches = (role & (kOpRoleOptimize | kOpRoleLRSched)) != 0;
    for (const auto& names :
         {desc.InputArgumentNames(), desc.OutputArgumentNames()}) {
      for (const std::string& name : names) {
        touches = touches || std::find(bucket_.begin(), bucket_.end(), name) !=
                                 bucket_.end();
      }
    }
    if (touches) FlushBucket();
  }
  if (IsLossGradOp(desc)) {
    PAREX_RETURN_IF_ERROR(AddScaleLossGrad(index));
  } else {
    const std::vector<std::string> role_var = OpRoleVar(desc);
    if (reduce_mode_ && (role & kOpRoleOptimize) != 0 && !role_var.empty()) {
      auto it = owner_.find(role_var[0]);
      if (it == owner_.end()) {
        return InvalidArgument(
            desc.Label() + " optimizes '" + role_var[0] +
            "', whose gradient no Backward op produced (Reduce mode places "
            "the op on the gradient's owner)");
      }
      PAREX_RETURN_IF_ERROR(AddComputation(index, it->second, true));
    } else {
      for (int p = 0; p < n_; ++p) {
        PAREX_RETURN_IF_ERROR(AddComputation(index, p));
      }
      // Synchronised batch norm's sums: every place's, added up.
      for (const std::string& name : SyncedOutputs(desc)) {
        AddCollective(SsaOpKind::kAllReduce, {name}, -1);
      }
    }
    if ((role & kOpRoleBackward) != 0) {
      for (size_t k = 0; k + 1 < role_var.size(); k += 2) {
        PAREX_RETURN_IF_ERROR(
            MergeGradient(role_var[k], role_var[k + 1], index));
      }
    }
  }
  return Status::Ok();
}

void Builder::Broadcast(const std::string& param) {
  const int owner = local_place_.at(param);
  local_place_.erase(param);
  if (graph_.shared_parameters) return;  // one buffer: nothing to send
  const int op =
      graph_.AddOp(SsaOpKind::kBroadcast, "broadcast", -1, AllPlaces());
  graph_.mutable_op(op).root = owner;
  graph_.mutable_op(op).var_names = {param};
  std::vector<std::pair<std::string, int>> writes;
  for (int p = 0; p < n_; ++p) writes.emplace_back(param, p);
  Wire(op, {{param, owner}}, writes);
}

void Builder::AddBroadcasts() {
  if (!reduce_mode_) return;
  for (const GradInfo& g : graph_.grads) {
    if (local_place_.count(g.param) != 0) Broadcast(g.param);
  }
}

Status Builder::AddFetches(const std::vector<std::string>& fetch_names) {
  std::vector<std::string> names = program_fetches_;
  for (const std::string& f : fetch_names) {
    if (std::find(names.begin(), names.end(), f) == names.end()) {
      names.push_back(f);
    }
  }
  for (const std::string& name : names) {
    if (block_.FindVar(name) == nullptr) {
      return NotFound("fetch target '" + name +
                      "' is not a variable of block 0");
    }
    const int op = graph_.AddOp(SsaOpKind::kFetch, "fetch", -1, AllPlaces());
    graph_.mutable_op(op).var_names = {name};
    std::vector<std::pair<std::string, int>> reads;
    for (int p = 0; p < n_; ++p) reads.emplace_back(name, p);
    Wire(op, reads, {});
    graph_.AddDummyOutput(op);
  }
  return Status::Ok();
}

void Builder::AddSequentialOrder() {
  if (!strategy_.enable_sequential_execution) return;
  std::vector<int> last(n_, -1);
  for (const SsaOp& op : graph_.ops()) {
    if (op.kind != SsaOpKind::kComputation &&
        op.kind != SsaOpKind::kScaleLossGrad) {
      continue;
    }
    if (last[op.place] >= 0) {
      graph_.AddControlEdge(last[op.place], op.id, ControlReason::kSequential);
    }
    last[op.place] = op.id;
  }
}

Status Builder::Build(const std::vector<std::string>& fetch_names) {
  if (n_ == 0) return InvalidArgument("multi-device graph: no places given");
  PAREX_RETURN_IF_ERROR(CheckMultiDeviceProgram(block_, graph_.loss_name));
  if (placed_) {
    PAREX_ASSIGN_OR_RETURN(exchanges_, PlanPlacedExchanges(block_, strategy_));
    PAREX_ASSIGN_OR_RETURN(prefetches_,
                           PlanPlacedPrefetches(block_, strategy_));
    if (strategy_.placed_pserver) {
      for (const PlacedPrefetch& p : prefetches_) AddPrefetch(p);
      PAREX_RETURN_IF_ERROR(AddPserverRecvs());
    }
  }
  for (int i = 0; i < block_.num_ops(); ++i) {
    for (const PlacedPrefetch& p : prefetches_) {
      if (!strategy_.placed_pserver && p.before == i) AddPrefetch(p);
    }
    PAREX_RETURN_IF_ERROR(AddProgramOp(i));
    AddPlacedSends(i);
  }
  FlushBucket();
  AddBroadcasts();
  AddPlacedBroadcasts();
  PAREX_RETURN_IF_ERROR(AddFetches(fetch_names));
  SliceOptimizers(&graph_);
  AddSequentialOrder();
  PAREX_RETURN_IF_ERROR(ValidateSsaGraph(graph_));
  if (strategy_.memory_optimize) {
    PAREX_RETURN_IF_ERROR(
        PlanMemory(&graph_, strategy_.memory_plan_batch_per_place));
  }
  if (!strategy_.debug_graphviz_path.empty()) {
    PAREX_RETURN_IF_ERROR(
        WriteSsaGraphDot(graph_, strategy_.debug_graphviz_path));
  }
  return Status::Ok();
}

}  // namespace multi_device

StatusOr<SsaGraph> BuildMultiDeviceGraph(
    const Program& program, const std::vector<Place>& places,
    const std::string& loss_name, const BuildStrategy& strategy,
    const std::vector<std::string>& fetch_names) {
  const size_t world = strategy.world_places > 0
                           ? static_cast<size_t>(strategy.world_places)
                           : places.size();
  if (strategy.channels_last && program.num_blocks() == 1 &&
      std::all_of(places.begin(), places.end(),
                  [](const Place& p) { return p.is_cpu(); })) {
    std::vector<std::string> keep = fetch_names;
    keep.push_back(loss_name);
    BuildStrategy rest = strategy;
    rest.channels_last = false;
    return BuildMultiDeviceGraph(TrainingChannelsLast(program, keep), places,
                                 loss_name, rest, fetch_names);
  }
  if (world > 1 && HasBatchNormToSync(program, strategy.sync_batch_norm)) {
    PAREX_ASSIGN_OR_RETURN(Program synced,
                           SyncBatchNorm(program, strategy.sync_batch_norm));
    multi_device::Builder builder(synced, places, loss_name, strategy);
    PAREX_RETURN_IF_ERROR(builder.Build(fetch_names));
    return builder.Take();
  }
  multi_device::Builder builder(program, places, loss_name, strategy);
  PAREX_RETURN_IF_ERROR(builder.Build(fetch_names));
  return builder.Take();
}

std::vector<int64_t> OwnedElements(const SsaGraph& graph) {
  std::vector<int64_t> owned(graph.num_places(), 0);
  for (const GradInfo& g : graph.grads) {
    if (g.owner >= 0) owned[g.owner] += g.numel;
  }
  return owned;
}

}  // namespace parex
