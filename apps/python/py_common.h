// What the Python module's files share: parex's errors as Python
// exceptions, and numpy arrays to and from host tensors.
//
// A Status that is not ok becomes a `parex.Error` (a RuntimeError) whose
// message is Status::ToString() (the code, then parex's message naming op,
// variable, place). Arrays: the element types numpy has (bool, int8/16/32/64,
// uint8, float16/32/64); bfloat16 tensors are refused naming the variable.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "base/status.h"
#include "kernels/tensor.h"

namespace parex::python {

namespace py = pybind11;

// Thrown by ThrowIfError; translated to parex.Error (module.cc).
struct StatusError {
  Status status;
};

inline void ThrowIfError(const Status& s) {
  if (!s.ok()) throw StatusError{s};
}

template <typename T>
T ValueOrThrow(StatusOr<T> v) {
  if (!v.ok()) throw StatusError{v.status()};
  return std::move(v).value();
}

// The host tensor of a numpy array (copied; any strides), named `what` in
// errors (a feed's name); made by `allocator` when given (a
// ParallelExecutor's feed_allocator: pinned memory for CUDA places).
// InvalidArgument for an element type parex has no DType for (object,
// complex, ...).
StatusOr<Tensor> TensorFromArray(const py::array& array,
                                 const std::string& what,
                                 Allocator* allocator = nullptr);
// A numpy array holding a copy of host tensor `t` (dims, dtype). A tensor
// not on the host, or with no data, is an error naming `what`.
StatusOr<py::array> ArrayFromTensor(const Tensor& t, const std::string& what);

}  // namespace parex::python
