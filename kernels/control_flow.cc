#include "kernels/control_flow.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/config.h"
#include "kernels/op_runner.h"

namespace parex {
namespace {

template <typename T>
void AddInto(const T* g, T* pg, int64_t n) {
  for (int64_t i = 0; i < n; ++i) pg[i] += g[i];
}

bool Absent(const std::string& name) {
  return name.empty() || name == kEmptyVarName;
}

Variable* FindOrCreate(Scope* scope, const std::string& name) {
  Variable* v = scope->FindVar(name);
  return v != nullptr ? v : scope->Var(name);
}

// The tensor input `name` (of `slot`) holds, or an error naming it.
StatusOr<const Tensor*> HeldTensor(const OpDesc& op, const Scope& scope,
                                   const std::string& slot,
                                   const std::string& name) {
  const Variable* v = scope.FindVar(name);
  const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
  if (t == nullptr || !t->defined() || !t->initialized()) {
    return NotFound(op.Label() + ": input '" + slot + "' reads variable '" +
                    name +
                    "', which holds no value (not fed, loaded or computed "
                    "before)");
  }
  return t;
}

// A one-element input of `dtype` (a condition or a mask), read on the host.
StatusOr<const Tensor*> ScalarInput(const OpDesc& op, const Scope& scope,
                                    const std::string& slot, DType dtype) {
  const std::string name = op.FirstInput(slot);
  PAREX_ASSIGN_OR_RETURN(const Tensor* t, HeldTensor(op, scope, slot, name));
  if (t->dtype() != dtype || t->numel() != 1) {
    return InvalidArgument(op.Label() + ": input '" + slot + "' ('" + name +
                           "') must be one " + DTypeName(dtype) +
                           " element, got " + DTypeName(t->dtype()) +
                           DimsToString(t->dims()));
  }
  return t;
}

// conditional_block's rule: one true bool with is_scalar_condition, else
// every Input tensor holds elements.
StatusOr<bool> BranchTaken(const OpDesc& op, const Scope& scope) {
  PAREX_ASSIGN_OR_RETURN(bool scalar, op.GetAttr<bool>("is_scalar_condition"));
  if (scalar) {
    PAREX_ASSIGN_OR_RETURN(const Tensor* c,
                           ScalarInput(op, scope, "Cond", DType::kBool));
    return *c->data<bool>();
  }
  for (const std::string& name : op.Input("Input")) {
    const Variable* v = scope.FindVar(name);
    const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
    if (t == nullptr || !t->initialized() || t->numel() == 0) return false;
  }
  return true;
}

// Copies `src` into `dst` (its own buffer, on `place`).
Status CopyInto(const Tensor& src, Tensor* dst, Place place) {
  if (dst->SharesBufferWith(src) && dst->dims() == src.dims()) {
    return Status::Ok();
  }
  PAREX_RETURN_IF_ERROR(dst->TryAllocate(src.dtype(), src.dims(), place));
  if (src.bytes() > 0)
    std::memcpy(dst->raw_data(), src.raw_data(), src.bytes());
  dst->set_lod(src.lod());
  return Status::Ok();
}

// pg += g, element by element (same dtype and shape).
Status AccumulateInto(const OpDesc& op, const std::string& name,
                      const Tensor& g, Tensor* pg) {
  if (g.dtype() != pg->dtype() || g.dims() != pg->dims()) {
    return InvalidArgument(op.Label() + ": gradient '" + name + "' is " +
                           DTypeName(pg->dtype()) + DimsToString(pg->dims()) +
                           " but an iteration gave " + DTypeName(g.dtype()) +
                           DimsToString(g.dims()));
  }
  switch (g.dtype()) {
    case DType::kFP32:
      AddInto(g.data<float>(), pg->data<float>(), g.numel());
      return Status::Ok();
    case DType::kFP64:
      AddInto(g.data<double>(), pg->data<double>(), g.numel());
      return Status::Ok();
    default:
      return Unimplemented(op.Label() + ": gradient '" + name + "' is " +
                           DTypeName(g.dtype()) +
                           "; loop gradients are summed in fp32 or fp64");
  }
}

Status FillZeros(DType dtype, const Dims& dims, Tensor* dst, Place place) {
  PAREX_RETURN_IF_ERROR(dst->TryAllocate(dtype, dims, place));
  if (dst->bytes() > 0) std::memset(dst->raw_data(), 0, dst->bytes());
  return Status::Ok();
}

// Deletes the scopes an earlier run kept.
void ForgetScopes(Scope* scope, StepScopes* kept) {
  for (Scope* s : kept->scopes) scope->DeleteScope(s);
  kept->scopes.clear();
}

// Runs `block` op by op in `scope`, whose own variables it creates first.
Status RunBlock(const Block& block, Scope* scope, DeviceContext* dc) {
  for (const auto& var : block.vars()) {
    if (!var->persistable()) scope->Var(var->name());
  }
  for (const auto& op : block.ops()) {
    PAREX_RETURN_IF_ERROR(RunOp(*op, scope, dc));
  }
  return Status::Ok();
}

StepScopes* KeptScopes(const OpDesc& op, Scope* scope, const char* slot) {
  return FindOrCreate(scope, op.FirstOutput(slot))->GetMutableStepScopes();
}

Status RunConditionalBlock(const OpDesc& op, Scope* scope, DeviceContext* dc) {
  PAREX_ASSIGN_OR_RETURN(const Block* sub, op.SubBlock("sub_block"));
  PAREX_ASSIGN_OR_RETURN(bool taken, BranchTaken(op, *scope));
  StepScopes* kept = KeptScopes(op, scope, "Scope");
  ForgetScopes(scope, kept);
  if (!taken) return Status::Ok();
  Scope* child = scope->NewScope();
  kept->scopes.push_back(child);
  return RunBlock(*sub, child, dc);
}

// Hands the gradient of each Input out of `inner` (the branch's scope), or
// zeros shaped like the input where there is none (the branch did not run,
// or nothing in it depends on that input).
Status HandGradientsOut(const OpDesc& op, Scope* scope, const Scope* inner,
                        Place place) {
  const std::vector<std::string> inputs = op.Input("Input");
  const std::vector<std::string> grads = op.Output("Input@GRAD");
  for (size_t i = 0; i < grads.size() && i < inputs.size(); ++i) {
    if (Absent(grads[i])) continue;
    Tensor* out = FindOrCreate(scope, grads[i])->GetMutableTensor();
    // The branch's own gradient (declared in the gradient block), never an
    // outer variable of the same name.
    const Variable* g = inner != nullptr
                            ? inner->FindLocalVar(GradVarName(inputs[i]))
                            : nullptr;
    const Tensor* t = g != nullptr ? g->GetTensor() : nullptr;
    const Variable* xv = scope->FindVar(inputs[i]);
    const Tensor* x = xv != nullptr ? xv->GetTensor() : nullptr;
    Status s;
    if (t != nullptr && t->defined() && t->initialized()) {
      s = CopyInto(*t, out, place);
    } else if (x != nullptr && x->defined() && x->initialized()) {
      s = FillZeros(x->dtype(), x->dims(), out, place);
    }
    if (!s.ok()) {
      return Status(s.code(), op.Label() + ": output 'Input@GRAD' ('" +
                                  grads[i] + "'): " + s.message());
    }
  }
  return Status::Ok();
}

Status RunConditionalBlockGrad(const OpDesc& op, Scope* scope,
                               DeviceContext* dc) {
  PAREX_ASSIGN_OR_RETURN(const Block* sub, op.SubBlock("sub_block"));
  PAREX_ASSIGN_OR_RETURN(bool taken, BranchTaken(op, *scope));
  if (!taken) return HandGradientsOut(op, scope, nullptr, dc->place());
  const std::string name = op.FirstInput("Scope");
  const Variable* v = scope->FindVar(name);
  const StepScopes* kept = v != nullptr ? v->GetStepScopes() : nullptr;
  if (kept == nullptr || kept->scopes.size() != 1) {
    return FailedPrecondition(
        op.Label() + ": input 'Scope' ('" + name +
        "') holds no scope of its forward conditional_block, which must run "
        "before it in the same step");
  }
  Scope* inner = kept->scopes[0];
  PAREX_RETURN_IF_ERROR(RunBlock(*sub, inner, dc));
  return HandGradientsOut(op, scope, inner, dc->place());
}

// The loop inputs a training while snapshots per iteration (Paddle's
// @TMP_COPY): every X but block 0's parameters and the variables an op of
// the body both reads and writes (a counter incremented in place).
std::vector<std::string> SnapshotNames(const OpDesc& op, const Block& body) {
  std::set<std::string> skip;
  const Block* root = op.block();
  while (root != nullptr && root->idx() != 0) {
    root = &root->program()->block(root->parent_idx());
  }
  for (const auto& var :
       root != nullptr ? root->vars() : body.program()->block(0).vars()) {
    if (var->is_parameter()) skip.insert(var->name());
  }
  for (const auto& inner : body.ops()) {
    const std::vector<std::string> outs = inner->OutputArgumentNames();
    for (const std::string& in : inner->InputArgumentNames()) {
      if (std::find(outs.begin(), outs.end(), in) != outs.end()) {
        skip.insert(in);
      }
    }
  }
  std::vector<std::string> names;
  for (const std::string& x : op.Input("X")) {
    if (!Absent(x) && !skip.count(x)) names.push_back(x);
  }
  return names;
}

// One iteration of a training while in a new step scope, which keeps each
// snapshot input as it was when the iteration began (what the gradient
// block reads).
Status RunTrainingIteration(const Block& body,
                            const std::vector<std::string>& snapshots,
                            Scope* scope, Scope* step, DeviceContext* dc) {
  std::vector<std::pair<std::string, Tensor>> before;
  for (const std::string& name : snapshots) {
    const Variable* v = scope->FindVar(name);
    const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
    if (t == nullptr || !t->defined() || !t->initialized()) continue;
    Tensor copy;
    PAREX_RETURN_IF_ERROR(CopyInto(*t, &copy, dc->place()));
    before.emplace_back(name, std::move(copy));
  }
  PAREX_RETURN_IF_ERROR(RunBlock(body, step, dc));
  for (auto& [name, copy] : before) {
    *step->Var(name)->GetMutableTensor() = std::move(copy);
  }
  return Status::Ok();
}

Status RunWhile(const OpDesc& op, Scope* scope, DeviceContext* dc) {
  PAREX_ASSIGN_OR_RETURN(const Block* sub, op.SubBlock("sub_block"));
  PAREX_ASSIGN_OR_RETURN(bool is_test, op.GetAttr<bool>("is_test"));
  StepScopes* kept = KeptScopes(op, scope, "StepScopes");
  ForgetScopes(scope, kept);
  const std::vector<std::string> snapshots =
      is_test ? std::vector<std::string>{} : SnapshotNames(op, *sub);
  const long limit = GetConfigInt("PAREX_MAX_LOOP_ITERATIONS");
  for (long iteration = 0;; ++iteration) {
    PAREX_ASSIGN_OR_RETURN(const Tensor* c,
                           ScalarInput(op, *scope, "Condition", DType::kBool));
    if (!*c->data<bool>()) return Status::Ok();
    if (iteration >= limit) {
      return ResourceExhausted(
          op.Label() + ": the loop ran " + std::to_string(limit) +
          " iterations and its condition '" + op.FirstInput("Condition") +
          "' still holds (PAREX_MAX_LOOP_ITERATIONS=" + std::to_string(limit) +
          "); a condition that never turns false?");
    }
    if (is_test) {  // inference reuses one scope
      if (kept->scopes.empty()) kept->scopes.push_back(scope->NewScope());
      PAREX_RETURN_IF_ERROR(RunBlock(*sub, kept->scopes.back(), dc));
      continue;
    }
    kept->scopes.push_back(scope->NewScope());
    PAREX_RETURN_IF_ERROR(
        RunTrainingIteration(*sub, snapshots, scope, kept->scopes.back(), dc));
  }
}

// Zeros for an output gradient nothing wrote before the loop's gradient:
// shaped as its declaration says.
Status ZerosAsDeclared(const OpDesc& op, const std::string& name, Tensor* t,
                       Place place) {
  const VarDesc* var =
      op.block() != nullptr ? op.block()->FindVar(name) : nullptr;
  if (var == nullptr) {
    return NotFound(op.Label() + ": output gradient '" + name +
                    "' holds no value and is not declared");
  }
  const Dims dims = var->dims();
  for (int64_t d : dims) {
    if (d < 0) {
      return InvalidArgument(op.Label() + ": output gradient '" + name +
                             "' holds no value and its declared shape " +
                             DimsToString(dims) + " has unknown extents");
    }
  }
  return FillZeros(var->dtype(), dims, t, place);
}

// Links the outer output gradients into step scope `step` under the names
// the gradient block reads (attribute original_output_grad).
Status LinkOutputGradients(const OpDesc& op, Scope* scope, Scope* step,
                           bool first, Place place) {
  const std::vector<std::string> outside = op.Input("Out@GRAD");
  PAREX_ASSIGN_OR_RETURN(
      std::vector<std::string> inside,
      op.GetAttr<std::vector<std::string>>("original_output_grad"));
  if (inside.size() != outside.size()) {
    return InvalidArgument(op.Label() +
                           ": attribute 'original_output_grad' "
                           "names " +
                           std::to_string(inside.size()) + " variables for " +
                           std::to_string(outside.size()) + " in 'Out@GRAD'");
  }
  for (size_t k = 0; k < outside.size(); ++k) {
    Variable* ov = Absent(outside[k]) ? nullptr : scope->FindVar(outside[k]);
    if (ov == nullptr) continue;
    Tensor* o = ov->GetMutableTensor();
    if (first && (!o->defined() || !o->initialized())) {
      PAREX_RETURN_IF_ERROR(ZerosAsDeclared(op, outside[k], o, place));
    }
    step->Var(inside[k])->GetMutableTensor()->ShareDataWith(*o);
  }
  return Status::Ok();
}

// After the gradient block ran in `step`: each X's gradient is summed into
// its outer gradient, or, for a loop-carried variable (its gradient is also
// an output gradient), handed out as the next step's output gradient.
Status GatherInputGradients(const OpDesc& op, Scope* scope, Scope* step,
                            bool first, Place place) {
  const std::vector<std::string> xs = op.Input("X");
  const std::vector<std::string> grads = op.Output("X@GRAD");
  const std::vector<std::string> outside = op.Input("Out@GRAD");
  for (size_t k = 0; k < grads.size() && k < xs.size(); ++k) {
    if (Absent(grads[k])) continue;
    const std::string inner = GradVarName(xs[k]);
    Variable* gv = step->FindLocalVar(inner);
    if (gv == nullptr) gv = step->FindVar(inner);
    const Tensor* g = gv != nullptr ? gv->GetTensor() : nullptr;
    if (g == nullptr) {
      return NotFound(op.Label() + ": the gradient block wrote no '" + inner +
                      "' for input 'X' ('" + xs[k] + "')");
    }
    Variable* pgv = FindOrCreate(scope, grads[k]);
    if (pgv == gv) continue;  // the block wrote the outer gradient itself
    Tensor* pg = pgv->GetMutableTensor();
    const bool carried =
        std::find(outside.begin(), outside.end(), grads[k]) != outside.end();
    if (carried) {
      if (g->defined() && g->initialized()) pg->ShareDataWith(*g);
      continue;
    }
    if (!g->defined() || !g->initialized()) continue;
    if (first) {
      PAREX_RETURN_IF_ERROR(FillZeros(g->dtype(), g->dims(), pg, place));
    }
    PAREX_RETURN_IF_ERROR(AccumulateInto(op, grads[k], *g, pg));
  }
  return Status::Ok();
}

Status RunWhileGrad(const OpDesc& op, Scope* scope, DeviceContext* dc) {
  PAREX_ASSIGN_OR_RETURN(const Block* sub, op.SubBlock("sub_block"));
  const std::string name = op.FirstInput("StepScopes");
  Variable* v = scope->FindVar(name);
  StepScopes* kept = v != nullptr ? v->GetMutableStepScopes() : nullptr;
  if (kept == nullptr) {
    return FailedPrecondition(op.Label() + ": input 'StepScopes' ('" + name +
                              "') holds no scopes of its forward while");
  }
  std::vector<Scope*> steps = std::move(kept->scopes);
  kept->scopes.clear();
  Status s;
  bool first = true;
  for (auto it = steps.rbegin(); it != steps.rend() && s.ok(); ++it) {
    s = LinkOutputGradients(op, scope, *it, first, dc->place());
    if (s.ok()) s = RunBlock(*sub, *it, dc);
    if (s.ok()) s = GatherInputGradients(op, scope, *it, first, dc->place());
    first = false;
  }
  for (Scope* step : steps) scope->DeleteScope(step);
  return s;
}

// select_input / select_output's Mask: one int32 in [0, n).
StatusOr<int> ReadMask(const OpDesc& op, const Scope& scope, size_t n) {
  PAREX_ASSIGN_OR_RETURN(const Tensor* m,
                         ScalarInput(op, scope, "Mask", DType::kInt32));
  const int32_t mask = *m->data<int32_t>();
  if (mask < 0 || static_cast<size_t>(mask) >= n) {
    return InvalidArgument(op.Label() + ": Mask ('" + op.FirstInput("Mask") +
                           "') is " + std::to_string(mask) + ", outside [0, " +
                           std::to_string(n) + ")");
  }
  return mask;
}

Status RunSelectInput(const OpDesc& op, Scope* scope, DeviceContext* dc) {
  const std::vector<std::string> xs = op.Input("X");
  PAREX_ASSIGN_OR_RETURN(int mask, ReadMask(op, *scope, xs.size()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x,
                         HeldTensor(op, *scope, "X", xs[mask]));
  const std::string out = op.FirstOutput("Out");
  return CopyInto(*x, FindOrCreate(scope, out)->GetMutableTensor(), dc->place())
      .WithContext(op.Label() + ": output 'Out' ('" + out + "')");
}

Status RunSelectOutput(const OpDesc& op, Scope* scope, DeviceContext* dc) {
  const std::vector<std::string> outs = op.Output("Out");
  PAREX_ASSIGN_OR_RETURN(int mask, ReadMask(op, *scope, outs.size()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x,
                         HeldTensor(op, *scope, "X", op.FirstInput("X")));
  if (Absent(outs[mask])) return Status::Ok();
  return CopyInto(*x, FindOrCreate(scope, outs[mask])->GetMutableTensor(),
                  dc->place())
      .WithContext(op.Label() + ": output 'Out' ('" + outs[mask] + "')");
}

}  // namespace

namespace {

// Gradients through a tensor array (and selecting one) are not built yet:
// the runners below treat every variable they link or sum as a tensor.
Status RefuseTensorArrays(const OpDesc& op, const Scope& scope) {
  for (const std::vector<std::string>& names :
       {op.InputArgumentNames(), op.OutputArgumentNames()}) {
    for (const std::string& name : names) {
      const Variable* v = scope.FindVar(name);
      const VarDesc* desc =
          op.block() == nullptr ? nullptr : op.block()->FindVar(name);
      if ((v != nullptr && v->IsTensorList()) ||
          (desc != nullptr &&
           desc->type() == proto::VarType::LOD_TENSOR_ARRAY)) {
        return Unimplemented(op.Label() + ": '" + name +
                             "' is a tensor array; parex runs arrays in "
                             "inference only (no gradient through an array "
                             "yet)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status RunControlFlowOp(const OpDesc& op, Scope* scope,
                        DeviceContext* device_context) {
  if (!device_context->place().is_cpu()) {
    return Unimplemented(op.Label() + ": control flow runs on CPU places; " +
                         "this op is on " + device_context->place().ToString());
  }
  const std::string& type = op.type();
  if (type == "conditional_block_grad" || type == "while_grad" ||
      type == "select_input" || type == "select_output") {
    PAREX_RETURN_IF_ERROR(RefuseTensorArrays(op, *scope));
  }
  Status s;
  if (type == "conditional_block") {
    s = RunConditionalBlock(op, scope, device_context);
  } else if (type == "conditional_block_grad") {
    s = RunConditionalBlockGrad(op, scope, device_context);
  } else if (type == "while") {
    s = RunWhile(op, scope, device_context);
  } else if (type == "while_grad") {
    s = RunWhileGrad(op, scope, device_context);
  } else if (type == "select_input") {
    s = RunSelectInput(op, scope, device_context);
  } else if (type == "select_output") {
    s = RunSelectOutput(op, scope, device_context);
  } else {
    s = Unimplemented("no control-flow runner for '" + type + "'");
  }
  if (!s.ok() && s.message().rfind(op.Label(), 0) != 0) {
    return s.WithContext(op.Label());
  }
  return s;
}

void DeclareControlFlowOutputs(const OpDesc& op, Scope* scope) {
  for (const std::string& name : op.OutputArgumentNames()) {
    if (!Absent(name)) FindOrCreate(scope, name);
  }
}

}  // namespace parex
