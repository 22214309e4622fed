// reshape2, transpose2, concat and split on CPU, with the gradient ops of the
// first three. Pure data movement, registered for float, double, int32,
// int64, uint8 and bool. Semantics: graph/ir/ops/shape_ops.cc.
//
// reshape2 copies X into Out rather than sharing its buffer: buffers are
// kept from step to step, so a shared one would let the next step's Out
// write into X.
//
// REQUIRES (ensured by the schemas' shape inference, which runs first): Out
// and the gradients have the inferred dims; XShape is [0] + X's dims.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "graph/ir/spec/slice_spec.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/runtime_shape_context.h"

namespace parex {
namespace {

template <typename T>
void Copy(const Tensor& from, Tensor* to) {
  const T* src = from.data<T>();
  T* dst = to->data<T>();
  if (src != dst && from.numel() > 0) {
    std::memmove(dst, src, from.numel() * sizeof(T));
  }
}

template <typename T>
Status Reshape2Kernel(KernelContext& ctx) {
  Copy<T>(*ctx.Input("X"), ctx.Output("Out"));
  return Status::Ok();  // XShape holds no elements
}

template <typename T>
Status Reshape2GradKernel(KernelContext& ctx) {
  Copy<T>(*ctx.Input("Out@GRAD"), ctx.Output("X@GRAD"));
  return Status::Ok();
}

// ---- slice ------------------------------------------------------------------

// Calls f(input offset, output offset) for every element of the slice, in
// output order.
template <typename F>
void ForEachSliced(const Dims& in, const SliceSpec& spec, F&& f) {
  const int rank = static_cast<int>(in.size());
  const int64_t total = Numel(spec.out);
  if (total <= 0) return;
  std::vector<int64_t> stride(rank, 1), index(rank, 0);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * in[d + 1];
  for (int64_t o = 0; o < total; ++o) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d)
      offset += (spec.begin[d] + index[d]) * stride[d];
    f(offset, o);
    for (int d = rank - 1; d >= 0; --d) {  // next output index, row-major
      if (++index[d] < spec.out[d]) break;
      index[d] = 0;
    }
  }
}

// The bounds as the shape rule read them (attributes or tensors).
StatusOr<SliceSpec> KernelSliceSpec(const KernelContext& ctx, const Dims& in) {
  return SliceSpecOf(RuntimeShapeContext(ctx), in);
}

template <typename T>
Status SliceKernel(KernelContext& ctx) {
  const Tensor& in = *ctx.Input("Input");
  PAREX_ASSIGN_OR_RETURN(SliceSpec spec, KernelSliceSpec(ctx, in.dims()));
  const T* src = in.data<T>();
  T* dst = ctx.Output("Out")->data<T>();
  ForEachSliced(in.dims(), spec,
                [&](int64_t i, int64_t o) { dst[o] = src[i]; });
  return Status::Ok();
}

template <typename T>
Status SliceGradKernel(KernelContext& ctx) {
  const Tensor& in = *ctx.Input("Input");
  PAREX_ASSIGN_OR_RETURN(SliceSpec spec, KernelSliceSpec(ctx, in.dims()));
  const T* dout = ctx.Input("Out@GRAD")->data<T>();
  Tensor* dx_t = ctx.Output("Input@GRAD");
  T* dx = dx_t->data<T>();
  std::fill(dx, dx + dx_t->numel(), T(0));
  ForEachSliced(in.dims(), spec,
                [&](int64_t i, int64_t o) { dx[i] = dout[o]; });
  return Status::Ok();
}

// ---- transpose2 -------------------------------------------------------------

constexpr int kMaxTransposeRank = 16;

// out[i_0, ..., i_r-1] = in[j] with j's index along dim axis[d] equal to i_d.
// The same permutation with each run of output dims whose input dims are
// neighbours in order merged into one dim: `dims` (in input order) and
// `axis` over them, `rank` of each.
struct MergedPermutation {
  int rank = 0;
  std::array<int64_t, kMaxTransposeRank> dims{};
  std::array<int, kMaxTransposeRank> axis{};
};

MergedPermutation MergeRuns(const Tensor& in, const std::vector<int>& axis) {
  std::array<int, kMaxTransposeRank> run_of{};  // input dim -> output run
  MergedPermutation m;
  for (int d = 0; d < in.rank(); ++d) {
    if (d == 0 || axis[d] != axis[d - 1] + 1) ++m.rank;
    run_of[axis[d]] = m.rank - 1;
  }
  std::array<int, kMaxTransposeRank> position{};  // output run -> merged dim
  int next = -1;
  for (int i = 0; i < in.rank(); ++i) {
    const bool starts = i == 0 || run_of[i] != run_of[i - 1];
    if (starts) position[run_of[i]] = ++next;
    m.dims[next] = (starts ? 1 : m.dims[next]) * in.dim(i);
  }
  for (int g = 0; g < m.rank; ++g) m.axis[g] = position[g];
  return m;
}

// Whether the merged permutation is [B, R, C] -> [B, C, R] (B = 1 for a
// plain 2-D transpose); its extents if so.
bool IsBatchedTranspose(const MergedPermutation& m, int64_t* batch,
                        int64_t* rows, int64_t* cols) {
  if (m.rank == 2 && m.axis[0] == 1 && m.axis[1] == 0) {
    *batch = 1;
    *rows = m.dims[0];
    *cols = m.dims[1];
    return true;
  }
  if (m.rank == 3 && m.axis[0] == 0 && m.axis[1] == 2 && m.axis[2] == 1) {
    *batch = m.dims[0];
    *rows = m.dims[1];
    *cols = m.dims[2];
    return true;
  }
  return false;
}

// A permutation that is a batch of 2-D transposes ([B, R, C] -> [B, C, R]:
// NCHW <-> NHWC is [N, C, H*W] <-> [N, H*W, C]), done in square tiles, so
// both sides are read and written along cache lines. False for any other
// permutation.
template <typename T>
bool BatchedTranspose(const MergedPermutation& m, const T* src, T* dst) {
  int64_t batch = 0, rows = 0, cols = 0;
  if (!IsBatchedTranspose(m, &batch, &rows, &cols)) return false;
  constexpr int64_t kTile = 16;
  for (int64_t b = 0; b < batch; ++b) {
    const T* from = src + b * rows * cols;
    T* to = dst + b * rows * cols;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t c = c0; c < c1; ++c) {
          for (int64_t r = r0; r < r1; ++r)
            to[c * rows + r] = from[r * cols + c];
        }
      }
    }
  }
  return true;
}

template <typename T>
Status Permute(const KernelContext& ctx, const Tensor& in,
               const std::vector<int>& axis, Tensor* out) {
  const int rank = in.rank();
  if (rank > kMaxTransposeRank) {
    return ctx.Error("transpose of rank " + std::to_string(rank) +
                     " exceeds the supported " +
                     std::to_string(kMaxTransposeRank));
  }
  const T* src = in.data<T>();
  T* dst = out->data<T>();
  const int64_t n = in.numel();
  if (n == 0) return Status::Ok();
  if (rank == 0) {
    dst[0] = src[0];
    return Status::Ok();
  }
  // Output dims whose input dims are neighbours in order move together:
  // merged into one dim, the walk below has fewer, longer levels (a channel
  // shuffle, [N, 2, C/2, H, W] by [0, 2, 1, 3, 4], copies H*W at a time).
  const MergedPermutation m = MergeRuns(in, axis);
  if (BatchedTranspose(m, src, dst)) return Status::Ok();
  const int merged = m.rank;
  std::array<int64_t, kMaxTransposeRank> in_stride{}, step{}, extent{}, index{};
  int64_t s = 1;
  for (int d = merged - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= m.dims[d];
  }
  for (int d = 0; d < merged; ++d) {
    step[d] = in_stride[m.axis[d]];  // input step of output dim d
    extent[d] = m.dims[m.axis[d]];
  }
  // Walk the output in order, moving the input offset along; the last
  // level is contiguous on both sides when the input's last dim stays last.
  const int last = merged - 1;
  const bool contiguous = step[last] == 1;
  int64_t offset = 0;
  for (int64_t i = 0; i < n; i += extent[last]) {
    if (contiguous) {
      std::memcpy(dst + i, src + offset, extent[last] * sizeof(T));
    } else {
      for (int64_t k = 0; k < extent[last]; ++k) {
        dst[i + k] = src[offset + k * step[last]];
      }
    }
    for (int d = last - 1; d >= 0; --d) {
      offset += step[d];
      if (++index[d] < extent[d]) break;
      offset -= step[d] * extent[d];
      index[d] = 0;
    }
  }
  return Status::Ok();
}

template <typename T>
Status Transpose2Kernel(KernelContext& ctx) {
  return Permute<T>(ctx, *ctx.Input("X"), ctx.Attr<std::vector<int>>("axis"),
                    ctx.Output("Out"));
}

template <typename T>
Status Transpose2GradKernel(KernelContext& ctx) {
  const std::vector<int> axis = ctx.Attr<std::vector<int>>("axis");
  std::vector<int> inverse(axis.size());
  for (size_t i = 0; i < axis.size(); ++i)
    inverse[axis[i]] = static_cast<int>(i);
  return Permute<T>(ctx, *ctx.Input("Out@GRAD"), inverse, ctx.Output("X@GRAD"));
}

// ---- concat / split ---------------------------------------------------------

// Tensors of rank r viewed as [outer, extent * inner] around `axis`.
int64_t Outer(const Dims& d, int axis) {
  int64_t n = 1;
  for (int i = 0; i < axis; ++i) n *= d[i];
  return n;
}

int64_t RowLength(const Dims& d, int axis) {
  int64_t n = 1;
  for (size_t i = axis; i < d.size(); ++i) n *= d[i];
  return n;
}

int NormalizedAxis(const KernelContext& ctx, int rank) {
  const int axis = ctx.Attr<int>("axis");
  return axis < 0 ? axis + rank : axis;
}

// Copies the pieces (nullptr: skipped, the space left as it is) to or from
// consecutive column blocks of `whole`.
template <typename T>
void Gather(const std::vector<const Tensor*>& pieces, int axis, Tensor* whole) {
  const int64_t outer = Outer(whole->dims(), axis);
  const int64_t row = RowLength(whole->dims(), axis);
  T* out = whole->data<T>();
  int64_t column = 0;
  for (const Tensor* p : pieces) {
    const int64_t len = RowLength(p->dims(), axis);
    const T* in = p->data<T>();
    for (int64_t o = 0; o < outer && len > 0; ++o) {
      std::memcpy(out + o * row + column, in + o * len, len * sizeof(T));
    }
    column += len;
  }
}

template <typename T>
void Scatter(const Tensor& whole, int axis, const std::vector<Tensor*>& pieces,
             const std::vector<Dims>& piece_dims) {
  const int64_t outer = Outer(whole.dims(), axis);
  const int64_t row = RowLength(whole.dims(), axis);
  const T* in = whole.data<T>();
  int64_t column = 0;
  for (size_t i = 0; i < piece_dims.size(); ++i) {
    const int64_t len = RowLength(piece_dims[i], axis);
    if (Tensor* p = pieces[i]) {
      T* out = p->data<T>();
      for (int64_t o = 0; o < outer && len > 0; ++o) {
        std::memcpy(out + o * len, in + o * row + column, len * sizeof(T));
      }
    }
    column += len;
  }
}

template <typename T>
Status ConcatKernel(KernelContext& ctx) {
  Tensor* out = ctx.Output("Out");
  Gather<T>(ctx.Inputs("X"), NormalizedAxis(ctx, out->rank()), out);
  return Status::Ok();
}

template <typename T>
Status ConcatGradKernel(KernelContext& ctx) {
  const Tensor& dout = *ctx.Input("Out@GRAD");
  std::vector<Dims> dims;
  for (const Tensor* x : ctx.Inputs("X")) dims.push_back(x->dims());
  // Unnamed gradient outputs (inputs that need none) are skipped.
  std::vector<Tensor*> grads(dims.size(), nullptr);
  const int n = std::min<int>(ctx.OutputCount("X@GRAD"), dims.size());
  for (int i = 0; i < n; ++i) {
    if (ctx.OutputVar("X@GRAD", i)) grads[i] = ctx.Output("X@GRAD", i);
  }
  Scatter<T>(dout, NormalizedAxis(ctx, dout.rank()), grads, dims);
  return Status::Ok();
}

template <typename T>
Status SplitKernel(KernelContext& ctx) {
  const Tensor& x = *ctx.Input("X");
  std::vector<Tensor*> outs = ctx.Outputs("Out");
  std::vector<Dims> dims;
  for (Tensor* o : outs) dims.push_back(o ? o->dims() : Dims{});
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i] == nullptr) {
      return ctx.Error("output " + std::to_string(i) + " of split is unnamed");
    }
  }
  Scatter<T>(x, NormalizedAxis(ctx, x.rank()), outs, dims);
  return Status::Ok();
}

#define PAREX_SHAPE_KERNEL(r, op, kernel)                                   \
  PAREX_CPU_KERNEL(r, op, kernel, float, double, int32_t, int64_t, uint8_t, \
                   bool)

// shape: Input's dims as int32 (any dtype of Input; Paddle's dims fit).
Status ShapeKernel(KernelContext& ctx) {
  const Tensor* in = ctx.Input("Input");
  Tensor* out = ctx.Output("Out");
  if (in == nullptr || out->numel() != in->rank()) {
    return ctx.Error("Out does not hold the rank of Input");
  }
  for (int d = 0; d < in->rank(); ++d) {
    if (in->dim(d) > std::numeric_limits<int32_t>::max()) {
      return ctx.Error("extent " + std::to_string(in->dim(d)) +
                       " does not fit an int32");
    }
    out->data<int32_t>()[d] = static_cast<int32_t>(in->dim(d));
  }
  return Status::Ok();
}

// size: Input's element count.
Status SizeKernel(KernelContext& ctx) {
  const Tensor* in = ctx.Input("Input");
  if (in == nullptr) return ctx.Error("no Input");
  ctx.Output("Out")->data<int64_t>()[0] = in->numel();
  return Status::Ok();
}

}  // namespace

void RegisterShapeKernels(KernelRegistry* r) {
  r->Register({"shape", Place::Kind::kCPU, DType::kUndefined}, &ShapeKernel);
  r->Register({"size", Place::Kind::kCPU, DType::kUndefined}, &SizeKernel);
  PAREX_SHAPE_KERNEL(r, "reshape2", Reshape2Kernel);
  PAREX_SHAPE_KERNEL(r, "reshape2_grad", Reshape2GradKernel);
  // Views with other dims rules, the same copies (graph/ir/ops/shape_ops.cc).
  for (const char* view :
       {"unsqueeze2", "squeeze2", "flatten_contiguous_range"}) {
    PAREX_SHAPE_KERNEL(r, view, Reshape2Kernel);
    PAREX_SHAPE_KERNEL(r, std::string(view) + "_grad", Reshape2GradKernel);
  }
  PAREX_SHAPE_KERNEL(r, "transpose2", Transpose2Kernel);
  PAREX_SHAPE_KERNEL(r, "transpose2_grad", Transpose2GradKernel);
  PAREX_SHAPE_KERNEL(r, "slice", SliceKernel);
  PAREX_CPU_KERNEL(r, "slice_grad", SliceGradKernel, float, double);
  PAREX_SHAPE_KERNEL(r, "concat", ConcatKernel);
  PAREX_SHAPE_KERNEL(r, "concat_grad", ConcatGradKernel);
  PAREX_SHAPE_KERNEL(r, "split", SplitKernel);
}

#undef PAREX_SHAPE_KERNEL

}  // namespace parex
