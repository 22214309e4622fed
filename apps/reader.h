// BatchReader: mini-batches over named columns of equal row count (features,
// labels), as FeedMaps for an executor. It plays the part of Fluid's
// `paddle.batch(paddle.reader.shuffle(reader))`, but with a fixed order:
// epoch e of a reader with seed s visits the rows in a permutation that
// depends only on (s, e), so a run repeats exactly and a resumed run can jump
// to any batch of any epoch.
//
// Ownership: the reader shares the column tensors' buffers (never writes
// them); each batch is a fresh copy of its rows, owned by the caller.
// Thread-safety: const methods may run concurrently.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/feed.h"
#include "kernels/tensor.h"

namespace parex {

// A cluster node's share of every batch: a batch of R rows is split over
// `world` places, place q taking rows [q c, (q + 1) c), c = R / world, and
// the world's last place the rest; the node's places are first ..
// first + places - 1 (a node of none, a parameter server, takes none).
struct RowShare {
  int first = 0;
  int places = 1;
  int world = 1;
  // The node's rows [begin, end) of a batch of `rows` rows.
  std::pair<int64_t, int64_t> Range(int64_t rows) const;
};

struct BatchReaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;  // false: rows in order, every epoch
  uint64_t seed = 0;
  bool drop_last = false;  // drop a last batch smaller than batch_size
};

class BatchReader {
 public:
  // Errors: no columns, a column that is undefined, of rank 0 or not on CPU,
  // row counts that differ, a duplicate name, batch_size < 1.
  static StatusOr<BatchReader> Create(
      std::vector<std::pair<std::string, Tensor>> columns,
      const BatchReaderOptions& options);

  int64_t num_rows() const { return num_rows_; }
  int64_t batch_size() const { return options_.batch_size; }
  // Batches per epoch.
  int64_t num_batches() const;
  // Rows of batch `index` of an epoch (the last may be short).
  int64_t batch_rows(int64_t index) const;

  // Where batches are made from now on (ParallelExecutor::feed_allocator:
  // pinned host memory for CUDA places); null, or an allocation it
  // refuses: the CPU allocator. The allocator outlives the reader.
  void set_batch_allocator(Allocator* allocator) { allocator_ = allocator; }

  // The order in which epoch `epoch` visits the rows.
  std::vector<int64_t> EpochOrder(int64_t epoch) const;
  // Batch `index` of epoch `epoch`: every column's rows of that batch.
  // REQUIRES: 0 <= index < num_batches().
  FeedMap Batch(int64_t epoch, int64_t index) const;

  // The batches of one epoch from `first_batch` on, computing the epoch's
  // order once; with a `share`, only its rows of each (a cluster node's:
  // the other nodes' rows are never copied). REQUIRES: the reader outlives
  // the iterator.
  class Iterator {
   public:
    // The next batch (or its share), or false after the epoch's last one.
    bool Next(FeedMap* batch);
    // Index within the epoch of the batch the next Next() returns.
    int64_t index() const { return index_; }

   private:
    friend class BatchReader;
    Iterator(const BatchReader* reader, std::vector<int64_t> order,
             int64_t index, std::optional<RowShare> share)
        : reader_(reader),
          order_(std::move(order)),
          index_(index),
          share_(share) {}
    const BatchReader* reader_;
    std::vector<int64_t> order_;
    int64_t index_;
    std::optional<RowShare> share_;
  };
  Iterator Begin(int64_t epoch, int64_t first_batch = 0,
                 std::optional<RowShare> share = std::nullopt) const;

 private:
  BatchReader(std::vector<std::pair<std::string, Tensor>> columns,
              const BatchReaderOptions& options, int64_t num_rows)
      : columns_(std::move(columns)), options_(options), num_rows_(num_rows) {}
  FeedMap Gather(const std::vector<int64_t>& order, int64_t begin,
                 int64_t end) const;

  std::vector<std::pair<std::string, Tensor>> columns_;
  BatchReaderOptions options_;
  int64_t num_rows_;
  Allocator* allocator_ = nullptr;
};

// A permutation of 0..n-1 by Fisher-Yates over std::mt19937_64 seeded from
// (seed, epoch) through std::seed_seq; uniform indices by rejection, not by
// std::uniform_int_distribution (whose output differs between standard
// libraries), so the order is the same on every platform.
std::vector<int64_t> ShuffledOrder(int64_t n, uint64_t seed, int64_t epoch);

// The batches of an iterator, each gathered on a worker thread while the
// caller runs the step before it: a step's reader time (copying a batch's
// rows) is hidden behind the step. Batches come in the iterator's order; at
// most one is made ahead. Thread-safety: one caller thread.
class BatchPrefetcher {
 public:
  explicit BatchPrefetcher(BatchReader::Iterator batches);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // As BatchReader::Iterator::Next; starts gathering the batch after it.
  bool Next(FeedMap* batch);

 private:
  void Work();

  BatchReader::Iterator batches_;  // used by the worker only
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = true;  // guarded by mu_: the worker should gather one
  bool ready_ = false;  // guarded by mu_: next_ / more_ hold its result
  bool more_ = false;   // guarded by mu_
  bool quit_ = false;   // guarded by mu_
  FeedMap next_;        // guarded by mu_
  std::thread worker_;
};

}  // namespace parex
