// InProcessCommunicator: the collectives over N CPU places of one process.
//
// One instance serves every place, so each call sees all places' tensors and
// does the whole collective. The work is a range of elements (a fused bucket
// is one range over its groups) cut into fixed-size chunks; a chunk reads and
// writes only its own elements on every place, so distinct chunks may run on
// different threads. Two ways to run them:
//   - the Communicator calls (AllReduce, ...) prepare the collective and hand
//     the chunk indices to the `parallel_for` callback the runtime supplied
//     (by default the chunks run serially on the calling thread);
//   - a runtime that schedules chunks itself calls Prepare into an
//     InProcessPlan it keeps, then RunChunk(i) for every i on its workers.
//
// Determinism: every element is summed as ((x_0 + x_1) + x_2) + ... in place
// order, however the range is chunked and whichever thread runs a chunk, so
// results are bit-identical run to run and independent of the chunk size.
//
// Reductions support fp32, fp64, int32 and int64 (integers wrap on
// overflow, as two's complement); broadcast and all-gather copy bytes of any
// dtype. Zero-element tensors are fine (zero chunks).
//
// Memory: the tensors of distinct places either share no bytes or are the
// same bytes (CPU Reduce mode may give places one parameter buffer); partial
// overlaps are not allowed.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "actors/comm/communicator.h"

namespace parex {

// A collective validated and laid out over its places, ready to run chunk by
// chunk. Filled by InProcessCommunicator::Prepare; refilling keeps the
// vectors' capacity, so a plan kept per collective allocates nothing after
// its first step. It holds raw pointers into the tensors' buffers: the
// tensors must not be reallocated between Prepare and the last RunChunk.
// Thread-safety: RunChunk may run concurrently for distinct chunks; Prepare
// must not overlap any RunChunk of the same plan.
class InProcessPlan {
 public:
  Collective collective() const { return collective_; }
  int num_chunks() const { return num_chunks_; }
  // Bytes each place contributes (all-gather: bytes of each output).
  int64_t bytes_per_place() const { return total_units_ * unit_bytes_; }

  // Runs chunk `chunk` on every place.
  // REQUIRES: 0 <= chunk < num_chunks().
  void RunChunk(int chunk) const;
  // Units (elements of a reduction, bytes of a copy) the collective covers
  // per place, and running any range of them: a runtime may cut the work
  // where it likes (Reduce mode's optimizer slices each reduce their own
  // elements); the sums are the same bits however it is cut.
  int64_t total_units() const { return total_units_; }
  // REQUIRES: 0 <= begin <= end <= total_units(), and a plan with chunks
  // (one place has nothing to run).
  void RunUnits(int64_t begin, int64_t end) const;

 private:
  friend class InProcessCommunicator;

  // Runs units [begin, begin + count) of segment `segment`.
  void RunSegment(size_t segment, int64_t begin, int64_t count) const;

  Collective collective_ = Collective::kAllReduce;
  DType dtype_ = DType::kUndefined;
  int num_places_ = 0;
  int root_ = 0;
  // No two places of a segment share a data pointer (the fused all-reduce
  // kernels need distinct destinations).
  bool distinct_ = true;
  int num_chunks_ = 0;
  // The range is counted in units: elements for reductions, bytes for
  // copies. unit_bytes_ is the size of a unit.
  int64_t unit_bytes_ = 1;
  int64_t total_units_ = 0;
  int64_t chunk_units_ = 1;
  // Segment s covers units [segment_begin_[s], segment_begin_[s + 1]); there
  // are segment_begin_.size() - 1 segments. For all-reduce / reduce /
  // broadcast a segment is a group of the bucket; for all-gather it is the
  // rows of source place s.
  std::vector<int64_t> segment_begin_;
  // Reductions and broadcast: data_[s * num_places_ + p] is place p's data
  // of segment s. All-gather: data_[s] is place s's input, data_[N + p] is
  // place p's output (segment s lands at segment_begin_[s] bytes in it).
  std::vector<char*> data_;
};

struct InProcessCommunicatorOptions {
  // Bytes per chunk of the range.
  // REQUIRES: a positive multiple of 64 (whole cache lines of every place).
  int64_t chunk_bytes = int64_t{64} << 10;
  // Runs body(0) ... body(n - 1), each exactly once, possibly concurrently,
  // and returns after all returned. Empty: serially on the calling thread.
  std::function<void(int n, const std::function<void(int)>& body)> parallel_for;
};

class InProcessCommunicator final : public Communicator {
 public:
  // Places cpu:0 ... cpu:(num_places - 1).
  // REQUIRES: num_places >= 1.
  explicit InProcessCommunicator(int num_places,
                                 InProcessCommunicatorOptions options = {});
  // REQUIRES: places is not empty; every place is a CPU place.
  explicit InProcessCommunicator(std::vector<Place> places,
                                 InProcessCommunicatorOptions options = {});
  // Not copyable: the chunk callback points at this instance.
  InProcessCommunicator(const InProcessCommunicator&) = delete;
  InProcessCommunicator& operator=(const InProcessCommunicator&) = delete;

  const char* backend() const override { return "in_process"; }
  int world_size() const override { return static_cast<int>(places_.size()); }
  int local_size() const override { return world_size(); }
  int first_local_rank() const override { return 0; }
  Place place(int rank) const override { return places_[rank]; }
  int64_t chunk_bytes() const { return options_.chunk_bytes; }

  // Prepare + every chunk through options.parallel_for, on a plan this
  // instance keeps (so these calls allocate nothing in steady state).
  Status AllReduce(std::string_view name, TensorGroups groups) override;
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override;
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;

  // Validates a collective and lays it out in `plan`; nothing is written to
  // the tensors (all-gather allocates its outputs). `root` is ignored by
  // all-reduce and all-gather; `outputs` is used by all-gather only, whose
  // inputs are groups[0].
  // Thread-safety: const; distinct plans may be prepared concurrently.
  Status Prepare(Collective collective, std::string_view name,
                 TensorGroups groups, int root, const PlaceTensors* outputs,
                 InProcessPlan* plan) const;

 private:
  Status PrepareInPlace(Collective collective, std::string_view name,
                        TensorGroups groups, int root,
                        InProcessPlan* plan) const;
  Status PrepareAllGather(std::string_view name, const PlaceTensors& inputs,
                          const PlaceTensors& outputs,
                          InProcessPlan* plan) const;
  // Group g of an in-place call: a tensor per place, each present, on CPU,
  // of one dtype (one that sums, for a reduction) and one element count.
  Status CheckGroup(Collective collective, std::string_view name,
                    TensorGroups groups, size_t g) const;
  // All-gather's input of place p against place 0's, and its output.
  Status CheckGatherInput(std::string_view name, const PlaceTensors& inputs,
                          const PlaceTensors& outputs, int p) const;
  // Each output sized to every input's rows, sharing no input's memory.
  Status AllocateGatherOutputs(std::string_view name,
                               const PlaceTensors& inputs,
                               const PlaceTensors& outputs, int64_t rows) const;
  // The plan's kind, size in units of unit_bytes and chunks.
  Status SetChunks(Collective collective, std::string_view name,
                   int64_t unit_bytes, int64_t total,
                   InProcessPlan* plan) const;
  // Runs plan_'s chunks through the parallel_for option.
  void RunPlan();

  std::vector<Place> places_;
  InProcessCommunicatorOptions options_;
  InProcessPlan plan_;  // the Communicator calls' plan, reused call to call
  std::function<void(int)> run_chunk_;  // plan_.RunChunk, built once
};

}  // namespace parex
