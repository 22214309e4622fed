// TraceRecorder: what the actor runtime did, event by event (DESIGN.md §5):
// the span of every task (node, step, place, stream, worker thread, bytes
// moved by a collective) and every actor message (sender node, receiver
// node, step, the vars whose readiness it carries), paired by a flow id.
//
// Off by default and near-free when off: the runtime checks `enabled()`
// (one relaxed atomic load) before recording anything. When on, events go
// to per-thread buffers, so recording takes no lock on the hot path.
// Exports Chrome trace JSON (Perfetto, chrome://tracing): one process per
// place (plus one for multi-place work), one track per actor kind there (op
// actors, the collective actor, the fetch op actor, the coordinator, each
// stream actor), flow arrows for messages named by their type
// (actors/runtime/messages.h). Queries for tests read the spans back.
//
// Thread-safety: Record* may be called concurrently; Clear, Events and the
// exports only while no step runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/runtime/task_graph.h"

namespace parex {

// A span covers an actor's handling of one message: the task, then the
// messages it sends, so flow arrows start and end inside spans.
struct TraceSpan {
  int64_t step = 0;
  int node = -1;
  int64_t begin_ns = 0;     // since the recorder's start
  int64_t task_end_ns = 0;  // the task's own end, before it signals
  int64_t end_ns = 0;
  uint32_t thread = 0;  // a small id per worker thread
  int64_t bytes = 0;    // collectives: bytes reduced per place
  bool ok = true;       // false: the task failed or was skipped
};

// One actor message: sent by `sender` (-1: the coordinator), received by
// `receiver` (-1: the coordinator: the StepDone of the step's last node; the
// sender itself: a StreamWork to its stream actor); `flow` pairs the two
// records.
struct TraceMessage {
  int64_t step = 0;
  int sender = -1;
  int receiver = -1;
  uint64_t flow = 0;
  int64_t sent_ns = 0;
  int64_t received_ns = -1;  // -1 until received
  uint32_t send_thread = 0;
  uint32_t receive_thread = 0;
};

// The message type a trace record stands for: "RunNode", "StreamWork" or
// "StepDone".
const char* MessageTypeOf(const TraceMessage& m);

class TraceRecorder {
 public:
  explicit TraceRecorder(bool enabled = true);
  ~TraceRecorder();

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }

  // Nanoseconds since the recorder was made.
  int64_t Now() const;
  // When the recorder was made, on this process's steady clock (ns): what a
  // trace's times count from (trace_merge.h aligns nodes with it).
  int64_t origin_steady_ns() const { return origin_ns_; }
  void RecordSpan(const TraceSpan& span);
  // A new flow id for a message about to be sent.
  uint64_t RecordSend(int64_t step, int sender, int receiver);
  // The receipt of message `flow` by `receiver` at `at_ns` (Now()).
  void RecordReceive(uint64_t flow, int receiver, int64_t at_ns);

  void Clear();
  std::vector<TraceSpan> Spans() const;        // ordered by begin
  std::vector<TraceMessage> Messages() const;  // ordered by flow id

  // Queries over the recorded spans (tests, summaries).
  // The span of `node` in `step`, if recorded.
  std::optional<TraceSpan> FindSpan(int64_t step, int node) const;
  // Whether `a`'s task ended before `b` began in `step` (both recorded).
  bool EndsBefore(int64_t step, int a, int b) const;

  // Chrome trace JSON; node labels, places and streams from `graph`, place
  // names from `place_names` (index = place). Its "metadata" object holds
  // `metadata` and "parex_origin_steady_ns".
  std::string ToChromeJson(
      const TaskGraph& graph, const std::vector<std::string>& place_names,
      const std::map<std::string, std::string>& metadata = {}) const;

 private:
  struct ThreadBuffer;
  // This thread's buffer, made on its first record.
  ThreadBuffer* Local();

  const uint64_t id_;  // unique per recorder: keys the thread-local caches
  std::atomic<bool> enabled_;
  int64_t origin_ns_;
  std::atomic<uint64_t> next_flow_{1};
  mutable std::mutex mu_;  // guards buffers_
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
};

}  // namespace parex
