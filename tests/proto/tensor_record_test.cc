#include "proto/tensor_record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

namespace parex {
namespace {

std::string Record(const TensorRecordHeader& h, const std::string& data) {
  std::ostringstream out;
  EXPECT_TRUE(WriteTensorRecordHeader(out, h).ok());
  out << data;
  return out.str();
}

TensorRecordHeader FloatHeader(std::vector<int64_t> dims) {
  TensorRecordHeader h;
  h.dtype = DType::kFP32;
  h.dims = std::move(dims);
  return h;
}

TEST(TensorRecordTest, LayoutMatchesPaddle) {
  TensorRecordHeader h = FloatHeader({2, 3});
  std::string bytes = Record(h, std::string(24, '\0'));
  uint32_t version;
  uint64_t levels;
  std::memcpy(&version, bytes.data(), 4);
  std::memcpy(&levels, bytes.data() + 4, 8);
  EXPECT_EQ(version, 0u);
  EXPECT_EQ(levels, 0u);
  uint32_t tensor_version;
  int32_t desc_size;
  std::memcpy(&tensor_version, bytes.data() + 12, 4);
  std::memcpy(&desc_size, bytes.data() + 16, 4);
  EXPECT_EQ(tensor_version, 0u);
  // TensorDesc{data_type: FP32, dims: 2, dims: 3} unpacked = 6 bytes.
  EXPECT_EQ(desc_size, 6);
  EXPECT_EQ(bytes.size(), 20u + 6u + 24u);
}

TEST(TensorRecordTest, HeaderRoundTripWithLoD) {
  TensorRecordHeader h = FloatHeader({4, 1});
  h.lod = {{0, 2, 4}};
  std::string data(16, '\x7f');
  std::istringstream in(Record(h, data));
  TensorRecordHeader back;
  ASSERT_TRUE(ReadTensorRecordHeader(in, "mem", &back).ok());
  EXPECT_EQ(back.dtype, DType::kFP32);
  EXPECT_EQ(back.dims, h.dims);
  EXPECT_EQ(back.lod, h.lod);
  std::string got(16, '\0');
  ASSERT_TRUE(ReadRecordData(in, "mem", got.data(), 16).ok());
  EXPECT_EQ(got, data);
}

TEST(TensorRecordTest, WrongVersionIsAnError) {
  std::string bytes = Record(FloatHeader({1}), std::string(4, '\0'));
  bytes[0] = 1;
  std::istringstream in(bytes);
  TensorRecordHeader h;
  Status s = ReadTensorRecordHeader(in, "w.bin", &h);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("w.bin"), std::string::npos);
  EXPECT_NE(s.message().find("version 1"), std::string::npos);
}

TEST(TensorRecordTest, TruncatedDataIsAnError) {
  std::string bytes = Record(FloatHeader({10}), std::string(40, '\0'));
  for (size_t cut : {size_t{3}, size_t{10}, size_t{21}, bytes.size() - 1}) {
    std::istringstream in(bytes.substr(0, cut));
    TensorRecordHeader h;
    Status s = ReadTensorRecordHeader(in, "t.bin", &h);
    if (s.ok()) {
      std::string data(h.data_bytes(), '\0');
      s = ReadRecordData(in, "t.bin", data.data(), data.size());
    }
    ASSERT_FALSE(s.ok()) << "cut at " << cut;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("t.bin"), std::string::npos);
  }
}

TEST(TensorRecordTest, ImplausibleSizesAreErrors) {
  std::string bytes = Record(FloatHeader({2}), std::string(8, '\0'));
  std::string huge_desc = bytes;
  int32_t big = 1 << 30;
  std::memcpy(huge_desc.data() + 16, &big, 4);
  std::istringstream in1(huge_desc);
  TensorRecordHeader h;
  EXPECT_FALSE(ReadTensorRecordHeader(in1, "d", &h).ok());

  std::string many_levels = bytes;
  uint64_t levels = 1000;
  std::memcpy(many_levels.data() + 4, &levels, 8);
  std::istringstream in2(many_levels);
  EXPECT_FALSE(ReadTensorRecordHeader(in2, "l", &h).ok());

  // A dims entry claiming more data than the stream holds.
  std::string big_dims = Record(FloatHeader({1000000}), std::string(8, '\0'));
  std::istringstream in3(big_dims);
  Status s = ReadTensorRecordHeader(in3, "b", &h);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("truncated"), std::string::npos);
}

TEST(TensorRecordTest, DimsWhoseProductWrapsAreErrors) {
  // 2^32 * 2^32 * 4 bytes wraps to 0 in 64 bits: the old "enough bytes?"
  // test passed and an empty buffer was read as a huge tensor.
  TensorRecordHeader h;
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{int64_t{1} << 32, int64_t{1} << 32},
        std::vector<int64_t>{int64_t{1} << 62, 4},
        std::vector<int64_t>{int64_t{1} << 31, int64_t{1} << 31, 16}}) {
    std::istringstream in(Record(FloatHeader(dims), ""));
    Status s = ReadTensorRecordHeader(in, "params 'w'", &h);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("params 'w'"), std::string::npos) << s.message();
  }
}

TEST(TensorRecordTest, NonElementDTypeIsAnError) {
  TensorRecordHeader h = FloatHeader({1});
  h.dtype = static_cast<DType>(7);  // LOD_TENSOR is not an element type
  std::istringstream in(Record(h, std::string(4, '\0')));
  TensorRecordHeader back;
  Status s = ReadTensorRecordHeader(in, "x", &back);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no element type"), std::string::npos);
}

}  // namespace
}  // namespace parex
