#include "graph/ssa/ssa_dump.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "proto/program_io.h"

namespace parex {
namespace {

// Validation reads ids straight from the graph's lists, so a broken graph
// may hold any integer where an id belongs: the helpers below never index
// with an id they have not range-checked, and the labels they build never
// call SsaGraph::VarLabel / OpLabel on a place index out of range.

bool InRange(int i, size_t n) { return i >= 0 && static_cast<size_t>(i) < n; }

bool Contains(const std::vector<int>& list, int x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

std::string PlaceName(const SsaGraph& graph, int place) {
  if (InRange(place, graph.places().size())) {
    return graph.places()[place].ToString();
  }
  return "place #" + std::to_string(place) + " (out of range)";
}

// graph.VarLabel(id), or a label naming the bad id / place.
std::string SafeVarLabel(const SsaGraph& graph, int id) {
  if (!InRange(id, graph.vars().size())) {
    return "var #" + std::to_string(id) + " (out of range)";
  }
  const SsaVar& v = graph.var(id);
  if (InRange(v.place, graph.places().size())) return graph.VarLabel(id);
  return v.name + "@" + std::to_string(v.version) + "@" +
         PlaceName(graph, v.place);
}

// graph.OpLabel(id), or a label naming the bad id / place.
std::string SafeOpLabel(const SsaGraph& graph, int id) {
  if (!InRange(id, graph.ops().size())) {
    return "op #" + std::to_string(id) + " (out of range)";
  }
  const SsaOp& op = graph.op(id);
  if (op.place < 0 || InRange(op.place, graph.places().size())) {
    return graph.OpLabel(id);
  }
  return "op #" + std::to_string(id) + " " + op.type + "@" +
         PlaceName(graph, op.place);
}

Status Broken(const std::string& message) {
  return FailedPrecondition("SSA graph: " + message);
}

// A var's own fields and its links to its generator and readers.
Status CheckVar(const SsaGraph& graph, int id) {
  const SsaVar& v = graph.var(id);
  const std::string label = SafeVarLabel(graph, id);
  if (v.id != id) {
    return Broken("var #" + std::to_string(id) + " " + label + " records id " +
                  std::to_string(v.id));
  }
  if (!InRange(v.place, graph.places().size())) {
    return Broken("var " + label + " lies on " + PlaceName(graph, v.place) +
                  ", the graph has " + std::to_string(graph.num_places()) +
                  " places");
  }
  if (v.generator != -1) {
    if (!InRange(v.generator, graph.ops().size())) {
      return Broken("var " + label + " names generator " +
                    SafeOpLabel(graph, v.generator));
    }
    if (!Contains(graph.op(v.generator).outputs, id)) {
      return Broken("var " + label + " names " +
                    SafeOpLabel(graph, v.generator) +
                    " as its generator, but that op does not list it as an "
                    "output");
    }
  }
  for (int r : v.readers) {
    if (!InRange(r, graph.ops().size())) {
      return Broken("var " + label + " names reader " + SafeOpLabel(graph, r));
    }
    if (!Contains(graph.op(r).inputs, id)) {
      return Broken("var " + label + " names " + SafeOpLabel(graph, r) +
                    " as a reader, but that op does not list it as an input");
    }
  }
  return Status::Ok();
}

// An op's own fields and its links to its inputs and outputs.
Status CheckOpLinks(const SsaGraph& graph, int id) {
  const SsaOp& op = graph.op(id);
  const std::string label = SafeOpLabel(graph, id);
  if (op.id != id) {
    return Broken("op #" + std::to_string(id) + " records id " +
                  std::to_string(op.id));
  }
  const bool spans = op.kind != SsaOpKind::kComputation &&
                     op.kind != SsaOpKind::kScaleLossGrad;
  if (!spans && !InRange(op.place, graph.places().size())) {
    return Broken(label + " runs on " + PlaceName(graph, op.place) +
                  ", the graph has " + std::to_string(graph.num_places()) +
                  " places");
  }
  for (int p : op.places) {
    if (!InRange(p, graph.places().size())) {
      return Broken(label + " lists " + PlaceName(graph, p) +
                    " among its places");
    }
  }
  if (spans && op.places.empty()) {
    return Broken(label + " (" + SsaOpKindName(op.kind) + ") lists no places");
  }
  for (int v : op.inputs) {
    if (!InRange(v, graph.vars().size())) {
      return Broken(label + " reads " + SafeVarLabel(graph, v));
    }
    if (graph.removed(v)) {
      return Broken(label + " reads removed var " + SafeVarLabel(graph, v));
    }
    if (!Contains(graph.var(v).readers, id)) {
      return Broken(label + " reads " + SafeVarLabel(graph, v) +
                    ", which does not list the op as a reader");
    }
  }
  for (int v : op.outputs) {
    if (!InRange(v, graph.vars().size())) {
      return Broken(label + " writes " + SafeVarLabel(graph, v));
    }
    if (graph.removed(v)) {
      return Broken(label + " writes removed var " + SafeVarLabel(graph, v));
    }
    const int generator = graph.var(v).generator;
    if (generator != id) {
      return Broken(label + " writes " + SafeVarLabel(graph, v) +
                    ", whose generator is " +
                    (generator < 0 ? std::string("none (a graph input)")
                                   : SafeOpLabel(graph, generator)) +
                    " (a var has at most one generator)");
    }
  }
  return Status::Ok();
}

// Versions of every (name, place) are numbered 0.. in the graph's index;
// only version 0 may lack a generator.
Status CheckVersions(const SsaGraph& graph) {
  for (const SsaVar& v : graph.vars()) {
    if (v.is_control() || graph.removed(v.id)) continue;
    const std::vector<int>& versions = graph.Versions(v.name, v.place);
    if (!InRange(v.version, versions.size()) || versions[v.version] != v.id) {
      return Broken("var " + graph.VarLabel(v.id) + " is not version " +
                    std::to_string(v.version) + " of " + v.name + " on " +
                    PlaceName(graph, v.place) + " in the version index (" +
                    std::to_string(versions.size()) + " versions)");
    }
    if (v.version > 0 && v.generator < 0) {
      return Broken("var " + graph.VarLabel(v.id) +
                    " has no generator; only version 0 may be a graph input");
    }
  }
  for (const std::string& name : graph.VarNames()) {
    for (int p = 0; p < graph.num_places(); ++p) {
      const std::vector<int>& versions = graph.Versions(name, p);
      for (size_t k = 0; k < versions.size(); ++k) {
        const int id = versions[k];
        if (!InRange(id, graph.vars().size()) ||
            graph.var(id).version != static_cast<int>(k) ||
            graph.var(id).name != name || graph.var(id).place != p) {
          return Broken("version " + std::to_string(k) + " of " + name +
                        " on " + PlaceName(graph, p) + " is " +
                        SafeVarLabel(graph, id));
        }
      }
    }
  }
  return Status::Ok();
}

// Data vars only: control vars carry no data, and a hazard between places
// that share a parameter buffer joins ops of two places.
Status CheckPlacement(const SsaGraph& graph, int id) {
  const SsaOp& op = graph.op(id);
  auto check = [&](int v, bool write) -> Status {
    const SsaVar& var = graph.var(v);
    if (var.is_control()) return Status::Ok();
    const char* verb = write ? " writes " : " reads ";
    const std::string where =
        SafeOpLabel(graph, id) + verb + graph.VarLabel(v) + ", ";
    switch (op.kind) {
      case SsaOpKind::kComputation:
      case SsaOpKind::kScaleLossGrad:
        if (var.place != op.place) {
          return Broken(where + "a var of another place (the op runs on " +
                        PlaceName(graph, op.place) + ")");
        }
        return Status::Ok();
      default:
        break;
    }
    if (!Contains(op.places, var.place)) {
      return Broken(where + "a var of " + PlaceName(graph, var.place) +
                    ", which the op does not list among its places");
    }
    if (op.kind == SsaOpKind::kReduce && write && var.place != op.root) {
      return Broken(where + "but a reduce writes only on its root " +
                    PlaceName(graph, op.root));
    }
    if (op.kind == SsaOpKind::kBroadcast && !write && var.place != op.root) {
      return Broken(where + "but a broadcast reads only on its root " +
                    PlaceName(graph, op.root));
    }
    return Status::Ok();
  };
  if ((op.kind == SsaOpKind::kReduce || op.kind == SsaOpKind::kBroadcast) &&
      !Contains(op.places, op.root)) {
    return Broken(SafeOpLabel(graph, id) + " has root " +
                  PlaceName(graph, op.root) +
                  ", which it does not list among its places");
  }
  for (int v : op.inputs) PAREX_RETURN_IF_ERROR(check(v, false));
  for (int v : op.outputs) PAREX_RETURN_IF_ERROR(check(v, true));
  return Status::Ok();
}

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
    label += PlaceName(graph, op.place);
  } else {
    for (size_t i = 0; i < op.places.size(); ++i) {
      label += (i > 0 ? "," : "") + PlaceName(graph, op.places[i]);
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
    label += "\nroot " + PlaceName(graph, op.root);
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
  return PlaceName(graph, place);
}

Json PlacesJson(const SsaGraph& graph, const std::vector<int>& places) {
  Json out = Json::array();
  for (int p : places) out.push_back(PlaceName(graph, p));
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
      if (InRange(buffer, held.size())) held[buffer].push_back(name);
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

Status ValidateSsaGraph(const SsaGraph& graph) {
  // Links first: the later checks and the topological order follow them.
  for (int id = 0; id < static_cast<int>(graph.vars().size()); ++id) {
    if (graph.removed(id)) continue;
    PAREX_RETURN_IF_ERROR(CheckVar(graph, id));
  }
  for (int id = 0; id < static_cast<int>(graph.ops().size()); ++id) {
    PAREX_RETURN_IF_ERROR(CheckOpLinks(graph, id));
  }
  PAREX_RETURN_IF_ERROR(CheckVersions(graph));
  for (int id = 0; id < static_cast<int>(graph.ops().size()); ++id) {
    PAREX_RETURN_IF_ERROR(CheckPlacement(graph, id));
  }
  // Names the ops of the cycle ("the SSA graph has a cycle: op #1 ... ").
  return graph.TopologicalOrder().status();
}

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
    if (InRange(v.generator, graph.ops().size())) {
      out << "  " << OpNode(v.generator) << " -> " << VarNode(v.id)
          << edge_style << ";\n";
    }
    for (int r : v.readers) {
      if (!InRange(r, graph.ops().size())) continue;
      out << "  " << VarNode(v.id) << " -> " << OpNode(r) << edge_style
          << ";\n";
    }
  }
  out << "}\n";
  return out.str();
}

std::string SsaGraphToJson(const SsaGraph& graph) {
  Json root = Json::object();
  Json places = Json::array();
  for (const Place& p : graph.places()) places.push_back(p.ToString());
  root["places"] = std::move(places);
  root["loss_name"] = graph.loss_name;
  root["strategy"] = StrategyJson(graph.strategy);
  root["shared_parameters"] = graph.shared_parameters;

  Json ops = Json::array();
  for (const SsaOp& op : graph.ops()) {
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
    ops.push_back(std::move(o));
  }
  root["ops"] = std::move(ops);

  Json vars = Json::array();
  for (const SsaVar& v : graph.vars()) {
    if (graph.removed(v.id)) continue;
    Json o = Json::object();
    o["id"] = v.id;
    o["name"] = v.name;
    o["version"] = v.version;
    o["place"] = PlaceJson(graph, v.place);
    o["control"] = ControlReasonName(v.control);
    o["generator"] = v.generator;
    o["readers"] = v.readers;
    vars.push_back(std::move(o));
  }
  root["vars"] = std::move(vars);

  Json grads = Json::array();
  for (const GradInfo& g : graph.grads) {
    Json o = Json::object();
    o["param"] = g.param;
    o["grad"] = g.grad;
    o["program_op"] = g.program_op;
    o["numel"] = g.numel;
    o["bytes"] = g.bytes;
    o["sparse"] = g.sparse;
    o["owner"] = PlaceJson(graph, g.owner);
    o["collective"] = g.collective;
    grads.push_back(std::move(o));
  }
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
