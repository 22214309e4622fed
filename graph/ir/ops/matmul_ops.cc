// mul, matmul and matmul_v2, with their gradient ops (Fluid's slots and
// attributes), and Paddle's fused fc (inference only: no gradient).
//
// mul flattens X to 2-D at x_num_col_dims and Y at y_num_col_dims:
//   Out.dims = X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:].
// matmul / matmul_v2 multiply the last two dims and broadcast the leading
// (batch) dims numpy-style. A 1-D operand is a vector:
//   matmul (v1): X [K] is the row [1,K], Y [K] the column [K,1]; the
//     transpose flags still apply to them; an output extent of 1 that came
//     from a vector is dropped (Fluid's rule).
//   matmul_v2: numpy's rule: transpose flags are ignored for 1-D operands and
//     the vector's extent is dropped from the output.
// Both give Out = [1] when everything is dropped.
// (kernels/cpu/matmul_kernels.cc repeats this geometry for the kernels.)
#include <algorithm>
#include <functional>
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

int Rank(const Dims& d) { return static_cast<int>(d.size()); }

// Product of dims[begin, end); -1 when any of them is unknown.
int64_t Product(const Dims& dims, int begin, int end) {
  return Numel(Dims(dims.begin() + begin, dims.begin() + end));
}

// ---- mul --------------------------------------------------------------------

StatusOr<Dims> MulOutDims(const ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const Dims y = ctx.InputDims("Y");
  const int xnc = ctx.Attr<int>("x_num_col_dims");
  const int ync = ctx.Attr<int>("y_num_col_dims");
  if (xnc < 1 || xnc >= Rank(x)) {
    return ctx.Error("x_num_col_dims " + std::to_string(xnc) +
                     " must be in [1, rank of X); X has dims " +
                     DimsToString(x));
  }
  if (ync < 1 || ync >= Rank(y)) {
    return ctx.Error("y_num_col_dims " + std::to_string(ync) +
                     " must be in [1, rank of Y); Y has dims " +
                     DimsToString(y));
  }
  const int64_t x_width = Product(x, xnc, Rank(x));
  const int64_t y_height = Product(y, 0, ync);
  if (!ExtentsAgree(x_width, y_height)) {
    return ctx.Error("inner dims differ: X " + DimsToString(x) +
                     " flattens to [" + std::to_string(Product(x, 0, xnc)) +
                     "," + std::to_string(x_width) + "], Y " + DimsToString(y) +
                     " to [" + std::to_string(y_height) + "," +
                     std::to_string(Product(y, ync, Rank(y))) + "]");
  }
  Dims out(x.begin(), x.begin() + xnc);
  out.insert(out.end(), y.begin() + ync, y.end());
  return out;
}

Status InferMul(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Y"}));
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  if (ctx.IsUnknown(ctx.InputDims("X")) || ctx.IsUnknown(ctx.InputDims("Y"))) {
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(Dims out, MulOutDims(ctx));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

// ---- fc ---------------------------------------------------------------------

// Paddle's fused fully connected op (what its inference passes and parex's
// inference fusions make of a product by a weight matrix and a bias add):
//   Out = act(Input' W + Bias), Input' = Input flattened to 2-D at
//   in_num_col_dims, W [K, N], Bias [N] or [1, N], act "" or "relu";
//   Out.dims = Input.dims[:in_num_col_dims] + [N].
StatusOr<Dims> FcOutDims(const ShapeContext& ctx) {
  const Dims x = ctx.InputDims("Input");
  const Dims w = ctx.InputDims("W");
  const int ncd = ctx.Attr<int>("in_num_col_dims");
  if (ctx.Attr<bool>("padding_weights")) {
    return ctx.Error(
        "padding_weights (oneDNN's padded W of Paddle's fc) is "
        "not supported");
  }
  const std::string act = ctx.Attr<std::string>("activation_type");
  if (!act.empty() && act != "relu") {
    return ctx.Error("activation_type '" + act +
                     "' is not supported (\"\" or \"relu\")");
  }
  if (ncd < 1 || ncd >= Rank(x)) {
    return ctx.Error("in_num_col_dims " + std::to_string(ncd) +
                     " must be in [1, rank of Input); Input has dims " +
                     DimsToString(x));
  }
  if (Rank(w) != 2) {
    return ctx.Error("W must be 2-D [K, N]; it has dims " + DimsToString(w));
  }
  const int64_t k = Product(x, ncd, Rank(x));
  if (!ExtentsAgree(k, w[0])) {
    return ctx.Error("Input " + DimsToString(x) + " flattens to [" +
                     std::to_string(Product(x, 0, ncd)) + "," +
                     std::to_string(k) + "], which W " + DimsToString(w) +
                     " cannot multiply");
  }
  if (ctx.HasInput("Bias")) {
    const Dims b = ctx.InputDims("Bias");
    const bool row = Rank(b) == 2 && ExtentsAgree(b[0], 1);
    if (!(Rank(b) == 1 || row) || !ExtentsAgree(b.back(), w[1])) {
      return ctx.Error("Bias " + DimsToString(b) + " must be [" +
                       std::to_string(w[1]) + "] or [1, " +
                       std::to_string(w[1]) + "] for W " + DimsToString(w));
    }
  }
  Dims out(x.begin(), x.begin() + ncd);
  out.push_back(w[1]);
  return out;
}

Status InferFc(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.HasInput("Bias")
                            ? ctx.CheckSameDType({"Input", "W", "Bias"})
                            : ctx.CheckSameDType({"Input", "W"}));
  ctx.SetOutputDType("Out", 0, ctx.InputDType("Input"));
  if (ctx.IsUnknown(ctx.InputDims("Input")) ||
      ctx.IsUnknown(ctx.InputDims("W")) ||
      (ctx.HasInput("Bias") && ctx.IsUnknown(ctx.InputDims("Bias")))) {
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(Dims out, FcOutDims(ctx));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

// ---- matmul / matmul_v2 -----------------------------------------------------

// Sets *out to the numpy broadcast of batch dims `a` and `b` (right-aligned);
// false when they do not broadcast. At compile time an unknown extent (-1)
// agrees with anything.
bool BroadcastBatch(const Dims& a, const Dims& b, bool runtime, Dims* out) {
  const int rank = std::max(Rank(a), Rank(b));
  out->assign(rank, 1);
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - Rank(a));
    const int ib = i - (rank - Rank(b));
    const int64_t da = ia >= 0 ? a[ia] : 1;
    const int64_t db = ib >= 0 ? b[ib] : 1;
    if (da == db || db == 1) {
      (*out)[i] = da;
    } else if (da == 1) {
      (*out)[i] = db;
    } else if (!runtime && (da < 0 || db < 0)) {
      (*out)[i] = da < 0 ? db : da;
    } else {
      return false;
    }
  }
  return true;
}

StatusOr<Dims> MatmulOutDims(const ShapeContext& ctx, bool v2) {
  const Dims x = ctx.InputDims("X");
  const Dims y = ctx.InputDims("Y");
  if (x.empty() || y.empty()) {
    return ctx.Error("X " + DimsToString(x) + " and Y " + DimsToString(y) +
                     " must have rank >= 1");
  }
  bool trans_x = ctx.Attr<bool>(v2 ? "trans_x" : "transpose_X");
  bool trans_y = ctx.Attr<bool>(v2 ? "trans_y" : "transpose_Y");
  // The matrices as stored: a vector X is the row [1,K], Y the column [K,1].
  const bool x_vector = Rank(x) == 1;
  const bool y_vector = Rank(y) == 1;
  if (v2 && x_vector) trans_x = false;
  if (v2 && y_vector) trans_y = false;
  const int64_t xr = x_vector ? 1 : x[Rank(x) - 2];
  const int64_t xc = x.back();
  const int64_t yr = y_vector ? y[0] : y[Rank(y) - 2];
  const int64_t yc = y_vector ? 1 : y.back();
  const int64_t m = trans_x ? xc : xr;
  const int64_t kx = trans_x ? xr : xc;
  const int64_t ky = trans_y ? yc : yr;
  const int64_t n = trans_y ? yr : yc;
  if (!ExtentsAgree(kx, ky)) {
    return ctx.Error("inner dims differ: X " + DimsToString(x) +
                     (trans_x ? " (transposed)" : "") +
                     " gives K=" + std::to_string(kx) + ", Y " +
                     DimsToString(y) + (trans_y ? " (transposed)" : "") +
                     " gives K=" + std::to_string(ky));
  }
  Dims out;
  const Dims x_batch(x.begin(), x.end() - std::min(2, Rank(x)));
  const Dims y_batch(y.begin(), y.end() - std::min(2, Rank(y)));
  if (!BroadcastBatch(x_batch, y_batch, ctx.IsRuntime(), &out)) {
    return ctx.Error("batch dims of X " + DimsToString(x) + " and Y " +
                     DimsToString(y) + " do not broadcast");
  }
  if (v2) {
    if (!x_vector) out.push_back(m);
    if (!y_vector) out.push_back(n);
  } else {
    const bool drop_m = x_vector && m == 1;
    const bool drop_n = y_vector && n == 1;
    if (!drop_m) out.push_back(m);
    if (!drop_n) out.push_back(n);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

InferShapeFn InferMatmul(bool v2) {
  return [v2](ShapeContext& ctx) -> Status {
    PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Y"}));
    ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
    if (ctx.IsUnknown(ctx.InputDims("X")) ||
        ctx.IsUnknown(ctx.InputDims("Y"))) {
      return Status::Ok();
    }
    PAREX_ASSIGN_OR_RETURN(Dims out, MatmulOutDims(ctx, v2));
    ctx.SetOutputDims("Out", 0, out);
    return Status::Ok();
  };
}

// Gradient ops: X@GRAD and Y@GRAD take X's and Y's dims, after checking that
// Out@GRAD has the forward output's dims (so kernels may index by them).
InferShapeFn InferGrad(std::function<StatusOr<Dims>(const ShapeContext&)> out) {
  return [out](ShapeContext& ctx) -> Status {
    PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Y", "Out@GRAD"}));
    if (!ctx.IsUnknown(ctx.InputDims("X")) &&
        !ctx.IsUnknown(ctx.InputDims("Y"))) {
      PAREX_ASSIGN_OR_RETURN(Dims want, out(ctx));
      PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", want));
    }
    return InferGradShapesFromForwardInputs(ctx);
  };
}

}  // namespace

void RegisterMatmulOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("mul")
             .Input("X")
             .Input("Y")
             .Output("Out")
             .Attr("x_num_col_dims", 1)
             .Attr("y_num_col_dims", 1)
             .InferShape(InferMul)
             .Grad("mul_grad", {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"}));
  r->Add(OpSchema("mul_grad")
             .Input("X")
             .Input("Y")
             .Input("Out@GRAD")
             .Output("X@GRAD", kOptional)
             .Output("Y@GRAD", kOptional)
             .Attr("x_num_col_dims", 1)
             .Attr("y_num_col_dims", 1)
             .InferShape(InferGrad(MulOutDims)));

  r->Add(OpSchema("fc")
             .Input("Input")
             .Input("W")
             .Input("Bias", kOptional)
             .Output("Out")
             .Attr("in_num_col_dims", 1)
             .Attr("activation_type", std::string())
             .Attr("padding_weights", false)
             // Set by the inference fusions: W is a persistable no op
             // writes, so a kernel may keep what it derives from it.
             .Attr("constant_w", false)
             .InferShape(InferFc));
  r->Add(
      OpSchema("matmul")
          .Input("X")
          .Input("Y")
          .Output("Out")
          .Attr("transpose_X", false)
          .Attr("transpose_Y", false)
          .Attr("alpha", 1.0f)
          // Set by the inference fusions: Y is a persistable no op writes,
          // so a kernel may keep what it derives from it (a packed copy).
          .Attr("constant_y", false)
          .InferShape(InferMatmul(/*v2=*/false))
          .Grad("matmul_grad", {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"}));
  r->Add(OpSchema("matmul_grad")
             .Input("X")
             .Input("Y")
             .Input("Out@GRAD")
             .Output("X@GRAD", kOptional)
             .Output("Y@GRAD", kOptional)
             .Attr("transpose_X", false)
             .Attr("transpose_Y", false)
             .Attr("alpha", 1.0f)
             .InferShape(InferGrad([](const ShapeContext& ctx) {
               return MatmulOutDims(ctx, /*v2=*/false);
             })));

  r->Add(OpSchema("matmul_v2")
             .Input("X")
             .Input("Y")
             .Output("Out")
             .Attr("trans_x", false)
             .Attr("trans_y", false)
             .Attr("constant_y", false)  // as matmul's
             .InferShape(InferMatmul(/*v2=*/true))
             .Grad("matmul_v2_grad", {"X", "Y", "Out@GRAD"},
                   {"X@GRAD", "Y@GRAD"}));
  r->Add(OpSchema("matmul_v2_grad")
             .Input("X")
             .Input("Y")
             .Input("Out@GRAD")
             .Output("X@GRAD", kOptional)
             .Output("Y@GRAD", kOptional)
             .Attr("trans_x", false)
             .Attr("trans_y", false)
             .InferShape(InferGrad([](const ShapeContext& ctx) {
               return MatmulOutDims(ctx, /*v2=*/true);
             })));
}

}  // namespace parex
