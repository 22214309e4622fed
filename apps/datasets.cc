#include "apps/datasets.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "proto/program_io.h"

namespace parex {
namespace {

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  return (uint32_t(uint8_t(bytes[at])) << 24) |
         (uint32_t(uint8_t(bytes[at + 1])) << 16) |
         (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
}

}  // namespace

StatusOr<std::vector<std::vector<double>>> ReadCsv(const std::string& path,
                                                   int skip_lines) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open CSV file '" + path + "'");
  std::vector<std::vector<double>> rows;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no <= skip_lines) continue;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<double> row;
    std::stringstream fields(line);
    std::string field;
    while (std::getline(fields, field, ',')) {
      char* end = nullptr;
      double v = std::strtod(field.c_str(), &end);
      if (field.empty() || *end != '\0') {
        return InvalidArgument("CSV file '" + path + "' line " +
                               std::to_string(line_no) + ": '" + field +
                               "' is not a number");
      }
      row.push_back(v);
    }
    if (!rows.empty() && row.size() != rows.front().size()) {
      return InvalidArgument("CSV file '" + path + "' line " +
                             std::to_string(line_no) + ": " +
                             std::to_string(row.size()) + " fields, expected " +
                             std::to_string(rows.front().size()));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

StatusOr<HousingData> LoadUciHousing(const std::string& csv_path) {
  PAREX_ASSIGN_OR_RETURN(auto rows, ReadCsv(csv_path, 2));
  constexpr int kFeatures = 13;
  constexpr int64_t kRows = 506, kTrain = 404;
  if (static_cast<int64_t>(rows.size()) != kRows || rows[0].size() != 14) {
    return InvalidArgument("'" + csv_path + "' is not UCI housing: " +
                           std::to_string(rows.size()) + " rows");
  }
  double max[kFeatures], min[kFeatures], sum[kFeatures] = {};
  for (int f = 0; f < kFeatures; ++f) max[f] = min[f] = rows[0][f];
  for (const auto& row : rows) {
    for (int f = 0; f < kFeatures; ++f) {
      max[f] = std::max(max[f], row[f]);
      min[f] = std::min(min[f], row[f]);
      sum[f] += row[f];
    }
  }
  HousingData data;
  data.train_x = Tensor(DType::kFP32, {kTrain, kFeatures});
  data.train_y = Tensor(DType::kFP32, {kTrain, 1});
  data.test_x = Tensor(DType::kFP32, {kRows - kTrain, kFeatures});
  data.test_y = Tensor(DType::kFP32, {kRows - kTrain, 1});
  for (int64_t r = 0; r < kRows; ++r) {
    bool train = r < kTrain;
    int64_t i = train ? r : r - kTrain;
    float* x = (train ? data.train_x : data.test_x).data<float>() + i * kFeatures;
    for (int f = 0; f < kFeatures; ++f) {
      double avg = sum[f] / kRows;
      x[f] = static_cast<float>((rows[r][f] - avg) / (max[f] - min[f]));
    }
    (train ? data.train_y : data.test_y).data<float>()[i] =
        static_cast<float>(rows[r][kFeatures]);
  }
  return data;
}

StatusOr<Tensor> ReadIdxImages(const std::string& path) {
  PAREX_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  if (bytes.size() < 16 || BigEndian32(bytes, 0) != 0x00000803) {
    return InvalidArgument("'" + path + "' is not an idx3-ubyte image file");
  }
  int64_t n = BigEndian32(bytes, 4), rows = BigEndian32(bytes, 8),
          cols = BigEndian32(bytes, 12);
  if (bytes.size() != static_cast<size_t>(16 + n * rows * cols)) {
    return DataLoss("idx file '" + path + "': size does not match its header");
  }
  Tensor images(DType::kUInt8, {n, rows, cols});
  std::copy(bytes.begin() + 16, bytes.end(), images.data<uint8_t>());
  return images;
}

StatusOr<Tensor> ReadIdxLabels(const std::string& path) {
  PAREX_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  if (bytes.size() < 8 || BigEndian32(bytes, 0) != 0x00000801) {
    return InvalidArgument("'" + path + "' is not an idx1-ubyte label file");
  }
  int64_t n = BigEndian32(bytes, 4);
  if (bytes.size() != static_cast<size_t>(8 + n)) {
    return DataLoss("idx file '" + path + "': size does not match its header");
  }
  Tensor labels(DType::kInt64, {n, 1});
  for (int64_t i = 0; i < n; ++i) {
    labels.data<int64_t>()[i] = static_cast<uint8_t>(bytes[8 + i]);
  }
  return labels;
}

}  // namespace parex
