// Readers for the datasets parex trains and tests on. The data comes from
// Debian packages (scripts/bootstrap unpacks them), never from the network.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/tensor.h"

namespace parex {

// Numeric CSV rows after skipping `skip_lines` header lines. Errors name the
// file and line.
StatusOr<std::vector<std::vector<double>>> ReadCsv(const std::string& path,
                                                   int skip_lines);

// UCI housing prepared exactly as Paddle's uci_housing reader does it: every
// feature column x becomes (x - mean) / (max - min) over all 506 rows; rows
// 0..403 train, 404..505 test. Features fp32 [n,13], prices fp32 [n,1].
struct HousingData {
  Tensor train_x, train_y, test_x, test_y;
};
// `csv_path`: scikit-learn's boston_house_prices.csv (2 header lines).
StatusOr<HousingData> LoadUciHousing(const std::string& csv_path);

// MNIST idx files (uncompressed): images as uint8 [n, rows, cols], labels as
// int64 [n, 1].
StatusOr<Tensor> ReadIdxImages(const std::string& path);
StatusOr<Tensor> ReadIdxLabels(const std::string& path);

}  // namespace parex
