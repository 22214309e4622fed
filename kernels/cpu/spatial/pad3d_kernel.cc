// pad3d and pad3d_grad on CPU (NCDHW, fp32 and fp64). Each output position
// of each spatial dim reads one input position (or none: constant mode's
// padding), by the mode's rule (graph/ir/ops/pad_ops.cc); those maps are
// planned once per shape into the op's state, so a step does not allocate.
// The gradient adds every Out@GRAD element into the X@GRAD element its
// output read.
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// X [N,C,D,H,W]; Out / Out@GRAD with the padded dims; paddings and mode
// valid (reflect paddings below the extents).
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ir/spec/window_spec.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/runtime_shape_context.h"

namespace parex {
namespace {

struct Pad3dPlan : KernelState {
  int64_t volumes = 0;  // N * C
  int64_t in[3] = {}, out[3] = {};
  std::vector<int64_t> source[3];  // per dim (d, h, w): input index or -1

  // The paddings come from the attribute or the Paddings tensor, as the
  // shape rule read them (window_spec.h).
  Status Compute(const KernelContext& ctx, const Dims& x) {
    PAREX_ASSIGN_OR_RETURN(const std::vector<int> p,
                           Pad3dPaddings(RuntimeShapeContext(ctx)));
    const std::string mode = ctx.Attr<std::string>("mode");
    volumes = x[0] * x[1];
    for (int d = 0; d < 3; ++d) {
      const int64_t n = x[2 + d];
      const int before = p[2 * (2 - d)];  // {left, right, top, ...}: w first
      const int after = p[2 * (2 - d) + 1];
      in[d] = n;
      out[d] = n + before + after;
      source[d].resize(out[d]);
      for (int64_t o = 0; o < out[d]; ++o) {
        int64_t i = o - before;
        if (i < 0 || i >= n) {
          if (mode == "constant") {
            i = -1;
          } else if (mode == "reflect") {
            i = i < 0 ? -i : 2 * (n - 1) - i;
          } else if (mode == "replicate") {
            i = std::clamp<int64_t>(i, 0, n - 1);
          } else {  // circular
            i = ((i % n) + n) % n;
          }
        }
        source[d][o] = i;
      }
    }
    return Status::Ok();
  }
};

template <typename T>
Status Pad3dKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor& x = *ctx.Input("X");
  Pad3dPlan& plan = *ctx.State<Pad3dPlan>();
  if (x.numel() == 0) return Status::Ok();  // nothing to plan or read
  PAREX_RETURN_IF_ERROR(plan.Compute(ctx, x.dims()));
  const T value = static_cast<T>(ctx.Attr<float>("value"));
  const int64_t in_volume = plan.in[0] * plan.in[1] * plan.in[2];
  const int64_t out_volume = plan.out[0] * plan.out[1] * plan.out[2];
  for (int64_t v = 0; v < plan.volumes; ++v) {
    const T* in = x.data<T>() + v * in_volume;
    T* out = ctx.Output("Out")->data<T>() + v * out_volume;
    for (int64_t a = 0; a < plan.out[0]; ++a) {
      const int64_t z = plan.source[0][a];
      for (int64_t b = 0; b < plan.out[1]; ++b) {
        const int64_t y = plan.source[1][b];
        T* row = out + (a * plan.out[1] + b) * plan.out[2];
        if (z < 0 || y < 0) {
          std::fill_n(row, plan.out[2], value);
          continue;
        }
        const T* src = in + (z * plan.in[1] + y) * plan.in[2];
        for (int64_t e = 0; e < plan.out[2]; ++e) {
          const int64_t i = plan.source[2][e];
          row[e] = i < 0 ? value : src[i];
        }
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status Pad3dGradKernel(KernelContext& ctx) {
  Tensor* dx_t = ctx.Output("X@GRAD");
  if (dx_t == nullptr) return Status::Ok();
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  Pad3dPlan& plan = *ctx.State<Pad3dPlan>();
  std::fill_n(dx_t->data<T>(), dx_t->numel(), T(0));
  if (dx_t->numel() == 0) return Status::Ok();
  PAREX_RETURN_IF_ERROR(plan.Compute(ctx, dx_t->dims()));
  const int64_t in_volume = plan.in[0] * plan.in[1] * plan.in[2];
  const int64_t out_volume = plan.out[0] * plan.out[1] * plan.out[2];
  for (int64_t v = 0; v < plan.volumes; ++v) {
    const T* dout = ctx.Input("Out@GRAD")->data<T>() + v * out_volume;
    T* dx = dx_t->data<T>() + v * in_volume;
    for (int64_t a = 0; a < plan.out[0]; ++a) {
      const int64_t z = plan.source[0][a];
      for (int64_t b = 0; b < plan.out[1]; ++b) {
        const int64_t y = plan.source[1][b];
        if (z < 0 || y < 0) continue;
        const T* row = dout + (a * plan.out[1] + b) * plan.out[2];
        T* dst = dx + (z * plan.in[1] + y) * plan.in[2];
        for (int64_t e = 0; e < plan.out[2]; ++e) {
          const int64_t i = plan.source[2][e];
          if (i >= 0) dst[i] += row[e];
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterPad3dKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "pad3d", Pad3dKernel, float, double);
  PAREX_CPU_KERNEL(r, "pad3d_grad", Pad3dGradKernel, float, double);
}

}  // namespace parex
