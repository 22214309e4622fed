#include "actors/trace/trace_merge.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

namespace parex {
namespace {

using nlohmann::json;

struct Parsed {
  const NodeTrace* source = nullptr;
  json doc;
  std::string node;
  int rank = 0;
  double shift_us = 0;  // local ts + shift = µs on rank 0's steady clock
};

// A metadata value written as a number or as a string of one.
StatusOr<double> Number(const json& metadata, const char* key,
                        const std::string& path) {
  auto it = metadata.find(key);
  if (it != metadata.end()) {
    if (it->is_number()) return it->get<double>();
    if (it->is_string()) {
      try {
        size_t used = 0;
        const std::string& text = it->get_ref<const std::string&>();
        const double v = std::stod(text, &used);
        if (used == text.size()) return v;
      } catch (const std::exception&) {
      }
    }
  }
  return InvalidArgument(
      path + ": metadata '" + key +
      "' is missing or not a number (write node traces with parex node "
      "--trace or parex launch --trace)");
}

StatusOr<Parsed> Parse(const NodeTrace& trace) {
  Parsed p;
  p.source = &trace;
  p.doc = json::parse(trace.json, nullptr, /*allow_exceptions=*/false);
  if (p.doc.is_discarded() || !p.doc.is_object()) {
    return InvalidArgument(trace.path +
                           ": not a JSON object (a Chrome trace of parex)");
  }
  if (!p.doc.contains("traceEvents") || !p.doc["traceEvents"].is_array()) {
    return InvalidArgument(trace.path + ": no traceEvents array");
  }
  const json& metadata =
      p.doc.contains("metadata") ? p.doc["metadata"] : json::object();
  if (!metadata.is_object() || !metadata.contains("parex_node") ||
      !metadata["parex_node"].is_string()) {
    return InvalidArgument(
        trace.path +
        ": not a node's trace (no metadata.parex_node; write it with "
        "parex node --trace or parex launch --trace)");
  }
  p.node = metadata["parex_node"].get<std::string>();
  PAREX_ASSIGN_OR_RETURN(double rank,
                         Number(metadata, "parex_rank", trace.path));
  PAREX_ASSIGN_OR_RETURN(
      double origin_ns, Number(metadata, "parex_origin_steady_ns", trace.path));
  PAREX_ASSIGN_OR_RETURN(double offset_us,
                         Number(metadata, "parex_clock_offset_us", trace.path));
  if (rank < 0 || rank > 1 << 20 || rank != static_cast<int>(rank)) {
    return InvalidArgument(trace.path + ": parex_rank " + std::to_string(rank) +
                           " is not a rank");
  }
  p.rank = static_cast<int>(rank);
  p.shift_us = origin_ns / 1000.0 + offset_us;
  return p;
}

// "op #12 all_reduce(fc_0.w_0@GRAD)" -> "all_reduce(fc_0.w_0@GRAD)": the
// same collective on every node (op numbers differ with the node's places).
std::string CollectiveKey(const std::string& label) {
  if (label.rfind("op #", 0) == 0) {
    const size_t space = label.find(' ', 4);
    if (space != std::string::npos) return label.substr(space + 1);
  }
  return label;
}

int IntOr(const json& e, const char* key, int fallback) {
  auto it = e.find(key);
  return it != e.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

// Each node's collective spans by (step, key), for the cross-node arrows.
struct Span {
  double ts = 0;
  int tid = 0;
};
using CollectiveSpans = std::map<std::pair<int64_t, std::string>, Span>;

// Every trace parsed, one per rank, in rank order.
StatusOr<std::vector<Parsed>> ParseAll(const std::vector<NodeTrace>& traces) {
  std::vector<Parsed> nodes;
  std::map<int, std::string> rank_path;
  for (const NodeTrace& t : traces) {
    PAREX_ASSIGN_OR_RETURN(Parsed p, Parse(t));
    auto [it, fresh] = rank_path.emplace(p.rank, t.path);
    if (!fresh) {
      return InvalidArgument(t.path + ": rank " + std::to_string(p.rank) +
                             " again (also " + it->second + ")");
    }
    nodes.push_back(std::move(p));
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const Parsed& a, const Parsed& b) { return a.rank < b.rank; });
  return nodes;
}

// The earliest event of any node on rank 0's clock (0 without events): where
// the merged timeline starts.
double EarliestEvent(const std::vector<Parsed>& nodes) {
  double start = std::numeric_limits<double>::infinity();
  for (const Parsed& n : nodes) {
    for (const json& e : n.doc["traceEvents"]) {
      if (e.is_object() && e.contains("ts") && e["ts"].is_number()) {
        start = std::min(start, e["ts"].get<double>() + n.shift_us);
      }
    }
  }
  return std::isfinite(start) ? start : 0;
}

// The names of a node's processes (its places), by pid.
std::map<int, std::string> ProcessNames(const Parsed& n) {
  std::map<int, std::string> process_names;
  for (const json& e : n.doc["traceEvents"]) {
    if (e.is_object() && e.value("ph", "") == "M" &&
        e.value("name", "") == "process_name" && e.contains("args") &&
        e["args"].is_object() && e["args"].contains("name") &&
        e["args"]["name"].is_string()) {
      process_names[IntOr(e, "pid", 0)] = e["args"]["name"].get<std::string>();
    }
  }
  return process_names;
}

// Appends node `n`'s events to `out` as one process (pid: its rank) whose
// tracks are its places' tracks (named "place / track"), shifted onto the
// merged timeline, its flow ids moved into a range of its own; its
// collective spans go to `collectives`.
void AppendNode(const Parsed& n, double start, json* out,
                CollectiveSpans* collectives) {
  constexpr int kTracksPerProcess = 16;
  const int pid = n.rank;
  out->push_back({{"name", "process_name"},
                  {"ph", "M"},
                  {"pid", pid},
                  {"args",
                   {{"name", "node '" + n.node + "' (rank " +
                                 std::to_string(n.rank) + ")"}}}});
  out->push_back({{"name", "process_sort_index"},
                  {"ph", "M"},
                  {"pid", pid},
                  {"args", {{"sort_index", n.rank}}}});
  // The node's processes (places) become track-name prefixes.
  const std::map<int, std::string> process_names = ProcessNames(n);
  const uint64_t flow_base = static_cast<uint64_t>(n.rank + 1) << 40;
  for (const json& e : n.doc["traceEvents"]) {
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", "");
    const int old_pid = IntOr(e, "pid", 0);
    const int old_tid = IntOr(e, "tid", 0);
    const int tid = old_pid * kTracksPerProcess + old_tid % kTracksPerProcess;
    if (ph == "M") {
      if (e.value("name", "") != "thread_name") continue;  // processes: above
      std::string name = "?";
      if (e.contains("args") && e["args"].is_object() &&
          e["args"].contains("name") && e["args"]["name"].is_string()) {
        name = e["args"]["name"].get<std::string>();
      }
      auto p = process_names.find(old_pid);
      out->push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args",
                       {{"name", (p != process_names.end() ? p->second : "?") +
                                     " / " + name}}}});
      continue;
    }
    json copy = e;
    copy["pid"] = pid;
    copy["tid"] = tid;
    if (copy.contains("ts") && copy["ts"].is_number()) {
      copy["ts"] = copy["ts"].get<double>() + n.shift_us - start;
    }
    if ((ph == "s" || ph == "f" || ph == "t") && copy.contains("id") &&
        copy["id"].is_number_unsigned()) {
      copy["id"] = flow_base + copy["id"].get<uint64_t>();
    }
    if (ph == "X" && e.value("cat", "") == "communication" &&
        e.contains("args") && e["args"].is_object() &&
        e["args"].contains("step") && e["args"]["step"].is_number_integer()) {
      (*collectives)[{e["args"]["step"].get<int64_t>(),
                      CollectiveKey(e.value("name", ""))}] = {
          copy["ts"].get<double>(), tid};
    }
    out->push_back(std::move(copy));
  }
}

// Parameter-server training's "send(a, b)" / "recv(a)": the variables.
bool IsSendOrRecv(const std::string& key) {
  return key.rfind("send(", 0) == 0 || key.rfind("recv(", 0) == 0;
}

std::set<std::string> MovedVars(const std::string& key) {
  std::set<std::string> vars;
  const size_t open = key.find('('), close = key.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return vars;
  size_t from = open + 1;
  while (from < close) {
    size_t to = key.find(", ", from);
    if (to == std::string::npos || to > close) to = close;
    vars.insert(key.substr(from, to - from));
    from = to + 2;
  }
  return vars;
}

// Parameter-server training: an arrow from each node's send to every other
// node's recv of the same step that moves one of its variables (a
// trainer's gradients to the pservers, their parameters back); returns how
// many. (Async mode receives a step's parameters later: those show no
// arrow.)
int AppendSendRecvArrows(const std::vector<Parsed>& nodes,
                         const std::vector<CollectiveSpans>& collectives,
                         json* out) {
  uint64_t id = (uint64_t{1} << 62) + (uint64_t{1} << 61);
  int arrows = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& [key, from] : collectives[i]) {
      if (key.second.rfind("send(", 0) != 0) continue;
      const std::set<std::string> sent = MovedVars(key.second);
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (j == i) continue;
        auto it = collectives[j].lower_bound({key.first, "recv("});
        for (; it != collectives[j].end() && it->first.first == key.first &&
               it->first.second.rfind("recv(", 0) == 0;
             ++it) {
          std::string shared;
          for (const std::string& v : MovedVars(it->first.second)) {
            if (sent.count(v) != 0) shared += (shared.empty() ? "" : ", ") + v;
          }
          if (shared.empty()) continue;
          const std::string name =
              nodes[i].node + " -> " + nodes[j].node + ": " + shared;
          out->push_back({{"name", name},
                          {"cat", "pserver"},
                          {"ph", "s"},
                          {"id", id},
                          {"ts", from.ts},
                          {"pid", nodes[i].rank},
                          {"tid", from.tid},
                          {"args", {{"step", key.first}}}});
          out->push_back({{"name", name},
                          {"cat", "pserver"},
                          {"ph", "f"},
                          {"bp", "e"},
                          {"id", id},
                          {"ts", it->second.ts},
                          {"pid", nodes[j].rank},
                          {"tid", it->second.tid}});
          ++id;
          ++arrows;
        }
      }
    }
  }
  return arrows;
}

// Appends an arrow from each collective of rank r to the same one on rank
// r + 1; returns how many.
int AppendCrossNodeArrows(const std::vector<Parsed>& nodes,
                          const std::vector<CollectiveSpans>& collectives,
                          json* out) {
  uint64_t cross_id = uint64_t{1} << 62;
  int cross = 0;
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    for (const auto& [key, from] : collectives[i]) {
      if (IsSendOrRecv(key.second)) continue;  // AppendSendRecvArrows
      auto to = collectives[i + 1].find(key);
      if (to == collectives[i + 1].end()) continue;
      const std::string name = "across nodes: " + key.second;
      out->push_back({{"name", name},
                      {"cat", "cross-node"},
                      {"ph", "s"},
                      {"id", cross_id},
                      {"ts", from.ts},
                      {"pid", nodes[i].rank},
                      {"tid", from.tid},
                      {"args",
                       {{"step", key.first},
                        {"from", nodes[i].node},
                        {"to", nodes[i + 1].node}}}});
      out->push_back({{"name", name},
                      {"cat", "cross-node"},
                      {"ph", "f"},
                      {"bp", "e"},
                      {"id", cross_id},
                      {"ts", to->second.ts},
                      {"pid", nodes[i + 1].rank},
                      {"tid", to->second.tid}});
      ++cross_id;
      ++cross;
    }
  }
  return cross;
}

}  // namespace

StatusOr<std::string> MergeNodeTraces(const std::vector<NodeTrace>& traces) {
  if (traces.empty()) return InvalidArgument("trace merge: no traces given");
  PAREX_ASSIGN_OR_RETURN(std::vector<Parsed> nodes, ParseAll(traces));
  const double start = EarliestEvent(nodes);
  json out = json::array();
  std::vector<CollectiveSpans> collectives(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    AppendNode(nodes[i], start, &out, &collectives[i]);
  const int cross = AppendCrossNodeArrows(nodes, collectives, &out);
  const int pserver = AppendSendRecvArrows(nodes, collectives, &out);
  json merged_nodes = json::array();
  for (const Parsed& n : nodes) {
    merged_nodes.push_back({{"node", n.node},
                            {"rank", n.rank},
                            {"file", n.source->path},
                            {"shift_us", n.shift_us - start}});
  }
  json doc = {{"traceEvents", std::move(out)},
              {"displayTimeUnit", "ms"},
              {"metadata",
               {{"parex_merged_nodes", std::move(merged_nodes)},
                {"parex_cross_node_arrows", cross},
                {"parex_send_recv_arrows", pserver}}}};
  return doc.dump(1);
}

}  // namespace parex
