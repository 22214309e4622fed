// conv2d_transpose and conv2d_transpose_grad on CPU (NCHW, fp32 and fp64),
// through the im2col machinery of conv2d read the other way round: with the
// window geometry of the conv2d whose input is this op's Output (extent
// `in` of cpu::WindowDim) and whose output is this op's Input (extent
// `out`), per image and group g
//   forward:      col = W_g^T * Input_g, col2im(col) -> Output_g;
//   Input@GRAD:   W_g * im2col(Output@GRAD_g);
//   Filter@GRAD:  Input_g * im2col(Output@GRAD_g)^T,
// W_g being rows [g * C/groups, (g+1) * C/groups) of Filter viewed as
// [C, (M/groups) * kh * kw].
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// Input [N,C,H,W], Filter [C,M/groups,kh,kw], Output / Output@GRAD
// [N,M,oh,ow] as inferred; no Bias.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/spatial/column_scratch.h"
#include "kernels/cpu/spatial/im2col.h"

namespace parex {
namespace {

using cpu::WindowDim;

struct TransposeShape {
  int64_t n, c, m, groups;
  int64_t c_per_group, m_per_group;
  WindowDim h, w;    // in: Output's extent, out: Input's
  int64_t col_rows;  // m_per_group * kh * kw
  int64_t col_cols;  // H * W of Input
};

TransposeShape GetTransposeShape(const KernelContext& ctx, const Dims& in,
                                 const Dims& filter, const Dims& out) {
  TransposeShape s;
  s.n = in[0];
  s.c = in[1];
  s.groups = ctx.Attr<int>("groups");
  s.m_per_group = filter[1];
  s.m = s.m_per_group * s.groups;
  s.c_per_group = s.c / s.groups;
  // Paddings resolve from the Input's extents (window_spec.h), so the
  // dims first hold those, then take Output's as the conv2d input.
  WindowDim dims[2];
  for (int i = 0; i < 2; ++i) {
    dims[i].in = in[2 + i];
    dims[i].size = filter[2 + i];
  }
  const auto dilations = ctx.Attr<std::vector<int>>("dilations");
  cpu::ResolveWindows(ctx.Attr<std::string>("padding_algorithm"),
                      ctx.Attr<std::vector<int>>("strides"), &dilations,
                      ctx.Attr<std::vector<int>>("paddings"), dims);
  for (int i = 0; i < 2; ++i) {
    dims[i].in = out[2 + i];
    dims[i].out = in[2 + i];
  }
  s.h = dims[0];
  s.w = dims[1];
  s.col_rows = s.m_per_group * s.h.size * s.w.size;
  s.col_cols = s.h.out * s.w.out;
  return s;
}

Status ScratchError(const KernelContext& ctx, const TransposeShape& s) {
  return ResourceExhausted(
      ctx.op().Label() + ": columns of " + std::to_string(s.col_rows) + " x " +
      std::to_string(s.col_cols) + " elements cannot be allocated on " +
      ctx.place().ToString());
}

template <typename T>
Status ConvTransposeKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Input", "Filter"}));
  const Tensor& input = *ctx.Input("Input");
  const Tensor& filter = *ctx.Input("Filter");
  Tensor* output = ctx.Output("Output");
  const TransposeShape s =
      GetTransposeShape(ctx, input.dims(), filter.dims(), output->dims());
  T* out = output->data<T>();
  std::fill_n(out, output->numel(), T(0));
  if (s.col_rows == 0 || s.col_cols == 0 || s.c_per_group == 0) {
    return Status::Ok();
  }
  T* col = cpu::ColumnScratch<T>(s.col_rows, s.col_cols);
  if (col == nullptr) return ScratchError(ctx, s);
  const int64_t out_plane = s.h.in * s.w.in;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      cpu::Gemm<T>(true, false, s.col_rows, s.col_cols, s.c_per_group, T(1),
                   filter.data<T>() + g * s.c_per_group * s.col_rows,
                   s.col_rows,
                   input.data<T>() + (n * s.c + g * s.c_per_group) * s.col_cols,
                   s.col_cols, T(0), col, s.col_cols);
      cpu::Col2Im(col, s.m_per_group, s.h, s.w,
                  out + (n * s.m + g * s.m_per_group) * out_plane);
    }
  }
  return Status::Ok();
}

template <typename T>
Status ConvTransposeGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Input", "Filter", "Output@GRAD"}));
  const Tensor& input = *ctx.Input("Input");
  const Tensor& filter = *ctx.Input("Filter");
  const Tensor& dout = *ctx.Input("Output@GRAD");
  const TransposeShape s =
      GetTransposeShape(ctx, input.dims(), filter.dims(), dout.dims());
  Tensor* dinput = ctx.Output("Input@GRAD");
  Tensor* dfilter = ctx.Output("Filter@GRAD");
  if (dinput != nullptr) {
    std::fill_n(dinput->data<T>(), dinput->numel(), T(0));
  }
  if (dfilter != nullptr) {
    std::fill_n(dfilter->data<T>(), dfilter->numel(), T(0));
  }
  if ((dinput == nullptr && dfilter == nullptr) || s.col_rows == 0 ||
      s.col_cols == 0 || s.c_per_group == 0) {
    return Status::Ok();
  }
  T* col = cpu::ColumnScratch<T>(s.col_rows, s.col_cols);
  if (col == nullptr) return ScratchError(ctx, s);
  const int64_t out_plane = s.h.in * s.w.in;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      cpu::Im2Col(dout.data<T>() + (n * s.m + g * s.m_per_group) * out_plane,
                  s.m_per_group, s.h, s.w, col);
      const int64_t image = (n * s.c + g * s.c_per_group) * s.col_cols;
      const int64_t weights = g * s.c_per_group * s.col_rows;
      if (dinput != nullptr) {
        cpu::Gemm<T>(false, false, s.c_per_group, s.col_cols, s.col_rows, T(1),
                     filter.data<T>() + weights, s.col_rows, col, s.col_cols,
                     T(0), dinput->data<T>() + image, s.col_cols);
      }
      if (dfilter != nullptr) {
        cpu::Gemm<T>(false, true, s.c_per_group, s.col_rows, s.col_cols, T(1),
                     input.data<T>() + image, s.col_cols, col, s.col_cols, T(1),
                     dfilter->data<T>() + weights, s.col_rows);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterConvTransposeKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "conv2d_transpose", ConvTransposeKernel, float, double);
  PAREX_CPU_KERNEL(r, "conv2d_transpose_grad", ConvTransposeGradKernel, float,
                   double);
}

}  // namespace parex
