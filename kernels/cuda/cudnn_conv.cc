#include "kernels/cuda/cudnn_conv.h"

#include <algorithm>
#include <climits>

#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_status.h"

namespace parex {
namespace {

// The algorithms whose result is a plain sum of products (no transform), so
// they agree with the CPU kernels to rounding.
bool Exact(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
bool Exact(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
bool Exact(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

// The math type to run a heuristic result with: never tensor cores (fp32
// stays fp32, no TF32: CUDNN_FMA_MATH whatever the result says), else the
// result's own; false for results that need tensor cores.
bool PlainMath(cudnnMathType_t suggested, bool is_double,
               cudnnMathType_t* math) {
  if (suggested == CUDNN_TENSOR_OP_MATH ||
      suggested == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
    return false;
  }
  *math = is_double ? suggested : CUDNN_FMA_MATH;
  return true;
}

const void* One(bool is_double) {
  static const float kFloat = 1.0f;
  static const double kDouble = 1.0;
  return is_double ? static_cast<const void*>(&kDouble) : &kFloat;
}
const void* Zero(bool is_double) {
  static const float kFloat = 0.0f;
  static const double kDouble = 0.0;
  return is_double ? static_cast<const void*>(&kDouble) : &kFloat;
}

}  // namespace

// One direction's choice: algorithm, math type and workspace bytes.
template <typename Algo>
struct Choice {
  bool made = false;
  Algo algo{};
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t bytes = 0;
};

struct CudnnConv::Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Choice<cudnnConvolutionFwdAlgo_t> forward;
  Choice<cudnnConvolutionBwdDataAlgo_t> backward_data;
  Choice<cudnnConvolutionBwdFilterAlgo_t> backward_filter;

  ~Plan() {
    if (x != nullptr) (void)cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) (void)cudnnDestroyTensorDescriptor(y);
    if (w != nullptr) (void)cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) (void)cudnnDestroyConvolutionDescriptor(conv);
  }
};

namespace {

// The first of cuDNN's heuristic results (best first) that cuDNN supports
// for the shape, is exact, runs without tensor cores and has a workspace
// size cuDNN can name with that math: deterministic ones first, then any.
template <typename Perf, typename Algo, typename SizeOf>
Status Choose(const std::vector<Perf>& perf, bool is_double, SizeOf size_of,
              const CudnnConvShape& shape, const char* direction,
              Choice<Algo>* choice) {
  for (bool deterministic_only : {true, false}) {
    for (const Perf& p : perf) {
      cudnnMathType_t math = CUDNN_FMA_MATH;
      if (p.status != CUDNN_STATUS_SUCCESS || !Exact(p.algo) ||
          !PlainMath(p.mathType, is_double, &math) ||
          (deterministic_only && p.determinism != CUDNN_DETERMINISTIC)) {
        continue;
      }
      size_t bytes = 0;
      if (size_of(p.algo, math, &bytes) != CUDNN_STATUS_SUCCESS) continue;
      choice->algo = p.algo;
      choice->math = math;
      choice->bytes = bytes;
      choice->made = true;
      return Status::Ok();
    }
  }
  return Unimplemented(std::string("cuDNN offers no exact ") + direction +
                       " algorithm (GEMM-like, FMA math) for " +
                       shape.ToString());
}

}  // namespace

std::vector<int64_t> CudnnConvShape::Key() const {
  return {is_double, n,        c,        h,          w,         m,
          kh,        kw,       groups,   oh,         ow,        pad_h,
          pad_w,     stride_h, stride_w, dilation_h, dilation_w};
}

std::string CudnnConvShape::ToString() const {
  auto s = [](int64_t v) { return std::to_string(v); };
  return std::string(is_double ? "fp64" : "fp32") + " input [" + s(n) + "," +
         s(c) + "," + s(h) + "," + s(w) + "] filter [" + s(m) + "," +
         s(groups > 0 ? c / groups : 0) + "," + s(kh) + "," + s(kw) +
         "] output [" + s(n) + "," + s(m) + "," + s(oh) + "," + s(ow) +
         "] groups " + s(groups) + " pads " + s(pad_h) + "," + s(pad_w) +
         " strides " + s(stride_h) + "," + s(stride_w) + " dilations " +
         s(dilation_h) + "," + s(dilation_w);
}

CudnnConv::CudnnConv() = default;
CudnnConv::~CudnnConv() = default;

StatusOr<CudnnConv::Plan*> CudnnConv::PlanFor(const CudnnConvShape& s) {
  auto found = plans_.find(s.Key());
  if (found != plans_.end()) return found->second.get();
  // cuDNN's legacy descriptors hold int extents and strides.
  for (int64_t extent : {s.n * s.c * s.h * s.w, s.n * s.m * s.oh * s.ow,
                         s.m * s.c * s.kh * s.kw}) {
    if (extent > INT_MAX) {
      return Unimplemented("a convolution with " + std::to_string(extent) +
                           " elements in one tensor exceeds cuDNN's 32-bit "
                           "descriptors: " +
                           s.ToString());
    }
  }
  auto plan = std::make_unique<Plan>();
  const cudnnDataType_t type =
      s.is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  auto i = [](int64_t v) { return static_cast<int>(v); };
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&plan->x));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&plan->y));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&plan->w));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&plan->conv));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(
      plan->x, CUDNN_TENSOR_NCHW, type, i(s.n), i(s.c), i(s.h), i(s.w)));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(
      plan->y, CUDNN_TENSOR_NCHW, type, i(s.n), i(s.m), i(s.oh), i(s.ow)));
  PAREX_CUDNN_RETURN_IF_ERROR(
      cudnnSetFilter4dDescriptor(plan->w, type, CUDNN_TENSOR_NCHW, i(s.m),
                                 i(s.c / s.groups), i(s.kh), i(s.kw)));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(
      plan->conv, i(s.pad_h), i(s.pad_w), i(s.stride_h), i(s.stride_w),
      i(s.dilation_h), i(s.dilation_w), CUDNN_CROSS_CORRELATION, type));
  PAREX_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolutionGroupCount(plan->conv, i(s.groups)));
  PAREX_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolutionMathType(plan->conv, CUDNN_FMA_MATH));
  // The op's inferred output must be cuDNN's.
  int dims[4] = {0, 0, 0, 0};
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnGetConvolution2dForwardOutputDim(
      plan->conv, plan->x, plan->w, &dims[0], &dims[1], &dims[2], &dims[3]));
  if (dims[0] != s.n || dims[1] != s.m || dims[2] != s.oh || dims[3] != s.ow) {
    return Internal("cuDNN computes output [" + std::to_string(dims[0]) + "," +
                    std::to_string(dims[1]) + "," + std::to_string(dims[2]) +
                    "," + std::to_string(dims[3]) + "] for " + s.ToString());
  }
  Plan* raw = plan.get();
  plans_[s.Key()] = std::move(plan);
  return raw;
}

StatusOr<void*> CudnnConv::Workspace(const Place& place, size_t bytes) {
  return KeptDeviceBuffer(&workspace_, place, bytes);
}

StatusOr<void*> CudnnConv::PaddedBuffer(const Place& place, size_t bytes) {
  return KeptDeviceBuffer(&padded_, place, bytes);
}

StatusOr<void*> CudnnConv::GemmScratch(const Place& place, size_t bytes) {
  return KeptDeviceBuffer(&gemm_scratch_, place, bytes);
}

Status CudnnConv::Forward(CudaDeviceContext* cuda, const CudnnConvShape& s,
                          const void* x, const void* w, void* y) {
  PAREX_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda->cudnn());
  PAREX_ASSIGN_OR_RETURN(Plan * plan, PlanFor(s));
  auto& choice = plan->forward;
  if (!choice.made) {
    int count = 0;
    PAREX_CUDNN_RETURN_IF_ERROR(
        cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(count, 1));
    int returned = 0;
    PAREX_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(
        handle, plan->x, plan->w, plan->conv, plan->y,
        static_cast<int>(perf.size()), &returned, perf.data()));
    perf.resize(returned);
    auto size_of = [&](cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math,
                       size_t* bytes) {
      cudnnStatus_t st = cudnnSetConvolutionMathType(plan->conv, math);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      return cudnnGetConvolutionForwardWorkspaceSize(
          handle, plan->x, plan->w, plan->conv, plan->y, algo, bytes);
    };
    PAREX_RETURN_IF_ERROR(
        Choose(perf, s.is_double, size_of, s, "forward", &choice));
  }
  PAREX_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolutionMathType(plan->conv, choice.math));
  PAREX_ASSIGN_OR_RETURN(void* workspace,
                         Workspace(cuda->place(), choice.bytes));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(
      handle, One(s.is_double), plan->x, x, plan->w, w, plan->conv, choice.algo,
      workspace, choice.bytes, Zero(s.is_double), plan->y, y));
  return Status::Ok();
}

Status CudnnConv::BackwardData(CudaDeviceContext* cuda, const CudnnConvShape& s,
                               const void* w, const void* dy, void* dx) {
  PAREX_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda->cudnn());
  PAREX_ASSIGN_OR_RETURN(Plan * plan, PlanFor(s));
  auto& choice = plan->backward_data;
  if (!choice.made) {
    int count = 0;
    PAREX_CUDNN_RETURN_IF_ERROR(
        cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::max(count, 1));
    int returned = 0;
    PAREX_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle, plan->w, plan->y, plan->conv, plan->x,
        static_cast<int>(perf.size()), &returned, perf.data()));
    perf.resize(returned);
    auto size_of = [&](cudnnConvolutionBwdDataAlgo_t algo, cudnnMathType_t math,
                       size_t* bytes) {
      cudnnStatus_t st = cudnnSetConvolutionMathType(plan->conv, math);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      return cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, plan->w, plan->y, plan->conv, plan->x, algo, bytes);
    };
    PAREX_RETURN_IF_ERROR(
        Choose(perf, s.is_double, size_of, s, "backward-data", &choice));
  }
  PAREX_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolutionMathType(plan->conv, choice.math));
  PAREX_ASSIGN_OR_RETURN(void* workspace,
                         Workspace(cuda->place(), choice.bytes));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardData(
      handle, One(s.is_double), plan->w, w, plan->y, dy, plan->conv,
      choice.algo, workspace, choice.bytes, Zero(s.is_double), plan->x, dx));
  return Status::Ok();
}

Status CudnnConv::BackwardFilter(CudaDeviceContext* cuda,
                                 const CudnnConvShape& s, const void* x,
                                 const void* dy, void* dw) {
  PAREX_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda->cudnn());
  PAREX_ASSIGN_OR_RETURN(Plan * plan, PlanFor(s));
  auto& choice = plan->backward_filter;
  if (!choice.made) {
    int count = 0;
    PAREX_CUDNN_RETURN_IF_ERROR(
        cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(std::max(count, 1));
    int returned = 0;
    PAREX_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle, plan->x, plan->y, plan->conv, plan->w,
        static_cast<int>(perf.size()), &returned, perf.data()));
    perf.resize(returned);
    auto size_of = [&](cudnnConvolutionBwdFilterAlgo_t algo,
                       cudnnMathType_t math, size_t* bytes) {
      cudnnStatus_t st = cudnnSetConvolutionMathType(plan->conv, math);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, plan->x, plan->y, plan->conv, plan->w, algo, bytes);
    };
    PAREX_RETURN_IF_ERROR(
        Choose(perf, s.is_double, size_of, s, "backward-filter", &choice));
  }
  PAREX_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolutionMathType(plan->conv, choice.math));
  PAREX_ASSIGN_OR_RETURN(void* workspace,
                         Workspace(cuda->place(), choice.bytes));
  PAREX_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(
      handle, One(s.is_double), plan->x, x, plan->y, dy, plan->conv,
      choice.algo, workspace, choice.bytes, Zero(s.is_double), plan->w, dw));
  return Status::Ok();
}

}  // namespace parex
