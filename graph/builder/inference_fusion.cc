#include "graph/builder/inference_fusion.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "base/dims.h"
#include "graph/builder/channels_last.h"
#include "graph/builder/program_uses.h"

namespace parex {
namespace {

using fusion::AttrOr;
using fusion::Count;
using fusion::CountUses;
using fusion::IsConv;
using fusion::Uses;

class Fuser {
  // What becomes of op i of block 0 (edits_).
  struct OpEdit {
    std::string type;
    std::map<std::string, std::string> inputs, outputs;
    std::string activation;
    float alpha = 0.0f;
    // A new op in the old one's place (an fc): nothing of the old kept.
    bool fresh = false;
    int in_num_col_dims = 1;
  };

 public:
  Fuser(const Program& program, const std::vector<std::string>& fetch_names)
      : block_(program.global_block()),
        uses_(CountUses(program)),
        fetched_(fetch_names.begin(), fetch_names.end()),
        desc_(program.proto()) {}

  // The one op of block 0 reading `var` as its `slot`, when `var` is a
  // temporary only it reads and only `producer` writes; else -1.
  int SoleReader(int producer, const std::string& var,
                 const std::string& slot) const {
    if (fetched_.count(var) != 0 || Count(uses_.readers, var) != 1 ||
        Count(uses_.writers, var) != 1) {
      return -1;
    }
    const VarDesc* v = block_.FindVar(var);
    if (v == nullptr || v->persistable()) return -1;
    for (int i = producer + 1; i < block_.num_ops(); ++i) {
      const OpDesc& op = block_.op(i);
      for (const std::string& name : op.InputArgumentNames()) {
        if (name != var) continue;
        return !removed_.count(i) &&
                       op.Input(slot) == std::vector<std::string>{var}
                   ? i
                   : -1;
      }
    }
    return -1;
  }

  // A parameter the fold may read: persistable, written by no op but
  // `except` (the batch norm folded away: its running statistics out).
  bool Constant(const std::string& name, const OpDesc& except) const {
    const VarDesc* v = block_.FindVar(name);
    int own = 0;
    for (const std::string& n : except.OutputArgumentNames()) own += n == name;
    return v != nullptr && v->persistable() && v->is_tensor() &&
           Count(uses_.writers, name) == own;
  }

  // conv (i) + batch_norm -> conv with folded Filter and Bias.
  // A conv a batch norm may fold into: NCHW, no Bias, ResidualData or
  // activation yet.
  static bool FoldableConv(const OpDesc& conv) {
    return IsConv(conv) && !conv.HasInput("Bias") &&
           !conv.HasInput("ResidualData") &&
           AttrOr<std::string>(conv, "fuse_activation", "").empty() &&
           AttrOr<std::string>(conv, "data_format", "NCHW") != "NHWC";
  }

  // A batch norm with global statistics over NCHW whose outputs but Y
  // (running statistics, saved ones) no other op reads.
  bool FoldableBatchNorm(const OpDesc& bn) const {
    if (bn.type() != "batch_norm") return false;
    const bool global = (AttrOr<bool>(bn, "is_test", false) &&
                         !AttrOr<bool>(bn, "trainable_statistics", false)) ||
                        AttrOr<bool>(bn, "use_global_stats", false);
    if (!global || AttrOr<std::string>(bn, "data_layout", "NCHW") != "NCHW") {
      return false;
    }
    for (const std::string& slot : bn.OutputSlots()) {
      if (slot == "Y") continue;
      for (const std::string& name : bn.Output(slot)) {
        const int readers = Count(uses_.readers, name);
        if (fetched_.count(name) != 0 || readers > 1 ||
            (readers == 1 && !ReadBy(bn, name))) {
          return false;
        }
      }
    }
    return true;
  }

  // The filter and the batch norm's four parameters: constants, the
  // filter fp32 or fp64, the others of its dtype, one per output channel.
  bool FoldableParams(const OpDesc& bn, const std::string (&names)[5]) const {
    for (const std::string& name : names) {
      if (name.empty() || !Constant(name, bn)) return false;
    }
    const VarDesc* w = block_.FindVar(names[0]);
    const Dims dims = w->dims();
    if ((w->dtype() != DType::kFP32 && w->dtype() != DType::kFP64) ||
        dims.empty() || dims[0] <= 0) {
      return false;
    }
    for (size_t k = 1; k < 5; ++k) {
      const VarDesc* v = block_.FindVar(names[k]);
      if (v->dtype() != w->dtype() || Numel(v->dims()) != dims[0]) {
        return false;
      }
    }
    return true;
  }

  // conv (i) + batch_norm -> conv with folded Filter and Bias.
  bool FoldBatchNorm(int i) {
    const OpDesc& conv = block_.op(i);
    if (!FoldableConv(conv)) return false;
    const int b = SoleReader(i, conv.FirstOutput("Output"), "X");
    if (b < 0 || !FoldableBatchNorm(block_.op(b))) return false;
    const OpDesc& bn = block_.op(b);
    const std::string filter = conv.FirstInput("Filter");
    const std::string names[] = {filter, bn.FirstInput("Scale"),
                                 bn.FirstInput("Bias"), bn.FirstInput("Mean"),
                                 bn.FirstInput("Variance")};
    if (!FoldableParams(bn, names)) return false;
    const VarDesc* w = block_.FindVar(filter);
    const Dims filter_dims = w->dims();
    const std::string tag = bn.FirstOutput("Y");
    const std::string new_filter = filter + "@bn_folded." + tag;
    const std::string new_bias = tag + "@bn_folded_bias";
    AddFold(w->dtype(), filter_dims, names, AttrOr<float>(bn, "epsilon", 1e-5f),
            new_filter, new_bias);
    Edit(i).type = "conv2d";
    Edit(i).inputs["Filter"] = new_filter;
    Edit(i).inputs["Bias"] = new_bias;
    Edit(i).outputs["Output"] = tag;
    removed_.insert(b);
    AddVar(new_filter, w->dtype(), filter_dims);
    AddVar(new_bias, w->dtype(), {filter_dims[0]});
    ++folded_;
    return true;
  }

  // conv (i)'s output as edited so far.
  std::string ConvOutput(int i) const {
    const auto edited = edits_.find(i);
    return edited != edits_.end() && edited->second.outputs.count("Output") != 0
               ? edited->second.outputs.at("Output")
               : block_.op(i).FirstOutput("Output");
  }

  // conv (i) + elementwise_add of its output and a tensor of the same
  // declared shape and dtype -> conv with that tensor as ResidualData
  // (added after the Bias, before an activation FuseActivation then fuses),
  // run where the add was: the shortcut may be computed after the conv
  // (ResNet's downsampling branch). a + b is b + a in floating point, so
  // the operands' order does not matter.
  bool FuseResidual(int i) {
    const OpDesc& conv = block_.op(i);
    if (!IsConv(conv) || conv.HasInput("ResidualData") ||
        !AttrOr<std::string>(conv, "fuse_activation", "").empty() ||
        AttrOr<std::string>(conv, "data_format", "NCHW") == "NHWC") {
      return false;
    }
    const std::string y = ConvOutput(i);
    std::string other = "Y";
    int a = SoleReader(i, y, "X");
    if (a < 0) {
      a = SoleReader(i, y, "Y");
      other = "X";
    }
    if (a < 0 || block_.op(a).type() != "elementwise_add") return false;
    const std::vector<std::string> rs = block_.op(a).Input(other);
    const VarDesc* yv = block_.FindVar(y);
    const VarDesc* rv = rs.size() == 1 ? block_.FindVar(rs[0]) : nullptr;
    if (rv == nullptr || yv == nullptr || rs[0] == y || !rv->is_tensor() ||
        rv->rank() != 4 || rv->dims() != yv->dims() ||
        rv->dtype() != yv->dtype() || Count(uses_.writers, rs[0]) > 1) {
      return false;
    }
    // What the conv reads keeps its value until the add (one writer each,
    // before the conv).
    for (const std::string& name : conv.InputArgumentNames()) {
      if (Count(uses_.writers, name) > 1) return false;
    }
    Edit(i).type = "conv2d";
    Edit(i).inputs["ResidualData"] = rs[0];
    Edit(i).outputs["Output"] = block_.op(a).FirstOutput("Out");
    removed_.insert(a);
    moved_[a] = i;
    ++residuals_;
    return true;
  }

  // The fuse_activation parameter (fuse_alpha) of activation op `act` when
  // a conv's epilogue computes it as the op does: relu, relu6 (its
  // threshold), leaky_relu (its slope), hard_swish of Paddle's defaults
  // (oneDNN's has no parameters); else nothing.
  static std::optional<float> FusedAlpha(const OpDesc& act) {
    const std::string& type = act.type();
    if (type == "relu") return 0.0f;
    if (type == "relu6") return AttrOr<float>(act, "threshold", 6.0f);
    if (type == "leaky_relu") return AttrOr<float>(act, "alpha", 0.02f);
    if (type == "hard_swish" && AttrOr<float>(act, "threshold", 6.0f) == 6.0f &&
        AttrOr<float>(act, "scale", 6.0f) == 6.0f &&
        AttrOr<float>(act, "offset", 3.0f) == 3.0f) {
      return 0.0f;
    }
    return std::nullopt;
  }

  // conv (i) + relu / relu6 / leaky_relu / hard_swish -> conv with
  // fuse_activation.
  void FuseActivation(int i) {
    const OpDesc& conv = block_.op(i);
    if (!IsConv(conv) || conv.HasInput("ResidualData") ||
        !AttrOr<std::string>(conv, "fuse_activation", "").empty()) {
      return;
    }
    const std::string y = ConvOutput(i);
    const int a = SoleReader(i, y, "X");
    if (a < 0) return;
    const OpDesc& act = block_.op(a);
    const std::optional<float> alpha = FusedAlpha(act);
    // relu6's threshold must be positive (0 means 6 to the kernels).
    if (!alpha || (act.type() == "relu6" && !(*alpha > 0.0f))) return;
    Edit(i).type = "conv2d";
    Edit(i).outputs["Output"] = act.FirstOutput("Out");
    Edit(i).activation = act.type();
    Edit(i).alpha = *alpha;
    removed_.insert(a);
    ++fused_;
  }

  // -1 where op is no product an fc computes (another op, a transpose, a
  // scale, a W flattened at a dim but 1); else mul's x_num_col_dims, 0 for
  // matmul's and matmul_v2's (all of X's dims but the last).
  static int ProductColDims(const OpDesc& op) {
    if (op.type() == "matmul_v2") {
      return AttrOr<bool>(op, "trans_x", false) ||
                     AttrOr<bool>(op, "trans_y", false)
                 ? -1
                 : 0;
    }
    if (op.type() == "matmul") {
      return AttrOr<bool>(op, "transpose_X", false) ||
                     AttrOr<bool>(op, "transpose_Y", false) ||
                     AttrOr<float>(op, "alpha", 1.0f) != 1.0f
                 ? -1
                 : 0;
    }
    if (op.type() == "mul" && AttrOr<int>(op, "y_num_col_dims", 1) == 1) {
      return AttrOr<int>(op, "x_num_col_dims", 1);
    }
    return -1;
  }

  // The in_num_col_dims of an fc doing what op does, when it multiplies an
  // X of rank >= 2 (flattened at the returned dim) by a constant 2-D
  // W of X's float dtype, untransposed and unscaled; else 0.
  int FcColDims(const OpDesc& op) const {
    int ncd = ProductColDims(op);
    if (ncd < 0) return 0;
    if (op.Input("X").size() != 1 || op.Input("Y").size() != 1 ||
        op.Output("Out").size() != 1 || !Constant(op.FirstInput("Y"), op)) {
      return 0;
    }
    const VarDesc* x = block_.FindVar(op.FirstInput("X"));
    const VarDesc* w = block_.FindVar(op.FirstInput("Y"));
    if (x == nullptr || !x->is_tensor() || x->rank() < 2 || w->rank() != 2 ||
        w->dims()[1] <= 0 || x->dtype() != w->dtype() ||
        (w->dtype() != DType::kFP32 && w->dtype() != DType::kFP64)) {
      return 0;
    }
    if (ncd == 0) ncd = x->rank() - 1;
    return ncd >= 1 && ncd < x->rank() ? ncd : 0;
  }

  // An elementwise_add of `out` (rank `rank`, as X) and a constant [n] of
  // `out`'s dtype along its last dim: an fc's bias.
  bool FcBias(const OpDesc& add, int rank, int64_t n, DType dtype) const {
    if (add.type() != "elementwise_add" || add.Input("Y").size() != 1 ||
        add.Output("Out").size() != 1) {
      return false;
    }
    const int axis = AttrOr<int>(add, "axis", -1);
    const VarDesc* b = block_.FindVar(add.FirstInput("Y"));
    return (axis == -1 || axis == rank - 1) && b != nullptr &&
           Constant(b->name(), add) && b->rank() == 1 && b->dims()[0] == n &&
           b->dtype() == dtype &&
           Count(uses_.writers, add.FirstOutput("Out")) == 1;
  }

  // mul / matmul / matmul_v2 (i) by a constant W, + elementwise_add of a
  // constant bias along the last dim, + relu -> Paddle's fc, run where the
  // product was, the bias and relu inside it (kernels/cpu/matmul_kernels.cc).
  bool FuseFc(int i) {
    const OpDesc& op = block_.op(i);
    if (removed_.count(i) != 0 || edits_.count(i) != 0) return false;
    const int ncd = FcColDims(op);
    if (ncd == 0) return false;
    const VarDesc* w = block_.FindVar(op.FirstInput("Y"));
    const int a = SoleReader(i, op.FirstOutput("Out"), "X");
    if (a < 0 || !FcBias(block_.op(a), ncd + 1, w->dims()[1], w->dtype())) {
      return false;
    }
    std::string out = block_.op(a).FirstOutput("Out");
    OpEdit& e = Edit(i);
    const int r = SoleReader(a, out, "X");
    if (r >= 0 && block_.op(r).type() == "relu" &&
        block_.op(r).Output("Out").size() == 1 &&
        Count(uses_.writers, block_.op(r).FirstOutput("Out")) == 1) {
      out = block_.op(r).FirstOutput("Out");
      e.activation = "relu";
      removed_.insert(r);
    }
    e.type = "fc";
    e.fresh = true;
    e.in_num_col_dims = ncd;
    e.inputs = {{"Input", op.FirstInput("X")},
                {"W", op.FirstInput("Y")},
                {"Bias", block_.op(a).FirstInput("Y")}};
    e.outputs = {{"Out", out}};
    removed_.insert(a);
    ++fcs_;
    return true;
  }

  // An op that passes X through unchanged in inference: scale by 1 plus 0
  // (Paddle's save_inference_model appends one before each fetch), dropout
  // at test time as upscale_in_train computes it (or of probability 0).
  bool Identity(const OpDesc& op) const {
    if (op.type() == "scale") {
      return !op.HasInput("ScaleTensor") &&
             AttrOr<float>(op, "scale", 1.0f) == 1.0f &&
             AttrOr<float>(op, "bias", 0.0f) == 0.0f;
    }
    if (op.type() != "dropout") return false;
    for (const std::string& mask : op.Output("Mask")) {
      if (fetched_.count(mask) != 0 || Count(uses_.readers, mask) != 0) {
        return false;
      }
    }
    const bool test = AttrOr<bool>(op, "is_test", false);
    return test &&
           (AttrOr<std::string>(op, "dropout_implementation",
                                "downgrade_in_infer") == "upscale_in_train" ||
            AttrOr<float>(op, "dropout_prob", 0.5f) == 0.0f);
  }

  // The slot of op p, as edited so far, whose one argument is `var`.
  std::string OutputSlotOf(int p, const std::string& var) const {
    const auto e = edits_.find(p);
    const OpDesc& op = block_.op(p);
    for (const std::string& slot : op.OutputSlots()) {
      const bool edited =
          e != edits_.end() && e->second.outputs.count(slot) != 0;
      if (edited ? e->second.outputs.at(slot) == var
                 : op.Output(slot) == std::vector<std::string>{var}) {
        return slot;
      }
    }
    return "";
  }

  // Identity op i of X, X a temporary only it reads -> X's producer writes
  // the op's output itself, and the op goes.
  void DropIdentity(int i) {
    const OpDesc& op = block_.op(i);
    if (removed_.count(i) != 0 || !Identity(op) || op.Input("X").size() != 1 ||
        op.Output("Out").size() != 1) {
      return;
    }
    const std::string x = op.FirstInput("X");
    const std::string out = op.FirstOutput("Out");
    const VarDesc* xv = block_.FindVar(x);
    if (xv == nullptr || xv->persistable() || fetched_.count(x) != 0 ||
        Count(uses_.readers, x) != 1 || Count(uses_.writers, x) != 1 ||
        Count(uses_.writers, out) != 1) {
      return;
    }
    for (int p = i - 1; p >= 0; --p) {
      if (removed_.count(p) != 0) continue;
      const std::string slot = OutputSlotOf(p, x);
      if (slot.empty()) continue;
      Edit(p).outputs[slot] = out;
      removed_.insert(i);
      ++identities_;
      return;
    }
  }

  // The indices of the ops kept, in order: a conv that took in a residual
  // add runs where the add was.
  std::vector<int> KeptOrder(int num_ops) const {
    std::vector<int> order;
    std::set<int> moving;
    for (const auto& [add, conv] : moved_) moving.insert(conv);
    for (int i = 0; i < num_ops; ++i) {
      const auto moved = moved_.find(i);
      if (moved != moved_.end()) {
        order.push_back(moved->second);
      } else if (removed_.count(i) == 0 && moving.count(i) == 0) {
        order.push_back(i);
      }
    }
    return order;
  }

  // Op i of block 0 (copied into `op`) marked where a kernel may keep what
  // it derives from a constant Filter or Y.
  void MarkConstants(int i, proto::OpDesc* op) const {
    OpDesc view(op, 0, i);
    const auto e = edits_.find(i);
    const bool folded =
        e != edits_.end() && e->second.inputs.count("Filter") != 0;
    if ((e != edits_.end() ? e->second.type : op->type()) == "conv2d" &&
        (folded || Constant(block_.op(i).FirstInput("Filter"), block_.op(i)))) {
      view.SetAttr("constant_filter", true);
    }
    if ((op->type() == "matmul" || op->type() == "matmul_v2") &&
        Constant(block_.op(i).FirstInput("Y"), block_.op(i))) {
      view.SetAttr("constant_y", true);
    }
  }

  // `edit` made to op i (copied into `op`).
  static void ApplyEdit(int i, const OpEdit& edit, bool mark_constants,
                        proto::OpDesc* op) {
    OpDesc view(op, 0, i);
    if (edit.fresh) {
      op->clear_inputs();
      op->clear_outputs();
      op->clear_attrs();
    }
    op->set_type(edit.type);
    for (const auto& [slot, name] : edit.inputs) view.SetInput(slot, {name});
    for (const auto& [slot, name] : edit.outputs) view.SetOutput(slot, {name});
    if (edit.type == "fc") {
      view.SetAttr("in_num_col_dims", edit.in_num_col_dims);
      view.SetAttr("activation_type", edit.activation);
      view.SetAttr("constant_w", mark_constants);
    } else if (!edit.activation.empty()) {
      view.SetAttr("fuse_activation", edit.activation);
      view.SetAttr("fuse_alpha", edit.alpha);
    }
  }

  StatusOr<FusedProgram> Finish(bool mark_constant_filters) {
    proto::BlockDesc* block = desc_.mutable_blocks(0);
    google::protobuf::RepeatedPtrField<proto::OpDesc> kept;
    for (const int i : KeptOrder(block->ops_size())) {
      proto::OpDesc* op = kept.Add();
      *op = block->ops(i);
      if (mark_constant_filters) MarkConstants(i, op);
      const auto e = edits_.find(i);
      if (e != edits_.end()) {
        ApplyEdit(i, e->second, mark_constant_filters, op);
      }
    }
    block->mutable_ops()->Swap(&kept);
    for (const auto& [name, spec] : new_vars_) {
      VarDesc var(block->add_vars());
      var.mutable_proto()->set_name(name);
      var.SetDType(spec.first);
      var.SetDims(spec.second);
      var.SetPersistable(true);
    }
    FusedProgram out;
    out.main = Program(desc_);
    out.fold = std::move(fold_);
    out.folded_batch_norms = folded_;
    out.fused_activations = fused_;
    out.fused_residuals = residuals_;
    out.dropped_identities = identities_;
    out.fused_fcs = fcs_;
    return out;
  }

 private:
  static bool ReadBy(const OpDesc& op, const std::string& name) {
    for (const std::string& n : op.InputArgumentNames()) {
      if (n == name) return true;
    }
    return false;
  }

  OpEdit& Edit(int i) {
    auto [it, added] = edits_.try_emplace(i);
    if (added) it->second.type = block_.op(i).type();
    return it->second;
  }

  void AddVar(const std::string& name, DType dtype, const Dims& dims) {
    new_vars_[name] = {dtype, dims};
  }

  // The fold's ops: s = Scale / sqrt(Variance + eps); Filter' = Filter * s
  // along dim 0; Bias' = BnBias - Mean * s.
  void AddFold(DType dtype, const Dims& filter_dims,
               const std::string (&names)[5], float epsilon,
               const std::string& new_filter, const std::string& new_bias) {
    Block& fold = fold_.global_block();
    const int64_t m = filter_dims[0];
    auto declare = [&](const std::string& name, const Dims& dims,
                       bool persistable) {
      VarDesc* v = fold.Var(name);
      v->SetDType(dtype);
      v->SetDims(dims);
      v->SetPersistable(persistable);
    };
    declare(names[0], filter_dims, true);
    for (int k = 1; k < 5; ++k) declare(names[k], {m}, true);
    declare(new_filter, filter_dims, true);
    declare(new_bias, {m}, true);
    const std::string t = new_bias + "@fold_";
    for (const char* s : {"var_eps", "std", "s", "mean_s"}) {
      declare(t + s, {m}, false);
    }
    OpDesc* op = fold.AppendOp("scale");
    op->SetInput("X", {names[4]});
    op->SetOutput("Out", {t + "var_eps"});
    op->SetAttr("scale", 1.0f);
    op->SetAttr("bias", epsilon);
    op->SetAttr("bias_after_scale", true);
    op = fold.AppendOp("sqrt");
    op->SetInput("X", {t + "var_eps"});
    op->SetOutput("Out", {t + "std"});
    auto binary = [&](const char* type, const std::string& x,
                      const std::string& y, const std::string& out, int axis) {
      OpDesc* e = fold.AppendOp(type);
      e->SetInput("X", {x});
      e->SetInput("Y", {y});
      e->SetOutput("Out", {out});
      e->SetAttr("axis", axis);
    };
    binary("elementwise_div", names[1], t + "std", t + "s", -1);
    binary("elementwise_mul", names[0], t + "s", new_filter, 0);
    binary("elementwise_mul", names[3], t + "s", t + "mean_s", -1);
    binary("elementwise_sub", names[2], t + "mean_s", new_bias, -1);
  }

  const Block& block_;
  const Uses uses_;
  const std::set<std::string> fetched_;
  proto::ProgramDesc desc_;
  Program fold_;
  std::map<int, OpEdit> edits_;
  std::set<int> removed_;
  std::map<int, int> moved_;  // a residual add's index -> the conv's
  std::map<std::string, std::pair<DType, Dims>> new_vars_;
  int folded_ = 0, fused_ = 0, residuals_ = 0, identities_ = 0, fcs_ = 0;
};

}  // namespace

StatusOr<FusedProgram> FuseForInference(
    const Program& program, const std::vector<std::string>& fetch_names,
    const InferenceFusions& fusions) {
  if (program.num_blocks() == 0) return InvalidArgument("an empty program");
  Fuser fuser(program, fetch_names);
  const int n = program.global_block().num_ops();
  for (int i = 0; i < n; ++i) {
    if (fusions.fold_batch_norm) fuser.FoldBatchNorm(i);
    if (fusions.fuse_residual) fuser.FuseResidual(i);
    if (fusions.fuse_activation) fuser.FuseActivation(i);
    if (fusions.drop_identities) fuser.DropIdentity(i);
    if (fusions.fuse_fc) fuser.FuseFc(i);
  }
  PAREX_ASSIGN_OR_RETURN(FusedProgram fused,
                         fuser.Finish(fusions.mark_constant_filters));
  if (fusions.channels_last && fused.main.num_blocks() == 1) {
    proto::ProgramDesc desc = fused.main.proto();
    RunChannelsLast(fused.main, fetch_names, desc.mutable_blocks(0),
                    &fused.channels_last_ops, &fused.transposes);
    fused.main = Program(std::move(desc));
  }
  return fused;
}

}  // namespace parex
