#include "actors/comm/in_process_communicator.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

namespace parex {
namespace {

// The reduction loops are written by hand: no library reduces N buffers of
// one process into each other (BLAS axpy is one pair at a time and would walk
// every buffer N - 1 times; MPI/Gloo/NCCL reduce across ranks, not between
// the places of one process; Eigen would add nothing over these loops). They
// are plain contiguous loops over `__restrict` pointers, run kBlock elements
// at a time so the trip count is a compile-time constant: GCC vectorises
// them at -O2, whose "very cheap" cost model only takes loops that need no
// epilogue and no run-time alias check. A block's remainder runs scalar.
//
// Every element is ((x_0 + x_1) + x_2) + ... in place order, whatever the
// chunking, and each place's memory is read once and written once:
//   - all-reduce over 2-4 places with distinct buffers (the common case):
//     one pass computes each sum in registers and stores it to every place
//     (FusedN);
//   - otherwise the sums of a block go to a stack buffer that stays in L1
//     (SumN, then AddN for places past the fourth) and are copied from there
//     to the destinations. Identical buffers on two places (CPU Reduce mode
//     shares parameters) take this path, as `__restrict` destinations must
//     be distinct.
// Integers are summed as their unsigned twins (A = uint32_t for int32 data),
// so overflow wraps instead of being undefined.
constexpr int64_t kBlock = 256;
using FullBlock = std::integral_constant<int64_t, kBlock>;

// Calls f(at, len) for the blocks of [0, count); full blocks get `len` as a
// FullBlock constant, which is what lets their loops vectorise.
template <typename F>
inline void ForBlocks(int64_t count, F&& f) {
  int64_t at = 0;
  for (; at + kBlock <= count; at += kBlock) f(at, FullBlock());
  if (at < count) f(at, count - at);
}

template <typename A>
inline void Sum2(A* __restrict acc, const A* __restrict a,
                 const A* __restrict b, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] = a[k] + b[k];
}
template <typename A>
inline void Sum3(A* __restrict acc, const A* __restrict a,
                 const A* __restrict b, const A* __restrict c, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] = (a[k] + b[k]) + c[k];
}
template <typename A>
inline void Sum4(A* __restrict acc, const A* __restrict a,
                 const A* __restrict b, const A* __restrict c,
                 const A* __restrict d, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] = ((a[k] + b[k]) + c[k]) + d[k];
}
template <typename A>
inline void Add1(A* __restrict acc, const A* __restrict a, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] = acc[k] + a[k];
}
template <typename A>
inline void Add2(A* __restrict acc, const A* __restrict a,
                 const A* __restrict b, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] = (acc[k] + a[k]) + b[k];
}
template <typename A>
inline void Add3(A* __restrict acc, const A* __restrict a,
                 const A* __restrict b, const A* __restrict c, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] = ((acc[k] + a[k]) + b[k]) + c[k];
}
template <typename A>
inline void Fused2(A* __restrict a, A* __restrict b, int64_t len) {
  for (int64_t k = 0; k < len; ++k) {
    const A s = a[k] + b[k];
    a[k] = s;
    b[k] = s;
  }
}
template <typename A>
inline void Fused3(A* __restrict a, A* __restrict b, A* __restrict c,
                   int64_t len) {
  for (int64_t k = 0; k < len; ++k) {
    const A s = (a[k] + b[k]) + c[k];
    a[k] = s;
    b[k] = s;
    c[k] = s;
  }
}
template <typename A>
inline void Fused4(A* __restrict a, A* __restrict b, A* __restrict c,
                   A* __restrict d, int64_t len) {
  for (int64_t k = 0; k < len; ++k) {
    const A s = ((a[k] + b[k]) + c[k]) + d[k];
    a[k] = s;
    b[k] = s;
    c[k] = s;
    d[k] = s;
  }
}

// Sums elements [offset, offset + count) over places[0..n) and stores the
// sum on every place (root < 0) or on place `root`.
// REQUIRES: n >= 2; distinct: the n buffers are pairwise distinct (else
// disjoint or identical).
template <typename A>
void ReduceRange(char* const* places, int n, int root, bool distinct,
                 int64_t offset, int64_t count) {
  auto x = [&](int p) { return reinterpret_cast<A*>(places[p]) + offset; };
  if (root < 0 && distinct && n <= 4) {
    A* x0 = x(0);
    A* x1 = x(1);
    A* x2 = n > 2 ? x(2) : nullptr;
    A* x3 = n > 3 ? x(3) : nullptr;
    ForBlocks(count, [&](int64_t at, auto len) {
      if (n == 2) Fused2(x0 + at, x1 + at, len);
      if (n == 3) Fused3(x0 + at, x1 + at, x2 + at, len);
      if (n == 4) Fused4(x0 + at, x1 + at, x2 + at, x3 + at, len);
    });
    return;
  }
  alignas(64) A acc[kBlock];
  ForBlocks(count, [&](int64_t at, auto len) {
    auto s = [&](int p) -> const A* { return x(p) + at; };
    if (n == 2) Sum2(acc, s(0), s(1), len);
    if (n == 3) Sum3(acc, s(0), s(1), s(2), len);
    if (n >= 4) Sum4(acc, s(0), s(1), s(2), s(3), len);
    for (int p = 4; p < n; p += 3) {
      if (n - p == 1) Add1(acc, s(p), len);
      if (n - p == 2) Add2(acc, s(p), s(p + 1), len);
      if (n - p >= 3) Add3(acc, s(p), s(p + 1), s(p + 2), len);
    }
    const size_t bytes = static_cast<size_t>(len) * sizeof(A);
    if (root >= 0) {
      std::memcpy(x(root) + at, acc, bytes);
    } else {
      for (int p = 0; p < n; ++p) std::memcpy(x(p) + at, acc, bytes);
    }
  });
}

bool IsReducible(DType dtype) {
  return dtype == DType::kFP32 || dtype == DType::kFP64 ||
         dtype == DType::kInt32 || dtype == DType::kInt64;
}

// "all_reduce 'w@GRAD'" or "all_reduce 'bucket_0' group 2".
std::string Label(Collective collective, std::string_view name,
                  size_t num_groups, size_t group) {
  std::string s = CollectiveName(collective);
  s += " '";
  s += name;
  s += "'";
  if (num_groups > 1) s += " group " + std::to_string(group);
  return s;
}

// Checks what every tensor of a collective must be: present, defined, on
// CPU, holding data. `where()` builds the message prefix, only on error (the
// success path allocates nothing).
template <typename Where>
Status CheckTensor(const Tensor* t, const Where& where) {
  if (t == nullptr) return InvalidArgument(where() + ": no tensor");
  if (!t->defined()) return InvalidArgument(where() + ": tensor has no dtype");
  if (!t->place().is_cpu()) {
    return InvalidArgument(where() + ": tensor is on " + t->place().ToString() +
                           "; the in-process communicator needs CPU memory");
  }
  if (!t->initialized()) {
    return InvalidArgument(where() + ": tensor " + t->DebugString() +
                           " holds no data");
  }
  return Status::Ok();
}

}  // namespace

// --- InProcessPlan ----------------------------------------------------------

void InProcessPlan::RunChunk(int chunk) const {
  PAREX_CHECK(chunk >= 0 && chunk < num_chunks_, "chunk out of range");
  const int64_t begin = chunk * chunk_units_;
  RunUnits(begin, std::min(total_units_, begin + chunk_units_));
}

void InProcessPlan::RunUnits(int64_t begin, int64_t end) const {
  PAREX_CHECK(0 <= begin && begin <= end && end <= total_units_ &&
                  (begin == end || num_chunks_ > 0),
              "units out of range");
  if (begin == end) return;
  // The last segment starting at or before `begin` holds it (segments that
  // are empty start where the next one starts, so they are never it).
  size_t s = static_cast<size_t>(std::upper_bound(segment_begin_.begin(),
                                                  segment_begin_.end(), begin) -
                                 segment_begin_.begin()) -
             1;
  for (; begin < end; ++s) {
    const int64_t segment_end = segment_begin_[s + 1];
    if (segment_end <= begin) continue;  // empty segment
    const int64_t stop = std::min(end, segment_end);
    RunSegment(s, begin - segment_begin_[s], stop - begin);
    begin = stop;
  }
}

void InProcessPlan::RunSegment(size_t segment, int64_t begin,
                               int64_t count) const {
  const int n = num_places_;
  switch (collective_) {
    case Collective::kAllReduce:
    case Collective::kReduce: {
      char* const* places = &data_[segment * n];
      const int root = collective_ == Collective::kReduce ? root_ : -1;
      switch (dtype_) {
        case DType::kFP32:
          ReduceRange<float>(places, n, root, distinct_, begin, count);
          break;
        case DType::kFP64:
          ReduceRange<double>(places, n, root, distinct_, begin, count);
          break;
        case DType::kInt32:
          ReduceRange<uint32_t>(places, n, root, distinct_, begin, count);
          break;
        case DType::kInt64:
          ReduceRange<uint64_t>(places, n, root, distinct_, begin, count);
          break;
        default:
          PAREX_CHECK(false, "dtype not reducible (Prepare checks it)");
      }
      return;
    }
    case Collective::kBroadcast: {
      char* const* places = &data_[segment * n];
      const char* src = places[root_] + begin;
      for (int p = 0; p < n; ++p) {
        char* dst = places[p] + begin;
        if (dst != src) std::memcpy(dst, src, static_cast<size_t>(count));
      }
      return;
    }
    case Collective::kAllGather: {
      const char* src = data_[segment] + begin;
      const int64_t at = segment_begin_[segment] + begin;
      for (int p = 0; p < n; ++p) {
        std::memcpy(data_[n + p] + at, src, static_cast<size_t>(count));
      }
      return;
    }
  }
}

// --- InProcessCommunicator --------------------------------------------------

namespace {
std::vector<Place> CpuPlaces(int n) {
  PAREX_CHECK(n >= 1, "InProcessCommunicator needs at least one place");
  std::vector<Place> places;
  for (int i = 0; i < n; ++i) places.push_back(Place::CPU(i));
  return places;
}
}  // namespace

InProcessCommunicator::InProcessCommunicator(
    int num_places, InProcessCommunicatorOptions options)
    : InProcessCommunicator(CpuPlaces(num_places), std::move(options)) {}

InProcessCommunicator::InProcessCommunicator(
    std::vector<Place> places, InProcessCommunicatorOptions options)
    : places_(std::move(places)), options_(std::move(options)) {
  PAREX_CHECK(!places_.empty(), "InProcessCommunicator needs a place");
  for (const Place& p : places_) {
    PAREX_CHECK(p.is_cpu(), "InProcessCommunicator place " + p.ToString() +
                                " is not a CPU place");
  }
  PAREX_CHECK(options_.chunk_bytes > 0 && options_.chunk_bytes % 64 == 0,
              "chunk_bytes must be a positive multiple of 64");
  run_chunk_ = [this](int chunk) { plan_.RunChunk(chunk); };
}

Status InProcessCommunicator::Prepare(Collective collective,
                                      std::string_view name,
                                      TensorGroups groups, int root,
                                      const PlaceTensors* outputs,
                                      InProcessPlan* plan) const {
  plan->num_chunks_ = 0;  // a failed Prepare leaves nothing to run
  if (collective != Collective::kAllGather) {
    return PrepareInPlace(collective, name, groups, root, plan);
  }
  if (groups.size() != 1) {
    return InvalidArgument(Label(collective, name, 1, 0) +
                           ": takes one group of inputs, not " +
                           std::to_string(groups.size()));
  }
  if (outputs == nullptr) {
    return InvalidArgument(Label(collective, name, 1, 0) + ": no outputs");
  }
  return PrepareAllGather(name, groups[0], *outputs, plan);
}

Status InProcessCommunicator::CheckGroup(Collective collective,
                                         std::string_view name,
                                         TensorGroups groups, size_t g) const {
  const int n = world_size();
  const bool reduces = collective != Collective::kBroadcast;
  const PlaceTensors& tensors = groups[g];
  if (static_cast<int>(tensors.size()) != n) {
    return InvalidArgument(Label(collective, name, groups.size(), g) + ": " +
                           std::to_string(tensors.size()) + " tensors for " +
                           std::to_string(n) + " places");
  }
  for (int p = 0; p < n; ++p) {
    const Tensor* t = tensors[p];
    auto where = [&] {
      return Label(collective, name, groups.size(), g) + " place " +
             places_[p].ToString();
    };
    PAREX_RETURN_IF_ERROR(CheckTensor(t, where));
    if (reduces && !IsReducible(t->dtype())) {
      return InvalidArgument(where() + ": dtype " + DTypeName(t->dtype()) +
                             " cannot be summed (fp32, fp64, int32, int64)");
    }
    const Tensor* first = tensors[0];
    if (t->dtype() != first->dtype()) {
      return InvalidArgument(where() + ": dtype " + DTypeName(t->dtype()) +
                             " != " + DTypeName(first->dtype()) + " of " +
                             places_[0].ToString());
    }
    if (t->numel() != first->numel()) {
      return InvalidArgument(where() + ": shape " + DimsToString(t->dims()) +
                             " != " + DimsToString(first->dims()) + " of " +
                             places_[0].ToString());
    }
  }
  return Status::Ok();
}

Status InProcessCommunicator::SetChunks(Collective collective,
                                        std::string_view name,
                                        int64_t unit_bytes, int64_t total,
                                        InProcessPlan* plan) const {
  plan->collective_ = collective;
  plan->num_places_ = world_size();
  plan->unit_bytes_ = unit_bytes;
  plan->total_units_ = total;
  plan->chunk_units_ = std::max<int64_t>(1, options_.chunk_bytes / unit_bytes);
  const int64_t chunks = (total + plan->chunk_units_ - 1) / plan->chunk_units_;
  if (chunks > INT_MAX) {
    return OutOfRange(Label(collective, name, 1, 0) + ": " +
                      std::to_string(chunks) + " chunks; raise chunk_bytes");
  }
  // A single place has nothing to exchange (but all-gather still copies
  // its input to its output).
  plan->num_chunks_ = world_size() == 1 && collective != Collective::kAllGather
                          ? 0
                          : static_cast<int>(chunks);
  return Status::Ok();
}

Status InProcessCommunicator::PrepareInPlace(Collective collective,
                                             std::string_view name,
                                             TensorGroups groups, int root,
                                             InProcessPlan* plan) const {
  const int n = world_size();
  const bool reduces = collective != Collective::kBroadcast;
  if (groups.empty()) {
    return InvalidArgument(Label(collective, name, 1, 0) + ": empty bucket");
  }
  if (collective != Collective::kAllReduce && (root < 0 || root >= n)) {
    return InvalidArgument(Label(collective, name, 1, 0) + ": root " +
                           std::to_string(root) + " is outside the " +
                           std::to_string(n) + " places");
  }
  plan->segment_begin_.clear();
  plan->data_.clear();
  plan->segment_begin_.push_back(0);
  const DType dtype = groups[0].empty() || groups[0][0] == nullptr
                          ? DType::kUndefined
                          : groups[0][0]->dtype();
  int64_t total = 0;
  bool distinct = true;  // no two places of a group share a data pointer
  for (size_t g = 0; g < groups.size(); ++g) {
    PAREX_RETURN_IF_ERROR(CheckGroup(collective, name, groups, g));
    const PlaceTensors& tensors = groups[g];
    if (tensors[0]->dtype() != dtype) {
      return InvalidArgument(Label(collective, name, groups.size(), g) +
                             ": dtype " + DTypeName(tensors[0]->dtype()) +
                             " != " + DTypeName(dtype) +
                             " of group 0 (a bucket has one dtype)");
    }
    // Reductions count elements, broadcast counts bytes.
    total += reduces ? tensors[0]->numel()
                     : static_cast<int64_t>(tensors[0]->bytes());
    plan->segment_begin_.push_back(total);
    for (int p = 0; p < n; ++p) {
      char* data = static_cast<char*>(tensors[p]->raw_data());
      if (tensors[0]->numel() > 0) {
        for (int q = 0; q < p; ++q) {
          if (plan->data_[g * n + q] == data) distinct = false;
        }
      }
      plan->data_.push_back(data);
    }
  }
  plan->dtype_ = dtype;
  plan->root_ = collective == Collective::kAllReduce ? 0 : root;
  plan->distinct_ = distinct;
  return SetChunks(collective, name,
                   reduces ? static_cast<int64_t>(SizeOf(dtype)) : 1, total,
                   plan);
}

Status InProcessCommunicator::CheckGatherInput(std::string_view name,
                                               const PlaceTensors& inputs,
                                               const PlaceTensors& outputs,
                                               int p) const {
  const Tensor* t = inputs[p];
  auto where = [&] {
    return Label(Collective::kAllGather, name, 1, 0) + " place " +
           places_[p].ToString();
  };
  PAREX_RETURN_IF_ERROR(CheckTensor(t, where));
  if (t->rank() < 1) {
    return InvalidArgument(where() + ": shape " + DimsToString(t->dims()) +
                           " has no rows (rank 0)");
  }
  const Tensor* first = inputs[0];
  if (t->dtype() != first->dtype()) {
    return InvalidArgument(where() + ": dtype " + DTypeName(t->dtype()) +
                           " != " + DTypeName(first->dtype()) + " of " +
                           places_[0].ToString());
  }
  if (!std::equal(t->dims().begin() + 1, t->dims().end(),
                  first->dims().begin() + 1, first->dims().end())) {
    return InvalidArgument(where() + ": shape " + DimsToString(t->dims()) +
                           " != " + DimsToString(first->dims()) + " of " +
                           places_[0].ToString() + " past dim 0");
  }
  if (outputs[p] == nullptr) {
    return InvalidArgument(where() + ": no output tensor");
  }
  for (size_t q = 0; q < inputs.size(); ++q) {
    if (outputs[p] == inputs[q]) {
      return InvalidArgument(where() + ": the output is the input of " +
                             places_[q].ToString());
    }
  }
  return Status::Ok();
}

Status InProcessCommunicator::AllocateGatherOutputs(std::string_view name,
                                                    const PlaceTensors& inputs,
                                                    const PlaceTensors& outputs,
                                                    int64_t rows) const {
  const int n = world_size();
  auto where = [&](int p) {
    return Label(Collective::kAllGather, name, 1, 0) + " place " +
           places_[p].ToString();
  };
  Dims dims = inputs[0]->dims();  // one small vector per call: the result
  dims[0] = rows;                 // shape is only known now
  for (int p = 0; p < n; ++p) {
    if (Status s = outputs[p]->TryAllocate(inputs[0]->dtype(), dims,
                                           inputs[p]->place());
        !s.ok()) {
      return Status(s.code(), where(p) + ": " + s.message());
    }
    for (int q = 0; q < n; ++q) {
      if (outputs[p]->SharesBufferWith(*inputs[q])) {
        return InvalidArgument(where(p) +
                               ": the output shares memory with the input of " +
                               places_[q].ToString());
      }
    }
  }
  return Status::Ok();
}

Status InProcessCommunicator::PrepareAllGather(std::string_view name,
                                               const PlaceTensors& inputs,
                                               const PlaceTensors& outputs,
                                               InProcessPlan* plan) const {
  const int n = world_size();
  if (static_cast<int>(inputs.size()) != n ||
      static_cast<int>(outputs.size()) != n) {
    return InvalidArgument(Label(Collective::kAllGather, name, 1, 0) + ": " +
                           std::to_string(inputs.size()) + " inputs and " +
                           std::to_string(outputs.size()) + " outputs for " +
                           std::to_string(n) + " places");
  }
  plan->segment_begin_.clear();
  plan->data_.clear();
  plan->segment_begin_.push_back(0);
  int64_t rows = 0;
  for (int p = 0; p < n; ++p) {
    PAREX_RETURN_IF_ERROR(CheckGatherInput(name, inputs, outputs, p));
    rows += inputs[p]->dim(0);
    plan->segment_begin_.push_back(plan->segment_begin_.back() +
                                   static_cast<int64_t>(inputs[p]->bytes()));
    plan->data_.push_back(static_cast<char*>(inputs[p]->raw_data()));
  }
  PAREX_RETURN_IF_ERROR(AllocateGatherOutputs(name, inputs, outputs, rows));
  for (int p = 0; p < n; ++p) {
    plan->data_.push_back(static_cast<char*>(outputs[p]->raw_data()));
  }
  plan->dtype_ = inputs[0]->dtype();
  plan->root_ = 0;
  return SetChunks(Collective::kAllGather, name, 1, plan->segment_begin_.back(),
                   plan);
}

void InProcessCommunicator::RunPlan() {
  const int n = plan_.num_chunks();
  if (n == 0) return;
  if (!options_.parallel_for || n == 1) {
    for (int i = 0; i < n; ++i) plan_.RunChunk(i);
    return;
  }
  options_.parallel_for(n, run_chunk_);
}

Status InProcessCommunicator::AllReduce(std::string_view name,
                                        TensorGroups groups) {
  PAREX_RETURN_IF_ERROR(
      Prepare(Collective::kAllReduce, name, groups, 0, nullptr, &plan_));
  RunPlan();
  return Status::Ok();
}

Status InProcessCommunicator::Reduce(std::string_view name, TensorGroups groups,
                                     int root) {
  PAREX_RETURN_IF_ERROR(
      Prepare(Collective::kReduce, name, groups, root, nullptr, &plan_));
  RunPlan();
  return Status::Ok();
}

Status InProcessCommunicator::Broadcast(std::string_view name,
                                        TensorGroups groups, int root) {
  PAREX_RETURN_IF_ERROR(
      Prepare(Collective::kBroadcast, name, groups, root, nullptr, &plan_));
  RunPlan();
  return Status::Ok();
}

Status InProcessCommunicator::AllGather(std::string_view name,
                                        const PlaceTensors& inputs,
                                        const PlaceTensors& outputs) {
  PAREX_RETURN_IF_ERROR(Prepare(Collective::kAllGather, name,
                                TensorGroups(inputs), 0, &outputs, &plan_));
  RunPlan();
  return Status::Ok();
}

}  // namespace parex
