// The loss and metric layers (layers.h): cross entropy, softmax with cross
// entropy, square error, mean, accuracy.
#include "graph/builder/layers.h"
#include "graph/builder/layers_internal.h"

namespace parex {
namespace layers {
namespace {

using internal::AppendUnary;
using internal::CheckVar;
using internal::LayerError;
using internal::VarText;

// A hard label is int64 with extent 1 in the last dim; a soft one has the
// input's dtype and dims. Both have the input's rank.
Status CheckLabel(const std::string& layer, const VarDesc& input,
                  const VarDesc& label, bool soft_label) {
  const Dims x = input.dims();
  const Dims l = label.dims();
  if (x.empty() || l.size() != x.size()) {
    return LayerError(layer, "label " + VarText(label) +
                                 " must have the rank of input " +
                                 VarText(input) + " (>= 1)");
  }
  if (soft_label) {
    if (label.dtype() != input.dtype() || !ExtentsAgree(l.back(), x.back())) {
      return LayerError(layer, "soft label " + VarText(label) + " " +
                                   DTypeName(label.dtype()) +
                                   " must match input " + VarText(input) + " " +
                                   DTypeName(input.dtype()));
    }
  } else if (label.dtype() != DType::kInt64 || !ExtentsAgree(l.back(), 1)) {
    return LayerError(layer, "hard label " + VarText(label) + " " +
                                 DTypeName(label.dtype()) +
                                 " must be int64 with a last dim of 1");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<VarDesc*> CrossEntropy(ProgramBuilder& b, VarDesc* input,
                                VarDesc* label, bool soft_label) {
  const std::string layer = "cross_entropy";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, input, "input"));
  PAREX_RETURN_IF_ERROR(CheckVar(layer, label, "label"));
  PAREX_RETURN_IF_ERROR(CheckLabel(layer, *input, *label, soft_label));
  const std::string name = b.UniqueName("cross_entropy");
  VarDesc* out = b.CreateTemporary(name, input->dtype());
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("cross_entropy",
                 {{"X", {input->name()}}, {"Label", {label->name()}}},
                 {{"Y", {out->name()}}},
                 [soft_label](OpDesc& op) {
                   op.SetAttr<bool>("soft_label", soft_label);
                   op.SetAttr<int>("ignore_index", -100);
                 })
          .status());
  return out;
}

StatusOr<VarDesc*> SoftmaxWithCrossEntropy(ProgramBuilder& b, VarDesc* logits,
                                           VarDesc* label, bool soft_label) {
  const std::string layer = "softmax_with_cross_entropy";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, logits, "logits"));
  PAREX_RETURN_IF_ERROR(CheckVar(layer, label, "label"));
  PAREX_RETURN_IF_ERROR(CheckLabel(layer, *logits, *label, soft_label));
  const std::string name = b.UniqueName("softmax_with_cross_entropy");
  VarDesc* softmax = b.CreateTemporary(name, logits->dtype());
  VarDesc* loss = b.CreateTemporary(name, logits->dtype());
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("softmax_with_cross_entropy",
                 {{"Logits", {logits->name()}}, {"Label", {label->name()}}},
                 {{"Softmax", {softmax->name()}}, {"Loss", {loss->name()}}},
                 [soft_label](OpDesc& op) {
                   op.SetAttr<bool>("soft_label", soft_label);
                   op.SetAttr<int>("ignore_index", -100);
                   op.SetAttr<bool>("numeric_stable_mode", true);
                   op.SetAttr<int>("axis", -1);
                 })
          .status());
  return loss;
}

StatusOr<VarDesc*> SquareErrorCost(ProgramBuilder& b, VarDesc* input,
                                   VarDesc* label) {
  const std::string layer = "square_error_cost";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, input, "input"));
  PAREX_RETURN_IF_ERROR(CheckVar(layer, label, "label"));
  const Dims x = input->dims(), l = label->dims();
  bool agree = x.size() == l.size() && input->dtype() == label->dtype();
  for (size_t i = 0; agree && i < x.size(); ++i)
    agree = ExtentsAgree(x[i], l[i]);
  if (!agree) {
    return LayerError(layer, "label " + VarText(*label) + " " +
                                 DTypeName(label->dtype()) +
                                 " must match input " + VarText(*input) + " " +
                                 DTypeName(input->dtype()));
  }
  const std::string name = b.UniqueName("square_error_cost");
  VarDesc* minus = b.CreateTemporary(name, input->dtype());
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("elementwise_sub",
                 {{"X", {input->name()}}, {"Y", {label->name()}}},
                 {{"Out", {minus->name()}}})
          .status());
  return AppendUnary(b, name, "square", minus);
}

StatusOr<VarDesc*> Mean(ProgramBuilder& b, VarDesc* x) {
  PAREX_RETURN_IF_ERROR(CheckVar("mean", x, "x"));
  return AppendUnary(b, b.UniqueName("mean"), "mean", x);
}

StatusOr<VarDesc*> Accuracy(ProgramBuilder& b, VarDesc* input, VarDesc* label,
                            int k) {
  const std::string layer = "accuracy";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, input, "input"));
  PAREX_RETURN_IF_ERROR(CheckVar(layer, label, "label"));
  const Dims x = input->dims();
  if (x.size() != 2) {
    return LayerError(layer, "input " + VarText(*input) + " must have rank 2");
  }
  if (k < 1 || (x[1] >= 0 && k > x[1])) {
    return LayerError(layer, "k " + std::to_string(k) +
                                 " must be in [1, classes of input " +
                                 VarText(*input) + "]");
  }
  PAREX_RETURN_IF_ERROR(CheckLabel(layer, *input, *label, false));
  const std::string name = b.UniqueName("accuracy");
  const std::string top_k = b.UniqueName("top_k");
  VarDesc* values = b.CreateTemporary(top_k, input->dtype());
  values->SetStopGradient(true);
  VarDesc* indices = b.CreateTemporary(top_k, DType::kInt64);
  indices->SetStopGradient(true);
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("top_k", {{"X", {input->name()}}},
                 {{"Out", {values->name()}}, {"Indices", {indices->name()}}},
                 [k](OpDesc& op) { op.SetAttr<int>("k", k); })
          .status());
  VarDesc* accuracy = b.CreateTemporary(name, DType::kFP32);
  VarDesc* correct = b.CreateTemporary(name, DType::kInt64);
  VarDesc* total = b.CreateTemporary(name, DType::kInt64);
  PAREX_RETURN_IF_ERROR(b.AppendOp("accuracy",
                                   {{"Out", {values->name()}},
                                    {"Indices", {indices->name()}},
                                    {"Label", {label->name()}}},
                                   {{"Accuracy", {accuracy->name()}},
                                    {"Correct", {correct->name()}},
                                    {"Total", {total->name()}}})
                            .status());
  return accuracy;
}

}  // namespace layers
}  // namespace parex
