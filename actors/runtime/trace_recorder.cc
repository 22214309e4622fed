#include "actors/runtime/trace_recorder.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

namespace parex {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<uint64_t> next_recorder_id{1};

struct Receipt {
  uint64_t flow;
  int receiver;
  int64_t ns;
};

}  // namespace

const char* MessageTypeOf(const TraceMessage& m) {
  if (m.receiver < 0) return "StepDone";
  if (m.receiver == m.sender) return "StreamWork";
  return "RunNode";
}

struct TraceRecorder::ThreadBuffer {
  uint32_t thread = 0;
  std::vector<TraceSpan> spans;
  std::vector<TraceMessage> sends;
  std::vector<Receipt> receipts;
};

TraceRecorder::TraceRecorder(bool enabled)
    : id_(next_recorder_id.fetch_add(1)),
      enabled_(enabled),
      origin_ns_(SteadyNs()) {}

TraceRecorder::~TraceRecorder() = default;

int64_t TraceRecorder::Now() const { return SteadyNs() - origin_ns_; }

TraceRecorder::ThreadBuffer* TraceRecorder::Local() {
  // Per thread: recorder id -> its buffer. Ids are never reused, so an entry
  // of a destroyed recorder is never looked up again.
  thread_local std::vector<std::pair<uint64_t, ThreadBuffer*>> cache;
  for (const auto& [id, buffer] : cache) {
    if (id == id_) return buffer;
  }
  std::lock_guard<std::mutex> lock(mu_);
  buffers_.push_back(std::make_unique<ThreadBuffer>());
  ThreadBuffer* buffer = buffers_.back().get();
  buffer->thread = static_cast<uint32_t>(buffers_.size() - 1);
  cache.emplace_back(id_, buffer);
  return buffer;
}

void TraceRecorder::RecordSpan(const TraceSpan& span) {
  ThreadBuffer* b = Local();
  b->spans.push_back(span);
  b->spans.back().thread = b->thread;
}

uint64_t TraceRecorder::RecordSend(int64_t step, int sender, int receiver) {
  ThreadBuffer* b = Local();
  TraceMessage m;
  m.step = step;
  m.sender = sender;
  m.receiver = receiver;
  m.flow = next_flow_.fetch_add(1, std::memory_order_relaxed);
  m.sent_ns = Now();
  m.send_thread = b->thread;
  b->sends.push_back(m);
  return m.flow;
}

void TraceRecorder::RecordReceive(uint64_t flow, int receiver, int64_t at_ns) {
  Local()->receipts.push_back({flow, receiver, at_ns});
}

void TraceRecorder::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : buffers_) {
    b->spans.clear();
    b->sends.clear();
    b->receipts.clear();
  }
}

std::vector<TraceSpan> TraceRecorder::Spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TraceSpan> out;
  for (const auto& b : buffers_) {
    out.insert(out.end(), b->spans.begin(), b->spans.end());
  }
  std::sort(out.begin(), out.end(), [](const TraceSpan& a, const TraceSpan& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.node < b.node;
  });
  return out;
}

std::vector<TraceMessage> TraceRecorder::Messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<uint64_t, TraceMessage> by_flow;
  for (const auto& b : buffers_) {
    for (const TraceMessage& m : b->sends) by_flow[m.flow] = m;
  }
  for (const auto& b : buffers_) {
    for (const Receipt& r : b->receipts) {
      auto it = by_flow.find(r.flow);
      if (it == by_flow.end()) continue;
      it->second.received_ns = r.ns;
      it->second.receive_thread = b->thread;
    }
  }
  std::vector<TraceMessage> out;
  out.reserve(by_flow.size());
  for (auto& [flow, m] : by_flow) out.push_back(m);
  return out;
}

std::optional<TraceSpan> TraceRecorder::FindSpan(int64_t step, int node) const {
  for (const TraceSpan& s : Spans()) {
    if (s.step == step && s.node == node) return s;
  }
  return std::nullopt;
}

bool TraceRecorder::EndsBefore(int64_t step, int a, int b) const {
  std::optional<TraceSpan> sa = FindSpan(step, a);
  std::optional<TraceSpan> sb = FindSpan(step, b);
  return sa && sb && sa->task_end_ns <= sb->begin_ns;
}

namespace {

// Tracks: pid 0 holds the work spanning places (collectives, fetch) and the
// coordinator; pid p+1 is place p. tid = the actor kind (and stream).
constexpr const char* kTracks[] = {"op actors",
                                   "collective actor",
                                   "op actor (fetch)",
                                   "coordinator",
                                   "stream actor (compute)",
                                   "stream actor (communication)",
                                   "stream actor (fetch)"};
constexpr int kNumTracks = sizeof(kTracks) / sizeof(kTracks[0]);

int PidOf(const TaskGraph& graph, int node) {
  if (node < 0 || node >= graph.size()) return 0;
  return std::max(graph.nodes[node].place, -1) + 1;
}

int TidOf(const TaskGraph& graph, int node) {
  if (node < 0 || node >= graph.size()) return 3;  // the coordinator
  const TaskNode& n = graph.nodes[node];
  if (n.stream_actor >= 0) return 4 + static_cast<int>(n.stream);
  if (n.communicator >= 0) return 1;
  return n.stream == TaskStream::kFetch ? 2 : 0;
}

// The names of the processes (places) and threads (tracks).
void AppendTrackNames(const std::vector<std::string>& place_names,
                      nlohmann::json* events) {
  events->push_back({{"name", "process_name"},
                     {"ph", "M"},
                     {"pid", 0},
                     {"args", {{"name", "all places"}}}});
  for (size_t p = 0; p < place_names.size(); ++p) {
    events->push_back({{"name", "process_name"},
                       {"ph", "M"},
                       {"pid", static_cast<int>(p) + 1},
                       {"args", {{"name", place_names[p]}}}});
  }
  for (int pid = 0; pid <= static_cast<int>(place_names.size()); ++pid) {
    for (int tid = 0; tid < kNumTracks; ++tid) {
      events->push_back({{"name", "thread_name"},
                         {"ph", "M"},
                         {"pid", pid},
                         {"tid", tid},
                         {"args", {{"name", kTracks[tid]}}}});
    }
  }
}

nlohmann::json SpanEvent(const TaskGraph& graph, const TraceSpan& s) {
  const TaskNode* node =
      s.node >= 0 && s.node < graph.size() ? &graph.nodes[s.node] : nullptr;
  nlohmann::json e = {
      {"name",
       node != nullptr ? node->label : "node " + std::to_string(s.node)},
      {"cat", node != nullptr ? TaskStreamName(node->stream) : "?"},
      {"ph", "X"},
      {"ts", s.begin_ns / 1000.0},
      {"dur", (s.end_ns - s.begin_ns) / 1000.0},
      {"pid", PidOf(graph, s.node)},
      {"tid", TidOf(graph, s.node)},
      {"args",
       {{"step", s.step},
        {"node", s.node},
        {"worker", s.thread},
        {"ok", s.ok}}}};
  if (s.bytes > 0) e["args"]["bytes"] = s.bytes;
  return e;
}

// A message as a flow: its start at the sender and, once received, its end
// at the receiver; named by its type, with the variables of its edge.
void AppendMessage(const TaskGraph& graph, const TraceMessage& m,
                   nlohmann::json* events) {
  const std::string name = MessageTypeOf(m);
  std::string vars;
  if (m.sender >= 0 && m.sender < graph.size()) {
    const TaskNode& from = graph.nodes[m.sender];
    for (size_t i = 0; i < from.successors.size(); ++i) {
      if (from.successors[i] == m.receiver && i < from.edge_labels.size()) {
        vars = from.edge_labels[i];
      }
    }
  }
  events->push_back({{"name", name},
                     {"cat", "message"},
                     {"ph", "s"},
                     {"id", m.flow},
                     {"ts", m.sent_ns / 1000.0},
                     {"pid", PidOf(graph, m.sender)},
                     {"tid", TidOf(graph, m.sender)},
                     {"args",
                      {{"step", m.step},
                       {"from", m.sender},
                       {"to", m.receiver},
                       {"vars", vars}}}});
  if (m.received_ns >= 0) {
    events->push_back({{"name", name},
                       {"cat", "message"},
                       {"ph", "f"},
                       {"bp", "e"},
                       {"id", m.flow},
                       {"ts", m.received_ns / 1000.0},
                       {"pid", PidOf(graph, m.receiver)},
                       {"tid", TidOf(graph, m.receiver)}});
  }
}

}  // namespace

std::string TraceRecorder::ToChromeJson(
    const TaskGraph& graph, const std::vector<std::string>& place_names,
    const std::map<std::string, std::string>& metadata) const {
  nlohmann::json events = nlohmann::json::array();
  AppendTrackNames(place_names, &events);
  for (const TraceSpan& s : Spans()) events.push_back(SpanEvent(graph, s));
  for (const TraceMessage& m : Messages()) AppendMessage(graph, m, &events);
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [key, value] : metadata) meta[key] = value;
  meta["parex_origin_steady_ns"] = origin_ns_;
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"metadata", std::move(meta)}};
  return doc.dump(1);
}

}  // namespace parex
