// numpy arrays to and from host tensors (py_common.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "apps/python/py_common.h"

namespace parex::python {
namespace {

// numpy's one-character kind and item size -> DType. Read as Python
// attributes: the C struct behind them changed layout in numpy 2, which
// pybind11's accessors of Debian's version predate.
DType DTypeOfArray(const py::dtype& d) {
  const std::string kinds = py::str(d.attr("kind")).cast<std::string>();
  const char kind = kinds.empty() ? '?' : kinds[0];
  const size_t size = d.attr("itemsize").cast<size_t>();
  switch (kind) {
    case 'b':
      return size == 1 ? DType::kBool : DType::kUndefined;
    case 'i':
      return size == 1   ? DType::kInt8
             : size == 2 ? DType::kInt16
             : size == 4 ? DType::kInt32
             : size == 8 ? DType::kInt64
                         : DType::kUndefined;
    case 'u':
      return size == 1 ? DType::kUInt8 : DType::kUndefined;
    case 'f':
      return size == 2   ? DType::kFP16
             : size == 4 ? DType::kFP32
             : size == 8 ? DType::kFP64
                         : DType::kUndefined;
    default:
      return DType::kUndefined;
  }
}

// The numpy dtype of `dtype`, or None when numpy has none (bfloat16).
py::object ArrayDType(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return py::dtype("bool");
    case DType::kInt8:
      return py::dtype("int8");
    case DType::kUInt8:
      return py::dtype("uint8");
    case DType::kInt16:
      return py::dtype("int16");
    case DType::kInt32:
      return py::dtype("int32");
    case DType::kInt64:
      return py::dtype("int64");
    case DType::kFP16:
      return py::dtype("float16");
    case DType::kFP32:
      return py::dtype("float32");
    case DType::kFP64:
      return py::dtype("float64");
    default:
      return py::none();
  }
}

}  // namespace

StatusOr<Tensor> TensorFromArray(const py::array& array,
                                 const std::string& what,
                                 Allocator* allocator) {
  const DType dtype = DTypeOfArray(array.dtype());
  if (dtype == DType::kUndefined) {
    return InvalidArgument(
        "'" + what + "': a numpy array of dtype " +
        py::str(static_cast<py::object>(array.dtype())).cast<std::string>() +
        " has no parex element type (bool, int8/16/32/64, uint8, "
        "float16/32/64)");
  }
  Dims dims;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) dims.push_back(array.shape(i));
  Tensor t;
  PAREX_RETURN_IF_ERROR((allocator != nullptr
                             ? t.TryAllocateFrom(allocator, dtype, dims)
                             : t.TryAllocate(dtype, dims))
                            .WithContext("'" + what + "'"));
  // A C-contiguous view copies in one go; anything else goes through
  // numpy's own copy into that layout.
  py::array contiguous =
      py::array::ensure(array, py::array::c_style | py::array::forcecast);
  if (!contiguous) throw py::error_already_set();
  if (t.bytes() > 0) std::memcpy(t.raw_data(), contiguous.data(), t.bytes());
  return t;
}

StatusOr<py::array> ArrayFromTensor(const Tensor& t, const std::string& what) {
  if (!t.defined()) {
    return FailedPrecondition("'" + what + "' holds no tensor yet");
  }
  if (!t.place().is_cpu() && !t.place().is_sim()) {
    return FailedPrecondition("'" + what + "' is on " + t.place().ToString() +
                              ", not in host memory");
  }
  py::object dtype = ArrayDType(t.dtype());
  if (dtype.is_none()) {
    return Unimplemented("'" + what + "' is " + DTypeName(t.dtype()) +
                         ", which numpy has no type for");
  }
  if (!t.initialized()) {
    return FailedPrecondition("'" + what + "' has no data yet");
  }
  std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
  // Strides given, not derived: pybind11 2.10 derives them from the dtype
  // struct numpy 2 changed, and gets 0 (every element the first).
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(SizeOf(t.dtype()));
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<py::ssize_t>(shape[d], 1);
  }
  py::array out(py::reinterpret_borrow<py::dtype>(dtype), shape, strides);
  if (t.bytes() > 0) std::memcpy(out.mutable_data(), t.raw_data(), t.bytes());
  return out;
}

}  // namespace parex::python
