// Tensors in Paddle's record format (proto/tensor_record.h): one file per
// variable, or records concatenated in a combined file.
#pragma once

#include <istream>
#include <ostream>
#include <string>

#include "base/status.h"
#include "kernels/tensor.h"

namespace parex {

// Reads one record into a new CPU tensor. `source` names the file and, for a
// combined file, the variable, in errors.
Status ReadTensor(std::istream& in, const std::string& source, Tensor* tensor);
// REQUIRES: `tensor` is on CPU.
Status WriteTensor(std::ostream& out, const Tensor& tensor);

// A file holding exactly one record (trailing bytes are an error).
Status LoadTensorFile(const std::string& path, Tensor* tensor);
// Writes through a temporary file and a rename: an interrupted save never
// leaves a truncated file in place of a good one.
Status SaveTensorFile(const std::string& path, const Tensor& tensor);

}  // namespace parex
