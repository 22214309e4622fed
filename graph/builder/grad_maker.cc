// The gradient op makers of AppendBackward (graph/builder/backward.cc): which
// maker a forward op takes (DescribeOp) and the ops each maker emits
// (GradOpPlanner): the generic maker from the op schema's Grad spec and the
// special makers of scale, assign, cast, split and sum.
#include "graph/builder/grad_maker.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "graph/builder/backward.h"

namespace parex {
namespace backward_internal {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

std::string StripGradSuffix(const std::string& name) {
  const size_t pos = name.find(kGradSuffix);
  return pos == std::string::npos ? name : name.substr(0, pos);
}

OpInfo DescribeOp(const OpDesc& op) {
  static const std::set<std::string> kNoGradient = {
      "feed",
      "fetch",
      "fill_constant",
      "uniform_random",
      "gaussian_random",
      "accuracy",
      "fill_constant_batch_size_like"};
  OpInfo info;
  info.schema = OpSchemaRegistry::Global().Find(op.type());
  const int r = OpRole(op);
  // Ops of an earlier backward or optimizer pass are not differentiated.
  if ((r & (kOpRoleBackward | kOpRoleOptimize)) != 0 ||
      kNoGradient.count(op.type()) > 0) {
    return info;
  }
  static const std::map<std::string, GradKind> kSpecial = {
      {"scale", GradKind::kScale},
      {"assign", GradKind::kAssign},
      {"cast", GradKind::kCast},
      {"split", GradKind::kSplit},
      {"sum", GradKind::kSum}};
  if (auto it = kSpecial.find(op.type()); it != kSpecial.end()) {
    info.kind = it->second;
    info.diff_slots = {"X"};
  } else if (info.schema != nullptr && info.schema->has_grad()) {
    info.kind = GradKind::kSchema;
    for (const std::string& out : info.schema->grad_outputs()) {
      info.diff_slots.push_back(StripGradSuffix(out));
    }
  } else {
    info.kind = GradKind::kMissing;
    info.diff_slots = op.InputSlots();
  }
  return info;
}

namespace {

// A gradient op of type `type` in `desc`, viewed as an OpDesc.
OpDesc View(proto::OpDesc* desc, const std::string& type) {
  desc->set_type(type);
  return OpDesc(desc, 0, -1);
}

// The forward op's attributes, less its role.
void CopyAttrs(const OpDesc& forward, proto::OpDesc* grad) {
  for (const auto& attr : forward.proto().attrs()) {
    if (attr.name() == "op_role" || attr.name() == "op_role_var") continue;
    *grad->add_attrs() = attr;
  }
}

}  // namespace

void GradOpPlanner::AddLossGrad(const VarDesc& loss) {
  proto::OpDesc desc;
  OpDesc op = View(&desc, "fill_constant");
  op.SetOutput("Out", {GradVarName(loss.name())});
  op.SetAttr<std::vector<int64_t>>("shape", {1});
  op.SetAttr<float>("value", 1.0f);
  op.SetAttr<int>("dtype", static_cast<int>(loss.dtype() == DType::kUndefined
                                                ? DType::kFP32
                                                : loss.dtype()));
  op.SetAttr<bool>("force_cpu", false);
  op.SetAttr<int>("op_role", kOpRoleBackward | kOpRoleLoss);
  ops_.push_back(std::move(desc));
}

Status GradOpPlanner::AddScaleGrad(const OpDesc& op) {
  proto::OpDesc desc;
  OpDesc g = View(&desc, "scale");
  g.SetInput("X", {OutputGrad(op.FirstOutput("Out"))});
  if (op.HasInput("ScaleTensor")) {
    g.SetInput("ScaleTensor", op.Input("ScaleTensor"));
  }
  g.SetOutput("Out", {InputGrad(op.FirstInput("X"))});
  PAREX_ASSIGN_OR_RETURN(float scale, op.GetAttr<float>("scale"));
  g.SetAttr<float>("scale", scale);
  g.SetAttr<float>("bias", 0.0f);
  g.SetAttr<bool>("bias_after_scale", true);
  return Push(std::move(desc));
}

Status GradOpPlanner::AddCastGrad(const OpDesc& op) {
  proto::OpDesc desc;
  OpDesc g = View(&desc, "cast");
  g.SetInput("X", {OutputGrad(op.FirstOutput("Out"))});
  g.SetOutput("Out", {InputGrad(op.FirstInput("X"))});
  PAREX_ASSIGN_OR_RETURN(int in_dtype, op.GetAttr<int>("in_dtype"));
  PAREX_ASSIGN_OR_RETURN(int out_dtype, op.GetAttr<int>("out_dtype"));
  g.SetAttr<int>("in_dtype", out_dtype);
  g.SetAttr<int>("out_dtype", in_dtype);
  return Push(std::move(desc));
}

Status GradOpPlanner::AddSumGrad(const OpDesc& op) {
  // Fluid's sum gradient: one scale(1) per input that needs one.
  const std::string dout = OutputGrad(op.FirstOutput("Out"));
  for (const std::string& in : op.Input("X")) {
    if (InputGrad(in).empty()) continue;
    proto::OpDesc desc;
    OpDesc g = View(&desc, "scale");
    g.SetInput("X", {dout});
    g.SetOutput("Out", {GradVarName(in)});
    g.SetAttr<float>("scale", 1.0f);
    PAREX_RETURN_IF_ERROR(Push(std::move(desc)));
  }
  return Status::Ok();
}

Status GradOpPlanner::AddGradOps(const OpDesc& op, const OpInfo& info) {
  switch (info.kind) {
    case GradKind::kSchema:
      return AddSchemaGrad(op, *info.schema);
    case GradKind::kScale:
      return AddScaleGrad(op);
    case GradKind::kAssign: {
      proto::OpDesc desc;
      OpDesc g = View(&desc, "assign");
      g.SetInput("X", {OutputGrad(op.FirstOutput("Out"))});
      g.SetOutput("Out", {InputGrad(op.FirstInput("X"))});
      CopyAttrs(op, &desc);
      return Push(std::move(desc));
    }
    case GradKind::kCast:
      return AddCastGrad(op);
    case GradKind::kSplit: {
      std::vector<std::string> grads;
      for (const std::string& out : op.Output("Out")) {
        grads.push_back(OutputGrad(out));
      }
      proto::OpDesc desc;
      OpDesc g = View(&desc, "concat");
      g.SetInput("X", grads);
      g.SetOutput("Out", {InputGrad(op.FirstInput("X"))});
      CopyAttrs(op, &desc);
      return Push(std::move(desc));
    }
    case GradKind::kSum:
      return AddSumGrad(op);
    case GradKind::kNone:
    case GradKind::kMissing:
      break;
  }
  return Internal("append_backward: " + op.Label() + " has no gradient op");
}

bool GradOpPlanner::Needs(const std::string& name) const {
  return !name.empty() && needs_.count(name) > 0;
}

std::string GradOpPlanner::InputGrad(const std::string& var) const {
  return Needs(var) ? GradVarName(var) : std::string();
}

std::string GradOpPlanner::OutputGrad(const std::string& var) {
  const std::string grad = GradVarName(var);
  if (var.empty() || Needs(var) || !zeroed_.insert(var).second) return grad;
  const VarDesc* v = block_.FindVar(var);
  const Dims dims = v ? v->dims() : Dims{};
  proto::OpDesc desc;
  if (v != nullptr && !dims.empty() && Numel(dims) >= 0) {
    OpDesc op = View(&desc, "fill_constant");
    op.SetAttr<std::vector<int64_t>>("shape", dims);
    op.SetAttr<float>("value", 0.0f);
    op.SetAttr<int>("dtype", static_cast<int>(v->dtype()));
    op.SetAttr<bool>("force_cpu", false);
    op.SetOutput("Out", {grad});
  } else {
    OpDesc op = View(&desc, "scale");
    op.SetInput("X", {var});
    op.SetOutput("Out", {grad});
    op.SetAttr<float>("scale", 0.0f);
    op.SetAttr<float>("bias", 0.0f);
  }
  (void)Push(std::move(desc));
  return grad;
}

Status GradOpPlanner::Push(proto::OpDesc desc) {
  OpDesc(&desc, 0, -1).SetAttr<int>("op_role", kOpRoleBackward);
  ops_.push_back(std::move(desc));
  return Status::Ok();
}

Status GradOpPlanner::AddSchemaGrad(const OpDesc& op, const OpSchema& schema) {
  const auto& reads = schema.grad_inputs();
  for (const std::string& slot : op.OutputSlots()) {
    const std::string read = slot + std::string(kGradSuffix);
    for (const std::string& out : op.Output(slot)) {
      if (Needs(out) &&
          std::find(reads.begin(), reads.end(), read) == reads.end()) {
        return Unimplemented("append_backward: " + op.Label() +
                             ": the loss depends on output '" + slot + "' ('" +
                             out + "'), whose gradient " + schema.grad_type() +
                             " does not read");
      }
    }
  }
  proto::OpDesc desc;
  OpDesc g = View(&desc, schema.grad_type());
  for (const std::string& entry : reads) {
    std::vector<std::string> args;
    if (EndsWith(entry, kGradSuffix)) {
      const std::string base = StripGradSuffix(entry);
      for (const std::string& out : op.Output(base)) {
        args.push_back(out.empty() ? out : OutputGrad(out));
      }
    } else if (schema.FindInput(entry) != nullptr) {
      args = op.Input(entry);
    } else if (schema.FindOutput(entry) != nullptr) {
      args = op.Output(entry);
    } else {
      return Internal("op schema '" + op.type() +
                      "': Grad spec reads unknown slot '" + entry + "'");
    }
    if (!args.empty()) g.SetInput(entry, args);
  }
  for (const std::string& entry : schema.grad_outputs()) {
    const std::vector<std::string> inputs = op.Input(StripGradSuffix(entry));
    std::vector<std::string> args;
    if (inputs.size() == 1) {
      if (Needs(inputs[0])) args.push_back(GradVarName(inputs[0]));
    } else {
      for (const std::string& in : inputs) args.push_back(InputGrad(in));
    }
    g.SetOutput(entry, args);
  }
  CopyAttrs(op, &desc);
  return Push(std::move(desc));
}

}  // namespace backward_internal
}  // namespace parex
