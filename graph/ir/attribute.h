// Typed access to Paddle's OpDesc.Attr. Paddle wrote some attributes with
// different types over the years (`is_test` as INT 1 or BOOLEAN true, int64
// shapes as INTS or LONGS), so reads accept every type that holds the value
// without loss of meaning, and `AttrTypesCompatible` says which.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "proto/framework.pb.h"

namespace parex {

namespace proto = ::paddle::framework::proto;
using AttrType = proto::AttrType;

// Reads `attr` as T. Errors say which type was found and which was wanted.
// T: int, int64_t, bool, float, double, std::string, std::vector<int>,
// std::vector<int64_t>, std::vector<float>, std::vector<double>,
// std::vector<std::string>, std::vector<bool>.
template <typename T>
StatusOr<T> ReadAttr(const proto::OpDesc::Attr& attr);

// Writes `value` into `attr` with T's natural type.
template <typename T>
void WriteAttr(proto::OpDesc::Attr* attr, const T& value);

// The AttrType a T is written as.
template <typename T>
AttrType AttrTypeOf();

// True when an attribute stored as `found` can be read where the schema
// declares `declared` (INT/BOOLEAN/LONG interchangeable; FLOAT/FLOAT64;
// INTS/LONGS/BOOLEANS; FLOATS/FLOAT64S).
bool AttrTypesCompatible(AttrType declared, AttrType found);

const char* AttrTypeName(AttrType type);

}  // namespace parex
