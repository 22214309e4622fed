// SelectedRows: Fluid's sparse rows of a [height, ...] tensor, what
// lookup_table's gradient is with is_sparse: `rows[i]` is the row that
// `value` row i belongs to (a row may repeat: its values add up), every
// other row is zero. The optimizers apply it row by row or as its dense sum
// (kernels/cpu/optimizer_kernels.cc); across places the rows are gathered
// (actors/executor/op_handle_tasks.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/tensor.h"

namespace parex {

struct SelectedRows {
  std::vector<int64_t> rows;
  Tensor value;        // [rows.size(), ...]
  int64_t height = 0;  // rows of the dense tensor it stands for

  // [height] + value's dims past 0.
  Dims dense_dims() const;
  // The dense tensor: zeros, with each value row added onto its row in order.
  // Reuses `out`'s buffer when it is large enough. Errors: a row outside
  // [0, height), or a value whose row count is not rows.size().
  Status ToDense(Tensor* out) const;
};

}  // namespace parex
