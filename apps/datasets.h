// Readers for the datasets parex trains and tests on. The data comes from
// Debian packages (scripts/bootstrap unpacks them), never from the network.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/tensor.h"

namespace parex {

// Numeric CSV rows after skipping `skip_lines` header lines; a gzip file
// (`*.csv.gz`) is decompressed on the fly. Errors name the file and line.
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

// MNIST idx files, plain or gzip-compressed (`*.gz`, read through zlib):
// images as uint8 [n, rows, cols], labels as int64 [n, 1].
StatusOr<Tensor> ReadIdxImages(const std::string& path);
StatusOr<Tensor> ReadIdxLabels(const std::string& path);

// The whole content of a file, decompressed when it is gzip (zlib reads a
// plain file as it is). Errors name the file.
StatusOr<std::string> ReadMaybeGzipFile(const std::string& path);

// A labelled classification dataset split into train and test rows.
// Features are fp32 with the row as dim 0; labels int64 [n, 1].
struct ClassificationData {
  Tensor train_x, train_y, test_x, test_y;
  int num_classes = 0;
};

// scikit-learn's 8x8 digits (`digits.csv.gz`: 1797 rows of 64 pixel values
// 0..16 and the label, no header). Pixels become x / 16 in fp32 [n, 64]. The
// first rows train, the last ceil(1797 * test_fraction) rows test (360 for
// the default 0.2), in file order.
StatusOr<ClassificationData> LoadDigits(const std::string& csv_gz_path,
                                        double test_fraction = 0.2);

// Data augmentation for small image sets: appends to `x` (fp32 [n, h*w] or
// [n, ..., h, w], row-major images) copies of every image shifted by one
// pixel in each of the eight directions, the uncovered border filled with
// `fill`; `y` is repeated to match. 9n rows after, the originals first.
Status AddShiftedCopies(Tensor* x, Tensor* y, int64_t height, int64_t width,
                        float fill = 0.0f);

// Standardises every feature (every element position of a row) of fp32
// `train` and `test` with the mean and standard deviation of `train`; a
// feature that is constant in `train` is only centred. In place.
Status StandardizeFeatures(Tensor* train, Tensor* test);

// Where Debian's dataset-fashion-mnist installs the four idx files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST from `dir` (train-images-idx3-ubyte.gz, train-labels-...,
// t10k-images-..., t10k-labels-...): images fp32 [n, 1, 28, 28] scaled as
// Paddle's mnist reader scales them, x / 255 * 2 - 1; 60000 train and 10000
// test rows in file order.
StatusOr<ClassificationData> LoadFashionMnist(const std::string& dir);

}  // namespace parex
