// softmax, cross_entropy and softmax_with_cross_entropy with their Fluid
// gradient ops.
//
// softmax normalises along `axis`. cross_entropy reads probabilities X
// [..., D] and a label of the same rank: hard ([..., 1] class ids, int64) or
// soft ([..., D] distributions, soft_label); Y is [..., 1].
// softmax_with_cross_entropy does both along `axis` from raw Logits, giving
// Softmax (Logits' dims) and Loss (Logits' dims with the axis extent 1).
// sigmoid_cross_entropy_with_logits (Paddle 2.6): Out = max(X, 0) - X * Label
// + log(1 + exp(-|X|)) element by element, 0 where int(Label) ==
// ignore_index; with normalize, divided by the number of labels farther
// than 1e-6 from ignore_index (Paddle's count: none gives 0 / 0). X and
// Label have equal dims; the pos_weight input is refused.
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

// `axis` in [-rank, rank) made non-negative, or an error naming the slot.
StatusOr<int> NormalizeAxis(const ShapeContext& ctx, int axis, int rank,
                            const std::string& slot) {
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis " + std::to_string(axis) + " is out of range for " +
                     slot + " of rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Status InferSoftmax(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (Known(ctx, x)) {
    if (x.empty()) return ctx.Error("X must have rank >= 1");
    PAREX_RETURN_IF_ERROR(NormalizeAxis(ctx, ctx.Attr<int>("axis"),
                                        static_cast<int>(x.size()), "X")
                              .status());
  }
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferSoftmaxGrad(ShapeContext& ctx) {
  const Dims out = ctx.InputDims("Out");
  const Dims dout = ctx.InputDims("Out@GRAD");
  if (Known(ctx, out) && Known(ctx, dout) && out.size() != dout.size()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout) + " does not match Out " +
                     DimsToString(out));
  }
  for (size_t i = 0; i < out.size() && i < dout.size(); ++i) {
    if (!ExtentsAgree(out[i], dout[i])) {
      return ctx.Error("Out@GRAD " + DimsToString(dout) +
                       " does not match Out " + DimsToString(out));
    }
  }
  ctx.SetOutput("X@GRAD", out, ctx.InputDType("Out"));
  return Status::Ok();
}

// Checks a label against probabilities/logits `x` along `axis` (normalised):
// same rank, the other extents agree, and the axis extent is 1 for a hard
// label or x's for a soft one. A hard label must be an integer tensor.
Status CheckLabel(const ShapeContext& ctx, const Dims& x, int axis,
                  const char* x_name, bool soft) {
  const Dims label = ctx.InputDims("Label");
  if (!Known(ctx, label) || !Known(ctx, x)) return Status::Ok();
  const std::string shapes = std::string(" (") + x_name + " " +
                             DimsToString(x) + ", Label " +
                             DimsToString(label) + ")";
  if (label.size() != x.size()) {
    return ctx.Error("Label must have the rank of " + std::string(x_name) +
                     shapes);
  }
  for (size_t d = 0; d < x.size(); ++d) {
    if (static_cast<int>(d) == axis) {
      const int64_t want = soft ? x[d] : 1;
      if (!ExtentsAgree(label[d], want)) {
        return ctx.Error(std::string(soft ? "soft" : "hard") +
                         " Label must have extent " +
                         (soft ? std::string("of ") + x_name : "1") +
                         " along axis " + std::to_string(axis) + shapes);
      }
    } else if (!ExtentsAgree(label[d], x[d])) {
      return ctx.Error("Label does not match " + std::string(x_name) +
                       " along dim " + std::to_string(d) + shapes);
    }
  }
  const DType ldt = ctx.InputDType("Label");
  if (ldt == DType::kUndefined) return Status::Ok();
  if (!soft && ldt != DType::kInt64 && ldt != DType::kInt32) {
    return ctx.Error(std::string("hard Label must be int64 or int32, got ") +
                     DTypeName(ldt));
  }
  if (soft && ldt != ctx.InputDType(x_name)) {
    return ctx.Error(std::string("soft Label must have the dtype of ") +
                     x_name + ", got " + DTypeName(ldt));
  }
  return Status::Ok();
}

// Dims with extent 1 along `axis`.
Dims Collapse(Dims dims, int axis) {
  if (axis >= 0 && axis < static_cast<int>(dims.size())) dims[axis] = 1;
  return dims;
}

Status InferCrossEntropy(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const int axis = static_cast<int>(x.size()) - 1;
  if (Known(ctx, x) && x.empty()) return ctx.Error("X must have rank >= 1");
  PAREX_RETURN_IF_ERROR(
      CheckLabel(ctx, x, axis, "X", ctx.Attr<bool>("soft_label")));
  ctx.SetOutput("Y", Collapse(x, axis), ctx.InputDType("X"));
  return Status::Ok();
}

Status InferCrossEntropyGrad(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const int axis = static_cast<int>(x.size()) - 1;
  PAREX_RETURN_IF_ERROR(
      CheckLabel(ctx, x, axis, "X", ctx.Attr<bool>("soft_label")));
  const Dims dy = ctx.InputDims("Y@GRAD");
  if (Known(ctx, x) && Known(ctx, dy)) {
    const Dims want = Collapse(x, axis);
    bool agree = want.size() == dy.size();
    for (size_t i = 0; agree && i < dy.size(); ++i) {
      agree = ExtentsAgree(want[i], dy[i]);
    }
    if (!agree) {
      return ctx.Error("Y@GRAD " + DimsToString(dy) + " must be " +
                       DimsToString(want));
    }
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputDType("X"));
  return Status::Ok();
}

Status InferSoftmaxWithCrossEntropy(ShapeContext& ctx) {
  if (!ctx.Attr<bool>("use_softmax")) {
    return Unimplemented(ctx.op().Label() +
                         ": use_softmax = false is not supported");
  }
  const Dims logits = ctx.InputDims("Logits");
  int axis = -1;
  if (Known(ctx, logits)) {
    if (logits.empty()) return ctx.Error("Logits must have rank >= 1");
    PAREX_ASSIGN_OR_RETURN(
        axis, NormalizeAxis(ctx, ctx.Attr<int>("axis"),
                            static_cast<int>(logits.size()), "Logits"));
    PAREX_RETURN_IF_ERROR(
        CheckLabel(ctx, logits, axis, "Logits", ctx.Attr<bool>("soft_label")));
  }
  const DType dtype = ctx.InputDType("Logits");
  ctx.SetOutput("Softmax", logits, dtype);
  ctx.SetOutput("Loss", Collapse(logits, axis), dtype);
  return Status::Ok();
}

Status InferSoftmaxWithCrossEntropyGrad(ShapeContext& ctx) {
  const Dims softmax = ctx.InputDims("Softmax");
  if (Known(ctx, softmax)) {
    if (softmax.empty()) return ctx.Error("Softmax must have rank >= 1");
    PAREX_ASSIGN_OR_RETURN(
        int axis, NormalizeAxis(ctx, ctx.Attr<int>("axis"),
                                static_cast<int>(softmax.size()), "Softmax"));
    PAREX_RETURN_IF_ERROR(CheckLabel(ctx, softmax, axis, "Softmax",
                                     ctx.Attr<bool>("soft_label")));
    const Dims dloss = ctx.InputDims("Loss@GRAD");
    const Dims want = Collapse(softmax, axis);
    bool agree = !Known(ctx, dloss) || want.size() == dloss.size();
    for (size_t i = 0; agree && i < dloss.size() && i < want.size(); ++i) {
      agree = ExtentsAgree(want[i], dloss[i]);
    }
    if (!agree) {
      return ctx.Error("Loss@GRAD " + DimsToString(dloss) + " must be " +
                       DimsToString(want));
    }
  }
  ctx.SetOutput("Logits@GRAD", softmax, ctx.InputDType("Softmax"));
  return Status::Ok();
}

Status CheckSigmoidCrossEntropy(const ShapeContext& ctx) {
  if (ctx.HasInput("pos_weight")) {
    return Unimplemented(ctx.op().Label() +
                         ": input 'pos_weight' is not supported");
  }
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Label"}));
  const Dims x = ctx.InputDims("X");
  const Dims label = ctx.InputDims("Label");
  if (!Known(ctx, x) || !Known(ctx, label)) return Status::Ok();
  bool same = x.size() == label.size();
  for (size_t i = 0; same && i < x.size(); ++i) {
    same = ctx.IsRuntime() ? x[i] == label[i] : ExtentsAgree(x[i], label[i]);
  }
  if (!same) {
    return ctx.Error("Label " + DimsToString(label) + " differs from X " +
                     DimsToString(x));
  }
  return Status::Ok();
}

Status InferSigmoidCrossEntropy(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSigmoidCrossEntropy(ctx));
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferSigmoidCrossEntropyGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSigmoidCrossEntropy(ctx));
  const Dims x = ctx.InputDims("X");
  if (Known(ctx, x)) PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", x));
  ctx.SetOutput("X@GRAD", x, ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

}  // namespace

void RegisterSoftmaxOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("log_softmax")
             .Input("X")
             .Output("Out")
             .Attr("axis", -1)
             .InferShape(InferSoftmax)
             .Grad("log_softmax_grad", {"Out", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("log_softmax_grad")
             .Input("Out")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("axis", -1)
             .InferShape(InferSoftmaxGrad));
  r->Add(OpSchema("softmax")
             .Input("X")
             .Output("Out")
             .Attr("axis", -1)
             .Attr("use_cudnn", false)
             .InferShape(InferSoftmax)
             .Grad("softmax_grad", {"Out", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("softmax_grad")
             .Input("Out")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("axis", -1)
             .Attr("use_cudnn", false)
             .InferShape(InferSoftmaxGrad));

  r->Add(OpSchema("cross_entropy")
             .Input("X")
             .Input("Label")
             .Output("Y")
             .Attr("soft_label", false)
             .Attr("ignore_index", -100)
             .InferShape(InferCrossEntropy)
             .Grad("cross_entropy_grad", {"X", "Label", "Y@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("cross_entropy_grad")
             .Input("X")
             .Input("Label")
             .Input("Y@GRAD")
             .Output("X@GRAD")
             .Attr("soft_label", false)
             .Attr("ignore_index", -100)
             .InferShape(InferCrossEntropyGrad));

  r->Add(OpSchema("softmax_with_cross_entropy")
             .Input("Logits")
             .Input("Label")
             .Output("Softmax")
             .Output("Loss")
             .Attr("soft_label", false)
             .Attr("ignore_index", -100)
             .Attr("numeric_stable_mode", true)
             .Attr("use_softmax", true)
             .Attr("axis", -1)
             .InferShape(InferSoftmaxWithCrossEntropy)
             .Grad("softmax_with_cross_entropy_grad",
                   {"Label", "Softmax", "Loss@GRAD"}, {"Logits@GRAD"}));
  r->Add(OpSchema("softmax_with_cross_entropy_grad")
             .Input("Label")
             .Input("Softmax")
             .Input("Loss@GRAD")
             .Output("Logits@GRAD")
             .Attr("soft_label", false)
             .Attr("ignore_index", -100)
             .Attr("numeric_stable_mode", true)
             .Attr("use_softmax", true)
             .Attr("axis", -1)
             .InferShape(InferSoftmaxWithCrossEntropyGrad)
             .KernelDTypeFromInput("Softmax"));
  for (bool grad : {false, true}) {
    OpSchema s(grad ? "sigmoid_cross_entropy_with_logits_grad"
                    : "sigmoid_cross_entropy_with_logits");
    s.Input("X").Input("Label").Input("pos_weight", kOptional);
    if (grad) {
      s.Input("Out@GRAD")
          .Output("X@GRAD")
          .InferShape(InferSigmoidCrossEntropyGrad);
      s.KernelDTypeFromInput("Out@GRAD");
    } else {
      s.Output("Out")
          .InferShape(InferSigmoidCrossEntropy)
          .Grad("sigmoid_cross_entropy_with_logits_grad",
                {"X", "Label", "pos_weight", "Out@GRAD"}, {"X@GRAD"});
    }
    s.Attr("normalize", false).Attr("ignore_index", -100);
    r->Add(std::move(s));
  }
}

}  // namespace parex
