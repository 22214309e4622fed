// What the inference rewrites (inference_fusion.h, channels_last.h) ask of
// a program before they change it: who reads and writes each var, and an
// op's attributes with a fallback.
#pragma once

#include <map>
#include <string>

#include "graph/ir/program.h"

namespace parex {
namespace fusion {

// The attribute as T, or `fallback` when the op does not store it or it
// does not read as T.
template <typename T>
T AttrOr(const OpDesc& op, const char* name, T fallback) {
  if (!op.HasAttr(name)) return fallback;
  StatusOr<T> v = op.GetAttr<T>(name);
  return v.ok() ? *v : fallback;
}

bool IsConv(const OpDesc& op);

// Who reads and who writes each var, over every block (a sub-block's op
// reading a var of block 0 counts as a reader).
struct Uses {
  std::map<std::string, int> readers, writers;
};

Uses CountUses(const Program& program);

// How many times `name` is in `m` (0 when it is not).
int Count(const std::map<std::string, int>& m, const std::string& name);

}  // namespace fusion
}  // namespace parex
