#include "graph/ssa/multi_thread_transpile.h"

#include <algorithm>
#include <set>
#include <utility>

#include "graph/builder/backward.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"

namespace parex {
namespace {

constexpr char kThreadInfix[] = "@THREAD@";

bool WritesVar(const OpDesc& op, const std::string& name) {
  const std::vector<std::string> outs = op.OutputArgumentNames();
  return std::find(outs.begin(), outs.end(), name) != outs.end();
}

std::string ThreadName(const std::string& name, int t) {
  return name + kThreadInfix + std::to_string(t);
}

bool IsBackward(const OpDesc& op) { return OpRole(op) & kOpRoleBackward; }

// The fill of loss@GRAD; the multi-device pass wants one per program.
bool IsLossGradFill(const OpDesc& op) {
  return OpRole(op) == (kOpRoleBackward | kOpRoleLoss);
}

// What the transpile replicates, renames and merges.
struct ThreadPlan {
  int n = 0;
  std::vector<bool> replicated;  // per block-0 op
  int first = -1, last = -1;     // first and last replicated op
  std::set<std::string> fed, per_thread, merged;
  std::vector<std::string> per_thread_order;  // fed first, then by writer
  std::vector<std::pair<std::string, std::string>> grads;  // (param, grad)
};

// Forward, Loss and Backward ops run once per thread; feed, fetch and ops
// of any other role (Optimize, LRSched, RPC, Dist) run once.
Status FindReplicated(const Block& block, ThreadPlan* plan) {
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    const bool rep = op.type() != "feed" && op.type() != "fetch" &&
                     (OpRole(op) & ~(kOpRoleBackward | kOpRoleLoss)) == 0;
    plan->replicated.push_back(rep);
    if (!rep) continue;
    for (const auto& a : op.proto().attrs()) {
      if (a.type() == proto::BLOCK || a.type() == proto::BLOCKS) {
        return Unimplemented(op.Label() + ": has a sub-block, not replicable");
      }
    }
    if (plan->first < 0) plan->first = i;
    plan->last = i;
  }
  if (plan->first < 0) {
    return FailedPrecondition(
        "TranspileMultiThread: block 0 has no forward or backward ops");
  }
  return Status::Ok();
}

Status FindPerThreadVars(const Block& block,
                         const std::vector<std::string>& feeds,
                         ThreadPlan* plan) {
  auto add = [plan](const std::string& v) {
    if (plan->per_thread.insert(v).second) plan->per_thread_order.push_back(v);
  };
  for (const std::string& f : feeds) {
    const VarDesc* var = block.FindVar(f);
    const std::string what = "TranspileMultiThread: feed '" + f + "'";
    if (var == nullptr || !var->is_tensor()) {
      return InvalidArgument(what + " is not a tensor var of block 0");
    }
    if (var->persistable()) return InvalidArgument(what + " is persistable");
    const Dims dims = var->dims();
    if (dims.empty() || (dims[0] >= 0 && dims[0] % plan->n != 0)) {
      return InvalidArgument(what + " dims " + DimsToString(dims) +
                             " do not split into " + std::to_string(plan->n) +
                             " along dim 0");
    }
    plan->fed.insert(f);
    add(f);
  }
  std::set<std::string> written;  // by the ops so far
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    for (const std::string& in : op.InputArgumentNames()) {
      const VarDesc* var = block.FindVar(in);
      if (plan->replicated[i] && var != nullptr && !var->persistable() &&
          !plan->fed.count(in) && !written.count(in)) {
        return FailedPrecondition(
            op.Label() + ": reads '" + in + "', which is not persistable, " +
            "not fed and written by no earlier op; list it in the feeds");
      }
    }
    for (const std::string& o : op.OutputArgumentNames()) {
      written.insert(o);
      if (!plan->replicated[i]) continue;
      if (plan->fed.count(o)) {
        return InvalidArgument(op.Label() + ": writes feed '" + o + "'");
      }
      const VarDesc* var = block.FindVar(o);  // undeclared: fails validation
      if (var != nullptr && !var->persistable()) add(o);
    }
  }
  return Status::Ok();
}

// The loss and the (param, grad) pairs of the replicated Backward ops'
// op_role_var, in production order.
Status FindMerged(const Block& block, const std::string& loss,
                  ThreadPlan* plan) {
  bool loss_ok = false;
  plan->merged = {loss};
  for (int i = plan->first; i <= plan->last; ++i) {
    const OpDesc& op = block.op(i);
    if (!plan->replicated[i]) continue;
    loss_ok |= !IsBackward(op) && WritesVar(op, loss);
    const auto pairs =
        IsBackward(op) ? OpRoleVar(op) : std::vector<std::string>{};
    for (size_t k = 0; k + 1 < pairs.size(); k += 2) {
      const std::string& grad = pairs[k + 1];
      // Written by a replicated op: per-thread unless persistable.
      if (!WritesVar(op, grad) || !plan->per_thread.count(grad)) {
        return InvalidArgument(op.Label() + ": op_role_var names gradient '" +
                               grad + "', not a non-persistable var it writes");
      }
      if (block.FindVar(grad)->type() == proto::VarType::SELECTED_ROWS) {
        return Unimplemented(op.Label() + ": sparse gradient '" + grad +
                             "' cannot be merged across threads");
      }
      if (plan->merged.insert(grad).second) {
        plan->grads.emplace_back(pairs[k], grad);
      }
    }
  }
  if (!loss_ok || !plan->per_thread.count(loss)) {
    return InvalidArgument(
        "TranspileMultiThread: loss '" + loss +
        "' is not a non-persistable var a forward op writes");
  }
  return Status::Ok();
}

// Ops run once must not need what only the threads compute, nor sit among
// the replicated ops feeding them (they move after them).
Status CheckRunOnceOps(const Block& block, const ThreadPlan& plan) {
  for (int i = plan.first + 1; i < block.num_ops(); ++i) {
    if (plan.replicated[i]) continue;
    const OpDesc& op = block.op(i);
    for (const std::string& in : op.InputArgumentNames()) {
      if (plan.per_thread.count(in) && !plan.merged.count(in) &&
          !plan.fed.count(in)) {
        return FailedPrecondition(op.Label() + ": reads '" + in +
                                  "', which each thread computes " +
                                  "separately (only the loss and the parameter "
                                  "gradients are merged)");
      }
    }
    for (int j = i + 1; j <= plan.last; ++j) {
      const auto ins = block.op(j).InputArgumentNames();
      for (const std::string& o : op.OutputArgumentNames()) {
        if (plan.replicated[j] && std::count(ins.begin(), ins.end(), o)) {
          return FailedPrecondition(
              op.Label() + " runs once but sits among the replicated ops and " +
              "writes '" + o + "', which " + block.op(j).Label() + " reads");
        }
      }
    }
  }
  return Status::Ok();
}

OpDesc* AppendCopy(const OpDesc& src, Block* out) {
  OpDesc* op = out->AppendOp(src.type());
  *op->mutable_proto() = src.proto();
  return op;
}

// A copy of `src` for thread t: per-thread vars renamed, no op_role_var
// (the merged gradients carry it).
void AppendReplica(const OpDesc& src, const ThreadPlan& plan, int t,
                   Block* out) {
  OpDesc* op = AppendCopy(src, out);
  auto rename = [&](auto* slots) {
    for (auto& slot : *slots) {
      for (auto& arg : *slot.mutable_arguments()) {
        if (plan.per_thread.count(arg)) arg = ThreadName(arg, t);
      }
    }
  };
  rename(op->mutable_proto()->mutable_inputs());
  rename(op->mutable_proto()->mutable_outputs());
  op->RemoveAttr("op_role_var");
}

// A new op X -> Out with every schema attribute written (split, sum and
// scale have schemas, so FillDefaultAttrs cannot fail).
OpDesc* AppendOp(const std::string& type, const std::vector<std::string>& x,
                 const std::vector<std::string>& out, int role, Block* block) {
  OpDesc* op = block->AppendOp(type);
  op->SetInput("X", x);
  op->SetOutput("Out", out);
  op->SetAttr<int>("op_role", role);
  Status filled = FillDefaultAttrs(op);
  PAREX_CHECK(filled.ok(), filled.ToString());
  return op;
}

// `sum` of the threads' copies of `name` into `name`, then `scale` by 1/N
// in place; the scale carries `role` and `role_var`.
void AppendMean(const std::string& name, int n, int role,
                const std::vector<std::string>& role_var, Block* out) {
  std::vector<std::string> copies;
  for (int t = 0; t < n; ++t) copies.push_back(ThreadName(name, t));
  AppendOp("sum", copies, {name}, role, out);
  OpDesc* scale = AppendOp("scale", {name}, {name}, role, out);
  scale->SetAttr<float>("scale", 1.0f / static_cast<float>(n));
  if (!role_var.empty()) scale->SetAttr("op_role_var", role_var);
}

// Declares `<v>@THREAD@<t>` like v (a feed's static batch extent / N).
Status DeclareThreadVars(const Block& block, const ThreadPlan& plan,
                         Block* out) {
  for (const std::string& name : plan.per_thread_order) {
    const VarDesc* src = block.FindVar(name);
    for (int t = 0; t < plan.n; ++t) {
      const std::string thread_name = ThreadName(name, t);
      if (block.FindVar(thread_name) != nullptr) {
        return FailedPrecondition("var '" + thread_name + "' already exists");
      }
      VarDesc* var = out->Var(thread_name);
      *var->mutable_proto() = src->proto();
      var->mutable_proto()->set_name(thread_name);
      var->SetPersistable(false);
      Dims dims = src->dims();
      if (plan.fed.count(name) && dims[0] > 0) {
        dims[0] /= plan.n;
        var->SetDims(dims);
      }
    }
  }
  return Status::Ok();
}

// The replicated part: splits, forward replicas, the loss mean, the fill of
// loss@GRAD with a copy per thread, backward replicas, gradient means.
void AppendThreads(const Block& block, const std::string& loss,
                   const ThreadPlan& plan, Block* out) {
  const int n = plan.n;
  for (size_t k = 0; k < plan.fed.size(); ++k) {  // the feeds come first
    const std::string& f = plan.per_thread_order[k];
    std::vector<std::string> pieces;
    for (int t = 0; t < n; ++t) pieces.push_back(ThreadName(f, t));
    OpDesc* split = AppendOp("split", {f}, pieces, kOpRoleForward, out);
    split->SetAttr<int>("num", n);
    split->SetAttr<int>("axis", 0);
  }
  auto replicas = [&](bool backward) {
    for (int t = 0; t < n; ++t) {
      for (int i = plan.first; i <= plan.last; ++i) {
        const OpDesc& op = block.op(i);
        if (plan.replicated[i] && IsBackward(op) == backward &&
            !IsLossGradFill(op)) {
          AppendReplica(op, plan, t, out);
        }
      }
    }
  };
  replicas(false);
  AppendMean(loss, n, kOpRoleForward, {}, out);
  for (int i = plan.first; i <= plan.last; ++i) {
    if (!plan.replicated[i] || !IsLossGradFill(block.op(i))) continue;
    AppendCopy(block.op(i), out);
    for (const std::string& o : block.op(i).OutputArgumentNames()) {
      for (int t = 0; t < n && plan.per_thread.count(o); ++t) {
        AppendOp("scale", {o}, {ThreadName(o, t)}, kOpRoleBackward, out);
      }
    }
  }
  replicas(true);
  for (const auto& [param, grad] : plan.grads) {
    AppendMean(grad, n, kOpRoleBackward, {param, grad}, out);
  }
}

}  // namespace

// Details beyond the header: replicated are the ops of role Forward,
// Forward|Loss and Backward except feed and fetch; per-thread are the fed
// vars and the non-persistables they write (persistables they write, like
// batch_norm's running statistics, are shared: each thread updates them in
// turn). The (param, grad) pairs are the replicated Backward ops'
// op_role_var; each gradient mean's `scale` carries op_role Backward and
// op_role_var [param, grad], so the multi-device pass merges it across
// places too. The fill of loss@GRAD (Backward|Loss) runs once, as the
// multi-device pass turns the single such op into scale_loss_grad; each
// `loss@GRAD@THREAD@t` is a copy of it (`scale` by 1). Block 0: the ops
// before the first replicated op; the splits (num N, axis 0); the forward
// ops of threads 0..N-1; the loss mean; the fill and its copies; the
// backward ops of threads 0..N-1; the gradient means; the other ops in
// order. New vars' dims come from compile-time shape inference; the result
// is validated. REQUIRES at run time: the fed batch divisible by N.
// Errors: N < 1; an unknown or persistable feed, one a replicated op writes
// or whose static batch extent N does not divide; a loss no forward op
// writes; a non-persistable var a replicated op reads that no feed or
// earlier op provides; a replicated op with a sub-block; a sparse or
// persistable gradient; an op run once reading a per-thread var other than
// the loss and gradients, or sitting among the replicated ops and writing a
// var they read later.
StatusOr<Program> TranspileMultiThread(const Program& program,
                                       const std::string& loss,
                                       const std::vector<std::string>& feeds,
                                       int num_threads) {
  if (num_threads < 1) {
    return InvalidArgument("TranspileMultiThread: num_threads is " +
                           std::to_string(num_threads) + ", must be >= 1");
  }
  const Block& block = program.global_block();
  ThreadPlan plan;
  plan.n = num_threads;
  PAREX_RETURN_IF_ERROR(FindReplicated(block, &plan));
  PAREX_RETURN_IF_ERROR(FindPerThreadVars(block, feeds, &plan));
  PAREX_RETURN_IF_ERROR(FindMerged(block, loss, &plan));
  PAREX_RETURN_IF_ERROR(CheckRunOnceOps(block, plan));

  proto::ProgramDesc desc = program.proto();
  desc.mutable_blocks(0)->clear_ops();
  Program result(std::move(desc));
  Block& out = result.global_block();
  PAREX_RETURN_IF_ERROR(DeclareThreadVars(block, plan, &out));
  for (int i = 0; i < plan.first; ++i) AppendCopy(block.op(i), &out);
  const int begin = out.num_ops();
  AppendThreads(block, loss, plan, &out);
  const int end = out.num_ops();
  for (int i = plan.first; i < block.num_ops(); ++i) {
    if (!plan.replicated[i]) AppendCopy(block.op(i), &out);
  }
  for (int i = begin; i < end; ++i) {
    Status inferred = InferShapeAtCompileTime(out.op(i), out, true);
    if (!inferred.ok()) return inferred.WithContext("TranspileMultiThread");
  }
  Status valid = ValidateProgram(result);
  if (!valid.ok()) return valid.WithContext("TranspileMultiThread result");
  return result;
}

}  // namespace parex
