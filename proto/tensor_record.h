// Paddle's tensor record (one parameter file, or one entry of a combined
// `__params__` / `*.pdiparams` file), at the byte level:
//   u32 LoDTensor version (0) · u64 LoD level count, per level u64 byte length
//   and u64 offsets · u32 Tensor version (0) · i32 size of a serialized
//   VarType.TensorDesc and its bytes · raw little-endian data.
// This layer reads and writes the header; the data bytes are streamed by the
// caller straight into a tensor buffer (kernels/io/tensor_io.h).
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace parex {

struct TensorRecordHeader {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<std::vector<uint64_t>> lod;

  // Elements and bytes of the data that follows the header. A header read by
  // ReadTensorRecordHeader has sizes within base/checked_math.h's bounds.
  int64_t numel() const;
  uint64_t data_bytes() const;
};

// Reads one record header from `in`. `source` (file name, maybe with the
// variable) prefixes every error. Rejects a wrong version, a LoD or TensorDesc
// size that runs past the stream, an unknown dtype, negative dims, an element
// count or byte size that overflows or exceeds base/checked_math.h's bounds,
// and data that runs past the end of a seekable stream (checked before the
// caller allocates anything).
Status ReadTensorRecordHeader(std::istream& in, const std::string& source,
                              TensorRecordHeader* header);
Status WriteTensorRecordHeader(std::ostream& out,
                               const TensorRecordHeader& header);

// Reads exactly `size` bytes into `data` or reports a truncated record.
Status ReadRecordData(std::istream& in, const std::string& source, void* data,
                      uint64_t size);

}  // namespace parex
