#include "graph/builder/inference_fusion.h"

#include <map>
#include <set>
#include <utility>

#include "base/dims.h"

namespace parex {
namespace {

template <typename T>
T AttrOr(const OpDesc& op, const char* name, T fallback) {
  if (!op.HasAttr(name)) return fallback;
  StatusOr<T> v = op.GetAttr<T>(name);
  return v.ok() ? *v : fallback;
}

bool IsConv(const OpDesc& op) {
  return op.type() == "conv2d" || op.type() == "depthwise_conv2d";
}

// Who reads and who writes each var, over every block (a sub-block's op
// reading a var of block 0 counts as a reader).
struct Uses {
  std::map<std::string, int> readers, writers;
};

// How many times `name` is in `m` (0 when it is not).
int Count(const std::map<std::string, int>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
}

Uses CountUses(const Program& program) {
  Uses uses;
  for (int b = 0; b < program.num_blocks(); ++b) {
    for (const auto& op : program.block(b).ops()) {
      for (const std::string& name : op->InputArgumentNames()) {
        ++uses.readers[name];
      }
      for (const std::string& name : op->OutputArgumentNames()) {
        ++uses.writers[name];
      }
    }
  }
  return uses;
}

class Fuser {
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

  // conv (i) + relu / relu6 -> conv with fuse_activation.
  void FuseActivation(int i) {
    const OpDesc& conv = block_.op(i);
    if (!IsConv(conv) || conv.HasInput("ResidualData") ||
        !AttrOr<std::string>(conv, "fuse_activation", "").empty()) {
      return;
    }
    const auto edited = edits_.find(i);
    const std::string y =
        edited != edits_.end() && edited->second.outputs.count("Output") != 0
            ? edited->second.outputs.at("Output")
            : conv.FirstOutput("Output");
    const int a = SoleReader(i, y, "X");
    if (a < 0) return;
    const OpDesc& act = block_.op(a);
    float alpha = 0.0f;
    if (act.type() == "relu6") {
      alpha = AttrOr<float>(act, "threshold", 6.0f);
    } else if (act.type() != "relu") {
      return;
    }
    Edit(i).type = "conv2d";
    Edit(i).outputs["Output"] = act.FirstOutput("Out");
    Edit(i).activation = act.type();
    Edit(i).alpha = alpha;
    removed_.insert(a);
    ++fused_;
  }

  StatusOr<FusedProgram> Finish(bool mark_constant_filters) {
    proto::BlockDesc* block = desc_.mutable_blocks(0);
    google::protobuf::RepeatedPtrField<proto::OpDesc> kept;
    for (int i = 0; i < block->ops_size(); ++i) {
      if (removed_.count(i) != 0) continue;
      proto::OpDesc* op = kept.Add();
      *op = block->ops(i);
      OpDesc view(op, 0, i);
      auto e = edits_.find(i);
      const bool folded =
          e != edits_.end() && e->second.inputs.count("Filter") != 0;
      if (mark_constant_filters &&
          (e != edits_.end() ? e->second.type : op->type()) == "conv2d" &&
          (folded ||
           Constant(block_.op(i).FirstInput("Filter"), block_.op(i)))) {
        view.SetAttr("constant_filter", true);
      }
      if (e == edits_.end()) continue;
      op->set_type(e->second.type);
      for (const auto& [slot, name] : e->second.inputs) {
        view.SetInput(slot, {name});
      }
      for (const auto& [slot, name] : e->second.outputs) {
        view.SetOutput(slot, {name});
      }
      if (!e->second.activation.empty()) {
        view.SetAttr("fuse_activation", e->second.activation);
        view.SetAttr("fuse_alpha", e->second.alpha);
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
    return out;
  }

 private:
  struct OpEdit {
    std::string type;
    std::map<std::string, std::string> inputs, outputs;
    std::string activation;
    float alpha = 0.0f;
  };

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
  std::map<std::string, std::pair<DType, Dims>> new_vars_;
  int folded_ = 0, fused_ = 0;
};

// ---- channels_last ----------------------------------------------------------

const std::vector<int> kToNhwc = {0, 2, 3, 1};
const std::vector<int> kToNchw = {0, 3, 1, 2};

bool LayoutFree(const std::string& type) {
  static const std::set<std::string> kUnary = {
      "relu",  "relu6",        "sigmoid",    "tanh", "hard_swish",
      "swish", "hard_sigmoid", "leaky_relu", "gelu"};
  return kUnary.count(type) != 0;
}

bool SameShapeBinary(const std::string& type) {
  return type == "elementwise_add" || type == "elementwise_sub" ||
         type == "elementwise_mul";
}

class ChannelsLast {
 public:
  ChannelsLast(Program* program, const std::vector<std::string>& fetch_names)
      : desc_(program->global_block()),
        uses_(CountUses(*program)),
        fetched_(fetch_names.begin(), fetch_names.end()) {}

  void Run(proto::BlockDesc* block, int* converted, int* transposes) {
    google::protobuf::RepeatedPtrField<proto::OpDesc> out;
    for (int i = 0; i < block->ops_size(); ++i) {
      proto::OpDesc op = block->ops(i);
      OpDesc view(&op, 0, i);
      if (Convertible(view)) {
        if (IsConv(view)) {
          const std::string x = view.FirstInput("Input");
          if (nhwc_.count(x) == 0) {
            view.SetInput("Input", {Transposed(x, true, block, &out)});
          }
          view.SetAttr("data_format", std::string("NHWC"));
        } else if (ChannelAxisOp(view)) {
          view.SetAttr("axis", 3);
        } else {
          // Inputs read through their NHWC copies.
          for (const std::string& slot : view.InputSlots()) {
            std::vector<std::string> args = view.Input(slot);
            for (std::string& a : args) {
              if (nhwc_.count(a) == 0 && to_nhwc_.count(a) != 0) {
                a = to_nhwc_.at(a);
              }
            }
            view.SetInput(slot, args);
          }
        }
        for (const std::string& y : view.OutputArgumentNames()) {
          nhwc_.insert(y);
          Permute(block, y);
        }
        ++*converted;
      } else {
        // Every NHWC input read as NCHW, through one transpose per var.
        for (const std::string& slot : view.InputSlots()) {
          std::vector<std::string> args = view.Input(slot);
          bool changed = false;
          for (std::string& a : args) {
            if (nhwc_.count(a) == 0) continue;
            a = Transposed(a, false, block, &out);
            changed = true;
          }
          if (changed) view.SetInput(slot, args);
        }
      }
      *out.Add() = op;
    }
    *transposes = transposes_;
    block->mutable_ops()->Swap(&out);
  }

 private:
  // A 4-D fp32 tensor var of this block, written once, never fetched.
  bool Plain4d(const std::string& name) const {
    const VarDesc* v = desc_.FindLocalVar(name);
    return v != nullptr && v->is_tensor() && !v->persistable() &&
           v->dtype() == DType::kFP32 && v->rank() == 4 &&
           fetched_.count(name) == 0 && Count(uses_.writers, name) <= 1;
  }

  bool Convertible(const OpDesc& op) const {
    for (const std::string& y : op.OutputArgumentNames()) {
      if (!Plain4d(y)) return false;
    }
    if (ChannelAxisOp(op)) return true;
    if (op.OutputArgumentNames().size() != 1) return false;
    if (IsConv(op)) {
      return AttrOr<std::string>(op, "data_format", "NCHW") != "NHWC" &&
             !op.HasInput("ResidualData") && WideEnough(op) &&
             Plain4dOrFeed(op.FirstInput("Input"));
    }
    const std::vector<std::string> xs = op.InputArgumentNames();
    if (LayoutFree(op.type())) {
      return xs.size() == 1 && nhwc_.count(xs[0]) != 0;
    }
    return SameShapeBinary(op.type()) && SameShapePair(xs);
  }

  // Two inputs of one declared shape, one NHWC and the other NHWC or with
  // a NHWC copy.
  bool SameShapePair(const std::vector<std::string>& xs) const {
    if (xs.size() != 2 || !Available(xs[0]) || !Available(xs[1]) ||
        (nhwc_.count(xs[0]) == 0 && nhwc_.count(xs[1]) == 0)) {
      return false;
    }
    const VarDesc* a = desc_.FindVar(xs[0]);
    const VarDesc* b = desc_.FindVar(xs[1]);
    return a != nullptr && b != nullptr && a->dims() == b->dims();
  }

  // `name` is NHWC, or has a NHWC copy already (a residual branch's input
  // a conv read channels-last).
  bool Available(const std::string& name) const {
    return nhwc_.count(name) != 0 || to_nhwc_.count(name) != 0;
  }

  // concat or split along the channels (axis 1) of NHWC inputs, axis from
  // the attribute alone: channels-last, the same op along axis 3.
  bool ChannelAxisOp(const OpDesc& op) const {
    if (op.type() != "concat" && op.type() != "split") return false;
    if (op.HasInput("AxisTensor") || op.HasInput("SectionsTensorList")) {
      return false;
    }
    const int axis = AttrOr<int>(op, "axis", 0);
    if (axis != 1 && axis != -3) return false;
    const std::vector<std::string> xs = op.Input("X");
    if (xs.empty()) return false;
    for (const std::string& x : xs) {
      if (nhwc_.count(x) == 0) return false;
    }
    return true;
  }

  // A conv worth running channels-last: depthwise, at least kMinChannels
  // input channels per group, or a narrower one (a stem on an image's 3
  // channels) whose output another conv reads. A stem followed by a pool
  // runs faster channels-first (im2col; ResNet-18's 7x7 at batch 32: 3.2
  // against 6.5 ms) and saves two transposes; one followed by a conv
  // (MobileNet's) saves the transpose of its wider output.
  bool WideEnough(const OpDesc& op) const {
    constexpr int64_t kMinChannels = 16;
    const VarDesc* w = desc_.FindVar(op.FirstInput("Filter"));
    if (w == nullptr || w->rank() != 4) return false;
    const int64_t per_group = w->dim(1);
    if (per_group >= kMinChannels ||
        (per_group == 1 && AttrOr<int>(op, "groups", 1) > 1)) {
      return true;
    }
    for (const auto& reader : desc_.ops()) {
      if (!IsConv(*reader)) continue;
      for (const std::string& x : reader->Input("Input")) {
        if (x == op.FirstOutput("Output")) return true;
      }
    }
    return false;
  }

  // A conv's input: a NHWC var, or a 4-D fp32 tensor transposed in.
  bool Plain4dOrFeed(const std::string& name) const {
    if (nhwc_.count(name) != 0) return true;
    const VarDesc* v = desc_.FindVar(name);
    return v != nullptr && v->is_tensor() && v->dtype() == DType::kFP32 &&
           v->rank() == 4;
  }

  void Permute(proto::BlockDesc* block, const std::string& name) {
    for (auto& var : *block->mutable_vars()) {
      if (var.name() != name) continue;
      VarDesc v(&var);
      const Dims d = v.dims();
      v.SetDims({d[0], d[2], d[3], d[1]});
    }
  }

  // The name of `name`'s copy in the other layout, its transpose2 appended
  // to `out` the first time (declared in `block`).
  std::string Transposed(
      const std::string& name, bool to_nhwc, proto::BlockDesc* block,
      google::protobuf::RepeatedPtrField<proto::OpDesc>* out) {
    std::map<std::string, std::string>& made = to_nhwc ? to_nhwc_ : to_nchw_;
    auto it = made.find(name);
    if (it != made.end()) return it->second;
    const std::string copy = name + (to_nhwc ? "@nhwc" : "@nchw");
    const VarDesc* from = desc_.FindVar(name);
    const Dims d = from->dims();  // as declared: NCHW
    VarDesc v(block->add_vars());
    v.mutable_proto()->set_name(copy);
    v.SetDType(from->dtype());
    v.SetDims(to_nhwc ? Dims{d[0], d[2], d[3], d[1]} : d);
    proto::OpDesc* t = out->Add();
    OpDesc view(t, 0, 0);
    t->set_type("transpose2");
    view.SetInput("X", {name});
    view.SetOutput("Out", {copy});
    view.SetAttr("axis", to_nhwc ? kToNhwc : kToNchw);
    ++transposes_;
    made[name] = copy;
    return copy;
  }

  const Block& desc_;  // the program as it was: vars declared NCHW
  const Uses uses_;
  const std::set<std::string> fetched_;
  std::set<std::string> nhwc_;
  std::map<std::string, std::string> to_nhwc_, to_nchw_;
  int transposes_ = 0;
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
    if (fusions.fuse_activation) fuser.FuseActivation(i);
  }
  PAREX_ASSIGN_OR_RETURN(FusedProgram fused,
                         fuser.Finish(fusions.mark_constant_filters));
  if (fusions.channels_last && fused.main.num_blocks() == 1) {
    proto::ProgramDesc desc = fused.main.proto();
    ChannelsLast pass(&fused.main, fetch_names);
    pass.Run(desc.mutable_blocks(0), &fused.channels_last_ops,
             &fused.transposes);
    fused.main = Program(std::move(desc));
  }
  return fused;
}

}  // namespace parex
