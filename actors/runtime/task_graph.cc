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

namespace {

std::string NodeName(const TaskGraph& g, int i) {
  return "node " + std::to_string(i) + " (" + g.nodes[i].label + ")";
}

// A topological order by Kahn's algorithm, with pending[i] as each node's
// unmet predecessors; a node on a cycle is never reached (the order is then
// shorter than the graph).
std::vector<int> KahnOrder(const TaskGraph& g, std::vector<int>& pending) {
  const int n = g.size();
  std::vector<int> order;
  order.reserve(n);
  pending.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    pending[i] = g.nodes[i].num_predecessors;
    if (pending[i] == 0) order.push_back(i);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (int s : g.nodes[order[k]].successors) {
      if (--pending[s] == 0) order.push_back(s);
    }
  }
  return order;
}

}  // namespace

Status TaskGraph::CheckNode(int i) const {
  std::vector<int> succ = nodes[i].successors;
  std::sort(succ.begin(), succ.end());
  if (std::adjacent_find(succ.begin(), succ.end()) != succ.end()) {
    return Internal("task graph: " + NodeName(*this, i) +
                    " lists a successor twice");
  }
  if (nodes[i].communicator >= static_cast<int>(communicators.size()) ||
      nodes[i].stream_actor >= static_cast<int>(streams.size())) {
    return Internal("task graph: " + NodeName(*this, i) +
                    " names a communicator or stream that does not exist");
  }
  for (int s : succ) {
    if (s < 0 || s >= size() || s == i) {
      return Internal("task graph: " + NodeName(*this, i) +
                      " has a bad successor " + std::to_string(s));
    }
  }
  return Status::Ok();
}

Status TaskGraph::Finalize() {
  for (TaskNode& node : nodes) node.num_predecessors = 0;
  for (int i = 0; i < size(); ++i) {
    PAREX_RETURN_IF_ERROR(CheckNode(i));
    for (int s : nodes[i].successors) ++nodes[s].num_predecessors;
  }
  // Acyclic: Kahn's algorithm must reach every node.
  std::vector<int> pending;
  if (KahnOrder(*this, pending).size() != nodes.size()) {
    for (int i = 0; i < size(); ++i) {
      if (pending[i] > 0) {
        return Internal("task graph: a cycle through " + NodeName(*this, i));
      }
    }
  }
  if (!task) return Internal("task graph: no task function");
  return Status::Ok();
}

namespace {

// continues[v]: the predecessor v may run right after, or -1. With one
// predecessor, that one; with several (a join), the last of them in
// topological order when every other one reaches it, so that running v after
// it waits for nothing else (only for graphs of at most max_join_nodes nodes:
// the reachability sets are n^2 bits).
std::vector<int> Continuations(const TaskGraph& g,
                               const std::vector<std::vector<int>>& preds,
                               const std::vector<int>& order,
                               int max_join_nodes) {
  const int n = g.size();
  std::vector<int> continues(n, -1);
  for (int v = 0; v < n; ++v) {
    if (preds[v].size() == 1) continues[v] = preds[v][0];
  }
  if (n > max_join_nodes) return continues;
  std::vector<int> position(n);
  for (int k = 0; k < n; ++k) position[order[k]] = k;
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
  return continues;
}

// Whether v may run on u's chain: same place, and neither a collective
// (those belong to their communicator's actor).
bool SameChain(const TaskNode& u, const TaskNode& v) {
  return u.place >= 0 && u.communicator < 0 && v.place == u.place &&
         v.communicator < 0;
}

}  // namespace

std::vector<int> ChainNext(const TaskGraph& g, int max_join_nodes) {
  const int n = g.size();
  std::vector<std::vector<int>> preds(n);
  for (int u = 0; u < n; ++u) {
    for (int v : g.nodes[u].successors) preds[v].push_back(u);
  }
  std::vector<int> pending;
  const std::vector<int> order = KahnOrder(g, pending);
  // Each node's height: the most nodes on a path from it to a sink.
  std::vector<int> height(n, 1);
  for (int k = n - 1; k >= 0; --k) {
    const int u = order[k];
    for (int s : g.nodes[u].successors) {
      height[u] = std::max(height[u], height[s] + 1);
    }
  }
  const std::vector<int> continues =
      Continuations(g, preds, order, max_join_nodes);
  // Each u continues with the candidate on the longest path: the others
  // are sent messages first and run in parallel.
  std::vector<int> next(n, -1);
  for (int u = 0; u < n; ++u) {
    for (int v : g.nodes[u].successors) {
      if (continues[v] != u || !SameChain(g.nodes[u], g.nodes[v])) continue;
      if (next[u] < 0 || height[v] > height[next[u]]) next[u] = v;
    }
  }
  return next;
}

}  // namespace parex
