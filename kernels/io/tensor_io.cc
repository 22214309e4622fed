#include "kernels/io/tensor_io.h"

#include <sstream>

#include "proto/program_io.h"
#include "proto/tensor_record.h"

namespace parex {

Status ReadTensor(std::istream& in, const std::string& source, Tensor* tensor) {
  TensorRecordHeader header;
  PAREX_RETURN_IF_ERROR(ReadTensorRecordHeader(in, source, &header));
  Tensor t;
  if (Status s = t.TryAllocate(header.dtype, header.dims); !s.ok()) {
    return s.WithContext(source);
  }
  PAREX_RETURN_IF_ERROR(
      ReadRecordData(in, source, t.raw_data(), header.data_bytes()));
  t.set_lod(std::move(header.lod));
  *tensor = std::move(t);
  return Status::Ok();
}

Status WriteTensor(std::ostream& out, const Tensor& tensor) {
  PAREX_CHECK(tensor.place().is_cpu(), "WriteTensor of a device tensor");
  TensorRecordHeader header;
  header.dtype = tensor.dtype();
  header.dims = tensor.dims();
  header.lod = tensor.lod();
  PAREX_RETURN_IF_ERROR(WriteTensorRecordHeader(out, header));
  out.write(static_cast<const char*>(tensor.raw_data()),
            static_cast<std::streamsize>(tensor.bytes()));
  if (!out) return IoError("tensor data write failed");
  return Status::Ok();
}

Status LoadTensorFile(const std::string& path, Tensor* tensor) {
  PAREX_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  std::istringstream in(bytes);
  PAREX_RETURN_IF_ERROR(ReadTensor(in, "tensor file '" + path + "'", tensor));
  if (static_cast<size_t>(in.tellg()) != bytes.size()) {
    return DataLoss("tensor file '" + path +
                    "': " + std::to_string(bytes.size() - in.tellg()) +
                    " trailing bytes after the record");
  }
  return Status::Ok();
}

Status SaveTensorFile(const std::string& path, const Tensor& tensor) {
  std::ostringstream out;
  PAREX_RETURN_IF_ERROR(WriteTensor(out, tensor));
  return WriteFileBytes(path, out.str());
}

}  // namespace parex
