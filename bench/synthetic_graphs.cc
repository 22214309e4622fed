#include "bench/synthetic_graphs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <utility>

namespace parex {
namespace bench {

StatusOr<TaskGraph> LayeredRandomDag(const LayeredDagOptions& options) {
  if (options.num_nodes < 0 || options.layer_width <= 0 ||
      options.avg_inputs < 0) {
    return InvalidArgument("LayeredRandomDag: bad options (nodes " +
                           std::to_string(options.num_nodes) + ", width " +
                           std::to_string(options.layer_width) + ")");
  }
  std::mt19937 rng(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int width = options.layer_width;
  const int base_inputs = static_cast<int>(std::floor(options.avg_inputs));
  const double extra_input = options.avg_inputs - base_inputs;

  TaskGraph graph;
  graph.nodes.resize(options.num_nodes);
  std::vector<int> inputs;
  for (int id = 0; id < options.num_nodes; ++id) {
    TaskNode& node = graph.nodes[id];
    node.label = "dag node #" + std::to_string(id);
    const int layer = id / width;
    if (layer == 0) continue;
    const int layer_begin = layer * width;
    const int previous_begin = layer_begin - width;
    int wanted = base_inputs + (unit(rng) < extra_input ? 1 : 0);
    // There are `layer_begin` earlier nodes; a node cannot draw more.
    wanted = std::min(wanted, layer_begin);
    inputs.clear();
    while (static_cast<int>(inputs.size()) < wanted) {
      const bool previous = unit(rng) < options.previous_layer_share;
      const int begin = previous ? previous_begin : 0;
      const int pred =
          std::uniform_int_distribution<int>(begin, layer_begin - 1)(rng);
      if (std::find(inputs.begin(), inputs.end(), pred) == inputs.end()) {
        inputs.push_back(pred);
      }
    }
    for (int pred : inputs) graph.nodes[pred].successors.push_back(id);
  }
  return graph;
}

StatusOr<TaskGraph> SsaReplay(const SsaGraph& ssa) {
  const int num_ops = static_cast<int>(ssa.ops().size());
  std::vector<std::set<int>> successors(num_ops);
  for (const SsaVar& var : ssa.vars()) {
    if (ssa.removed(var.id) || var.generator < 0) continue;
    for (int reader : var.readers) {
      if (reader != var.generator) successors[var.generator].insert(reader);
    }
  }
  TaskGraph graph;
  graph.nodes.resize(num_ops);
  graph.communicators.push_back({"in_process", false});
  for (const SsaOp& op : ssa.ops()) {
    TaskNode& node = graph.nodes[op.id];
    node.label = ssa.OpLabel(op.id);
    node.place = op.place;
    if (IsCollective(op.kind)) {
      node.stream = TaskStream::kCommunication;
      node.communicator = 0;  // issued by the collective actor, in id order
    } else if (op.kind == SsaOpKind::kFetch) {
      node.stream = TaskStream::kFetch;
    }
    node.successors.assign(successors[op.id].begin(), successors[op.id].end());
  }
  return graph;
}

int NumEdges(const TaskGraph& graph) {
  int edges = 0;
  for (const TaskNode& node : graph.nodes) {
    edges += static_cast<int>(node.successors.size());
  }
  return edges;
}

std::vector<int64_t> UniformCosts(int num_nodes, int64_t cost_ns) {
  return std::vector<int64_t>(num_nodes, cost_ns);
}

std::vector<int64_t> MixedCosts(int num_nodes,
                                const std::vector<int64_t>& choices_ns,
                                uint32_t seed) {
  PAREX_CHECK(!choices_ns.empty(), "MixedCosts: no choices");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, choices_ns.size() - 1);
  std::vector<int64_t> costs(num_nodes);
  for (int64_t& cost : costs) cost = choices_ns[pick(rng)];
  return costs;
}

void Spin(int64_t ns) {
  if (ns <= 0) return;
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < end) {
  }
}

StepChecker::StepChecker(const TaskGraph& graph)
    : predecessors_(graph.size()),
      runs_(new std::atomic<int64_t>[graph.size()]),
      last_step_(new std::atomic<int64_t>[graph.size()]) {
  for (int id = 0; id < graph.size(); ++id) {
    for (int succ : graph.nodes[id].successors) {
      predecessors_[succ].push_back(id);
    }
    runs_[id].store(0, std::memory_order_relaxed);
    last_step_[id].store(-1, std::memory_order_relaxed);
  }
}

void StepChecker::Record(int node, int64_t step) {
  for (int pred : predecessors_[node]) {
    if (last_step_[pred].load(std::memory_order_acquire) != step) {
      order_violations_.fetch_add(1, std::memory_order_relaxed);
      int none = -1;
      first_violation_.compare_exchange_strong(none, node);
    }
  }
  runs_[node].fetch_add(1, std::memory_order_relaxed);
  last_step_[node].store(step, std::memory_order_release);
}

Status StepChecker::Check(int64_t steps) const {
  const int64_t violations = order_violations_.load();
  if (violations > 0) {
    return Internal("node #" + std::to_string(first_violation_.load()) +
                    " ran before a predecessor finished (" +
                    std::to_string(violations) + " violations)");
  }
  for (size_t id = 0; id < predecessors_.size(); ++id) {
    const int64_t runs = runs_[id].load();
    if (runs != steps) {
      return Internal("node #" + std::to_string(id) + " ran " +
                      std::to_string(runs) + " times in " +
                      std::to_string(steps) + " steps");
    }
  }
  return Status::Ok();
}

TaskFunction SpinTask(std::vector<int64_t> cost_ns,
                      std::shared_ptr<StepChecker> checker) {
  if (checker) {
    return [cost_ns = std::move(cost_ns), checker = std::move(checker)](
               int node, int64_t step) {
      checker->Record(node, step);
      Spin(cost_ns[node]);
      return Status::Ok();
    };
  }
  return [cost_ns = std::move(cost_ns)](int node, int64_t step) {
    Spin(cost_ns[node]);
    return Status::Ok();
  };
}

}  // namespace bench
}  // namespace parex
