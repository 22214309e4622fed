#include "proto/tensor_record.h"

#include "base/checked_math.h"
#include "base/dims.h"
#include "proto/framework.pb.h"
#include "proto/program_io.h"

namespace parex {
namespace {

namespace proto = ::paddle::framework::proto;

// Tensor files are little-endian; parex runs on little-endian hosts only
// (x86_64, aarch64), so the raw bytes are the values.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "parex's tensor I/O assumes a little-endian host");

template <typename T>
bool ReadPod(std::istream& in, T* value) {
  in.read(reinterpret_cast<char*>(value), sizeof(T));
  return static_cast<size_t>(in.gcount()) == sizeof(T);
}

template <typename T>
void WritePod(std::ostream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Bytes left in a seekable stream, or -1 when unknown.
int64_t Remaining(std::istream& in) {
  auto here = in.tellg();
  if (here < 0) return -1;
  in.seekg(0, std::ios::end);
  auto end = in.tellg();
  in.seekg(here);
  return end < 0 ? -1 : static_cast<int64_t>(end - here);
}

constexpr uint64_t kMaxLodLevels = 64;
constexpr int32_t kMaxDescBytes = 1 << 20;
// A LoD level's offsets, when the stream cannot say how much is left.
constexpr uint64_t kMaxLodBytes = uint64_t{1} << 32;

}  // namespace

int64_t TensorRecordHeader::numel() const {
  StatusOr<int64_t> n = CheckedNumel(dims, "tensor record");
  return n.ok() ? *n : kNumelOverflow;
}

uint64_t TensorRecordHeader::data_bytes() const {
  StatusOr<uint64_t> b = CheckedBytes(numel(), SizeOf(dtype), "tensor record");
  return b.ok() ? *b : UINT64_MAX;
}

namespace {

// The record's version and its LoD: a level count, then each level's byte
// length and offsets, every length checked against what is left.
Status ReadLod(std::istream& in, const std::string& source,
               TensorRecordHeader* header) {
  uint32_t version = 0;
  if (!ReadPod(in, &version)) {
    return DataLoss(source + ": truncated tensor record (no version)");
  }
  if (version != 0) {
    return DataLoss(source + ": tensor record version " +
                    std::to_string(version) + ", only 0 is supported");
  }
  uint64_t levels = 0;
  if (!ReadPod(in, &levels)) {
    return DataLoss(source + ": truncated tensor record (no LoD level count)");
  }
  if (levels > kMaxLodLevels) {
    return DataLoss(source + ": tensor record claims " +
                    std::to_string(levels) + " LoD levels");
  }
  header->lod.assign(levels, {});
  for (uint64_t level = 0; level < levels; ++level) {
    uint64_t bytes = 0;
    if (!ReadPod(in, &bytes)) {
      return DataLoss(source + ": truncated LoD level " +
                      std::to_string(level));
    }
    const int64_t remaining = Remaining(in);
    if (bytes % sizeof(uint64_t) != 0 || bytes > kMaxLodBytes ||
        (remaining >= 0 && bytes > static_cast<uint64_t>(remaining))) {
      return DataLoss(source + ": LoD level " + std::to_string(level) +
                      " has a bad byte length " + std::to_string(bytes));
    }
    header->lod[level].resize(bytes / sizeof(uint64_t));
    PAREX_RETURN_IF_ERROR(
        ReadRecordData(in, source, header->lod[level].data(), bytes));
  }
  return Status::Ok();
}

// The tensor's version and its TensorDesc (size-checked bytes that must
// parse): an element type and non-negative dims.
Status ReadTensorDesc(std::istream& in, const std::string& source,
                      TensorRecordHeader* header) {
  uint32_t tensor_version = 0;
  if (!ReadPod(in, &tensor_version)) {
    return DataLoss(source + ": truncated tensor record (no tensor version)");
  }
  if (tensor_version != 0) {
    return DataLoss(source + ": tensor version " +
                    std::to_string(tensor_version) + ", only 0 is supported");
  }
  int32_t desc_size = 0;
  if (!ReadPod(in, &desc_size)) {
    return DataLoss(source + ": truncated tensor record (no TensorDesc size)");
  }
  const int64_t remaining = Remaining(in);
  if (desc_size < 0 || desc_size > kMaxDescBytes ||
      (remaining >= 0 && desc_size > remaining)) {
    return DataLoss(source + ": bad TensorDesc size " +
                    std::to_string(desc_size));
  }
  std::string desc_bytes(static_cast<size_t>(desc_size), '\0');
  PAREX_RETURN_IF_ERROR(
      ReadRecordData(in, source, desc_bytes.data(), desc_bytes.size()));
  RouteProtobufLogging();
  proto::VarType::TensorDesc desc;
  if (!desc.ParseFromString(desc_bytes)) {
    return DataLoss(source + ": TensorDesc does not parse");
  }
  if (!IsElementType(desc.data_type())) {
    return DataLoss(source + ": tensor data type " +
                    std::to_string(desc.data_type()) + " is no element type");
  }
  header->dtype = static_cast<DType>(desc.data_type());
  header->dims.assign(desc.dims().begin(), desc.dims().end());
  for (int64_t d : header->dims) {
    if (d < 0) {
      return DataLoss(source + ": negative dimension in tensor record");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ReadTensorRecordHeader(std::istream& in, const std::string& source,
                              TensorRecordHeader* header) {
  PAREX_RETURN_IF_ERROR(ReadLod(in, source, header));
  PAREX_RETURN_IF_ERROR(ReadTensorDesc(in, source, header));
  // The data's size: no overflow, and no more than the stream holds.
  StatusOr<int64_t> numel = CheckedNumel(header->dims, source);
  if (!numel.ok()) return DataLoss(numel.status().message());
  StatusOr<uint64_t> bytes =
      CheckedBytes(*numel, SizeOf(header->dtype), source);
  if (!bytes.ok()) return DataLoss(bytes.status().message());
  const int64_t remaining = Remaining(in);
  if (remaining >= 0 &&
      header->data_bytes() > static_cast<uint64_t>(remaining)) {
    return DataLoss(source + ": truncated tensor data: needs " +
                    std::to_string(header->data_bytes()) + " bytes, " +
                    std::to_string(remaining) + " left");
  }
  return Status::Ok();
}

Status WriteTensorRecordHeader(std::ostream& out,
                               const TensorRecordHeader& header) {
  WritePod<uint32_t>(out, 0);
  WritePod<uint64_t>(out, header.lod.size());
  for (const auto& level : header.lod) {
    WritePod<uint64_t>(out, level.size() * sizeof(uint64_t));
    out.write(reinterpret_cast<const char*>(level.data()),
              static_cast<std::streamsize>(level.size() * sizeof(uint64_t)));
  }
  WritePod<uint32_t>(out, 0);
  proto::VarType::TensorDesc desc;
  desc.set_data_type(static_cast<proto::VarType::Type>(header.dtype));
  for (int64_t d : header.dims) desc.add_dims(d);
  std::string bytes = desc.SerializeAsString();
  WritePod<int32_t>(out, static_cast<int32_t>(bytes.size()));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return IoError("tensor record header write failed");
  return Status::Ok();
}

Status ReadRecordData(std::istream& in, const std::string& source, void* data,
                      uint64_t size) {
  in.read(static_cast<char*>(data), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) {
    return DataLoss(source + ": truncated tensor record: wanted " +
                    std::to_string(size) + " bytes, got " +
                    std::to_string(in.gcount()));
  }
  return Status::Ok();
}

}  // namespace parex
