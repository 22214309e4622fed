// Place: where a tensor lives and a kernel runs: cpu:i, cuda:i, or sim:i, a
// simulated asynchronous device (host memory and CPU kernels, but its work
// runs on streams that complete it later than it was issued, as a GPU's
// does; the actor runtime's stream actors drive it, so stream ordering is
// tested where no GPU exists).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace parex {

struct Place {
  enum class Kind : int { kCPU = 0, kCUDA = 1, kSim = 2 };

  Kind kind = Kind::kCPU;
  int id = 0;

  static Place CPU(int id = 0) { return Place{Kind::kCPU, id}; }
  static Place CUDA(int id) { return Place{Kind::kCUDA, id}; }
  static Place Sim(int id) { return Place{Kind::kSim, id}; }

  bool is_cpu() const { return kind == Kind::kCPU; }
  bool is_cuda() const { return kind == Kind::kCUDA; }
  bool is_sim() const { return kind == Kind::kSim; }
  std::string ToString() const;  // "cpu:0", "cuda:1"

  friend bool operator==(const Place& a, const Place& b) {
    return a.kind == b.kind && a.id == b.id;
  }
  friend bool operator!=(const Place& a, const Place& b) { return !(a == b); }
  friend bool operator<(const Place& a, const Place& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.id < b.id;
  }
};

const char* PlaceKindName(Place::Kind kind);  // "cpu", "cuda", "sim"
// Parses "cpu:3", "cuda:0" or "sim:1" (one place).
StatusOr<Place> ParsePlace(const std::string& text);

// The place lists users write (--places, topology files), the one parser of
// them: "KIND:N" is N places KIND:0 .. KIND:N-1, "KIND:a,b,..." the places
// listed (no repeats), where an item may be an inclusive range "a-b"
// ("cpu:0-3", "cpu:0,2-3"), "KIND" alone one place; KIND is cpu or cuda, N and
// ids at most kMaxPlaceId. KIND is cpu, cuda or sim. InvalidArgument quoting
// `spec` otherwise.
inline constexpr int kMaxPlaceId = 1024;
StatusOr<std::vector<Place>> ParsePlaceList(const std::string& spec);

}  // namespace parex
