#include "graph/ir/attribute.h"

namespace parex {
namespace {

Status WrongType(const proto::OpDesc::Attr& attr, const char* wanted) {
  return InvalidArgument("attribute '" + attr.name() + "' has type " +
                         AttrTypeName(attr.type()) + ", expected " + wanted);
}

template <typename To, typename From>
std::vector<To> Convert(const google::protobuf::RepeatedField<From>& from) {
  return std::vector<To>(from.begin(), from.end());
}

}  // namespace

const char* AttrTypeName(AttrType type) {
  switch (type) {
    case proto::INT:
      return "INT";
    case proto::FLOAT:
      return "FLOAT";
    case proto::STRING:
      return "STRING";
    case proto::INTS:
      return "INTS";
    case proto::FLOATS:
      return "FLOATS";
    case proto::STRINGS:
      return "STRINGS";
    case proto::BOOLEAN:
      return "BOOLEAN";
    case proto::BOOLEANS:
      return "BOOLEANS";
    case proto::BLOCK:
      return "BLOCK";
    case proto::LONG:
      return "LONG";
    case proto::BLOCKS:
      return "BLOCKS";
    case proto::LONGS:
      return "LONGS";
    case proto::FLOAT64S:
      return "FLOAT64S";
    case proto::VAR:
      return "VAR";
    case proto::VARS:
      return "VARS";
    case proto::FLOAT64:
      return "FLOAT64";
  }
  return "UNKNOWN";
}

bool AttrTypesCompatible(AttrType declared, AttrType found) {
  if (declared == found) return true;
  auto in = [](AttrType t, std::initializer_list<AttrType> set) {
    for (AttrType s : set) {
      if (s == t) return true;
    }
    return false;
  };
  const auto scalar_int = {proto::INT, proto::BOOLEAN, proto::LONG};
  const auto scalar_float = {proto::FLOAT, proto::FLOAT64};
  const auto list_int = {proto::INTS, proto::LONGS, proto::BOOLEANS};
  const auto list_float = {proto::FLOATS, proto::FLOAT64S};
  if (in(declared, scalar_int)) return in(found, scalar_int);
  if (in(declared, scalar_float)) return in(found, scalar_float);
  if (in(declared, list_int)) return in(found, list_int);
  if (in(declared, list_float)) return in(found, list_float);
  return false;
}

template <>
StatusOr<int64_t> ReadAttr<int64_t>(const proto::OpDesc::Attr& attr) {
  switch (attr.type()) {
    case proto::INT:
      return static_cast<int64_t>(attr.i());
    case proto::LONG:
      return attr.l();
    case proto::BOOLEAN:
      return static_cast<int64_t>(attr.b());
    default:
      return WrongType(attr, "INT");
  }
}

template <>
StatusOr<int> ReadAttr<int>(const proto::OpDesc::Attr& attr) {
  PAREX_ASSIGN_OR_RETURN(int64_t v, ReadAttr<int64_t>(attr));
  return static_cast<int>(v);
}

template <>
StatusOr<bool> ReadAttr<bool>(const proto::OpDesc::Attr& attr) {
  PAREX_ASSIGN_OR_RETURN(int64_t v, ReadAttr<int64_t>(attr));
  return v != 0;
}

template <>
StatusOr<double> ReadAttr<double>(const proto::OpDesc::Attr& attr) {
  switch (attr.type()) {
    case proto::FLOAT:
      return static_cast<double>(attr.f());
    case proto::FLOAT64:
      return attr.float64();
    default:
      return WrongType(attr, "FLOAT");
  }
}

template <>
StatusOr<float> ReadAttr<float>(const proto::OpDesc::Attr& attr) {
  PAREX_ASSIGN_OR_RETURN(double v, ReadAttr<double>(attr));
  return static_cast<float>(v);
}

template <>
StatusOr<std::string> ReadAttr<std::string>(const proto::OpDesc::Attr& attr) {
  if (attr.type() != proto::STRING) return WrongType(attr, "STRING");
  return attr.s();
}

template <>
StatusOr<std::vector<int64_t>> ReadAttr<std::vector<int64_t>>(
    const proto::OpDesc::Attr& attr) {
  switch (attr.type()) {
    case proto::INTS:
      return Convert<int64_t>(attr.ints());
    case proto::LONGS:
      return Convert<int64_t>(attr.longs());
    case proto::BOOLEANS:
      return Convert<int64_t>(attr.bools());
    default:
      return WrongType(attr, "INTS");
  }
}

template <>
StatusOr<std::vector<int>> ReadAttr<std::vector<int>>(
    const proto::OpDesc::Attr& attr) {
  PAREX_ASSIGN_OR_RETURN(auto v, ReadAttr<std::vector<int64_t>>(attr));
  return std::vector<int>(v.begin(), v.end());
}

template <>
StatusOr<std::vector<bool>> ReadAttr<std::vector<bool>>(
    const proto::OpDesc::Attr& attr) {
  PAREX_ASSIGN_OR_RETURN(auto v, ReadAttr<std::vector<int64_t>>(attr));
  std::vector<bool> out;
  for (int64_t x : v) out.push_back(x != 0);
  return out;
}

template <>
StatusOr<std::vector<double>> ReadAttr<std::vector<double>>(
    const proto::OpDesc::Attr& attr) {
  switch (attr.type()) {
    case proto::FLOATS:
      return Convert<double>(attr.floats());
    case proto::FLOAT64S:
      return Convert<double>(attr.float64s());
    default:
      return WrongType(attr, "FLOATS");
  }
}

template <>
StatusOr<std::vector<float>> ReadAttr<std::vector<float>>(
    const proto::OpDesc::Attr& attr) {
  PAREX_ASSIGN_OR_RETURN(auto v, ReadAttr<std::vector<double>>(attr));
  return std::vector<float>(v.begin(), v.end());
}

template <>
StatusOr<std::vector<std::string>> ReadAttr<std::vector<std::string>>(
    const proto::OpDesc::Attr& attr) {
  if (attr.type() != proto::STRINGS) return WrongType(attr, "STRINGS");
  return std::vector<std::string>(attr.strings().begin(), attr.strings().end());
}

template <>
AttrType AttrTypeOf<int>() {
  return proto::INT;
}
template <>
AttrType AttrTypeOf<int64_t>() {
  return proto::LONG;
}
template <>
AttrType AttrTypeOf<bool>() {
  return proto::BOOLEAN;
}
template <>
AttrType AttrTypeOf<float>() {
  return proto::FLOAT;
}
template <>
AttrType AttrTypeOf<double>() {
  return proto::FLOAT64;
}
template <>
AttrType AttrTypeOf<std::string>() {
  return proto::STRING;
}
template <>
AttrType AttrTypeOf<std::vector<int>>() {
  return proto::INTS;
}
template <>
AttrType AttrTypeOf<std::vector<int64_t>>() {
  return proto::LONGS;
}
template <>
AttrType AttrTypeOf<std::vector<bool>>() {
  return proto::BOOLEANS;
}
template <>
AttrType AttrTypeOf<std::vector<float>>() {
  return proto::FLOATS;
}
template <>
AttrType AttrTypeOf<std::vector<double>>() {
  return proto::FLOAT64S;
}
template <>
AttrType AttrTypeOf<std::vector<std::string>>() {
  return proto::STRINGS;
}

namespace {
void Reset(proto::OpDesc::Attr* attr, AttrType type) {
  std::string name = attr->name();
  attr->Clear();
  attr->set_name(name);
  attr->set_type(type);
}
}  // namespace

template <>
void WriteAttr<int>(proto::OpDesc::Attr* a, const int& v) {
  Reset(a, proto::INT);
  a->set_i(v);
}
template <>
void WriteAttr<int64_t>(proto::OpDesc::Attr* a, const int64_t& v) {
  Reset(a, proto::LONG);
  a->set_l(v);
}
template <>
void WriteAttr<bool>(proto::OpDesc::Attr* a, const bool& v) {
  Reset(a, proto::BOOLEAN);
  a->set_b(v);
}
template <>
void WriteAttr<float>(proto::OpDesc::Attr* a, const float& v) {
  Reset(a, proto::FLOAT);
  a->set_f(v);
}
template <>
void WriteAttr<double>(proto::OpDesc::Attr* a, const double& v) {
  Reset(a, proto::FLOAT64);
  a->set_float64(v);
}
template <>
void WriteAttr<std::string>(proto::OpDesc::Attr* a, const std::string& v) {
  Reset(a, proto::STRING);
  a->set_s(v);
}
template <>
void WriteAttr<std::vector<int>>(proto::OpDesc::Attr* a,
                                 const std::vector<int>& v) {
  Reset(a, proto::INTS);
  for (int x : v) a->add_ints(x);
}
template <>
void WriteAttr<std::vector<int64_t>>(proto::OpDesc::Attr* a,
                                     const std::vector<int64_t>& v) {
  Reset(a, proto::LONGS);
  for (int64_t x : v) a->add_longs(x);
}
template <>
void WriteAttr<std::vector<bool>>(proto::OpDesc::Attr* a,
                                  const std::vector<bool>& v) {
  Reset(a, proto::BOOLEANS);
  for (bool x : v) a->add_bools(x);
}
template <>
void WriteAttr<std::vector<float>>(proto::OpDesc::Attr* a,
                                   const std::vector<float>& v) {
  Reset(a, proto::FLOATS);
  for (float x : v) a->add_floats(x);
}
template <>
void WriteAttr<std::vector<double>>(proto::OpDesc::Attr* a,
                                    const std::vector<double>& v) {
  Reset(a, proto::FLOAT64S);
  for (double x : v) a->add_float64s(x);
}
template <>
void WriteAttr<std::vector<std::string>>(proto::OpDesc::Attr* a,
                                         const std::vector<std::string>& v) {
  Reset(a, proto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}

}  // namespace parex
