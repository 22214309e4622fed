#include "bench/task_graph_peers.h"

#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/spin_lock.h"

namespace parex {
namespace bench {

void FirstError::Record(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) status_ = status;
  failed_.store(true, std::memory_order_relaxed);
}

Status FirstError::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  failed_.store(false, std::memory_order_relaxed);
  return std::exchange(status_, Status::Ok());
}

// --- ThreadPoolRunner ----------------------------------------------------

ThreadPoolRunner::ThreadPoolRunner(std::shared_ptr<const TaskGraph> graph,
                                   int num_threads, int spin_us)
    : graph_(std::move(graph)),
      spin_ns_(std::max(spin_us, 0) * int64_t{1000}),
      pending_(new std::atomic<int>[graph_->size()]),
      ring_(std::max(graph_->size(), 1)) {
  for (int id = 0; id < graph_->size(); ++id) {
    if (graph_->nodes[id].num_predecessors == 0) roots_.push_back(id);
  }
  const int threads = std::max(num_threads, 1);
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPoolRunner::~ThreadPoolRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

Status ThreadPoolRunner::Run(int64_t step) {
  const int n = graph_->size();
  if (n == 0) return Status::Ok();
  for (int id = 0; id < n; ++id) {
    pending_[id].store(graph_->nodes[id].num_predecessors,
                       std::memory_order_relaxed);
  }
  remaining_.store(n, std::memory_order_relaxed);
  done_ = false;  // no worker touches it between steps
  {
    std::lock_guard<std::mutex> lock(mu_);
    step_ = step;
    for (int root : roots_) ring_[tail_++ % ring_.size()] = root;
    queued_.store(static_cast<int>(tail_ - head_), std::memory_order_relaxed);
  }
  if (roots_.size() == 1) {
    work_cv_.notify_one();
  } else {
    work_cv_.notify_all();
  }
  {
    std::unique_lock<std::mutex> lock(done_mu_);
    done_cv_.wait(lock, [this] { return done_; });
  }
  return error_.Take();
}

void ThreadPoolRunner::SpinForWork() const {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns_);
  for (int polls = 1; queued_.load(std::memory_order_relaxed) == 0; ++polls) {
    CpuRelax();
    if (polls % 64 == 0 && std::chrono::steady_clock::now() >= end) return;
  }
}

void ThreadPoolRunner::WorkerLoop() {
  for (;;) {
    if (spin_ns_ > 0) SpinForWork();
    int node;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (head_ == tail_ && !stop_) {
        ++idle_workers_;
        work_cv_.wait(lock, [this] { return head_ != tail_ || stop_; });
        --idle_workers_;
      }
      if (stop_) return;  // never set while a step runs
      node = ring_[head_++ % ring_.size()];
      queued_.store(static_cast<int>(tail_ - head_), std::memory_order_relaxed);
    }
    RunChain(node);
  }
}

void ThreadPoolRunner::RunChain(int node) {
  const TaskGraph& graph = *graph_;
  int finished = 0;
  while (node >= 0) {
    if (!error_.failed()) {
      Status status = graph.task(node, step_);
      if (!status.ok()) error_.Record(status);
    }
    ++finished;
    int next = -1;
    int queued = 0;
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    for (int succ : graph.nodes[node].successors) {
      if (pending_[succ].fetch_sub(1, std::memory_order_acq_rel) != 1) {
        continue;
      }
      if (next < 0) {
        next = succ;
        continue;
      }
      if (!lock.owns_lock()) lock.lock();
      ring_[tail_++ % ring_.size()] = succ;
      ++queued;
    }
    if (queued > 0) {
      queued_.store(static_cast<int>(tail_ - head_), std::memory_order_relaxed);
      const int wake = std::min(queued, idle_workers_);
      lock.unlock();
      for (int i = 0; i < wake; ++i) work_cv_.notify_one();
    }
    node = next;
  }
  // Every successor this chain made ready is queued or ran above, so the
  // count reaching zero means the step is over.
  if (remaining_.fetch_sub(finished, std::memory_order_acq_rel) == finished) {
    {
      std::lock_guard<std::mutex> lock(done_mu_);
      done_ = true;
    }
    done_cv_.notify_one();
  }
}

// --- TbbFlowGraphRunner --------------------------------------------------

struct TbbFlowGraphRunner::Impl {
  using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;

  explicit Impl(std::shared_ptr<const TaskGraph> g, int num_threads)
      : graph(std::move(g)), arena(std::max(num_threads, 1)) {
    // The flow graph attaches to the arena it is built in and runs its
    // tasks there.
    arena.execute([this] {
      flow = std::make_unique<tbb::flow::graph>();
      nodes.reserve(graph->size());
      for (int id = 0; id < graph->size(); ++id) {
        nodes.push_back(std::make_unique<Node>(
            *flow, [this, id](const tbb::flow::continue_msg&) {
              if (!error.failed()) {
                Status status = graph->task(id, step);
                if (!status.ok()) error.Record(status);
              }
              return tbb::flow::continue_msg();
            }));
      }
      for (int id = 0; id < graph->size(); ++id) {
        const TaskNode& node = graph->nodes[id];
        if (node.num_predecessors == 0) roots.push_back(nodes[id].get());
        for (int succ : node.successors) {
          tbb::flow::make_edge(*nodes[id], *nodes[succ]);
        }
      }
    });
  }

  ~Impl() {
    arena.execute([this] {
      flow->wait_for_all();
      nodes.clear();
      flow.reset();
    });
  }

  const std::shared_ptr<const TaskGraph> graph;
  tbb::task_arena arena;
  std::unique_ptr<tbb::flow::graph> flow;
  std::vector<std::unique_ptr<Node>> nodes;  // by node id
  std::vector<Node*> roots;
  // Written by Run before the roots are triggered; read by the tasks.
  int64_t step = 0;
  FirstError error;
};

TbbFlowGraphRunner::TbbFlowGraphRunner(std::shared_ptr<const TaskGraph> graph,
                                       int num_threads)
    : impl_(std::make_unique<Impl>(std::move(graph), num_threads)) {}

TbbFlowGraphRunner::~TbbFlowGraphRunner() = default;

Status TbbFlowGraphRunner::Run(int64_t step) {
  Impl& impl = *impl_;
  impl.step = step;
  // A continue_node resets its count of arrived predecessors when it
  // fires, so the same graph runs again next step.
  impl.arena.execute([&impl] {
    for (Impl::Node* root : impl.roots) {
      root->try_put(tbb::flow::continue_msg());
    }
    impl.flow->wait_for_all();
  });
  return impl.error.Take();
}

}  // namespace bench
}  // namespace parex
