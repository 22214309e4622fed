#include "tests/kernels/op_tester.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_runner.h"

namespace parex::testing {
namespace {

std::string VarName(const std::string& slot, int i) {
  return slot + "_" + std::to_string(i);
}

double ElementAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFP32:
      return t.data<float>()[i];
    case DType::kFP64:
      return t.data<double>()[i];
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kBool:
      return t.data<bool>()[i];
    case DType::kUInt8:
      return t.data<uint8_t>()[i];
    default:
      PAREX_CHECK(false, "ElementAsDouble: unsupported dtype");
      return 0;
  }
}

void SetElement(Tensor* t, int64_t i, double v) {
  switch (t->dtype()) {
    case DType::kFP32:
      t->data<float>()[i] = static_cast<float>(v);
      break;
    case DType::kFP64:
      t->data<double>()[i] = v;
      break;
    default:
      PAREX_CHECK(false, "SetElement: unsupported dtype");
  }
}

}  // namespace

OpTester::OpTester(std::string type) : type_(std::move(type)) {}

OpTester& OpTester::Input(const std::string& slot, Tensor value) {
  return Inputs(slot, {std::move(value)});
}

OpTester& OpTester::Inputs(const std::string& slot,
                           std::vector<Tensor> values) {
  inputs_.emplace_back(slot, std::move(values));
  return *this;
}

OpTester& OpTester::Output(const std::string& slot, int count) {
  outputs_.emplace_back(slot, count);
  return *this;
}

Status OpTester::Build() {
  if (forward_ != nullptr) return Status::Ok();
  Block& block = program_.global_block();
  forward_ = block.AppendOp(type_);
  for (auto& [slot, values] : inputs_) {
    std::vector<std::string> names;
    for (size_t i = 0; i < values.size(); ++i) {
      std::string name = VarName(slot, static_cast<int>(i));
      VarDesc* var = block.Var(name);
      var->SetDType(values[i].dtype());
      var->SetDims(values[i].dims());
      *scope_.Var(name)->GetMutableTensor() = values[i];
      names.push_back(name);
    }
    forward_->SetInput(slot, names);
  }
  for (auto& [slot, count] : outputs_) {
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
      names.push_back(VarName(slot, i));
      block.Var(names.back());
    }
    forward_->SetOutput(slot, names);
  }
  for (auto& set : attrs_) set(forward_);
  // Declared output shapes come from compile-time inference.
  PAREX_RETURN_IF_ERROR(InferShapeAtCompileTime(*forward_, block, true));
  return ValidateProgram(program_);
}

Status OpTester::Run() {
  PAREX_RETURN_IF_ERROR(Build());
  return RunOp(*forward_, &scope_, &device_);
}

const Tensor& OpTester::Out(const std::string& slot, int i) const {
  const Variable* v = scope_.FindVar(VarName(slot, i));
  PAREX_CHECK(v != nullptr && v->GetTensor() != nullptr,
              "OpTester::Out: no output " + slot);
  return *v->GetTensor();
}

Status OpTester::BuildGradOp(const std::vector<std::string>& of) {
  if (grad_ != nullptr) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(const OpSchema* schema,
                         OpSchemaRegistry::Global().Get(type_));
  if (!schema->has_grad()) {
    return InvalidArgument("op '" + type_ + "' declares no gradient op");
  }
  Block& block = program_.global_block();
  grad_ = block.AppendOp(schema->grad_type());
  for (const std::string& entry : schema->grad_inputs()) {
    std::string_view e = entry;
    bool is_grad = e.size() > kGradSuffix.size() &&
                   e.substr(e.size() - kGradSuffix.size()) == kGradSuffix;
    if (is_grad) {
      std::string base(e.substr(0, e.size() - kGradSuffix.size()));
      std::vector<std::string> names;
      for (const std::string& out : forward_->Output(base)) {
        std::string g = GradVarName(out);
        names.push_back(g);
        const Tensor& value = *scope_.FindVar(out)->GetTensor();
        VarDesc* var = block.Var(g);
        var->SetDType(value.dtype());
        var->SetDims(value.dims());
        Tensor w = std::find(of.begin(), of.end(), base) != of.end()
                       ? weights_.at(out)
                       : RandomTensor(value.dims(), 0, 0, 0, value.dtype());
        *scope_.Var(g)->GetMutableTensor() = w;
      }
      grad_->SetInput(entry, names);
    } else if (forward_->HasInput(entry) || !forward_->Input(entry).empty()) {
      grad_->SetInput(entry, forward_->Input(entry));
    } else {
      grad_->SetInput(entry, forward_->Output(entry));
    }
  }
  for (const std::string& entry : schema->grad_outputs()) {
    std::string base = entry.substr(0, entry.size() - kGradSuffix.size());
    std::vector<std::string> names;
    for (const std::string& in : forward_->Input(base)) {
      names.push_back(GradVarName(in));
      block.Var(names.back());
    }
    grad_->SetOutput(entry, names);
  }
  for (const auto& attr : forward_->proto().attrs()) {
    *grad_->mutable_proto()->add_attrs() = attr;
  }
  PAREX_RETURN_IF_ERROR(InferShapeAtCompileTime(*grad_, block, true));
  return ValidateOp(*grad_, block);
}

StatusOr<double> OpTester::Loss(const std::vector<std::string>& of) {
  PAREX_RETURN_IF_ERROR(RunOp(*forward_, &scope_, &device_));
  double loss = 0;
  for (const std::string& slot : of) {
    for (const std::string& out : forward_->Output(slot)) {
      const Tensor& value = *scope_.FindVar(out)->GetTensor();
      const Tensor& w = weights_.at(out);
      for (int64_t i = 0; i < value.numel(); ++i) {
        loss += ElementAsDouble(value, i) * ElementAsDouble(w, i);
      }
    }
  }
  return loss;
}

std::vector<std::string> OpTester::CheckGrad(
    const std::vector<std::string>& wrt, const std::vector<std::string>& of,
    GradCheckOptions options) {
  std::vector<std::string> failures;
  auto fail = [&](const std::string& m) {
    failures.push_back(m);
    return failures;
  };
  Status status = Run();
  if (!status.ok()) return fail("forward: " + status.ToString());
  uint32_t seed = options.seed;
  for (const std::string& slot : of) {
    for (const std::string& out : forward_->Output(slot)) {
      const Tensor& value = *scope_.FindVar(out)->GetTensor();
      weights_[out] = RandomTensor(value.dims(), -1, 1, seed++, value.dtype());
    }
  }
  status = BuildGradOp(of);
  if (!status.ok()) return fail("grad op: " + status.ToString());
  status = RunOp(*grad_, &scope_, &device_);
  if (!status.ok()) return fail("grad run: " + status.ToString());

  for (const std::string& slot : wrt) {
    for (const std::string& in : forward_->Input(slot)) {
      const Variable* gv = scope_.FindVar(GradVarName(in));
      if (gv == nullptr || gv->GetTensor() == nullptr) {
        return fail("no gradient computed for " + in);
      }
      Tensor analytic = gv->GetTensor()->Clone();
      Tensor* x = scope_.FindVar(in)->GetMutableTensor();
      if (analytic.dims() != x->dims()) {
        return fail("gradient of " + in + " has dims " +
                    DimsToString(analytic.dims()) + ", input has " +
                    DimsToString(x->dims()));
      }
      for (int64_t i = 0; i < x->numel(); ++i) {
        double orig = ElementAsDouble(*x, i);
        SetElement(x, i, orig + options.eps);
        auto plus = Loss(of);
        SetElement(x, i, orig - options.eps);
        auto minus = Loss(of);
        SetElement(x, i, orig);
        if (!plus.ok() || !minus.ok()) return fail("forward during check");
        double numeric = (*plus - *minus) / (2 * options.eps);
        double got = ElementAsDouble(analytic, i);
        if (std::abs(got - numeric) >
            options.atol + options.rtol * std::abs(numeric)) {
          std::ostringstream m;
          m << type_ << ": d/d" << in << "[" << i << "] analytic " << got
            << " numeric " << numeric;
          failures.push_back(m.str());
          if (failures.size() > 5) return failures;
        }
      }
    }
  }
  // Leave the forward outputs as of the unperturbed inputs.
  (void)Loss(of);
  return failures;
}

Tensor RandomTensor(const Dims& dims, double lo, double hi, uint32_t seed,
                    DType dtype) {
  Tensor t(dtype, dims);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    SetElement(&t, i, lo == hi ? lo : dist(gen));
  }
  return t;
}

Tensor DistinctRandomTensor(const Dims& dims, double lo, double hi,
                            uint32_t seed) {
  Tensor t(DType::kFP64, dims);
  int64_t n = t.numel();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t i = 0; i < n; ++i) {
    t.data<double>()[i] = lo + (hi - lo) * (order[i] + 0.5) / n;
  }
  return t;
}

Tensor RandomIntTensor(const Dims& dims, int64_t lo, int64_t hi, uint32_t seed,
                       DType dtype) {
  Tensor t(dtype, dims);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = dist(gen);
    if (dtype == DType::kInt64) {
      t.data<int64_t>()[i] = v;
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
    }
  }
  return t;
}

namespace {

// Fluid's rule (explicit axis): the index of Y's element for X's element i.
int64_t NaiveYIndex(const Dims& x, const Dims& y, int axis, int64_t i) {
  std::vector<int64_t> index(x.size());
  for (int d = static_cast<int>(x.size()) - 1; d >= 0; --d) {
    index[d] = i % x[d];
    i /= x[d];
  }
  int64_t j = 0;
  for (size_t k = 0; k < y.size(); ++k) {
    const size_t d = axis + k;
    const int64_t c = (y[k] != 1 && d < x.size()) ? index[d] : 0;
    j = j * y[k] + c;
  }
  return j;
}

// numpy's rule (axis -1): the index into `a` (dims right-aligned with Out's)
// of Out's multi-index `index`; a dim of extent 1 repeats.
int64_t NaiveNumpyIndex(const Dims& a, const std::vector<int64_t>& index) {
  const size_t skip = index.size() - a.size();
  int64_t j = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    j = j * a[k] + (a[k] == 1 ? 0 : index[skip + k]);
  }
  return j;
}

}  // namespace

Tensor NaiveElementwise(const Tensor& x, const Tensor& y, int axis,
                        const std::function<double(double, double)>& f) {
  if (axis != -1 && x.dims() != y.dims()) {
    Tensor out(DType::kFP64, x.dims());
    for (int64_t i = 0; i < x.numel(); ++i) {
      out.data<double>()[i] =
          f(x.data<double>()[i],
            y.data<double>()[NaiveYIndex(x.dims(), y.dims(), axis, i)]);
    }
    return out;
  }
  const Dims& xd = x.dims();
  const Dims& yd = y.dims();
  const size_t rank = std::max(xd.size(), yd.size());
  Dims out_dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t a = d + xd.size() >= rank ? xd[d + xd.size() - rank] : 1;
    const int64_t b = d + yd.size() >= rank ? yd[d + yd.size() - rank] : 1;
    out_dims[d] = a == 1 ? b : a;
  }
  Tensor out(DType::kFP64, out_dims);
  std::vector<int64_t> index(rank);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rest = i;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      index[d] = rest % out_dims[d];
      rest /= out_dims[d];
    }
    out.data<double>()[i] = f(x.data<double>()[NaiveNumpyIndex(xd, index)],
                              y.data<double>()[NaiveNumpyIndex(yd, index)]);
  }
  return out;
}

void ExpectCpuKernels(const std::string& type,
                      const std::vector<DType>& dtypes) {
  for (DType dtype : dtypes) {
    EXPECT_TRUE(KernelRegistry::Global().Has({type, Place::Kind::kCPU, dtype}))
        << type << " " << DTypeName(dtype);
  }
}

std::string CompareTensors(const Tensor& actual, const Tensor& expected,
                           double atol, double rtol) {
  if (actual.dims() != expected.dims()) {
    return "dims " + DimsToString(actual.dims()) +
           " != " + DimsToString(expected.dims());
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = ElementAsDouble(actual, i);
    double e = ElementAsDouble(expected, i);
    if (!(std::abs(a - e) <= atol + rtol * std::abs(e))) {
      std::ostringstream m;
      m << "element " << i << ": " << a << " != expected " << e;
      return m.str();
    }
  }
  return "";
}

void ExpectCpuKernelTable(const std::vector<KernelTableRow>& table) {
  for (const KernelTableRow& row : table)
    ExpectCpuKernels(row.type, row.dtypes);
}

}  // namespace parex::testing
