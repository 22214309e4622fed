// MergeNodeTraces on hand-made node traces whose clocks are worked out here.
#include "actors/trace/trace_merge.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace parex {
namespace {

using nlohmann::json;

// A node trace: one place, a compute span at `compute_ts` and the
// collective "op #N all_reduce(w@GRAD)" of step 3 at `collective_ts` (µs on
// the node's recorder), a message arrow of flow id 1.
std::string NodeJson(const std::string& node, int rank, int64_t origin_ns,
                     int64_t offset_us, int op_number, double compute_ts,
                     double collective_ts,
                     const std::string& collective = "all_reduce(w@GRAD)") {
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"args", {{"name", "cpu:0"}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"tid", 0},
                    {"args", {{"name", "op actors"}}}});
  events.push_back({{"name", "op #0 mul_grad@cpu:0"},
                    {"cat", "compute"},
                    {"ph", "X"},
                    {"ts", compute_ts},
                    {"dur", 10.0},
                    {"pid", 1},
                    {"tid", 0},
                    {"args", {{"step", 3}}}});
  events.push_back(
      {{"name", "op #" + std::to_string(op_number) + " " + collective},
       {"cat", "communication"},
       {"ph", "X"},
       {"ts", collective_ts},
       {"dur", 5.0},
       {"pid", 0},
       {"tid", 1},
       {"args", {{"step", 3}}}});
  events.push_back({{"name", "RunNode"},
                    {"cat", "message"},
                    {"ph", "s"},
                    {"id", 1},
                    {"ts", compute_ts},
                    {"pid", 1},
                    {"tid", 0}});
  json doc = {{"traceEvents", events},
              {"metadata",
               {{"parex_node", node},
                {"parex_rank", std::to_string(rank)},
                {"parex_origin_steady_ns", origin_ns},
                {"parex_clock_offset_us", std::to_string(offset_us)}}}};
  return doc.dump();
}

const json* Find(const json& events, const std::string& ph, int pid,
                 const std::string& name) {
  for (const json& e : events) {
    if (e.value("ph", "") == ph && e.value("pid", -1) == pid &&
        e.value("name", "") == name) {
      return &e;
    }
  }
  return nullptr;
}

TEST(TraceMergeTest, AlignsClocksAndJoinsTheNodes) {
  // Node a (rank 0): recorder started at 1 000 000 ns = 1000 µs of its clock.
  // Node b (rank 1): started at 5 000 000 ns = 5000 µs of its clock, and its
  // clock is 4500 µs ahead of rank 0's (offset -4500): its start is at
  // 500 µs on rank 0's clock, 500 µs before a's. So the merged timeline
  // starts at b's earliest event: b's compute at 2 µs -> 502 µs -> 0.
  const std::string a = NodeJson("a", 0, 1000000, 0, 7, 0, 20);
  const std::string b = NodeJson("b", 1, 5000000, -4500, 4, 2, 30);
  // Given in the other order: ranks order the processes.
  StatusOr<std::string> merged =
      MergeNodeTraces({{"b.json", b}, {"a.json", a}});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  const json doc = json::parse(*merged);
  const json& events = doc["traceEvents"];

  const json* a_compute = Find(events, "X", 0, "op #0 mul_grad@cpu:0");
  const json* b_compute = Find(events, "X", 1, "op #0 mul_grad@cpu:0");
  ASSERT_NE(a_compute, nullptr);
  ASSERT_NE(b_compute, nullptr);
  EXPECT_DOUBLE_EQ((*b_compute)["ts"].get<double>(), 0);
  EXPECT_DOUBLE_EQ((*a_compute)["ts"].get<double>(), 1000 - 502);
  const json* a_coll = Find(events, "X", 0, "op #7 all_reduce(w@GRAD)");
  const json* b_coll = Find(events, "X", 1, "op #4 all_reduce(w@GRAD)");
  ASSERT_NE(a_coll, nullptr);
  ASSERT_NE(b_coll, nullptr);
  EXPECT_DOUBLE_EQ((*a_coll)["ts"].get<double>(), 1020 - 502);
  EXPECT_DOUBLE_EQ((*b_coll)["ts"].get<double>(), 530 - 502);

  // A process per node, named; tracks named by place and actor kind.
  const json* a_name = Find(events, "M", 0, "process_name");
  ASSERT_NE(a_name, nullptr);
  EXPECT_EQ((*a_name)["args"]["name"], "node 'a' (rank 0)");
  const json* track = Find(events, "M", 1, "thread_name");
  ASSERT_NE(track, nullptr);
  EXPECT_EQ((*track)["args"]["name"], "cpu:0 / op actors");

  // The nodes' own arrows keep apart; one arrow joins the collective of
  // step 3 on a to the same one on b (their op numbers differ).
  std::set<uint64_t> message_ids;
  int cross_starts = 0, cross_ends = 0;
  for (const json& e : events) {
    if (e.value("cat", "") == "message")
      message_ids.insert(e["id"].get<uint64_t>());
    if (e.value("cat", "") == "cross-node") {
      EXPECT_EQ(e["name"], "across nodes: all_reduce(w@GRAD)");
      if (e["ph"] == "s") {
        ++cross_starts;
        EXPECT_EQ(e["pid"], 0);
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), (*a_coll)["ts"].get<double>());
      } else {
        ++cross_ends;
        EXPECT_EQ(e["pid"], 1);
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), (*b_coll)["ts"].get<double>());
      }
    }
  }
  EXPECT_EQ(message_ids.size(), 2u);
  EXPECT_EQ(cross_starts, 1);
  EXPECT_EQ(cross_ends, 1);
  EXPECT_EQ(doc["metadata"]["parex_cross_node_arrows"], 1);
}

// Parameter-server training: trainer a's send of a bucket and pserver p's
// receive of the part it holds, at the same step, are joined by an arrow
// naming what moves; they are not the same collective on both nodes.
TEST(TraceMergeTest, JoinsASendToTheReceivesOfItsVariables) {
  const std::string a =
      NodeJson("a", 0, 1000000, 0, 7, 0, 20, "send(w@GRAD, b@GRAD)");
  const std::string p = NodeJson("p", 1, 1000000, 0, 0, 0, 40, "recv(b@GRAD)");
  StatusOr<std::string> merged =
      MergeNodeTraces({{"a.json", a}, {"p.json", p}});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  const json doc = json::parse(*merged);
  int starts = 0, ends = 0;
  for (const json& e : doc["traceEvents"]) {
    EXPECT_NE(e.value("cat", ""), "cross-node");
    if (e.value("cat", "") != "pserver") continue;
    EXPECT_EQ(e["name"], "a -> p: b@GRAD");
    if (e["ph"] == "s") {
      ++starts;
      EXPECT_EQ(e["pid"], 0);
    } else {
      ++ends;
      EXPECT_EQ(e["pid"], 1);
    }
  }
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(doc["metadata"]["parex_send_recv_arrows"], 1);
  EXPECT_EQ(doc["metadata"]["parex_cross_node_arrows"], 0);
}

TEST(TraceMergeTest, ErrorsNameTheFile) {
  const std::string a = NodeJson("a", 0, 0, 0, 1, 0, 1);
  StatusOr<std::string> r = MergeNodeTraces({{"x.json", "{not json"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.json: not a JSON object"),
            std::string::npos);
  r = MergeNodeTraces({{"single.json", R"({"traceEvents": []})"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("single.json: not a node's trace"),
            std::string::npos)
      << r.status().message();
  r = MergeNodeTraces({{"a1.json", a}, {"a2.json", a}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a2.json: rank 0 again (also a1.json)"),
            std::string::npos)
      << r.status().message();
  json bad = json::parse(a);
  bad["metadata"]["parex_clock_offset_us"] = "soon";
  r = MergeNodeTraces({{"b.json", bad.dump()}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("b.json: metadata 'parex_clock_offset_us'"),
      std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace parex
