// DType: element types of tensors. The values are Paddle's VarType.Type
// numbers, so a DType converts to and from framework.proto by a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace parex {

enum class DType : int {
  kBool = 0,
  kInt16 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFP16 = 4,
  kFP32 = 5,
  kFP64 = 6,
  kUInt8 = 20,
  kInt8 = 21,
  kBF16 = 22,
  kUndefined = -1,
};

// Bytes per element; 0 for kUndefined or a value that is no element type.
size_t SizeOf(DType dtype);
// "fp32", "int64", ...
const char* DTypeName(DType dtype);
// True when `value` is a Paddle VarType.Type number that names an element type.
bool IsElementType(int value);

// Storage-only 16-bit floats: parex keeps their bits, kernels do not compute in
// them on CPU.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <typename T>
struct DTypeTrait;
template <>
struct DTypeTrait<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeTrait<int16_t> {
  static constexpr DType value = DType::kInt16;
};
template <>
struct DTypeTrait<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeTrait<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeTrait<Float16> {
  static constexpr DType value = DType::kFP16;
};
template <>
struct DTypeTrait<float> {
  static constexpr DType value = DType::kFP32;
};
template <>
struct DTypeTrait<double> {
  static constexpr DType value = DType::kFP64;
};
template <>
struct DTypeTrait<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeTrait<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct DTypeTrait<BFloat16> {
  static constexpr DType value = DType::kBF16;
};

template <typename T>
constexpr DType DTypeOf() {
  return DTypeTrait<T>::value;
}

}  // namespace parex
