#include "actors/runtime/task_graph.h"

#include <algorithm>

namespace parex {

const char* TaskStreamName(TaskStream stream) {
  switch (stream) {
    case TaskStream::kCompute:
      return "compute";
    case TaskStream::kCommunication:
      return "communication";
    case TaskStream::kFetch:
      return "fetch";
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
    if (nodes[i].communicator >= static_cast<int>(communicators.size()) ||
        nodes[i].stream_actor >= static_cast<int>(streams.size())) {
      return Internal("task graph: node " + std::to_string(i) + " (" +
                      nodes[i].label +
                      ") names a communicator or stream "
                      "that does not exist");
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

std::vector<int> ChainNext(const TaskGraph& g, int max_join_nodes) {
  const int n = g.size();
  std::vector<std::vector<int>> preds(n);
  for (int u = 0; u < n; ++u) {
    for (int v : g.nodes[u].successors) preds[v].push_back(u);
  }
  // Topological order (Kahn) and each node's height: the most nodes on a
  // path from it to a sink.
  std::vector<int> order;
  order.reserve(n);
  std::vector<int> pending(n);
  for (int i = 0; i < n; ++i) {
    pending[i] = g.nodes[i].num_predecessors;
    if (pending[i] == 0) order.push_back(i);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (int s : g.nodes[order[k]].successors) {
      if (--pending[s] == 0) order.push_back(s);
    }
  }
  std::vector<int> position(n), height(n, 1);
  for (int k = 0; k < n; ++k) position[order[k]] = k;
  for (int k = n - 1; k >= 0; --k) {
    const int u = order[k];
    for (int s : g.nodes[u].successors) {
      height[u] = std::max(height[u], height[s] + 1);
    }
  }
  // continues[v]: the predecessor v may run right after, or -1.
  std::vector<int> continues(n, -1);
  for (int v = 0; v < n; ++v) {
    if (preds[v].size() == 1) continues[v] = preds[v][0];
  }
  if (n <= max_join_nodes) {
    // Descendant sets, built in reverse topological order.
    const size_t words = (static_cast<size_t>(n) + 63) / 64;
    std::vector<uint64_t> desc(words * n, 0);
    for (int k = n - 1; k >= 0; --k) {
      const int u = order[k];
      uint64_t* mine = &desc[u * words];
      for (int s : g.nodes[u].successors) {
        mine[s / 64] |= uint64_t{1} << (s % 64);
        const uint64_t* theirs = &desc[s * words];
        for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      }
    }
    auto reaches = [&](int from, int to) {
      return ((desc[from * words + to / 64] >> (to % 64)) & 1) != 0;
    };
    for (int v = 0; v < n; ++v) {
      if (preds[v].size() < 2) continue;
      int last = preds[v][0];
      for (int p : preds[v]) {
        if (position[p] > position[last]) last = p;
      }
      bool after_all = true;
      for (int p : preds[v]) {
        after_all = after_all && (p == last || reaches(p, last));
      }
      if (after_all) continues[v] = last;
    }
  }
  // Each u continues with the candidate on the longest path: the others
  // are sent messages first and run in parallel.
  std::vector<int> next(n, -1);
  for (int u = 0; u < n; ++u) {
    const int place = g.nodes[u].place;
    // Collectives belong to their communicator's actor, never to a chain.
    if (place < 0 || g.nodes[u].communicator >= 0) continue;
    for (int v : g.nodes[u].successors) {
      if (continues[v] != u || g.nodes[v].place != place ||
          g.nodes[v].communicator >= 0) {
        continue;
      }
      if (next[u] < 0 || height[v] > height[next[u]]) next[u] = v;
    }
  }
  return next;
}

}  // namespace parex
