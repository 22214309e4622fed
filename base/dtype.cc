#include "base/dtype.h"

namespace parex {

size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8:
    case DType::kInt8:
      return 1;
    case DType::kInt16:
    case DType::kFP16:
    case DType::kBF16:
      return 2;
    case DType::kInt32:
    case DType::kFP32:
      return 4;
    case DType::kInt64:
    case DType::kFP64:
      return 8;
    case DType::kUndefined:
      return 0;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFP16:
      return "fp16";
    case DType::kFP32:
      return "fp32";
    case DType::kFP64:
      return "fp64";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kBF16:
      return "bf16";
    case DType::kUndefined:
      return "undefined";
  }
  return "not-a-dtype";
}

bool IsElementType(int value) {
  return (value >= 0 && value <= 6) || (value >= 20 && value <= 22);
}

}  // namespace parex
