#include "graph/builder/sync_batch_norm.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/validate.h"

namespace parex {
namespace {

bool BoolAttr(const OpDesc& op, const char* name) {
  StatusOr<bool> v = op.GetAttr<bool>(name);
  return v.ok() && *v;
}

bool IsForward(const OpDesc& op) {
  return op.type() == "batch_norm" || op.type() == "sync_batch_norm";
}

bool IsGrad(const OpDesc& op) {
  return op.type() == "batch_norm_grad" || op.type() == "sync_batch_norm_grad";
}

// A forward batch norm that normalises with the batch's statistics (the
// kernel's rule), of a type the rewrite covers.
bool ToSync(const OpDesc& op, bool all_batch_norms) {
  if (!IsForward(op)) return false;
  if (op.type() == "batch_norm" && !all_batch_norms) return false;
  const bool global =
      (BoolAttr(op, "is_test") && !BoolAttr(op, "trainable_statistics")) ||
      BoolAttr(op, "use_global_stats");
  return !global;
}

// Channels of the op's X as declared, or -1 when unknown.
int64_t DeclaredChannels(const Block& block, const OpDesc& op) {
  const VarDesc* x = block.FindVar(op.FirstInput("X"));
  if (x == nullptr) return -1;
  const Dims d = x->dims();
  if (d.size() < 2) return -1;
  StatusOr<std::string> layout = op.GetAttr<std::string>("data_layout");
  const int64_t c = layout.ok() && *layout == "NHWC" ? d.back() : d[1];
  return c >= 0 ? c : -1;
}

// A stage op: `from`'s attributes (op_role, epsilon, ...) under a new type
// with the given slots; op_role_var only when `keep_role_var`.
proto::OpDesc Stage(
    const OpDesc& from, const std::string& type,
    const std::vector<std::pair<std::string, std::string>>& inputs,
    const std::vector<std::pair<std::string, std::string>>& outputs,
    bool keep_role_var) {
  proto::OpDesc desc = from.proto();
  desc.set_type(type);
  desc.clear_inputs();
  desc.clear_outputs();
  OpDesc view(&desc, from.block_idx(), from.index());
  for (const auto& [slot, name] : inputs) {
    if (!name.empty()) view.SetInput(slot, {name});
  }
  for (const auto& [slot, name] : outputs) {
    if (!name.empty()) view.SetOutput(slot, {name});
  }
  if (!keep_role_var) view.RemoveAttr("op_role_var");
  return desc;
}

// The new vars of one rewritten batch norm.
struct SyncVars {
  std::string sum, sq_dev, grad_sum;
  int64_t channels = -1;
};

// The rewrite of block 0's ops into `out`: each batch norm to sync as its
// three stages, its gradient as two, the new statistics variables named
// fresh (their extents kept for the declarations).
class SyncRewriter {
 public:
  SyncRewriter(const Block& block, proto::BlockDesc* out)
      : block_(block), out_(out) {}

  // A batch norm to sync: the sum, the squared deviations and the apply.
  Status AddForward(const OpDesc& op) {
    const std::string saved_mean = op.FirstOutput("SavedMean");
    if (saved_mean.empty() || by_saved_mean_.count(saved_mean) != 0) {
      return InvalidArgument(op.Label() +
                             ": sync_batch_norm needs a "
                             "SavedMean output of its own");
    }
    SyncVars v;
    v.channels = DeclaredChannels(block_, op);
    const int64_t c = v.channels;
    v.sum = Fresh(saved_mean + ".sync_sum", c < 0 ? -1 : c + 1);
    v.sq_dev = Fresh(saved_mean + ".sync_sq_dev", c);
    const std::string x = op.FirstInput("X");
    *out_->add_ops() =
        Stage(op, "sync_bn_sum", {{"X", x}}, {{"Sum", v.sum}}, false);
    *out_->add_ops() = Stage(op, "sync_bn_sq_dev", {{"X", x}, {"Sum", v.sum}},
                             {{"SqDev", v.sq_dev}}, false);
    *out_->add_ops() =
        Stage(op, "sync_bn_apply",
              {{"X", x},
               {"Scale", op.FirstInput("Scale")},
               {"Bias", op.FirstInput("Bias")},
               {"Mean", op.FirstInput("Mean")},
               {"Variance", op.FirstInput("Variance")},
               {"MomentumTensor", op.FirstInput("MomentumTensor")},
               {"Sum", v.sum},
               {"SqDev", v.sq_dev}},
              {{"Y", op.FirstOutput("Y")},
               {"MeanOut", op.FirstOutput("MeanOut")},
               {"VarianceOut", op.FirstOutput("VarianceOut")},
               {"SavedMean", saved_mean},
               {"SavedVariance", op.FirstOutput("SavedVariance")}},
              false);
    by_saved_mean_[saved_mean] = v;
    return Status::Ok();
  }

  // A batch norm's gradient: when its forward was rewritten, the gradient
  // sums and the apply (true); else false, an error when it is the
  // gradient of a training batch norm the rewrite should have seen.
  StatusOr<bool> AddGrad(const OpDesc& op, bool all_batch_norms) {
    auto it = by_saved_mean_.find(op.FirstInput("SavedMean"));
    if (it == by_saved_mean_.end()) {
      const bool global =
          BoolAttr(op, "is_test") || BoolAttr(op, "use_global_stats");
      if ((op.type() == "sync_batch_norm_grad" || all_batch_norms) && !global) {
        return InvalidArgument(
            op.Label() + ": no synchronised batch norm wrote its SavedMean '" +
            op.FirstInput("SavedMean") + "'");
      }
      return false;
    }
    SyncVars& v = it->second;
    const std::string x = op.FirstInput("X");
    const std::string dy = op.FirstInput("Y@GRAD");
    const std::string dx = op.FirstOutput("X@GRAD");
    if (v.grad_sum.empty()) {
      v.grad_sum = Fresh(it->first + ".sync_grad_sum",
                         v.channels < 0 ? -1 : 2 * v.channels);
    }
    *out_->add_ops() = Stage(op, "sync_bn_grad_sum",
                             {{"X", x},
                              {"SavedMean", op.FirstInput("SavedMean")},
                              {"SavedVariance", op.FirstInput("SavedVariance")},
                              {"Y@GRAD", dy}},
                             {{"GradSum", v.grad_sum},
                              {"Scale@GRAD", op.FirstOutput("Scale@GRAD")},
                              {"Bias@GRAD", op.FirstOutput("Bias@GRAD")}},
                             true);
    if (!dx.empty()) {
      *out_->add_ops() =
          Stage(op, "sync_bn_grad_apply",
                {{"X", x},
                 {"Scale", op.FirstInput("Scale")},
                 {"SavedMean", op.FirstInput("SavedMean")},
                 {"SavedVariance", op.FirstInput("SavedVariance")},
                 {"Y@GRAD", dy},
                 {"Sum", v.sum},
                 {"GradSum", v.grad_sum}},
                {{"X@GRAD", dx}}, false);
    }
    return true;
  }

  // The new variables (fp64 statistics) declared in `rewritten`.
  void Declare(Program* rewritten) const {
    for (const auto& [name, extent] : new_vars_) {
      VarDesc* var = rewritten->global_block().Var(name);
      var->SetDType(DType::kFP64);
      var->SetDims({extent});
    }
  }

 private:
  // `base`, or base_k for the first k that names no variable of the block.
  std::string Fresh(const std::string& base, int64_t extent) {
    std::string name = base;
    for (int k = 1; block_.FindVar(name) != nullptr; ++k) {
      name = base + "_" + std::to_string(k);
    }
    new_vars_.emplace_back(name, extent);
    return name;
  }

  const Block& block_;
  proto::BlockDesc* out_;
  std::map<std::string, SyncVars> by_saved_mean_;
  std::vector<std::pair<std::string, int64_t>> new_vars_;  // name, extent
};

}  // namespace

bool HasBatchNormToSync(const Program& program, bool all_batch_norms) {
  for (const auto& op : program.global_block().ops()) {
    if (ToSync(*op, all_batch_norms)) return true;
  }
  return false;
}

StatusOr<Program> SyncBatchNorm(const Program& program, bool all_batch_norms) {
  const Block& block = program.global_block();
  proto::ProgramDesc desc = program.proto();
  proto::BlockDesc* out = desc.mutable_blocks(0);
  out->clear_ops();
  SyncRewriter rewriter(block, out);
  for (const auto& op_ptr : block.ops()) {
    const OpDesc& op = *op_ptr;
    if (ToSync(op, all_batch_norms)) {
      PAREX_RETURN_IF_ERROR(rewriter.AddForward(op));
      continue;
    }
    if (IsGrad(op)) {
      PAREX_ASSIGN_OR_RETURN(bool rewritten,
                             rewriter.AddGrad(op, all_batch_norms));
      if (rewritten) continue;
    }
    *out->add_ops() = op.proto();
  }
  Program rewritten(std::move(desc));
  rewriter.Declare(&rewritten);
  Status valid = ValidateProgram(rewritten);
  if (!valid.ok()) return valid.WithContext("sync_batch_norm");
  return rewritten;
}

std::vector<std::string> SyncedOutputs(const OpDesc& op) {
  if (op.type() == "sync_bn_sum") return {op.FirstOutput("Sum")};
  if (op.type() == "sync_bn_sq_dev") return {op.FirstOutput("SqDev")};
  if (op.type() == "sync_bn_grad_sum") return {op.FirstOutput("GradSum")};
  return {};
}

}  // namespace parex
