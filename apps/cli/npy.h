// NumPy .npy files (format versions 1.0-3.0): what `parex infer` reads its
// inputs from and writes its outputs to. Written here because Debian ships
// no C++ library for the format that parex could use without pulling in a
// tensor library of its own; the format is one header and raw data.
//
// Supported: little-endian bool, int8/16/32/64, uint8, float16/32/64, in C
// order. Fortran order, big-endian data and object arrays are refused with
// an error naming the file.
#pragma once

#include <string>

#include "base/status.h"
#include "kernels/tensor.h"

namespace parex {

StatusOr<Tensor> ReadNpy(const std::string& path);
// Parses the bytes of a .npy file; `what` names it in errors.
StatusOr<Tensor> ParseNpy(const std::string& bytes, const std::string& what);

// Writes a CPU tensor as a version 1.0 .npy file (replacing `path`).
Status WriteNpy(const std::string& path, const Tensor& tensor);
std::string SerializeNpy(const Tensor& tensor);

}  // namespace parex
