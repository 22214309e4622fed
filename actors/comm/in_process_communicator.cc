#include "actors/comm/in_process_communicator.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

namespace parex {
namespace {

// The reduction loops are written by hand: no library reduces N buffers of
// one process into each other (BLAS axpy is one pair at a time and would walk
// every buffer N - 1 times; MPI/Gloo/NCCL reduce across ranks, not between
// the places of one process; Eigen would add nothing over these loops). The
// loops are plain contiguous loops over `__restrict` pointers with a
// compile-time trip count, which GCC vectorises at -O2 (its "very cheap"
// cost model only takes loops that need no epilogue and no alias check).
//
// Sums are formed kBlock elements at a time in a stack buffer that stays in
// L1: acc = x_0 + x_1, acc += x_2, ..., then acc is stored to the
// destinations. Each place's memory is read once and written once, and every
// element is ((x_0 + x_1) + x_2) + ... whatever the chunking.
constexpr int64_t kBlock = 256;

template <typename T>
inline void AddPair(T* __restrict acc, const T* __restrict a,
                    const T* __restrict b, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] = a[k] + b[k];
}

template <typename T>
inline void AddInto(T* __restrict acc, const T* __restrict x, int64_t len) {
  for (int64_t k = 0; k < len; ++k) acc[k] += x[k];
}

// Sums `len` elements at element `at` of places[0..n) into acc.
// REQUIRES: n >= 2, len <= kBlock.
template <typename A>
inline void SumBlock(A* acc, char* const* places, int n, int64_t at,
                     int64_t len) {
  auto src = [&](int p) { return reinterpret_cast<const A*>(places[p]) + at; };
  if (len == kBlock) {  // the constant trip count is what vectorises
    AddPair(acc, src(0), src(1), kBlock);
    for (int p = 2; p < n; ++p) AddInto(acc, src(p), kBlock);
  } else {
    AddPair(acc, src(0), src(1), len);
    for (int p = 2; p < n; ++p) AddInto(acc, src(p), len);
  }
}

// Sums elements [offset, offset + count) over places[0..n) in place order
// and stores the sum on every place (root < 0) or on place `root`. Integers
// are summed as their unsigned twins (A = uint32_t for int32 data), so
// overflow wraps instead of being undefined.
template <typename A>
void ReduceRange(char* const* places, int n, int root, int64_t offset,
                 int64_t count) {
  alignas(64) A acc[kBlock];
  for (int64_t done = 0; done < count; done += kBlock) {
    const int64_t len = std::min(kBlock, count - done);
    const int64_t at = offset + done;
    SumBlock(acc, places, n, at, len);
    const size_t bytes = static_cast<size_t>(len) * sizeof(A);
    if (root >= 0) {
      std::memcpy(reinterpret_cast<A*>(places[root]) + at, acc, bytes);
    } else {
      for (int p = 0; p < n; ++p) {
        std::memcpy(reinterpret_cast<A*>(places[p]) + at, acc, bytes);
      }
    }
  }
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
    return InvalidArgument(where() + ": tensor is on " +
                           t->place().ToString() +
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
  int64_t begin = chunk * chunk_units_;
  const int64_t end = std::min(total_units_, begin + chunk_units_);
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
        case DType::kFP32: ReduceRange<float>(places, n, root, begin, count); break;
        case DType::kFP64: ReduceRange<double>(places, n, root, begin, count); break;
        case DType::kInt32: ReduceRange<uint32_t>(places, n, root, begin, count); break;
        case DType::kInt64: ReduceRange<uint64_t>(places, n, root, begin, count); break;
        default: PAREX_CHECK(false, "dtype not reducible (Prepare checks it)");
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
  DType dtype = DType::kUndefined;
  int64_t total = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const PlaceTensors& tensors = groups[g];
    if (static_cast<int>(tensors.size()) != n) {
      return InvalidArgument(Label(collective, name, groups.size(), g) + ": " +
                             std::to_string(tensors.size()) +
                             " tensors for " + std::to_string(n) + " places");
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
    if (g == 0) {
      dtype = tensors[0]->dtype();
    } else if (tensors[0]->dtype() != dtype) {
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
      plan->data_.push_back(static_cast<char*>(tensors[p]->raw_data()));
    }
  }
  plan->collective_ = collective;
  plan->dtype_ = dtype;
  plan->num_places_ = n;
  plan->root_ = collective == Collective::kAllReduce ? 0 : root;
  plan->unit_bytes_ = reduces ? static_cast<int64_t>(SizeOf(dtype)) : 1;
  plan->total_units_ = total;
  plan->chunk_units_ = options_.chunk_bytes / plan->unit_bytes_;
  const int64_t chunks =
      (total + plan->chunk_units_ - 1) / plan->chunk_units_;
  if (chunks > INT_MAX) {
    return OutOfRange(Label(collective, name, 1, 0) + ": " +
                      std::to_string(chunks) + " chunks; raise chunk_bytes");
  }
  // A single place has nothing to exchange.
  plan->num_chunks_ = n == 1 ? 0 : static_cast<int>(chunks);
  return Status::Ok();
}

Status InProcessCommunicator::PrepareAllGather(std::string_view name,
                                               const PlaceTensors& inputs,
                                               const PlaceTensors& outputs,
                                               InProcessPlan* plan) const {
  const int n = world_size();
  auto label = [&] { return Label(Collective::kAllGather, name, 1, 0); };
  if (static_cast<int>(inputs.size()) != n ||
      static_cast<int>(outputs.size()) != n) {
    return InvalidArgument(label() + ": " + std::to_string(inputs.size()) +
                           " inputs and " + std::to_string(outputs.size()) +
                           " outputs for " + std::to_string(n) + " places");
  }
  plan->segment_begin_.clear();
  plan->data_.clear();
  plan->segment_begin_.push_back(0);
  int64_t rows = 0;
  for (int p = 0; p < n; ++p) {
    const Tensor* t = inputs[p];
    auto where = [&] { return label() + " place " + places_[p].ToString(); };
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
    for (int q = 0; q < n; ++q) {
      if (outputs[p] == inputs[q]) {
        return InvalidArgument(where() + ": the output is the input of " +
                               places_[q].ToString());
      }
    }
    rows += t->dim(0);
    plan->segment_begin_.push_back(plan->segment_begin_.back() +
                                   static_cast<int64_t>(t->bytes()));
    plan->data_.push_back(static_cast<char*>(inputs[p]->raw_data()));
  }
  Dims dims = inputs[0]->dims();  // one small vector per call: the result
  dims[0] = rows;                 // shape is only known now
  for (int p = 0; p < n; ++p) {
    outputs[p]->Allocate(inputs[0]->dtype(), dims, inputs[p]->place());
    for (int q = 0; q < n; ++q) {
      if (outputs[p]->SharesBufferWith(*inputs[q])) {
        return InvalidArgument(label() + " place " + places_[p].ToString() +
                               ": the output shares memory with the input of " +
                               places_[q].ToString());
      }
    }
  }
  for (int p = 0; p < n; ++p) {
    plan->data_.push_back(static_cast<char*>(outputs[p]->raw_data()));
  }
  plan->collective_ = Collective::kAllGather;
  plan->dtype_ = inputs[0]->dtype();
  plan->num_places_ = n;
  plan->root_ = 0;
  plan->unit_bytes_ = 1;
  plan->total_units_ = plan->segment_begin_.back();
  plan->chunk_units_ = options_.chunk_bytes;
  const int64_t chunks =
      (plan->total_units_ + plan->chunk_units_ - 1) / plan->chunk_units_;
  if (chunks > INT_MAX) {
    return OutOfRange(label() + ": " + std::to_string(chunks) +
                      " chunks; raise chunk_bytes");
  }
  plan->num_chunks_ = static_cast<int>(chunks);
  return Status::Ok();
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

Status InProcessCommunicator::Reduce(std::string_view name,
                                     TensorGroups groups, int root) {
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
