#include "kernels/cuda/kernel_plans.h"

#include <algorithm>
#include <string>

#include "graph/ir/spec/broadcast_spec.h"

namespace parex {
namespace {

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// A run of neighbouring dims that behave alike.
struct Group {
  int64_t extent;
  bool a;  // elementwise: X broadcasts here; reduce: reduced
  bool b;  // elementwise: Y broadcasts here; reduce: unused
};

void AddToGroups(std::vector<Group>* groups, int64_t extent, bool a, bool b) {
  if (!groups->empty() && groups->back().a == a && groups->back().b == b) {
    groups->back().extent *= extent;
  } else {
    groups->push_back({extent, a, b});
  }
}

// Row-major element strides of an operand over `groups`, 0 where it
// broadcasts (`broadcast(g)`).
template <typename Broadcast>
void FillStrides(const std::vector<Group>& groups, Broadcast broadcast,
                 int64_t* strides) {
  int64_t s = 1;
  for (int j = static_cast<int>(groups.size()) - 1; j >= 0; --j) {
    if (broadcast(groups[j])) {
      strides[j] = 0;
    } else {
      strides[j] = s;
      s *= groups[j].extent;
    }
  }
}

void SetLeadingDims(MatmulPlan* plan, int64_t rows_x, int64_t cols_x,
                    int64_t rows_y, int64_t cols_y) {
  plan->ldx = cols_x;  // row stride of X as stored, transposed or not
  plan->ldy = cols_y;
  plan->x_matrix_size = rows_x * cols_x;
  plan->y_matrix_size = rows_y * cols_y;
}

}  // namespace

StatusOr<ElementwisePlan> PlanElementwise(const Dims& x, const Dims& y,
                                          int axis) {
  ElementwisePlan plan;
  ElementwiseExtents e;
  PAREX_RETURN_IF_ERROR(ElementwiseBroadcast(x, y, axis, &e));
  const int rank = e.rank;
  const int64_t* xa = e.x;
  const int64_t* ya = e.y;
  plan.out_dims.assign(e.out, e.out + rank);
  plan.numel = Numel(plan.out_dims);
  if (plan.numel == 0) return plan;

  std::vector<Group> groups;
  for (int i = 0; i < rank; ++i) {
    if (plan.out_dims[i] == 1) continue;
    AddToGroups(&groups, plan.out_dims[i], xa[i] == 1, ya[i] == 1);
  }
  bool x_broadcasts = false, y_broadcasts = false;
  for (const Group& g : groups) {
    x_broadcasts |= g.a;
    y_broadcasts |= g.b;
  }
  if (!x_broadcasts && !y_broadcasts) return plan;  // same elements in order

  if (x_broadcasts != y_broadcasts) {
    // One operand is full; the other is kMid if it is one run of the dims.
    const bool broadcast_y = y_broadcasts;
    int run = -1, runs = 0;
    for (size_t j = 0; j < groups.size(); ++j) {
      const bool small_broadcasts = broadcast_y ? groups[j].b : groups[j].a;
      if (!small_broadcasts) {
        run = static_cast<int>(j);
        ++runs;
      }
    }
    if (runs <= 1) {
      plan.kind = ElementwisePlan::Kind::kMid;
      plan.broadcast_y = broadcast_y;
      if (run < 0) {  // the small operand is one element
        plan.pre = plan.numel;
        plan.n = 1;
        plan.post = 1;
      } else {
        plan.pre = plan.n = plan.post = 1;
        for (int j = 0; j < static_cast<int>(groups.size()); ++j) {
          int64_t& part = j < run ? plan.pre : j == run ? plan.n : plan.post;
          part *= groups[j].extent;
        }
      }
      return plan;
    }
  }

  if (groups.size() > static_cast<size_t>(kMaxLaunchRank)) {
    return Unimplemented("X " + DimsToString(x) + " and Y " + DimsToString(y) +
                         " alternate broadcast dims more than " +
                         std::to_string(kMaxLaunchRank) + " times");
  }
  plan.kind = ElementwisePlan::Kind::kGeneral;
  plan.shape.rank = static_cast<int>(groups.size());
  for (size_t j = 0; j < groups.size(); ++j) {
    plan.shape.extents[j] = groups[j].extent;
  }
  FillStrides(
      groups, [](const Group& g) { return g.a; }, plan.shape.x_strides);
  FillStrides(
      groups, [](const Group& g) { return g.b; }, plan.shape.y_strides);
  return plan;
}

StatusOr<ReducePlan> PlanReduce(const Dims& x, const std::vector<int>& dims,
                                bool keep_dim, bool reduce_all) {
  const int rank = static_cast<int>(x.size());
  std::vector<bool> reduced(rank, reduce_all || dims.empty());
  if (!reduce_all) {
    for (int d : dims) {
      const int axis = d < 0 ? d + rank : d;
      if (rank > 0 && (axis < 0 || axis >= rank)) {
        return InvalidArgument("reduce dim " + std::to_string(d) +
                               " is out of range for X " + DimsToString(x));
      }
      if (rank > 0) reduced[axis] = true;
    }
  }
  ReducePlan plan;
  std::vector<Group> groups;
  for (int i = 0; i < rank; ++i) {
    if (reduced[i]) {
      plan.reduce_count *= x[i];
      if (keep_dim) plan.out_dims.push_back(1);
    } else {
      plan.out_numel *= x[i];
      plan.out_dims.push_back(x[i]);
    }
    if (x[i] != 1) AddToGroups(&groups, x[i], reduced[i], false);
  }
  if (plan.out_dims.empty()) plan.out_dims = {1};

  int reduced_groups = 0, kept_groups = 0;
  for (const Group& g : groups) (g.a ? reduced_groups : kept_groups)++;
  if (reduced_groups <= 1) {
    plan.kind = ReducePlan::Kind::kMiddle;
    bool seen_reduced = false;
    for (const Group& g : groups) {
      if (g.a) {
        plan.reduce = g.extent;
        seen_reduced = true;
      } else {
        (seen_reduced ? plan.inner : plan.outer) *= g.extent;
      }
    }
    return plan;
  }
  if (reduced_groups > kMaxLaunchRank || kept_groups > kMaxLaunchRank) {
    return Unimplemented("reducing X " + DimsToString(x) +
                         " alternates reduced and kept dims too often");
  }
  plan.kind = ReducePlan::Kind::kGeneral;
  int64_t strides[2 * kMaxLaunchRank + 1];
  FillStrides(
      groups, [](const Group&) { return false; }, strides);
  for (size_t j = 0; j < groups.size(); ++j) {
    if (groups[j].a) {
      const int r = plan.shape.reduced_rank++;
      plan.shape.reduced_extents[r] = groups[j].extent;
      plan.shape.reduced_strides[r] = strides[j];
    } else {
      const int k = plan.shape.kept_rank++;
      plan.shape.kept_extents[k] = groups[j].extent;
      plan.shape.kept_strides[k] = strides[j];
    }
  }
  return plan;
}

void BatchOffsets(const MatmulPlan& plan, int64_t b, int64_t* x_offset,
                  int64_t* y_offset) {
  if (plan.strided) {
    *x_offset = b * plan.x_stride;
    *y_offset = b * plan.y_stride;
    return;
  }
  int64_t x_index = 0, y_index = 0, x_scale = 1, y_scale = 1;
  for (int d = static_cast<int>(plan.batch_dims.size()) - 1; d >= 0; --d) {
    const int64_t i = b % plan.batch_dims[d];
    b /= plan.batch_dims[d];
    if (plan.x_batch_dims[d] != 1) x_index += i * x_scale;
    if (plan.y_batch_dims[d] != 1) y_index += i * y_scale;
    x_scale *= plan.x_batch_dims[d];
    y_scale *= plan.y_batch_dims[d];
  }
  *x_offset = x_index * plan.x_matrix_size;
  *y_offset = y_index * plan.y_matrix_size;
}

StatusOr<MatmulPlan> PlanMul(const Dims& x, const Dims& y, int x_num_col_dims,
                             int y_num_col_dims) {
  const int x_rank = static_cast<int>(x.size());
  const int y_rank = static_cast<int>(y.size());
  if (x_num_col_dims < 1 || x_num_col_dims >= x_rank) {
    return InvalidArgument("x_num_col_dims " + std::to_string(x_num_col_dims) +
                           " must be in [1, " + std::to_string(x_rank) +
                           ") for X " + DimsToString(x));
  }
  if (y_num_col_dims < 1 || y_num_col_dims >= y_rank) {
    return InvalidArgument("y_num_col_dims " + std::to_string(y_num_col_dims) +
                           " must be in [1, " + std::to_string(y_rank) +
                           ") for Y " + DimsToString(y));
  }
  MatmulPlan plan;
  plan.m = Product(x, 0, x_num_col_dims);
  plan.k = Product(x, x_num_col_dims, x_rank);
  const int64_t k_y = Product(y, 0, y_num_col_dims);
  plan.n = Product(y, y_num_col_dims, y_rank);
  if (plan.k != k_y) {
    return InvalidArgument(
        "X " + DimsToString(x) + " flattens to [" + std::to_string(plan.m) +
        "," + std::to_string(plan.k) + "] but Y " + DimsToString(y) + " to [" +
        std::to_string(k_y) + "," + std::to_string(plan.n) + "]");
  }
  SetLeadingDims(&plan, plan.m, plan.k, plan.k, plan.n);
  plan.out_dims.assign(x.begin(), x.begin() + x_num_col_dims);
  plan.out_dims.insert(plan.out_dims.end(), y.begin() + y_num_col_dims,
                       y.end());
  return plan;
}

StatusOr<MatmulPlan> PlanMatmul(const Dims& x, const Dims& y, bool transpose_x,
                                bool transpose_y) {
  if (x.empty() || y.empty()) {
    return InvalidArgument("matmul needs operands of rank >= 1, got X " +
                           DimsToString(x) + " and Y " + DimsToString(y));
  }
  const Dims xm = x.size() == 1 ? Dims{1, x[0]} : x;  // a row
  const Dims ym = y.size() == 1 ? Dims{y[0], 1} : y;  // a column
  const int64_t rows_x = xm[xm.size() - 2], cols_x = xm.back();
  const int64_t rows_y = ym[ym.size() - 2], cols_y = ym.back();
  MatmulPlan plan;
  plan.trans_x = transpose_x;
  plan.trans_y = transpose_y;
  plan.m = transpose_x ? cols_x : rows_x;
  plan.k = transpose_x ? rows_x : cols_x;
  const int64_t k_y = transpose_y ? cols_y : rows_y;
  plan.n = transpose_y ? rows_y : cols_y;
  if (plan.k != k_y) {
    return InvalidArgument("X " + DimsToString(x) + " (transpose_X " +
                           (transpose_x ? "true" : "false") + ") and Y " +
                           DimsToString(y) + " (transpose_Y " +
                           (transpose_y ? "true" : "false") +
                           ") disagree on K: " + std::to_string(plan.k) +
                           " vs " + std::to_string(k_y));
  }
  SetLeadingDims(&plan, rows_x, cols_x, rows_y, cols_y);
  const bool x_batched = xm.size() > 2, y_batched = ym.size() > 2;
  const int64_t x_batch = x_batched ? Product(xm, 0, xm.size() - 2) : 1;
  const int64_t y_batch = y_batched ? Product(ym, 0, ym.size() - 2) : 1;
  if (x_batch != y_batch && x_batch != 1 && y_batch != 1) {
    return InvalidArgument("X " + DimsToString(x) + " and Y " +
                           DimsToString(y) + " have batch sizes " +
                           std::to_string(x_batch) + " and " +
                           std::to_string(y_batch));
  }
  plan.batch = std::max(x_batch, y_batch);
  plan.x_stride = x_batch > 1 ? plan.x_matrix_size : 0;
  plan.y_stride = y_batch > 1 ? plan.y_matrix_size : 0;
  // Fluid's output: the batched operand's dims with [M, N] last; a 1-D
  // operand's unit dim is dropped.
  if (x_batched) {
    plan.out_dims = xm;
  } else if (y_batched) {
    plan.out_dims = ym;
  } else {
    plan.out_dims = {0, 0};
  }
  plan.out_dims[plan.out_dims.size() - 2] = plan.m;
  plan.out_dims.back() = plan.n;
  if (x.size() == 1 && plan.out_dims[plan.out_dims.size() - 2] == 1) {
    plan.out_dims.erase(plan.out_dims.end() - 2);
  }
  if (y.size() == 1 && !plan.out_dims.empty() && plan.out_dims.back() == 1) {
    plan.out_dims.pop_back();
  }
  if (plan.out_dims.empty()) plan.out_dims = {1};
  return plan;
}

StatusOr<MatmulPlan> PlanMatmulV2(const Dims& x, const Dims& y, bool trans_x,
                                  bool trans_y) {
  if (x.empty() || y.empty()) {
    return InvalidArgument("matmul_v2 needs operands of rank >= 1, got X " +
                           DimsToString(x) + " and Y " + DimsToString(y));
  }
  const bool x_vector = x.size() == 1, y_vector = y.size() == 1;
  const int64_t rows_x = x_vector ? 1 : x[x.size() - 2];
  const int64_t cols_x = x.back();
  const int64_t rows_y = y_vector ? y[0] : y[y.size() - 2];
  const int64_t cols_y = y_vector ? 1 : y.back();
  MatmulPlan plan;
  plan.trans_x = trans_x && !x_vector;
  plan.trans_y = trans_y && !y_vector;
  plan.m = plan.trans_x ? cols_x : rows_x;
  plan.k = plan.trans_x ? rows_x : cols_x;
  const int64_t k_y = plan.trans_y ? cols_y : rows_y;
  plan.n = plan.trans_y ? rows_y : cols_y;
  if (plan.k != k_y) {
    return InvalidArgument("X " + DimsToString(x) + " (trans_x " +
                           (trans_x ? "true" : "false") + ") and Y " +
                           DimsToString(y) + " (trans_y " +
                           (trans_y ? "true" : "false") +
                           ") disagree on K: " + std::to_string(plan.k) +
                           " vs " + std::to_string(k_y));
  }
  SetLeadingDims(&plan, rows_x, cols_x, rows_y, cols_y);

  const Dims x_batch(x.begin(), x.end() - (x_vector ? 1 : 2));
  const Dims y_batch(y.begin(), y.end() - (y_vector ? 1 : 2));
  const size_t rank = std::max(x_batch.size(), y_batch.size());
  Dims xa(rank, 1), ya(rank, 1), out(rank, 1);
  std::copy(x_batch.begin(), x_batch.end(), xa.end() - x_batch.size());
  std::copy(y_batch.begin(), y_batch.end(), ya.end() - y_batch.size());
  for (size_t d = 0; d < rank; ++d) {
    if (xa[d] != ya[d] && xa[d] != 1 && ya[d] != 1) {
      return InvalidArgument("batch dims of X " + DimsToString(x) + " and Y " +
                             DimsToString(y) + " do not broadcast");
    }
    out[d] = xa[d] == 1 ? ya[d] : xa[d];
  }
  plan.batch = Numel(out);
  const int64_t x_count = Numel(xa), y_count = Numel(ya);
  if ((x_count == plan.batch || x_count == 1) &&
      (y_count == plan.batch || y_count == 1)) {
    plan.x_stride = x_count > 1 ? plan.x_matrix_size : 0;
    plan.y_stride = y_count > 1 ? plan.y_matrix_size : 0;
  } else {
    plan.strided = false;
    plan.batch_dims = out;
    plan.x_batch_dims = xa;
    plan.y_batch_dims = ya;
  }
  plan.out_dims = out;
  if (!x_vector) plan.out_dims.push_back(plan.m);
  if (!y_vector) plan.out_dims.push_back(plan.n);
  return plan;
}

}  // namespace parex
