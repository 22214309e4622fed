// .npy files: read what NumPy wrote (fixtures made by make_fixtures.py with
// NumPy 2.4) and write the same bytes NumPy writes.
#include "apps/cli/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/apps/cli/cli_test_util.h"

namespace parex {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;

std::string Fixture(const std::string& name) {
  return std::string(PAREX_TEST_FIXTURES_DIR) + "/npy/" + name;
}

TEST(NpyTest, ReadsWhatNumpyWrote) {
  StatusOr<Tensor> f32 = ReadNpy(Fixture("f32_2x3.npy"));
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  EXPECT_EQ(f32->dtype(), DType::kFP32);
  EXPECT_EQ(f32->dims(), (Dims{2, 3}));
  EXPECT_EQ(ToVector<float>(*f32),
            (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f}));

  StatusOr<Tensor> i64 = ReadNpy(Fixture("i64_4.npy"));
  ASSERT_TRUE(i64.ok());
  EXPECT_EQ(i64->dims(), (Dims{4}));
  EXPECT_EQ(ToVector<int64_t>(*i64),
            (std::vector<int64_t>{3, -1, 0, 9000000000LL}));

  StatusOr<Tensor> scalar = ReadNpy(Fixture("f64_scalar.npy"));
  ASSERT_TRUE(scalar.ok());
  EXPECT_TRUE(scalar->dims().empty());
  EXPECT_EQ(scalar->data<double>()[0], 2.5);

  StatusOr<Tensor> u8 = ReadNpy(Fixture("u8_2x2x2.npy"));
  ASSERT_TRUE(u8.ok());
  EXPECT_EQ(u8->dims(), (Dims{2, 2, 2}));
  EXPECT_EQ(u8->data<uint8_t>()[7], 7);

  StatusOr<Tensor> b = ReadNpy(Fixture("bool_3.npy"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->dtype(), DType::kBool);
  EXPECT_EQ(b->numel(), 3);
}

TEST(NpyTest, WritesTheBytesNumpyWrites) {
  for (const char* name : {"f32_2x3.npy", "i64_4.npy", "f64_scalar.npy",
                           "u8_2x2x2.npy", "bool_3.npy"}) {
    StatusOr<Tensor> t = ReadNpy(Fixture(name));
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(SerializeNpy(*t), ReadFile(Fixture(name))) << name;
  }
}

TEST(NpyTest, RefusesWhatItCannotRead) {
  EXPECT_THAT(ReadNpy(Fixture("fortran_2x2.npy")).status().message(),
              HasSubstr("Fortran"));
  EXPECT_THAT(ReadNpy(Fixture("big_endian_2.npy")).status().message(),
              HasSubstr("'>i4'"));
  EXPECT_THAT(ReadNpy(Fixture("complex_1.npy")).status().message(),
              HasSubstr("'<c8'"));
  EXPECT_THAT(ReadNpy("/nonexistent.npy").status().message(),
              HasSubstr("cannot open '/nonexistent.npy'"));
  const std::string good = ReadFile(Fixture("f32_2x3.npy"));
  EXPECT_THAT(
      ParseNpy(good.substr(0, good.size() - 4), "'x.npy'").status().message(),
      HasSubstr("'x.npy': .npy data has 20 bytes"));
  EXPECT_THAT(ParseNpy("PK\x03\x04 not numpy", "'y.npy'").status().message(),
              HasSubstr("bad magic"));
  EXPECT_THAT(ParseNpy(good.substr(0, 40), "'z.npy'").status().message(),
              HasSubstr("truncated"));
}

}  // namespace
}  // namespace parex
