#include "kernels/io/tensor_io.h"

#include <gtest/gtest.h>

#include <sstream>

#include "proto/program_io.h"
#include "tests/paddle_models.h"

namespace parex {
namespace {

const std::string kTmp = PAREX_TEST_TMP_DIR;
const std::string& kModels = testing::PaddleModelsDir();

TEST(TensorIoTest, FileRoundTripIsByteIdentical) {
  Tensor t = MakeTensor<float>({2, 2}, {1.5f, -2, 3, 4});
  t.set_lod({{0, 1, 2}});
  std::string path = kTmp + "/t.bin";
  ASSERT_TRUE(SaveTensorFile(path, t).ok());
  Tensor back;
  ASSERT_TRUE(LoadTensorFile(path, &back).ok());
  EXPECT_EQ(back.dims(), t.dims());
  EXPECT_EQ(back.lod(), t.lod());
  EXPECT_EQ(ToVector<float>(back), ToVector<float>(t));
  std::string path2 = kTmp + "/t2.bin";
  ASSERT_TRUE(SaveTensorFile(path2, back).ok());
  EXPECT_EQ(*ReadFileBytes(path), *ReadFileBytes(path2));
}

TEST(TensorIoTest, PaddleParameterFilesRoundTrip) {
  PAREX_REQUIRE_PADDLE_MODELS();
  for (const char* name : {"fc_0.w_0", "fc_0.b_0"}) {
    std::string path = kModels + "/fit_a_line/" + name;
    Tensor t;
    Status s = LoadTensorFile(path, &t);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(t.dtype(), DType::kFP32);
    std::ostringstream out;
    ASSERT_TRUE(WriteTensor(out, t).ok());
    EXPECT_EQ(out.str(), *ReadFileBytes(path)) << name;
  }
}

TEST(TensorIoTest, MissingTruncatedAndTrailingFilesAreErrors) {
  Tensor t;
  Status missing = LoadTensorFile(kTmp + "/nope.bin", &t);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("nope.bin"), std::string::npos);

  Tensor v = MakeTensor<double>({4}, {1, 2, 3, 4});
  std::ostringstream out;
  ASSERT_TRUE(WriteTensor(out, v).ok());
  std::string bytes = out.str();
  std::string cut = kTmp + "/cut.bin";
  ASSERT_TRUE(WriteFileBytes(cut, bytes.substr(0, bytes.size() - 5)).ok());
  Status truncated = LoadTensorFile(cut, &t);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.code(), StatusCode::kDataLoss);
  EXPECT_NE(truncated.message().find("cut.bin"), std::string::npos);

  std::string extra = kTmp + "/extra.bin";
  ASSERT_TRUE(WriteFileBytes(extra, bytes + "xx").ok());
  Status trailing = LoadTensorFile(extra, &t);
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.message().find("trailing"), std::string::npos);
}

TEST(TensorIoTest, Fp16AndBf16AreStoredBitForBit) {
  Tensor h(DType::kFP16, {3});
  h.data<Float16>()[0].bits = 0x3c00;
  h.data<Float16>()[1].bits = 0xc000;
  h.data<Float16>()[2].bits = 0x7bff;
  std::string path = kTmp + "/h.bin";
  ASSERT_TRUE(SaveTensorFile(path, h).ok());
  Tensor back;
  ASSERT_TRUE(LoadTensorFile(path, &back).ok());
  ASSERT_EQ(back.dtype(), DType::kFP16);
  EXPECT_EQ(back.data<Float16>()[2].bits, 0x7bff);
}

}  // namespace
}  // namespace parex
