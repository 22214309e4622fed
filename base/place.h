// Place: where a tensor lives and a kernel runs: cpu:i or cuda:i.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace parex {

struct Place {
  enum class Kind : int { kCPU = 0, kCUDA = 1 };

  Kind kind = Kind::kCPU;
  int id = 0;

  static Place CPU(int id = 0) { return Place{Kind::kCPU, id}; }
  static Place CUDA(int id) { return Place{Kind::kCUDA, id}; }

  bool is_cpu() const { return kind == Kind::kCPU; }
  bool is_cuda() const { return kind == Kind::kCUDA; }
  std::string ToString() const;  // "cpu:0", "cuda:1"

  friend bool operator==(const Place& a, const Place& b) {
    return a.kind == b.kind && a.id == b.id;
  }
  friend bool operator!=(const Place& a, const Place& b) { return !(a == b); }
  friend bool operator<(const Place& a, const Place& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.id < b.id;
  }
};

const char* PlaceKindName(Place::Kind kind);  // "cpu", "cuda"
// Parses "cpu:3" or "cuda:0".
StatusOr<Place> ParsePlace(const std::string& text);

}  // namespace parex
