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
  // The device: a CPU place's index, the CUDA device ordinal among the
  // visible devices (CUDA numbers them from 0 whatever CUDA_VISIBLE_DEVICES
  // names), the simulated device's index.
  int id = 0;
  // Which of the places sharing device `id` this is: "cuda:0x2" is slots 0
  // and 1 of device 0. 0 for the first place of a device (and for every
  // place that has a device to itself).
  int slot = 0;

  static Place CPU(int id = 0) { return Place{Kind::kCPU, id}; }
  static Place CUDA(int id, int slot = 0) {
    return Place{Kind::kCUDA, id, slot};
  }
  static Place Sim(int id) { return Place{Kind::kSim, id}; }

  bool is_cpu() const { return kind == Kind::kCPU; }
  bool is_cuda() const { return kind == Kind::kCUDA; }
  bool is_sim() const { return kind == Kind::kSim; }
  // "cpu:0", "cuda:1"; "cuda:1.2" for slot 2 of device 1. ParsePlace reads
  // it back.
  std::string ToString() const;

  friend bool operator==(const Place& a, const Place& b) {
    return a.kind == b.kind && a.id == b.id && a.slot == b.slot;
  }
  friend bool operator!=(const Place& a, const Place& b) { return !(a == b); }
  // By kind, then device, then slot.
  friend bool operator<(const Place& a, const Place& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.id != b.id ? a.id < b.id : a.slot < b.slot;
  }
};

const char* PlaceKindName(Place::Kind kind);  // "cpu", "cuda", "sim"
// The kind in a sentence: "CPU", "CUDA", "simulated".
const char* PlaceKindTitle(Place::Kind kind);

// Whether a buffer of place `a` can be read and written at place `b`: every
// CPU place is host memory, and the places sharing a device (its slots:
// cuda:0 and cuda:0.1) share the device's memory.
inline bool SameMemory(const Place& a, const Place& b) {
  return a.kind == b.kind && (a.is_cpu() || a.id == b.id);
}

inline constexpr int kMaxPlaceId = 1024;
inline constexpr int kMaxPlacesPerDevice = 64;  // K of "cuda:0xK"

// Parses one place as ToString writes it: "cpu:3", "cuda:0", "cuda:0.1"
// (slot 1 of device 0), "sim:1"; ids at most kMaxPlaceId, slots below
// kMaxPlacesPerDevice.
StatusOr<Place> ParsePlace(const std::string& text);

// What "all" stands for in a place list; -1 where it is not known (there
// "KIND:all" is refused).
struct PlaceCounts {
  int cpu = -1;   // the cores this process may run on
  int cuda = -1;  // the visible CUDA devices
};

// The place lists users write (--places, topology files), the one parser of
// them. KIND is cpu, cuda (or gpu) or sim; "KIND" alone is the one place
// KIND:0. Then
//   cpu:N, sim:N     N places KIND:0 .. KIND:N-1 (N >= 1);
//   cuda:D           the one place on CUDA device D (a device ordinal, as
//                    in CUDA and every GPU framework, not a count);
//   KIND:a,b,...     the places listed (no repeats), where an item may be an
//                    inclusive range "a-b" ("cpu:0-3", "cuda:0,2-3");
//   cpu:all          one place per core (counts.cpu);
//   cuda:all         one place per visible CUDA device (counts.cuda);
//   cuda:...xK       K places on each device listed (K <= 64): "cuda:0x2" is
//                    cuda:0 and cuda:0.1, "cuda:0-1x2" four places, device
//                    by device; cuda only.
// Ids are at most kMaxPlaceId. InvalidArgument quoting `spec` for a
// spelling outside this; FailedPrecondition quoting it for "KIND:all" when
// the count is 0 (no device is visible).
StatusOr<std::vector<Place>> ParsePlaceList(const std::string& spec,
                                            const PlaceCounts& counts = {});

}  // namespace parex
