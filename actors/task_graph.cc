#include "actors/task_graph.h"

#include <algorithm>

namespace parex {

const char* TaskStreamName(TaskStream stream) {
  switch (stream) {
    case TaskStream::kCompute: return "compute";
    case TaskStream::kCommunication: return "communication";
    case TaskStream::kFetch: return "fetch";
  }
  return "?";
}

Status TaskGraph::Finalize() {
  const int n = size();
  for (TaskNode& node : nodes) node.num_predecessors = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<int> succ = nodes[i].successors;
    std::sort(succ.begin(), succ.end());
    if (std::adjacent_find(succ.begin(), succ.end()) != succ.end()) {
      return Internal("task graph: node " + std::to_string(i) + " (" +
                      nodes[i].label + ") lists a successor twice");
    }
    for (int s : succ) {
      if (s < 0 || s >= n || s == i) {
        return Internal("task graph: node " + std::to_string(i) + " (" +
                        nodes[i].label + ") has a bad successor " +
                        std::to_string(s));
      }
      ++nodes[s].num_predecessors;
    }
  }
  // Acyclic: Kahn's algorithm must reach every node.
  std::vector<int> pending(n);
  std::vector<int> ready;
  for (int i = 0; i < n; ++i) {
    pending[i] = nodes[i].num_predecessors;
    if (pending[i] == 0) ready.push_back(i);
  }
  int seen = 0;
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    ++seen;
    for (int s : nodes[i].successors) {
      if (--pending[s] == 0) ready.push_back(s);
    }
  }
  if (seen != n) {
    for (int i = 0; i < n; ++i) {
      if (pending[i] > 0) {
        return Internal("task graph: a cycle through node " +
                        std::to_string(i) + " (" + nodes[i].label + ")");
      }
    }
  }
  if (!task) return Internal("task graph: no task function");
  return Status::Ok();
}

}  // namespace parex
