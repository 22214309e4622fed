#include "apps/datasets.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/checked_math.h"
#include "base/text.h"
#include "kernels/allocator.h"

namespace parex {
namespace {

// zlib's error for `file`, without the "<path>: " it puts in front.
std::string GzMessage(gzFile file, const std::string& path) {
  int code = Z_OK;
  std::string message = gzerror(file, &code);
  if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);
  return message;
}

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  return (uint32_t(uint8_t(bytes[at])) << 24) |
         (uint32_t(uint8_t(bytes[at + 1])) << 16) |
         (uint32_t(uint8_t(bytes[at + 2])) << 8) |
         uint32_t(uint8_t(bytes[at + 3]));
}

// Owns a gzFile.
struct GzCloser {
  gzFile file;
  ~GzCloser() {
    if (file != nullptr) gzclose(file);
  }
};

StatusOr<std::vector<std::vector<double>>> ParseCsv(const std::string& text,
                                                    const std::string& path,
                                                    int skip_lines) {
  std::vector<std::vector<double>> rows;
  size_t pos = 0;
  int line_no = 0;
  std::string line, field;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    line.assign(text, pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line_no <= skip_lines) continue;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<double> row;
    size_t at = 0;
    while (true) {
      size_t comma = line.find(',', at);
      field.assign(line, at,
                   comma == std::string::npos ? std::string::npos : comma - at);
      char* stop = nullptr;
      double v = std::strtod(field.c_str(), &stop);
      if (field.empty() || *stop != '\0') {
        return InvalidArgument("CSV file '" + path + "' line " +
                               std::to_string(line_no) + ": '" +
                               Excerpt(field) + "' is not a number");
      }
      row.push_back(v);
      if (comma == std::string::npos) break;
      at = comma + 1;
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

}  // namespace

StatusOr<std::string> ReadMaybeGzipFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return NotFound("dataset file '" + path + "' not found (" +
                    std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    // gzopen would block on a FIFO.
    return InvalidArgument("dataset file '" + path + "' is not a regular file");
  }
  GzCloser gz{gzopen(path.c_str(), "rb")};
  if (gz.file == nullptr) {
    return IoError("cannot open '" + path + "': " + std::strerror(errno));
  }
  gzbuffer(gz.file, 1 << 17);
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  constexpr unsigned kChunk = 1 << 20;
  // A gzip stream can expand a thousandfold: stop at the allocation limit
  // rather than let a crafted file exhaust memory.
  const size_t limit = AllocationLimit();
  while (true) {
    size_t at = bytes.size();
    if (at + kChunk > limit) {
      return ResourceExhausted("'" + path + "' decompresses to more than " +
                               std::to_string(limit) +
                               " bytes (PAREX_MAX_MEMORY_BYTES)");
    }
    bytes.resize(at + kChunk);
    int n = gzread(gz.file, &bytes[at], kChunk);
    if (n < 0) {
      return DataLoss("'" + path + "': " + GzMessage(gz.file, path));
    }
    bytes.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
  }
  int code = Z_OK;
  gzerror(gz.file, &code);
  if (code != Z_OK) {
    // A truncated gzip stream ends in Z_BUF_ERROR without a read error.
    return DataLoss("'" + path + "': " + GzMessage(gz.file, path));
  }
  return bytes;
}

StatusOr<std::vector<std::vector<double>>> ReadCsv(const std::string& path,
                                                   int skip_lines) {
  PAREX_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  return ParseCsv(text, path, skip_lines);
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
    float* x =
        (train ? data.train_x : data.test_x).data<float>() + i * kFeatures;
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
  PAREX_ASSIGN_OR_RETURN(std::string bytes, ReadMaybeGzipFile(path));
  if (bytes.size() < 16 || BigEndian32(bytes, 0) != 0x00000803) {
    return InvalidArgument("'" + path + "' is not an idx3-ubyte image file");
  }
  int64_t n = BigEndian32(bytes, 4), rows = BigEndian32(bytes, 8),
          cols = BigEndian32(bytes, 12);
  // Three 32-bit counts: their product can wrap 64 bits.
  StatusOr<int64_t> numel =
      CheckedNumel({n, rows, cols}, "idx file '" + path + "'");
  if (!numel.ok()) return DataLoss(numel.status().message());
  if (bytes.size() - 16 != static_cast<uint64_t>(*numel)) {
    return DataLoss("idx file '" + path + "': size does not match its header");
  }
  Tensor images(DType::kUInt8, {n, rows, cols});
  std::copy(bytes.begin() + 16, bytes.end(), images.data<uint8_t>());
  return images;
}

StatusOr<Tensor> ReadIdxLabels(const std::string& path) {
  PAREX_ASSIGN_OR_RETURN(std::string bytes, ReadMaybeGzipFile(path));
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

StatusOr<ClassificationData> LoadDigits(const std::string& csv_gz_path,
                                        double test_fraction) {
  PAREX_ASSIGN_OR_RETURN(auto rows, ReadCsv(csv_gz_path, 0));
  constexpr int kPixels = 64;
  const int64_t n = static_cast<int64_t>(rows.size());
  if (n == 0 || rows[0].size() != kPixels + 1) {
    return InvalidArgument(
        "'" + csv_gz_path + "' is not the 8x8 digits: " + std::to_string(n) +
        " rows of " + std::to_string(n ? rows[0].size() : 0) + " fields");
  }
  if (!(test_fraction > 0 && test_fraction < 1)) {
    return InvalidArgument("digits: test fraction " +
                           std::to_string(test_fraction) +
                           " is outside (0, 1)");
  }
  const int64_t test = static_cast<int64_t>(std::ceil(n * test_fraction));
  const int64_t train = n - test;
  ClassificationData data;
  data.num_classes = 10;
  data.train_x = Tensor(DType::kFP32, {train, kPixels});
  data.train_y = Tensor(DType::kInt64, {train, 1});
  data.test_x = Tensor(DType::kFP32, {test, kPixels});
  data.test_y = Tensor(DType::kInt64, {test, 1});
  for (int64_t r = 0; r < n; ++r) {
    const bool is_train = r < train;
    const int64_t i = is_train ? r : r - train;
    float* x =
        (is_train ? data.train_x : data.test_x).data<float>() + i * kPixels;
    for (int p = 0; p < kPixels; ++p) {
      x[p] = static_cast<float>(rows[r][p] / 16.0);
    }
    const double label = rows[r][kPixels];
    if (label != std::floor(label) || label < 0 || label > 9) {
      return InvalidArgument("'" + csv_gz_path + "' row " + std::to_string(r) +
                             ": label " + std::to_string(label) +
                             " is not a digit");
    }
    (is_train ? data.train_y : data.test_y).data<int64_t>()[i] =
        static_cast<int64_t>(label);
  }
  return data;
}

Status AddShiftedCopies(Tensor* x, Tensor* y, int64_t height, int64_t width,
                        float fill) {
  const int64_t n = x->rank() > 0 ? x->dim(0) : 0;
  if (x->dtype() != DType::kFP32 || n == 0 ||
      x->numel() != n * height * width || y->rank() < 1 || y->dim(0) != n) {
    return InvalidArgument("AddShiftedCopies: images " + x->DebugString() +
                           " are not fp32 rows of " + std::to_string(height) +
                           "x" + std::to_string(width) + " with labels " +
                           y->DebugString());
  }
  constexpr int kCopies = 9;
  constexpr int kDr[kCopies] = {0, 1, -1, 0, 0, 1, 1, -1, -1};
  constexpr int kDc[kCopies] = {0, 0, 0, 1, -1, 1, -1, 1, -1};
  Dims x_dims = x->dims(), y_dims = y->dims();
  x_dims[0] = y_dims[0] = kCopies * n;
  Tensor out_x(DType::kFP32, x_dims), out_y(y->dtype(), y_dims);
  const float* in = x->data<float>();
  float* out = out_x.data<float>();
  const int64_t pixels = height * width;
  for (int k = 0; k < kCopies; ++k) {
    std::memcpy(static_cast<char*>(out_y.raw_data()) + k * y->bytes(),
                y->raw_data(), y->bytes());
    for (int64_t i = 0; i < n; ++i) {
      const float* src = in + i * pixels;
      float* dst = out + (k * n + i) * pixels;
      for (int64_t r = 0; r < height; ++r) {
        for (int64_t c = 0; c < width; ++c) {
          const int64_t sr = r - kDr[k], sc = c - kDc[k];
          const bool inside = sr >= 0 && sr < height && sc >= 0 && sc < width;
          dst[r * width + c] = inside ? src[sr * width + sc] : fill;
        }
      }
    }
  }
  *x = std::move(out_x);
  *y = std::move(out_y);
  return Status::Ok();
}

Status StandardizeFeatures(Tensor* train, Tensor* test) {
  const auto width_of = [](const Tensor* t) {
    return t->dim(0) == 0 ? int64_t{-1} : t->numel() / t->dim(0);
  };
  if (train->dtype() != DType::kFP32 || test->dtype() != DType::kFP32 ||
      train->rank() < 1 || test->rank() < 1 || train->dim(0) == 0 ||
      (test->dim(0) != 0 && width_of(test) != width_of(train))) {
    return InvalidArgument("StandardizeFeatures: " + train->DebugString() +
                           " and " + test->DebugString() +
                           " are not fp32 rows of one width");
  }
  const int64_t n = train->dim(0), width = train->numel() / n;
  std::vector<double> sum(width, 0.0), sum_sq(width, 0.0);
  const float* t = train->data<float>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t f = 0; f < width; ++f) {
      const double v = t[i * width + f];
      sum[f] += v;
      sum_sq[f] += v * v;
    }
  }
  std::vector<float> mean(width), scale(width);
  for (int64_t f = 0; f < width; ++f) {
    const double m = sum[f] / n;
    const double var = std::max(0.0, sum_sq[f] / n - m * m);
    mean[f] = static_cast<float>(m);
    scale[f] = var > 1e-12 ? static_cast<float>(1.0 / std::sqrt(var)) : 1.0f;
  }
  for (Tensor* x : {train, test}) {
    float* p = x->data<float>();
    for (int64_t i = 0; i < x->numel(); ++i) {
      const int64_t f = i % width;
      p[i] = (p[i] - mean[f]) * scale[f];
    }
  }
  return Status::Ok();
}

namespace {

// uint8 [n, 28, 28] -> fp32 [n, 1, 28, 28] as x / 255 * 2 - 1.
Tensor ScaleImages(const Tensor& images) {
  Tensor out(DType::kFP32, {images.dim(0), 1, images.dim(1), images.dim(2)});
  const uint8_t* in = images.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i) {
    o[i] = static_cast<float>(in[i]) / 255.0f * 2.0f - 1.0f;
  }
  return out;
}

}  // namespace

StatusOr<ClassificationData> LoadFashionMnist(const std::string& dir) {
  ClassificationData data;
  data.num_classes = 10;
  struct Split {
    const char* prefix;
    Tensor* x;
    Tensor* y;
  };
  for (const Split& split : {Split{"train", &data.train_x, &data.train_y},
                             Split{"t10k", &data.test_x, &data.test_y}}) {
    const std::string images_path =
        dir + "/" + split.prefix + "-images-idx3-ubyte.gz";
    const std::string labels_path =
        dir + "/" + split.prefix + "-labels-idx1-ubyte.gz";
    PAREX_ASSIGN_OR_RETURN(Tensor images, ReadIdxImages(images_path));
    PAREX_ASSIGN_OR_RETURN(Tensor labels, ReadIdxLabels(labels_path));
    if (images.dim(0) != labels.dim(0) || images.dim(1) != 28 ||
        images.dim(2) != 28) {
      return InvalidArgument("Fashion-MNIST '" + images_path + "' holds " +
                             DimsToString(images.dims()) + " images for " +
                             std::to_string(labels.dim(0)) + " labels");
    }
    *split.x = ScaleImages(images);
    *split.y = std::move(labels);
  }
  return data;
}

}  // namespace parex
