#include "apps/reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

namespace parex {
namespace {

// Uniform in [0, bound] by rejection from the generator's full 64-bit range.
uint64_t UniformUpTo(std::mt19937_64& rng, uint64_t bound) {
  if (bound == UINT64_MAX) return rng();
  const uint64_t range = bound + 1;
  // The largest multiple of `range` that fits, so every residue is as likely.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % range + 1) % range;
  uint64_t draw;
  do {
    draw = rng();
  } while (draw > limit);
  return draw % range;
}

}  // namespace

std::vector<int64_t> ShuffledOrder(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  const uint64_t e = static_cast<uint64_t>(epoch);
  std::seed_seq seq{static_cast<uint32_t>(seed),
                    static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(e),
                    static_cast<uint32_t>(e >> 32)};
  std::mt19937_64 rng(seq);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j =
        static_cast<int64_t>(UniformUpTo(rng, static_cast<uint64_t>(i)));
    std::swap(order[i], order[j]);
  }
  return order;
}

StatusOr<BatchReader> BatchReader::Create(
    std::vector<std::pair<std::string, Tensor>> columns,
    const BatchReaderOptions& options) {
  if (columns.empty()) return InvalidArgument("BatchReader: no columns");
  if (options.batch_size < 1) {
    return InvalidArgument("BatchReader: batch_size " +
                           std::to_string(options.batch_size) + " < 1");
  }
  std::set<std::string> names;
  int64_t rows = -1;
  for (const auto& [name, t] : columns) {
    if (!names.insert(name).second) {
      return InvalidArgument("BatchReader: column '" + name + "' given twice");
    }
    if (!t.defined() || t.rank() == 0 || !t.place().is_cpu()) {
      return InvalidArgument("BatchReader: column '" + name + "' (" +
                             t.DebugString() +
                             ") must be a CPU tensor of rank >= 1");
    }
    if (rows >= 0 && t.dim(0) != rows) {
      return InvalidArgument(
          "BatchReader: column '" + name + "' has " + std::to_string(t.dim(0)) +
          " rows, '" + columns.front().first + "' has " + std::to_string(rows));
    }
    rows = t.dim(0);
  }
  return BatchReader(std::move(columns), options, rows);
}

int64_t BatchReader::num_batches() const {
  const int64_t b = options_.batch_size;
  return options_.drop_last ? num_rows_ / b : (num_rows_ + b - 1) / b;
}

std::vector<int64_t> BatchReader::EpochOrder(int64_t epoch) const {
  if (options_.shuffle) return ShuffledOrder(num_rows_, options_.seed, epoch);
  std::vector<int64_t> order(static_cast<size_t>(num_rows_));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

FeedMap BatchReader::Gather(const std::vector<int64_t>& order, int64_t begin,
                            int64_t end) const {
  FeedMap batch;
  for (const auto& [name, column] : columns_) {
    Dims dims = column.dims();
    dims[0] = end - begin;
    Tensor out;
    if (allocator_ == nullptr ||
        !out.TryAllocateFrom(allocator_, column.dtype(), dims).ok()) {
      out.Allocate(column.dtype(), dims);
    }
    const size_t row_bytes =
        column.dim(0) == 0
            ? 0
            : column.bytes() / static_cast<size_t>(column.dim(0));
    const char* src = static_cast<const char*>(column.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t i = begin; i < end; ++i) {
      std::memcpy(dst + (i - begin) * row_bytes, src + order[i] * row_bytes,
                  row_bytes);
    }
    batch.emplace(name, std::move(out));
  }
  return batch;
}

FeedMap BatchReader::Batch(int64_t epoch, int64_t index) const {
  PAREX_CHECK(index >= 0 && index < num_batches(),
              "BatchReader::Batch: index " + std::to_string(index) +
                  " outside [0, " + std::to_string(num_batches()) + ")");
  const std::vector<int64_t> order = EpochOrder(epoch);
  const int64_t begin = index * options_.batch_size;
  return Gather(order, begin, std::min(num_rows_, begin + options_.batch_size));
}

std::pair<int64_t, int64_t> RowShare::Range(int64_t rows) const {
  if (places <= 0 || first >= world) return {rows, rows};
  const int64_t chunk = rows / world;
  const int64_t begin = int64_t{first} * chunk;
  const int64_t end =
      first + places >= world ? rows : int64_t{first + places} * chunk;
  return {begin, end};
}

int64_t BatchReader::batch_rows(int64_t index) const {
  const int64_t begin = index * options_.batch_size;
  return std::min(num_rows_, begin + options_.batch_size) - begin;
}

BatchReader::Iterator BatchReader::Begin(int64_t epoch, int64_t first_batch,
                                         std::optional<RowShare> share) const {
  return Iterator(this, EpochOrder(epoch), std::max<int64_t>(first_batch, 0),
                  share);
}

bool BatchReader::Iterator::Next(FeedMap* batch) {
  if (index_ >= reader_->num_batches()) return false;
  const int64_t begin = index_ * reader_->options_.batch_size;
  std::pair<int64_t, int64_t> rows = {0, reader_->batch_rows(index_)};
  if (share_.has_value()) rows = share_->Range(rows.second);
  *batch = reader_->Gather(order_, begin + rows.first, begin + rows.second);
  ++index_;
  return true;
}

BatchPrefetcher::BatchPrefetcher(BatchReader::Iterator batches)
    : batches_(std::move(batches)), worker_([this] { Work(); }) {}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void BatchPrefetcher::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return wanted_ || quit_; });
    if (quit_) return;
    wanted_ = false;
    lock.unlock();
    FeedMap batch;
    const bool more = batches_.Next(&batch);
    lock.lock();
    next_ = std::move(batch);
    more_ = more;
    ready_ = true;
    cv_.notify_all();
    if (!more) return;
  }
}

bool BatchPrefetcher::Next(FeedMap* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return ready_; });
  if (!more_) return false;
  ready_ = false;
  *batch = std::move(next_);
  next_ = FeedMap();
  wanted_ = true;
  cv_.notify_all();
  return true;
}

}  // namespace parex
