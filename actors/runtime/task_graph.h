// TaskGraph: the immutable shape of one step of work, as the runtime sees it
// (DESIGN.md §3.3): nodes, their successors and initial pending counts, and
// one task function that runs a node. Built once per executor (from an
// SsaGraph by the execution plan, or synthetically by the benchmarks) and
// shared, read-only, by every runner; a step copies the pending counts.
//
// Thread-safety: immutable after construction; `task` is called
// concurrently for different nodes (never twice at once for one node).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/device_context.h"

namespace parex {

// The stream a node's work is ordered on (DESIGN.md §3.4).
enum class TaskStream : int { kCompute = 0, kCommunication = 1, kFetch = 2 };
const char* TaskStreamName(TaskStream stream);

struct TaskNode {
  std::string label;  // "op #3 mul@cpu:0": errors and traces
  int place = -1;     // -1: spans places (collectives, fetch)
  TaskStream stream = TaskStream::kCompute;
  std::vector<int> successors;  // node ids, no duplicates
  // Per successor: what its readiness message stands for
  // ("fc_0.w_0@GRAD@1@cpu:0, ..."); may be empty.
  std::vector<std::string> edge_labels;
  int num_predecessors = 0;  // the pending count a step starts from
  int64_t bytes = 0;         // collectives: bytes moved per place
  // >= 0: a collective issued by that communicator's collective actor, in
  // node-id order among the nodes of the same communicator.
  int communicator = -1;
  // >= 0: the node's work is asynchronous and runs on stream actor
  // TaskGraph::streams[stream_actor]; -1: it runs in the actor that fires it.
  int stream_actor = -1;
};

// How a consumer on one stream of an asynchronous place waits for a producer
// on another (seed 000, "Synchronize GPU kernels"; stream_actor.h): the
// producer's event, or a full Wait of its stream (everything issued on it
// before the consumer). Chosen per executor, at run time.
enum class StreamWaitStrategy : int { kEvent = 0, kWait = 1 };

// A communicator whose collectives some nodes are (TaskNode::communicator).
struct CommunicatorSlot {
  std::string name;  // "in_process", "gloo": logs and traces
  // A call may block its thread (waiting for a peer): its collective actor
  // then runs detached, on a thread of its own, never on a scheduler worker.
  bool blocking = false;
};

// An asynchronous stream of one place (TaskNode::stream_actor).
struct StreamSlot {
  std::string name;  // "sim:0/compute"
  int place = -1;
  TaskStream stream = TaskStream::kCompute;
  // The simulated device runs each work item this long after it reaches the
  // front of the queue (0: at once): work completes later than it was issued.
  int64_t delay_ns = 0;
  // A real device stream (a CUDA stream; in tests a CPU context): the work
  // is queued on it, not run to completion; a cross-stream input is waited
  // for on the device (kEvent: the producer's event, queued, the actor does
  // not block; kWait: the producer's stream synchronised from the host);
  // each node's event is recorded after its work. Null: the simulated
  // place, whose stream actor waits on the host. Not owned; outlives every
  // runner of the graph.
  DeviceContext* device = nullptr;
};

// Runs node `node` of step `step`. An error fails the step: the runner
// skips the tasks not yet started (their successors still become ready, so
// the step ends) and returns the first error.
using TaskFunction = std::function<Status(int node, int64_t step)>;

struct TaskGraph {
  std::vector<TaskNode> nodes;
  TaskFunction task;
  std::vector<CommunicatorSlot> communicators;
  std::vector<StreamSlot> streams;
  // Called by the coordinator when a step is aborted, from its thread, while
  // tasks may be running: makes blocked work (a collective waiting for a
  // peer) return promptly with an error. `resume` is called before the next
  // step starts. Either may be empty.
  std::function<void(const Status& reason)> interrupt;
  std::function<void()> resume;

  int size() const { return static_cast<int>(nodes.size()); }
  // Fills num_predecessors from the successor lists and checks the graph is
  // acyclic with successors in range and without duplicates, and that every
  // communicator and stream index names a slot (Internal error naming the
  // node otherwise).
  Status Finalize();

 private:
  // Node i's successors in range, not itself and not repeated; its
  // communicator and stream slots existing.
  Status CheckNode(int i) const;
};

// Chains for a runner that runs several nodes in one actor (DESIGN.md §3.4):
// next[u] is the node that runs right after u in u's actor, or -1. v =
// next[u] is a successor of u on u's place (places >= 0 only) that is ready
// the moment u finishes: u is v's only predecessor, or (graphs of at most
// `max_join_nodes` nodes, where the check is a reachability closure) every
// other predecessor of v is an ancestor of u. Each u continues with such a
// successor on a longest path to a sink; each v continues at most one u.
// REQUIRES: g.Finalize() succeeded.
std::vector<int> ChainNext(const TaskGraph& g, int max_join_nodes = 8192);

// Runs every node of a TaskGraph once per step, each after all its
// predecessors. Implementations: ActorRunner (CAF actors, the product) and
// the benchmarks' peers (a thread pool with atomic counters, TBB).
// Thread-safety: one Run at a time.
class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Runs step `step`: OK, or the first error a task returned.
  virtual Status Run(int64_t step) = 0;
};

}  // namespace parex
