#include "apps/cli/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/checked_math.h"
#include "base/file_io.h"
#include "base/text.h"

namespace parex {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct DescrName {
  DType dtype;
  const char* descr;  // little-endian (or byte-order-free) descr
};
constexpr DescrName kDescrs[] = {
    {DType::kBool, "|b1"},  {DType::kInt8, "|i1"},  {DType::kUInt8, "|u1"},
    {DType::kInt16, "<i2"}, {DType::kInt32, "<i4"}, {DType::kInt64, "<i8"},
    {DType::kFP16, "<f2"},  {DType::kFP32, "<f4"},  {DType::kFP64, "<f8"},
};

// The value of `key` in the header's Python dict literal, as written by
// numpy ('descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ).
StatusOr<std::string> DictValue(const std::string& header,
                                const std::string& key,
                                const std::string& what) {
  const std::string quoted = "'" + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos) {
    return InvalidArgument(what + ": the .npy header has no '" + key + "'");
  }
  at = header.find(':', at + quoted.size());
  if (at == std::string::npos) {
    return InvalidArgument(what + ": malformed .npy header");
  }
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  if (at >= header.size())
    return InvalidArgument(what + ": malformed .npy header");
  size_t end;
  if (header[at] == '\'') {
    end = header.find('\'', at + 1);
    if (end == std::string::npos)
      return InvalidArgument(what + ": malformed .npy header");
    return header.substr(at + 1, end - at - 1);
  }
  if (header[at] == '(') {
    end = header.find(')', at);
    if (end == std::string::npos)
      return InvalidArgument(what + ": malformed .npy header");
    return header.substr(at + 1, end - at - 1);
  }
  end = header.find_first_of(",}", at);
  if (end == std::string::npos)
    return InvalidArgument(what + ": malformed .npy header");
  return header.substr(at, end - at);
}

uint32_t ReadLittleEndian(const std::string& bytes, size_t at, int width) {
  uint32_t v = 0;
  for (int i = width - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  }
  return v;
}

// The dtype of a header's descr: '<' little-endian, '=' native
// (little-endian here), '|' no byte order.
StatusOr<DType> DescrDType(const std::string& descr, const std::string& what) {
  if (descr.size() >= 2 && std::strchr("<=|", descr[0]) != nullptr) {
    for (const DescrName& d : kDescrs) {
      if (descr.compare(1, std::string::npos, d.descr + 1) == 0) {
        return d.dtype;
      }
    }
  }
  return Unimplemented(what + ": unsupported .npy dtype '" + Excerpt(descr) +
                       "' (little-endian bool, int, uint8 or float only)");
}

// A header's shape tuple "2, 3" (or "n," or ""): extents of at most 15
// digits, at most kMaxRank of them.
StatusOr<Dims> ShapeDims(const std::string& shape_text,
                         const std::string& what) {
  Dims dims;
  std::stringstream shape_in(shape_text);
  std::string item;
  const std::string bad_shape =
      what + ": bad .npy shape (" + Excerpt(shape_text) + ")";
  while (std::getline(shape_in, item, ',')) {
    const size_t b = item.find_first_not_of(" \t");
    if (b == std::string::npos) continue;  // the trailing comma of (n,)
    const size_t e = item.find_last_not_of(" \t");
    const std::string digits = item.substr(b, e - b + 1);
    if (digits.empty() ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument(bad_shape);
    }
    if (digits.size() > 15) {  // 2^48 has 15 digits
      return InvalidArgument(bad_shape + ": extent " + digits +
                             " exceeds 2^48");
    }
    if (dims.size() == kMaxRank) {
      return InvalidArgument(bad_shape + ": more than " +
                             std::to_string(kMaxRank) + " dimensions");
    }
    dims.push_back(std::stoll(digits));
  }
  return dims;
}

// The header's dict text and where the data starts: magic, a version of
// 1..3 and a header length that the bytes hold.
StatusOr<std::string> NpyHeader(const std::string& bytes,
                                const std::string& what, size_t* data_at) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) {
    return InvalidArgument(what + ": not a NumPy .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) {
    return InvalidArgument(what + ": unsupported .npy format version " +
                           std::to_string(major));
  }
  const int len_width = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + static_cast<size_t>(len_width)) {
    return InvalidArgument(what + ": truncated .npy header");
  }
  const size_t header_len = ReadLittleEndian(bytes, 8, len_width);
  *data_at = 8 + len_width + header_len;
  if (bytes.size() < *data_at) {
    return InvalidArgument(what + ": truncated .npy header");
  }
  return bytes.substr(8 + len_width, header_len);
}

}  // namespace

StatusOr<Tensor> ParseNpy(const std::string& bytes, const std::string& what) {
  size_t data_at = 0;
  PAREX_ASSIGN_OR_RETURN(std::string header, NpyHeader(bytes, what, &data_at));
  PAREX_ASSIGN_OR_RETURN(std::string descr, DictValue(header, "descr", what));
  PAREX_ASSIGN_OR_RETURN(std::string fortran,
                         DictValue(header, "fortran_order", what));
  PAREX_ASSIGN_OR_RETURN(std::string shape_text,
                         DictValue(header, "shape", what));
  if (fortran.find("True") != std::string::npos) {
    return Unimplemented(what +
                         ": Fortran-order arrays are not supported; "
                         "save with numpy.ascontiguousarray");
  }
  PAREX_ASSIGN_OR_RETURN(DType dtype, DescrDType(descr, what));
  PAREX_ASSIGN_OR_RETURN(Dims dims, ShapeDims(shape_text, what));
  StatusOr<int64_t> numel = CheckedNumel(dims, what);
  if (!numel.ok()) return InvalidArgument(numel.status().message());
  StatusOr<uint64_t> need = CheckedBytes(*numel, SizeOf(dtype), what);
  if (!need.ok()) return InvalidArgument(need.status().message());
  // The data must be in the file before anything is allocated for it.
  if (bytes.size() - data_at != *need) {
    return InvalidArgument(
        what + ": .npy data has " + std::to_string(bytes.size() - data_at) +
        " bytes, shape (" + Excerpt(shape_text) + ") of " + DTypeName(dtype) +
        " needs " + std::to_string(*need));
  }
  Tensor t;
  if (Status s = t.TryAllocate(dtype, dims); !s.ok()) {
    return s.WithContext(what);
  }
  if (*need > 0) std::memcpy(t.raw_data(), bytes.data() + data_at, *need);
  return t;
}

StatusOr<Tensor> ReadNpy(const std::string& path) {
  PAREX_ASSIGN_OR_RETURN(std::string content, ReadFileBytes(path));
  return ParseNpy(content, "'" + path + "'");
}

std::string SerializeNpy(const Tensor& tensor) {
  const char* descr = "|u1";
  for (const DescrName& d : kDescrs) {
    if (d.dtype == tensor.dtype()) descr = d.descr;
  }
  std::string shape;
  for (size_t i = 0; i < tensor.dims().size(); ++i) {
    shape += std::to_string(tensor.dims()[i]) + ", ";
  }
  if (tensor.dims().size() > 1) shape.resize(shape.size() - 2);
  if (tensor.dims().size() == 1) shape.resize(shape.size() - 1);
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Data starts on a 64-byte boundary; the header ends with '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  if (tensor.bytes() > 0) {
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
  }
  return out;
}

Status WriteNpy(const std::string& path, const Tensor& tensor) {
  if (!tensor.place().is_cpu()) {
    return InvalidArgument("'" + path + "': only CPU tensors can be written");
  }
  return WriteFileBytes(path, SerializeNpy(tensor));
}

}  // namespace parex
