// OpTester: runs one op on CPU through the real path (a Program with the op,
// validation, shape inference, the registered kernel) and checks its gradient
// op against central finite differences.
//
// Variables are named after slots: input slot "X" argument i is "X_i", output
// slot "Out" argument i is "Out_i"; gradients add "@GRAD".
//
// Gradient check: with random weights W for the checked outputs, the scalar
// L = sum(W * Out). The gradient op named by the schema's Grad(...) spec gets
// Out@GRAD = W and must produce dL/dX for every checked input slot X, which
// is compared element by element with (L(x+eps) - L(x-eps)) / 2eps.
#pragma once

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/device_context.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex::testing {

class OpTester {
 public:
  explicit OpTester(std::string type);

  OpTester& Input(const std::string& slot, Tensor value);
  OpTester& Inputs(const std::string& slot, std::vector<Tensor> values);
  OpTester& Output(const std::string& slot, int count = 1);
  template <typename T>
  OpTester& Attr(const std::string& name, const T& value) {
    attrs_.push_back(
        [name, value](OpDesc* op) { op->SetAttr<T>(name, value); });
    return *this;
  }

  // Builds the program (once), validates it and runs the forward op.
  Status Run();
  // REQUIRES: Run() succeeded.
  const Tensor& Out(const std::string& slot, int i = 0) const;
  Scope& scope() { return scope_; }
  Program& program() { return program_; }

  // Checks the gradient op's outputs for `wrt` input slots against finite
  // differences of L = sum(W * outputs of `of` slots). Returns a failure
  // message per bad element group (empty: all good).
  struct GradCheckOptions {
    double eps = 1e-6;
    double atol = 1e-6;
    double rtol = 1e-5;
    uint32_t seed = 7;
  };
  std::vector<std::string> CheckGrad(const std::vector<std::string>& wrt,
                                     const std::vector<std::string>& of,
                                     GradCheckOptions options);
  std::vector<std::string> CheckGrad(const std::vector<std::string>& wrt,
                                     const std::vector<std::string>& of) {
    return CheckGrad(wrt, of, GradCheckOptions());
  }

 private:
  Status Build();
  Status BuildGradOp(const std::vector<std::string>& of);
  // Forward run and L for the current input values.
  StatusOr<double> Loss(const std::vector<std::string>& of);

  std::string type_;
  std::vector<std::pair<std::string, std::vector<Tensor>>> inputs_;
  std::vector<std::pair<std::string, int>> outputs_;
  std::vector<std::function<void(OpDesc*)>> attrs_;
  Program program_;
  OpDesc* forward_ = nullptr;
  OpDesc* grad_ = nullptr;
  Scope scope_;
  CpuDeviceContext device_;
  std::map<std::string, Tensor> weights_;  // output var -> W
};

// Random tensors for tests, fp64 unless said.
Tensor RandomTensor(const Dims& dims, double lo, double hi, uint32_t seed,
                    DType dtype = DType::kFP64);
// Values in [lo,hi] at least `gap` apart from each other (for max/relu kinks).
Tensor DistinctRandomTensor(const Dims& dims, double lo, double hi,
                            uint32_t seed);
Tensor RandomIntTensor(const Dims& dims, int64_t lo, int64_t hi, uint32_t seed,
                       DType dtype = DType::kInt64);

// out[i] = f(x[.], y[.]), the elements found by decomposing i into a
// multi-index: at axis -1 (or for equal dims) numpy's rule (dims right-aligned,
// extents of 1 repeat, Out the larger extents), else Fluid's (Y's dims from
// `axis` inside X's, Out X's dims). A reference written independently of
// graph/ir/spec/broadcast_spec.* and kernels/cpu/broadcast.h; it assumes the
// shapes broadcast. fp64 tensors.
Tensor NaiveElementwise(const Tensor& x, const Tensor& y, int axis,
                        const std::function<double(double, double)>& f);

// Expects a CPU kernel of `type` for each of `dtypes` in the global registry.
void ExpectCpuKernels(const std::string& type,
                      const std::vector<DType>& dtypes);

// A group's kernel table: ExpectCpuKernels for each (op type, dtypes) row.
struct KernelTableRow {
  const char* type;
  std::vector<DType> dtypes;
};
void ExpectCpuKernelTable(const std::vector<KernelTableRow>& table);
// The dtype lists most rows name.
inline const std::vector<DType> kFloats = {DType::kFP32, DType::kFP64};
inline const std::vector<DType> kNumbers = {DType::kFP32, DType::kFP64,
                                            DType::kInt32, DType::kInt64};

// Element-wise comparison; returns "" or a message naming the first mismatch.
std::string CompareTensors(const Tensor& actual, const Tensor& expected,
                           double atol, double rtol);

}  // namespace parex::testing
