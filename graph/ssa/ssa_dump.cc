#include "graph/ssa/ssa_dump.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "graph/ssa/ssa_labels.h"
#include "proto/program_io.h"

namespace parex {
namespace {

// --- dot --------------------------------------------------------------------

// A Graphviz double-quoted string: `"` and `\` escaped, newlines as \n.
std::string DotQuote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out + "\"";
}

std::string OpNode(int id) { return DotQuote("op" + std::to_string(id)); }
std::string VarNode(int id) { return DotQuote("var" + std::to_string(id)); }

struct OpStyle {
  const char* shape;
  const char* fill;
};

OpStyle StyleOf(SsaOpKind kind) {
  switch (kind) {
    case SsaOpKind::kComputation:
      return {"box", "#dae8fc"};
    case SsaOpKind::kScaleLossGrad:
      return {"invhouse", "#e1d5e7"};
    case SsaOpKind::kAllReduce:
      return {"hexagon", "#ffb570"};
    case SsaOpKind::kFusedAllReduce:
      return {"hexagon", "#ff9933"};
    case SsaOpKind::kReduce:
      return {"hexagon", "#ffd0a0"};
    case SsaOpKind::kBroadcast:
      return {"hexagon", "#ffe6cc"};
    case SsaOpKind::kAllGather:
      return {"hexagon", "#f8cecc"};
    case SsaOpKind::kFetch:
      return {"cds", "#d5e8d4"};
  }
  return {"box", "white"};
}

std::string OpDotLabel(const SsaGraph& graph, const SsaOp& op) {
  std::string label = "#" + std::to_string(op.id) + " " + op.type + "\n";
  if (op.place >= 0) {
    label += SsaPlaceName(graph, op.place);
  } else {
    for (size_t i = 0; i < op.places.size(); ++i) {
      label += (i > 0 ? "," : "") + SsaPlaceName(graph, op.places[i]);
    }
  }
  constexpr size_t kShownNames = 3;
  for (size_t i = 0; i < op.var_names.size(); ++i) {
    if (i == kShownNames && op.var_names.size() > kShownNames + 1) {
      label += "\n... " + std::to_string(op.var_names.size() - i) + " more";
      break;
    }
    label += "\n" + op.var_names[i];
  }
  if (op.kind == SsaOpKind::kReduce || op.kind == SsaOpKind::kBroadcast) {
    label += "\nroot " + SsaPlaceName(graph, op.root);
  }
  if (op.kind == SsaOpKind::kScaleLossGrad) {
    std::ostringstream scale;
    scale << op.scale;
    label += "\nscale " + scale.str();
  }
  return label;
}

// --- json -------------------------------------------------------------------

using Json = nlohmann::ordered_json;

// A place index as "cpu:0"; -1 (none) as null.
Json PlaceJson(const SsaGraph& graph, int place) {
  if (place < 0) return nullptr;
  return SsaPlaceName(graph, place);
}

Json PlacesJson(const SsaGraph& graph, const std::vector<int>& places) {
  Json out = Json::array();
  for (int p : places) out.push_back(SsaPlaceName(graph, p));
  return out;
}

Json StrategyJson(const BuildStrategy& s) {
  Json out = Json::object();
  out["reduce"] = ReduceStrategyName(s.reduce);
  out["gradient_scale"] = GradientScaleName(s.gradient_scale);
  out["fuse_all_reduce_ops"] = s.fuse_all_reduce_ops;
  out["fuse_bucket_bytes"] = s.fuse_bucket_bytes;
  out["enable_sequential_execution"] = s.enable_sequential_execution;
  out["share_cpu_parameters"] = s.share_cpu_parameters;
  out["slice_optimizer_min_numel"] = s.slice_optimizer_min_numel;
  out["memory_optimize"] = s.memory_optimize;
  out["memory_plan_batch_per_place"] = s.memory_plan_batch_per_place;
  out["debug_graphviz_path"] = s.debug_graphviz_path;
  out["num_trainers"] = s.num_trainers;
  out["trainer_id"] = s.trainer_id;
  return out;
}

Json MemoryPlanJson(const SsaGraph& graph, const MemoryPlan& plan) {
  Json out = Json::object();
  out["batch_per_place"] = plan.batch_per_place;
  out["bytes_without_reuse"] = plan.bytes_without_reuse;
  out["bytes_with_reuse"] = plan.bytes_with_reuse;
  out["num_buffers"] = plan.buffer_bytes.size();
  // Per buffer: its place, size and the vars it holds (sorted by name).
  std::vector<std::vector<std::string>> held(plan.buffer_bytes.size());
  for (const auto& per_place : plan.buffer_of) {
    for (const auto& [name, buffer] : per_place) {
      if (IdInRange(buffer, held.size())) held[buffer].push_back(name);
    }
  }
  Json buffers = Json::array();
  for (size_t b = 0; b < plan.buffer_bytes.size(); ++b) {
    Json buffer = Json::object();
    buffer["id"] = b;
    buffer["place"] = b < plan.buffer_place.size()
                          ? PlaceJson(graph, plan.buffer_place[b])
                          : Json(nullptr);
    buffer["bytes"] = plan.buffer_bytes[b];
    buffer["vars"] = held[b];
    buffers.push_back(std::move(buffer));
  }
  out["buffers"] = std::move(buffers);
  return out;
}

}  // namespace

// Dumps never index with an unchecked id: a graph that fails validation
// still dumps (edges to ids out of range are left out).
std::string SsaGraphToDot(const SsaGraph& graph) {
  std::ostringstream out;
  out << "digraph ssa {\n";
  out << "  // " << graph.ops().size() << " ops, " << graph.vars().size()
      << " vars over";
  for (const Place& p : graph.places()) out << " " << p.ToString();
  out << "\n";
  out << "  rankdir=TB;\n";
  out << "  node [fontname=\"Helvetica\", fontsize=10];\n";
  out << "  edge [arrowsize=0.6];\n";
  for (const SsaOp& op : graph.ops()) {
    const OpStyle style = StyleOf(op.kind);
    out << "  " << OpNode(op.id)
        << " [label=" << DotQuote(OpDotLabel(graph, op))
        << ", shape=" << style.shape << ", style=filled, fillcolor=\""
        << style.fill << "\", tooltip=" << DotQuote(SafeOpLabel(graph, op.id))
        << "];\n";
  }
  for (const SsaVar& v : graph.vars()) {
    if (graph.removed(v.id)) continue;
    const std::string label = SafeVarLabel(graph, v.id);
    if (v.is_control()) {
      out << "  " << VarNode(v.id)
          << " [label=\"\", shape=point, width=0.08, height=0.08, "
             "color=\"gray40\", tooltip="
          << DotQuote(label) << "];\n";
    } else {
      // Graph inputs (parameters, feeds) are grey.
      out << "  " << VarNode(v.id) << " [label=" << DotQuote(label)
          << ", shape=ellipse"
          << (v.generator < 0 ? ", style=filled, fillcolor=\"#eeeeee\"" : "")
          << "];\n";
    }
  }
  for (const SsaVar& v : graph.vars()) {
    if (graph.removed(v.id)) continue;
    const char* edge_style =
        v.is_control() ? " [style=dashed, color=\"gray40\"]" : "";
    if (IdInRange(v.generator, graph.ops().size())) {
      out << "  " << OpNode(v.generator) << " -> " << VarNode(v.id)
          << edge_style << ";\n";
    }
    for (int r : v.readers) {
      if (!IdInRange(r, graph.ops().size())) continue;
      out << "  " << VarNode(v.id) << " -> " << OpNode(r) << edge_style
          << ";\n";
    }
  }
  out << "}\n";
  return out.str();
}

namespace {

Json OpJson(const SsaGraph& graph, const SsaOp& op) {
  Json o = Json::object();
  o["id"] = op.id;
  o["kind"] = SsaOpKindName(op.kind);
  o["type"] = op.type;
  o["place"] = PlaceJson(graph, op.place);
  o["places"] = PlacesJson(graph, op.places);
  o["program_op"] = op.program_op;
  o["inputs"] = op.inputs;
  o["outputs"] = op.outputs;
  o["var_names"] = op.var_names;
  o["root"] = PlaceJson(graph, op.root);
  o["scale"] = op.scale;
  o["slice"] = op.slice;
  o["num_slices"] = op.num_slices;
  o["sliced_reduce"] = op.sliced_reduce;
  return o;
}

Json VarJson(const SsaGraph& graph, const SsaVar& v) {
  Json o = Json::object();
  o["id"] = v.id;
  o["name"] = v.name;
  o["version"] = v.version;
  o["place"] = PlaceJson(graph, v.place);
  o["control"] = ControlReasonName(v.control);
  o["generator"] = v.generator;
  o["readers"] = v.readers;
  return o;
}

Json GradJson(const SsaGraph& graph, const GradInfo& g) {
  Json o = Json::object();
  o["param"] = g.param;
  o["grad"] = g.grad;
  o["program_op"] = g.program_op;
  o["numel"] = g.numel;
  o["bytes"] = g.bytes;
  o["sparse"] = g.sparse;
  o["owner"] = PlaceJson(graph, g.owner);
  o["collective"] = g.collective;
  return o;
}

}  // namespace

std::string SsaGraphToJson(const SsaGraph& graph) {
  Json root = Json::object();
  Json places = Json::array();
  for (const Place& p : graph.places()) places.push_back(p.ToString());
  root["places"] = std::move(places);
  root["loss_name"] = graph.loss_name;
  root["strategy"] = StrategyJson(graph.strategy);
  root["shared_parameters"] = graph.shared_parameters;
  Json ops = Json::array();
  for (const SsaOp& op : graph.ops()) ops.push_back(OpJson(graph, op));
  root["ops"] = std::move(ops);
  Json vars = Json::array();
  for (const SsaVar& v : graph.vars()) {
    if (!graph.removed(v.id)) vars.push_back(VarJson(graph, v));
  }
  root["vars"] = std::move(vars);
  Json grads = Json::array();
  for (const GradInfo& g : graph.grads) grads.push_back(GradJson(graph, g));
  root["grads"] = std::move(grads);
  Json buckets = Json::array();
  for (const GradBucket& b : graph.buckets) {
    Json o = Json::object();
    o["grads"] = b.grads;
    o["bytes"] = b.bytes;
    o["op"] = b.op;
    buckets.push_back(std::move(o));
  }
  root["buckets"] = std::move(buckets);
  root["memory_plan"] = MemoryPlanJson(graph, graph.memory_plan);
  // Names are program var names; bytes that are not UTF-8 are replaced
  // rather than thrown on.
  return root.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Status WriteSsaGraphDot(const SsaGraph& graph, const std::string& path) {
  return WriteFileBytes(path, SsaGraphToDot(graph));
}

Status WriteSsaGraphJson(const SsaGraph& graph, const std::string& path) {
  return WriteFileBytes(path, SsaGraphToJson(graph));
}

}  // namespace parex
