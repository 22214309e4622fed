// The cases of tests/kernels/paddle_goldens/tensor_ops.json and the later
// groups' files (written by make_goldens.py): one op that PaddlePaddle 2.6.2
// ran in a static program, its inputs and attributes, its outputs and, for
// differentiable ops, the gradients of sum(w * out) that Paddle's gradient op
// gave and that op's type and slots.
//
// CheckPaddleGoldens runs each case of one op type through OpTester (the
// real path: validation, shape inference, the registered CPU kernel) and
// compares dims, dtypes and values; then it checks that the schema's Grad
// spec names Paddle's gradient op and slots, and runs that gradient op with
// Out@GRAD = w against Paddle's gradients. Mismatches are gtest failures.
//
// parex has no 0-D tensors: where Paddle gives a 0-D result (dims []),
// parex's is [1] (as reduce_ops.cc says), and the check expects that.
#pragma once

#include <string>

namespace parex::testing {

struct GoldenTolerance {
  double fp64 = 1e-12;  // absolute and relative, for fp64 results
  double fp32 = 1e-6;   // for fp32 results
};

// Returns the number of cases of `op` checked in `file` (a file of
// tests/kernels/paddle_goldens/ written the same way: each op group after
// tensor_ops.json has its own).
int CheckPaddleGoldens(const std::string& op, GoldenTolerance tolerance = {},
                       const std::string& file = "tensor_ops.json");

}  // namespace parex::testing
