#include "apps/datasets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace parex {
namespace {

const std::string kData = PAREX_DATA_DIR;
const std::string kTmp = PAREX_TEST_TMP_DIR;

TEST(DatasetsTest, HousingIsSplitAndNormalisedLikePaddle) {
  auto data = LoadUciHousing(kData + "/boston_house_prices.csv");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->train_x.dims(), (Dims{404, 13}));
  EXPECT_EQ(data->test_y.dims(), (Dims{102, 1}));
  // (x - mean) / (max - min) over all rows: every column sums to ~0 and
  // spans exactly 1.
  for (int f = 0; f < 13; ++f) {
    double sum = 0, lo = 1e9, hi = -1e9;
    for (const Tensor* t : {&data->train_x, &data->test_x}) {
      for (int64_t r = 0; r < t->dim(0); ++r) {
        double v = t->data<float>()[r * 13 + f];
        sum += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    EXPECT_NEAR(sum, 0, 1e-3) << "column " << f;
    EXPECT_NEAR(hi - lo, 1, 1e-5) << "column " << f;
  }
  // Prices are not normalised: the first row's MEDV is 24.0.
  EXPECT_FLOAT_EQ(data->train_y.data<float>()[0], 24.0f);
}

TEST(DatasetsTest, CsvErrorsNameFileAndLine) {
  std::string path = kTmp + "/bad.csv";
  std::ofstream(path) << "a,b\n1,2\n3,x\n";
  auto rows = ReadCsv(path, 1);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("bad.csv"), std::string::npos);
  EXPECT_NE(rows.status().message().find("line 3"), std::string::npos);
  std::ofstream(path) << "1,2\n3\n";
  EXPECT_FALSE(ReadCsv(path, 0).ok());
  EXPECT_FALSE(LoadUciHousing(kTmp + "/missing.csv").ok());
}

TEST(DatasetsTest, IdxHeadersAreChecked) {
  std::string path = kTmp + "/bad.idx";
  std::ofstream(path) << "not an idx file";
  EXPECT_FALSE(ReadIdxImages(path).ok());
  EXPECT_FALSE(ReadIdxLabels(path).ok());
}

}  // namespace
}  // namespace parex
