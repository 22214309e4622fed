// KernelPair: one op run twice on the same inputs, with the kernels of two
// device contexts (the CPU kernel on cpu:0 and the CUDA kernel on cuda:0),
// every output copied back to the host and compared element by element.
// Inputs are host tensors; each run gets its own copies on its context's
// place. An output may name an input's variable (ParamOut is Param), so
// in-place updates are compared too. The harness itself is tested with two
// CPU contexts, so on a GPU machine only the CUDA kernels are new.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/program.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex::cuda_test {

// A host tensor of `dims` with uniform values in [lo, hi) (fp32 values are
// fp32-representable, as the device sees them).
template <typename T>
Tensor RandomHost(const Dims& dims, double lo, double hi, uint32_t seed) {
  Tensor t(DTypeOf<T>(), dims);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<T>()[i] = static_cast<T>(dist(gen));
  }
  return t;
}

// Integer labels in [0, classes), with every `ignore_every`-th one (when
// > 0) replaced by `ignore`.
template <typename I>
Tensor RandomLabels(const Dims& dims, int64_t classes, uint32_t seed,
                    int ignore_every = 0, int64_t ignore = -100) {
  Tensor t(DTypeOf<I>(), dims);
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const bool ignored = ignore_every > 0 && i % ignore_every == 0;
    t.data<I>()[i] = static_cast<I>(ignored ? ignore : gen() % classes);
  }
  return t;
}

class KernelPair {
 public:
  explicit KernelPair(const std::string& type)
      : op_(program_.global_block().AppendOp(type)) {}

  // Input slot `slot`: variables "slot_0", "slot_1", ... holding `tensors`.
  KernelPair& Input(const std::string& slot, std::vector<Tensor> tensors) {
    std::vector<std::string> names;
    for (size_t i = 0; i < tensors.size(); ++i) {
      names.push_back(slot + "_" + std::to_string(i));
      program_.global_block().Var(names.back())->SetDType(tensors[i].dtype());
      inputs_[names.back()] = std::move(tensors[i]);
    }
    op_->SetInput(slot, names);
    return *this;
  }
  KernelPair& Input(const std::string& slot, Tensor tensor) {
    std::vector<Tensor> one;
    one.push_back(std::move(tensor));
    return Input(slot, std::move(one));
  }
  // Output slot `slot` into variable `var` (default: the slot's name; an
  // input's variable for an in-place update).
  KernelPair& Output(const std::string& slot, std::string var = "") {
    if (var.empty()) var = slot;
    op_->SetOutput(slot, {var});
    outputs_.push_back(var);
    return *this;
  }
  template <typename A>
  KernelPair& Attr(const std::string& name, const A& value) {
    op_->SetAttr<A>(name, value);
    return *this;
  }

  // Runs the op on `context`; the outputs' host copies by variable name.
  StatusOr<std::map<std::string, Tensor>> Run(DeviceContext* context) const {
    Scope scope;
    for (const auto& [name, host] : inputs_) {
      Tensor placed(host.dtype(), host.dims(), context->place());
      PAREX_RETURN_IF_ERROR(context->CopyFromHost(
          placed.raw_data(), host.raw_data(), host.bytes()));
      *scope.Var(name)->GetMutableTensor() = std::move(placed);
    }
    PAREX_RETURN_IF_ERROR(context->Synchronize());
    PAREX_RETURN_IF_ERROR(RunOp(*op_, &scope, context));
    std::map<std::string, Tensor> result;
    for (const std::string& name : outputs_) {
      const Variable* var = scope.FindVar(name);
      const Tensor* t = var ? var->GetTensor() : nullptr;
      if (t == nullptr || !t->defined()) {
        return Internal("output variable '" + name + "' holds no tensor");
      }
      Tensor host(t->dtype(), t->dims());
      PAREX_RETURN_IF_ERROR(
          context->CopyToHost(host.raw_data(), t->raw_data(), t->bytes()));
      result[name] = std::move(host);
    }
    PAREX_RETURN_IF_ERROR(context->Synchronize());
    return result;
  }

  // Runs on both contexts and expects every output to agree: same dims and
  // dtype, |a - b| <= abs_tol + rel_tol * max(|a|, |b|) (NaN only where both
  // are NaN).
  void ExpectSame(DeviceContext* reference, DeviceContext* tested,
                  double rel_tol, double abs_tol) const {
    StatusOr<std::map<std::string, Tensor>> want = Run(reference);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    StatusOr<std::map<std::string, Tensor>> got = Run(tested);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (const std::string& name : outputs_) {
      SCOPED_TRACE(op_->type() + " output " + name);
      EXPECT_TRUE(Near(want->at(name), got->at(name), rel_tol, abs_tol));
    }
  }

  // Same dims and dtype, and every element within the tolerance (the first
  // five mismatches named).
  static ::testing::AssertionResult Near(const Tensor& a, const Tensor& b,
                                         double rel_tol, double abs_tol) {
    if (a.dims() != b.dims() || a.dtype() != b.dtype()) {
      return ::testing::AssertionFailure()
             << a.DebugString() << " vs " << b.DebugString();
    }
    int bad = 0;
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    for (int64_t i = 0; i < a.numel() && bad < 5; ++i) {
      const double x = ValueAt(a, i), y = ValueAt(b, i);
      const bool ok =
          (std::isnan(x) && std::isnan(y)) ||
          std::abs(x - y) <=
              abs_tol + rel_tol * std::max(std::abs(x), std::abs(y));
      if (!ok) {
        if (bad++ == 0) result = ::testing::AssertionFailure();
        result << "element " << i << ": " << x << " vs " << y << "; ";
      }
    }
    return result;
  }

  size_t num_outputs() const { return outputs_.size(); }

 private:
  static double ValueAt(const Tensor& t, int64_t i) {
    switch (t.dtype()) {
      case DType::kFP32:
        return t.data<float>()[i];
      case DType::kFP64:
        return t.data<double>()[i];
      case DType::kInt64:
        return static_cast<double>(t.data<int64_t>()[i]);
      case DType::kInt32:
        return t.data<int32_t>()[i];
      case DType::kUInt8:
        return t.data<uint8_t>()[i];
      default:
        ADD_FAILURE() << "dtype " << DTypeName(t.dtype()) << " not compared";
        return 0;
    }
  }

  Program program_;
  OpDesc* op_;
  std::map<std::string, Tensor> inputs_;
  std::vector<std::string> outputs_;
};

}  // namespace parex::cuda_test
