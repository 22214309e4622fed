#include "graph/ssa/optimizer_slices.h"

#include <algorithm>
#include <map>
#include <set>

namespace parex {

const OptimizerSlots* SliceableOptimizer(const std::string& type) {
  static const std::map<std::string, OptimizerSlots> table = {
      {"sgd", {{"Param", "Grad"}, {"ParamOut"}, {"LearningRate"}, {}, ""}},
      {"momentum",
       {{"Param", "Grad", "Velocity"},
        {"ParamOut", "VelocityOut"},
        {"LearningRate"},
        {},
        ""}},
      {"adam",
       {{"Param", "Grad", "Moment1", "Moment2"},
        {"ParamOut", "Moment1Out", "Moment2Out"},
        {"LearningRate", "Beta1Pow", "Beta2Pow", "Beta1Tensor", "Beta2Tensor",
         "EpsilonTensor"},
        {"Beta1PowOut", "Beta2PowOut"},
        "GradAddends"}},
  };
  auto it = table.find(type);
  return it == table.end() ? nullptr : &it->second;
}

bool CanSliceOptimizer(const OpDesc& op) {
  const OptimizerSlots* slots = SliceableOptimizer(op.type());
  if (slots == nullptr) return false;
  auto known = [](const std::vector<std::string>& a,
                  const std::vector<std::string>& b, const std::string& s) {
    return std::find(a.begin(), a.end(), s) != a.end() ||
           std::find(b.begin(), b.end(), s) != b.end();
  };
  for (const auto& slot : op.proto().inputs()) {
    if (slot.arguments_size() == 0) continue;
    if (slot.arguments_size() != 1 ||
        !known(slots->sliced_inputs, slots->scalar_inputs, slot.parameter())) {
      return false;
    }
  }
  for (const auto& slot : op.proto().outputs()) {
    if (slot.arguments_size() == 0) continue;
    if (slot.arguments_size() != 1 ||
        !known(slots->sliced_outputs, slots->scalar_outputs,
               slot.parameter())) {
      return false;
    }
  }
  // Every sliced slot present (Param, Grad and ParamOut at least).
  for (const std::string& s : slots->sliced_inputs) {
    if (op.FirstInput(s).empty()) return false;
  }
  // Every sliced output updates a sliced input in place (ParamOut is Param,
  // Moment1Out is Moment1, ...): a slice writes through its views into the
  // very tensors it read, never into a separate output it would allocate.
  for (const std::string& s : slots->sliced_outputs) {
    const std::string out = op.FirstOutput(s);
    if (out.empty()) return false;
    bool in_place = false;
    for (const std::string& in : slots->sliced_inputs) {
      in_place = in_place || op.FirstInput(in) == out;
    }
    if (!in_place) return false;
  }
  return true;
}

namespace {

// Slices of optimizer op `op` (on the owner), wired around it: each waits
// for what the op waits for (its inputs' writers: the gradient's reduce; the
// readers it must follow), and the op waits for every slice, so whatever
// follows it follows them.
void AddSlices(SsaGraph* g, int op) {
  std::set<int> before;
  for (int v : g->op(op).inputs) {
    const int w = g->var(v).generator;
    if (w >= 0) before.insert(w);
  }
  const int n = g->num_places();
  const std::string type = g->op(op).type;
  const int program_op = g->op(op).program_op;
  const int owner = g->op(op).place;
  for (int k = 0; k < n; ++k) {
    const int slice = g->AddOp(SsaOpKind::kComputation, type, k, {k});
    SsaOp& s = g->mutable_op(slice);
    s.program_op = program_op;
    s.slice = k;
    s.num_slices = n;
    s.root = owner;
    for (int w : before) {
      g->AddControlEdge(w, slice, ControlReason::kOptimizerSlice);
    }
    g->AddControlEdge(slice, op, ControlReason::kOptimizerSlice);
  }
  g->mutable_op(op).num_slices = n;
}

// Leaves the sum of `info`'s gradient to the slices of optimizer op `op`
// when its reduce's result is read by `op` alone (a fetch or another op
// reading it would see a partial sum).
void FuseReduce(SsaGraph* g, int op, const GradInfo& info) {
  const int c = info.collective;
  if (c < 0 || g->op(c).kind != SsaOpKind::kReduce ||
      g->op(c).var_names.size() != 1) {
    return;
  }
  for (int v : g->op(c).outputs) {
    if (g->var(v).is_control()) continue;
    for (int r : g->var(v).readers) {
      if (r != op) return;
    }
  }
  g->mutable_op(c).num_slices = g->op(op).num_slices;
  for (int s = 0; s < static_cast<int>(g->ops().size()); ++s) {
    SsaOp& slice = g->mutable_op(s);
    if (slice.slice >= 0 && slice.program_op == g->op(op).program_op) {
      slice.sliced_reduce = c;
    }
  }
}

}  // namespace

void SliceOptimizers(SsaGraph* g) {
  const BuildStrategy& strategy = g->strategy;
  const int n = g->num_places();
  const int64_t min_numel = strategy.slice_optimizer_min_numel;
  if (!g->shared_parameters || n < 2 || min_numel <= 0 ||
      strategy.enable_sequential_execution) {
    return;
  }
  const Block& block = g->program().global_block();
  const int num_ops = static_cast<int>(g->ops().size());
  for (int op = 0; op < num_ops; ++op) {
    const SsaOp& o = g->op(op);
    if (o.kind != SsaOpKind::kComputation || o.program_op < 0) continue;
    const OpDesc& desc = block.op(o.program_op);
    if (!CanSliceOptimizer(desc)) continue;
    const std::string param = desc.FirstInput("Param");
    auto info =
        std::find_if(g->grads.begin(), g->grads.end(),
                     [&](const GradInfo& i) { return i.param == param; });
    if (info == g->grads.end() || info->owner != o.place || info->sparse ||
        info->grad != desc.FirstInput("Grad") || info->numel < min_numel ||
        info->numel < n) {
      continue;
    }
    AddSlices(g, op);
    // memory_optimize may reuse a place's gradient buffer once the reduce
    // (its last reader in the graph) is done, while slices would still read
    // it: the reduce then runs whole.
    if (!strategy.memory_optimize) FuseReduce(g, op, *info);
  }
}

}  // namespace parex
