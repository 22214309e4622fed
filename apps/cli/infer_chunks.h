// parex infer's large batches in chunks (--chunk-rows): a batch of many rows
// runs through the executor a chunk of rows at a time, the fetches' rows
// concatenated in order, so that each op's activations stay in cache. The
// measured reason (issue 34, bench/README): per image, MobileNet-v1 at
// batch 256 took 27% longer than at 32 and MobileNet-v2 20% longer (the
// depthwise layers stream activations of tens of MB through memory), while
// the ResNets and ShuffleNet cost the same per image from 16 rows up.
//
// A chunk is only what data parallelism already assumes of an inference
// program (ParallelExecutor splits a batch over places along dim 0): rows
// are independent. What cannot be split that way runs whole: a feed with
// LoD or a dim 0 other than the batch's, and, found on the first run, a
// fetch whose dim 0 is not its chunk's rows (a program that mixes rows),
// which is then run again whole, as every later run is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "kernels/feed.h"

namespace parex::cli {

// The rows each run takes of a batch of `rows` over `places` places:
// chunk_rows per place, or fewer down to half of it where that divides the
// batch into equal chunks (every run then has one shape, so nothing is
// prepared again between them); `rows` itself when it is not larger, when
// chunk_rows is 0, or when no such size divides it.
int64_t ChunkRows(int64_t rows, int places, int64_t chunk_rows);

class ChunkedRunner {
 public:
  // `chunk`: rows per run (ChunkRows); >= the batch's rows: one run.
  explicit ChunkedRunner(int64_t chunk) : chunk_(chunk) {}

  // `feed` through `pe`, chunk by chunk; the fetches as one run of the
  // whole batch returns them.
  StatusOr<std::vector<Tensor>> Run(ParallelExecutor& pe, const FeedMap& feed,
                                    const std::vector<std::string>& fetches);

  // Whether the last run went in chunks.
  bool chunked() const { return chunked_; }
  int64_t chunk() const { return chunk_; }

 private:
  // Every feed of rank >= 1 has `rows` rows and no LoD.
  static bool Splittable(const FeedMap& feed, int64_t rows);

  int64_t chunk_;
  bool whole_only_ = false;  // a fetch showed the program mixes rows
  bool chunked_ = false;
};

}  // namespace parex::cli
