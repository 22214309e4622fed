// ProgramBuilder and Initializer: appending ops to a main program and
// parameters with their initialiser ops to a startup program (declared in
// graph/builder/program_builder.h).
#include "graph/builder/program_builder.h"

#include <cmath>
#include <utility>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"

namespace parex {

// ---- Initializer ------------------------------------------------------------

Initializer Initializer::Constant(double value) {
  Initializer init;
  init.kind = Kind::kConstant;
  init.value = value;
  return init;
}

Initializer Initializer::Uniform(double low, double high, int seed) {
  Initializer init;
  init.kind = Kind::kUniform;
  init.low = low;
  init.high = high;
  init.seed = seed;
  return init;
}

Initializer Initializer::Normal(double mean, double std, int seed) {
  Initializer init;
  init.kind = Kind::kNormal;
  init.mean = mean;
  init.std = std;
  init.seed = seed;
  return init;
}

Initializer Initializer::Xavier(bool uniform, int seed) {
  Initializer init;
  init.kind = Kind::kXavier;
  init.uniform = uniform;
  init.seed = seed;
  return init;
}

Initializer Initializer::MSRA(bool uniform, int seed) {
  Initializer init;
  init.kind = Kind::kMSRA;
  init.uniform = uniform;
  init.seed = seed;
  return init;
}

namespace {

using Slots = std::map<std::string, std::vector<std::string>>;

// Fluid's Initializer._compute_fans: [] -> 1/1, [n] -> n/n, [in, out] ->
// in/out, [M, C, k...] -> C*prod(k) / M*prod(k).
std::pair<double, double> ComputeFans(const Dims& dims) {
  if (dims.empty()) return {1.0, 1.0};
  if (dims.size() == 1) return {double(dims[0]), double(dims[0])};
  if (dims.size() == 2) return {double(dims[0]), double(dims[1])};
  double receptive = 1;
  for (size_t i = 2; i < dims.size(); ++i) receptive *= double(dims[i]);
  return {double(dims[1]) * receptive, double(dims[0]) * receptive};
}

std::vector<int64_t> ShapeAttr(const Dims& dims) {
  return std::vector<int64_t>(dims.begin(), dims.end());
}

Status CheckInitializer(const std::string& var, const Initializer& init) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("initializer of '" + var + "': " + why);
  };
  switch (init.kind) {
    case Initializer::Kind::kUniform:
      if (!(init.low <= init.high)) {
        return bad("uniform low " + std::to_string(init.low) + " > high " +
                   std::to_string(init.high));
      }
      break;
    case Initializer::Kind::kNormal:
      if (!(init.std >= 0)) {
        return bad("normal std " + std::to_string(init.std) + " < 0");
      }
      break;
    default:
      break;
  }
  return Status::Ok();
}

}  // namespace

// ---- ProgramBuilder ---------------------------------------------------------

ProgramBuilder::ProgramBuilder(Program* main, Program* startup)
    : main_(main), startup_(startup) {
  PAREX_CHECK(main_ != nullptr && startup_ != nullptr,
              "ProgramBuilder needs a main and a startup program");
}

std::string ProgramBuilder::UniqueName(const std::string& key) {
  return key + "_" + std::to_string(name_counters_[key]++);
}

VarDesc* ProgramBuilder::CreateTemporary(const std::string& prefix,
                                         DType dtype) {
  VarDesc* v = block().Var(UniqueName(prefix + ".tmp"));
  v->SetDType(dtype);
  return v;
}

namespace {

// Appends the initialiser op of `var` to `startup` (Fluid's initializer
// classes). `init` is resolved (not kDefault).
Status AppendInitializer(Block& startup, const VarDesc& var,
                         const Initializer& init, int program_seed) {
  const Dims dims = var.dims();
  const int dtype = static_cast<int>(var.dtype());
  const int seed = init.seed != 0 ? init.seed : program_seed;
  const auto [fan_in, fan_out] = ComputeFans(dims);
  OpDesc* op = nullptr;
  auto uniform = [&](double low, double high) {
    op = startup.AppendOp("uniform_random");
    op->SetAttr<float>("min", static_cast<float>(low));
    op->SetAttr<float>("max", static_cast<float>(high));
    op->SetAttr<int>("seed", seed);
  };
  auto normal = [&](double mean, double std) {
    op = startup.AppendOp("gaussian_random");
    op->SetAttr<float>("mean", static_cast<float>(mean));
    op->SetAttr<float>("std", static_cast<float>(std));
    op->SetAttr<int>("seed", seed);
  };
  switch (init.kind) {
    case Initializer::Kind::kDefault:
    case Initializer::Kind::kConstant:
      op = startup.AppendOp("fill_constant");
      op->SetAttr<float>("value", static_cast<float>(init.value));
      op->SetAttr<bool>("force_cpu", false);
      break;
    case Initializer::Kind::kUniform:
      uniform(init.low, init.high);
      break;
    case Initializer::Kind::kNormal:
      normal(init.mean, init.std);
      break;
    case Initializer::Kind::kXavier:
      if (init.uniform) {
        const double limit = std::sqrt(6.0 / (fan_in + fan_out));
        uniform(-limit, limit);
      } else {
        normal(0.0, std::sqrt(2.0 / (fan_in + fan_out)));
      }
      break;
    case Initializer::Kind::kMSRA:
      if (init.uniform) {
        const double limit = std::sqrt(6.0 / fan_in);
        uniform(-limit, limit);
      } else {
        normal(0.0, std::sqrt(2.0 / fan_in));
      }
      break;
  }
  op->SetOutput("Out", {var.name()});
  op->SetAttr<std::vector<int64_t>>("shape", ShapeAttr(dims));
  op->SetAttr<int>("dtype", dtype);
  op->SetAttr<int>("op_role", 0);
  PAREX_RETURN_IF_ERROR(FillDefaultAttrs(op));
  PAREX_RETURN_IF_ERROR(ValidateOp(*op, startup));
  return InferShapeAtCompileTime(*op, startup, /*write_back=*/true);
}

// Declares `var` (a copy of the main program's VarDesc) in `startup`.
void DeclareInStartup(Block& startup, const VarDesc& var) {
  VarDesc* copy = startup.Var(var.name());
  *copy->mutable_proto() = var.proto();
}

Status CheckPositiveDims(const std::string& what, const std::string& name,
                         const Dims& dims) {
  for (int64_t d : dims) {
    if (d <= 0) {
      return InvalidArgument(what + " '" + name + "': dims " +
                             DimsToString(dims) + " must all be positive");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<VarDesc*> ProgramBuilder::CreateParameter(const std::string& name,
                                                   const Dims& dims,
                                                   DType dtype,
                                                   const Initializer& init,
                                                   const ParamAttr& attr) {
  const std::string& pname = attr.name.empty() ? name : attr.name;
  if (pname.empty()) return InvalidArgument("parameter with an empty name");
  PAREX_RETURN_IF_ERROR(CheckPositiveDims("parameter", pname, dims));
  if (VarDesc* existing = block().FindLocalVar(pname)) {
    if (existing->is_parameter() && existing->dims() == dims &&
        existing->dtype() == dtype) {
      return existing;
    }
    return InvalidArgument(
        "parameter '" + pname + "' " + DimsToString(dims) + " " +
        DTypeName(dtype) + ": the name is taken by a " +
        (existing->is_parameter() ? "parameter " : "variable ") +
        DimsToString(existing->dims()) + " " + DTypeName(existing->dtype()));
  }
  Initializer resolved = attr.initializer.kind != Initializer::Kind::kDefault
                             ? attr.initializer
                             : init;
  if (resolved.kind == Initializer::Kind::kDefault) {
    resolved = Initializer::Xavier();
  }
  PAREX_RETURN_IF_ERROR(CheckInitializer(pname, resolved));

  VarDesc* v = block().Var(pname);
  v->SetDType(dtype);
  v->SetDims(dims);
  v->SetPersistable(true);
  v->SetIsParameter(true);
  v->SetStopGradient(!attr.trainable);
  Block& startup = startup_->global_block();
  DeclareInStartup(startup, *v);
  PAREX_RETURN_IF_ERROR(AppendInitializer(startup, *startup.FindLocalVar(pname),
                                          resolved, random_seed_));
  return v;
}

StatusOr<VarDesc*> ProgramBuilder::CreatePersistable(const std::string& name,
                                                     const Dims& dims,
                                                     DType dtype,
                                                     double value) {
  if (name.empty()) return InvalidArgument("persistable with an empty name");
  for (int64_t d : dims) {
    if (d < 0) {
      return InvalidArgument("persistable '" + name + "': dims " +
                             DimsToString(dims) + " must be known");
    }
  }
  if (VarDesc* existing = block().FindLocalVar(name)) {
    if (existing->persistable() && !existing->is_parameter() &&
        existing->dims() == dims && existing->dtype() == dtype) {
      return existing;
    }
    return InvalidArgument(
        "persistable '" + name + "' " + DimsToString(dims) + " " +
        DTypeName(dtype) + ": the name is taken by a variable " +
        DimsToString(existing->dims()) + " " + DTypeName(existing->dtype()));
  }
  VarDesc* v = block().Var(name);
  v->SetDType(dtype);
  v->SetDims(dims);
  v->SetPersistable(true);
  v->SetStopGradient(true);
  Block& startup = startup_->global_block();
  DeclareInStartup(startup, *v);
  PAREX_RETURN_IF_ERROR(AppendInitializer(startup, *startup.FindLocalVar(name),
                                          Initializer::Constant(value),
                                          random_seed_));
  return v;
}

StatusOr<OpDesc*> ProgramBuilder::AppendOp(const std::string& type,
                                           const Slots& inputs,
                                           const Slots& outputs, int op_role) {
  return AppendOp(type, inputs, outputs, AttrSetter(), op_role);
}

StatusOr<OpDesc*> ProgramBuilder::AppendOp(const std::string& type,
                                           const Slots& inputs,
                                           const Slots& outputs,
                                           const AttrSetter& set_attrs,
                                           int op_role) {
  PAREX_RETURN_IF_ERROR(OpSchemaRegistry::Global().Get(type).status());
  Block& b = block();
  for (const auto& [slot, args] : inputs) {
    for (const std::string& arg : args) {
      if (!arg.empty() && b.FindVar(arg) == nullptr) {
        return NotFound("op '" + type + "': input '" + slot +
                        "' names undeclared variable '" + arg + "'");
      }
    }
  }
  OpDesc* op = b.AppendOp(type);
  for (const auto& [slot, args] : inputs) op->SetInput(slot, args);
  for (const auto& [slot, args] : outputs) {
    for (const std::string& arg : args) {
      if (!arg.empty() && b.FindVar(arg) == nullptr) b.Var(arg);
    }
    op->SetOutput(slot, args);
  }
  if (set_attrs) set_attrs(*op);
  op->SetAttr<int>("op_role", op_role);
  PAREX_RETURN_IF_ERROR(FillDefaultAttrs(op));
  // Slots and attribute types first: shape inference assumes them.
  PAREX_RETURN_IF_ERROR(ValidateOp(*op, b));
  PAREX_RETURN_IF_ERROR(InferShapeAtCompileTime(*op, b, /*write_back=*/true));
  return op;
}

}  // namespace parex
