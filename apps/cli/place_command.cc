// parex place and parex graph --node: the placement pass
// (graph/builder/placement.h) over a topology with pserver nodes, and one
// node's part of the placed program.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "apps/cli/cli.h"
#include "base/file_io.h"
#include "graph/builder/placement.h"
#include "proto/topology_io.h"

namespace parex::cli {
namespace {

StatusOr<PlacementOptions> ClusterRoles(const Topology& topology) {
  PlacementOptions options;
  for (const TopologyNode& n : topology.nodes) {
    (n.pserver ? options.pservers : options.trainers).push_back(n.name);
  }
  if (options.pservers.empty() || options.trainers.empty()) {
    return InvalidArgument(
        topology.path + ": placement needs trainer and pserver nodes; it has " +
        std::to_string(options.trainers.size()) + " trainer(s) and " +
        std::to_string(options.pservers.size()) +
        " pserver(s) (a node's role: PSERVER)");
  }
  return options;
}

// The program of `file`, placed over `topology` (what it already places
// stays).
struct Placed {
  Program program;
  Topology topology;
  PlacementOptions roles;
  PlacementReport report;
};

StatusOr<Placed> LoadPlaced(const std::string& file,
                            const std::string& topology_path) {
  Placed p;
  PAREX_ASSIGN_OR_RETURN(p.topology, LoadTopology(topology_path, true));
  PAREX_ASSIGN_OR_RETURN(p.roles, ClusterRoles(p.topology));
  StatusOr<InferenceModel> model = LoadModel(file, "", nullptr);
  if (!model.ok()) return model.status();
  p.program = std::move(model->program);
  StatusOr<PlacementReport> report =
      PlaceForParameterServers(&p.program, p.roles);
  if (!report.ok())
    return report.status().WithContext("program '" + file + "'");
  p.report = std::move(*report);
  return p;
}

void PrintReport(const Placed& p) {
  std::printf("trainers  %s: %d ops each\n",
              JoinNames(p.roles.trainers).c_str(), p.report.trainer_ops);
  std::printf("pservers  %s: %d ops in all\n",
              JoinNames(p.roles.pservers).c_str(), p.report.pserver_ops);
  for (const std::string& ps : p.roles.pservers) {
    std::vector<std::string> params;
    for (const PlacementReport::Shard& s : p.report.shards) {
      const int block = s.group.BlockOf(ps);
      if (block < 0) continue;
      const int blocks = static_cast<int>(s.group.nodes.size());
      const VarDesc* var = p.program.global_block().FindVar(s.param);
      std::string what = s.param + (s.user ? " (placed by the program)" : "");
      if (blocks > 1) {
        const auto [begin, end] = RowBlock(var->dim(0), block, blocks);
        what += " rows " + std::to_string(begin) + "-" +
                std::to_string(end - 1) + " of " + std::to_string(var->dim(0));
      }
      params.push_back(what);
    }
    std::printf("  %-8s %lld elements: %s\n", ps.c_str(),
                static_cast<long long>(p.report.elements.at(ps)),
                JoinNames(params).c_str());
  }
  if (p.report.user_placed > 0) {
    std::printf("kept      %d placements the program made\n",
                p.report.user_placed);
  }
}

// The node's side of a placed block: where each variable lives, and which
// other nodes' groups read each variable (one pass over the ops, so a
// node's view costs linear time in the program).
struct Edges {
  const Block& block;
  NodeRole role;
  std::string node;
  std::vector<PlaceGroup> op_groups;  // by op index (unplaced: trainer)
  std::map<std::string, std::set<std::string>> read_elsewhere;

  Edges(const Block& b, NodeRole r, std::string n)
      : block(b), role(r), node(std::move(n)) {
    for (int i = 0; i < block.num_ops(); ++i) {
      StatusOr<std::optional<PlaceGroup>> g = PlaceGroupOf(block.op(i));
      op_groups.push_back(g.ok() && g->has_value() ? **g : PlaceGroup());
      if (Here(op_groups.back())) continue;
      for (const std::string& in : block.op(i).InputArgumentNames()) {
        read_elsewhere[in].insert(op_groups.back().ToString());
      }
    }
  }
  PlaceGroup GroupOfVar(const std::string& name) const {
    const VarDesc* var = block.FindVar(name);
    if (var == nullptr) return PlaceGroup();
    StatusOr<std::optional<PlaceGroup>> g = PlaceGroupOf(*var);
    return g.ok() && g->has_value() ? **g : PlaceGroup();
  }
  bool Here(const PlaceGroup& g) const { return g.Includes(role, node); }
};

nlohmann::json NodeView(const Placed& p, const std::string& node) {
  const Block& block = p.program.global_block();
  const bool pserver =
      std::find(p.roles.pservers.begin(), p.roles.pservers.end(), node) !=
      p.roles.pservers.end();
  const Edges edges(block, pserver ? NodeRole::kPserver : NodeRole::kTrainer,
                    node);
  nlohmann::json ops = nlohmann::json::array();
  std::map<std::string, std::string> receives;
  std::map<std::string, std::set<std::string>> sends;
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    const PlaceGroup& g = edges.op_groups[i];
    if (!edges.Here(g)) continue;
    for (const std::string& in : op.InputArgumentNames()) {
      const PlaceGroup vg = edges.GroupOfVar(in);
      if (!edges.Here(vg)) receives[in] = vg.ToString();
    }
    for (const std::string& out : op.OutputArgumentNames()) {
      const auto it = edges.read_elsewhere.find(out);
      if (it != edges.read_elsewhere.end()) {
        sends[out].insert(it->second.begin(), it->second.end());
      }
    }
    ops.push_back({{"index", i},
                   {"type", op.type()},
                   {"place_group", g.ToString()},
                   {"inputs", op.InputArgumentNames()},
                   {"outputs", op.OutputArgumentNames()}});
  }
  nlohmann::json in = nlohmann::json::array(), out = nlohmann::json::array();
  for (const auto& [name, from] : receives) {
    in.push_back({{"var", name}, {"from", from}});
  }
  for (const auto& [name, to] : sends) {
    out.push_back({{"var", name},
                   {"to", std::vector<std::string>(to.begin(), to.end())}});
  }
  return {{"node", node},
          {"role", NodeRoleName(edges.role)},
          {"ops", ops},
          {"receives", in},
          {"sends", out}};
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s)
    out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// The node's ops as boxes, the variables they share as ellipses, what
// crosses to another node drawn bold with where it comes from or goes.
std::string NodeDot(const nlohmann::json& view) {
  std::string dot = "digraph " + Quoted(view["node"].get<std::string>()) +
                    " {\n  rankdir=TB;\n  label=" +
                    Quoted(view["role"].get<std::string>() + " " +
                           view["node"].get<std::string>()) +
                    ";\n";
  std::map<std::string, std::string> remote;
  for (const auto& r : view["receives"]) {
    remote[r["var"]] = "from " + r["from"].get<std::string>();
  }
  for (const auto& s : view["sends"]) {
    std::string to;
    for (const auto& t : s["to"])
      to += (to.empty() ? "" : ", ") + t.get<std::string>();
    std::string& label = remote[s["var"]];
    label += (label.empty() ? "" : "; ") + std::string("to ") + to;
  }
  std::set<std::string> vars;
  for (const auto& op : view["ops"]) {
    const std::string id = "op" + std::to_string(op["index"].get<int>());
    dot += "  " + id + " [shape=box, label=" +
           Quoted(op["type"].get<std::string>() + " #" +
                  std::to_string(op["index"].get<int>())) +
           "];\n";
    for (const auto& v : op["inputs"]) {
      vars.insert(v);
      dot += "  " + Quoted("v:" + v.get<std::string>()) + " -> " + id + ";\n";
    }
    for (const auto& v : op["outputs"]) {
      vars.insert(v);
      dot += "  " + id + " -> " + Quoted("v:" + v.get<std::string>()) + ";\n";
    }
  }
  for (const std::string& v : vars) {
    const auto it = remote.find(v);
    dot += "  " + Quoted("v:" + v) + " [shape=ellipse, label=" +
           Quoted(it == remote.end() ? v : v + " [" + it->second + "]") +
           (it == remote.end() ? "" : ", style=bold, color=blue") + "];\n";
  }
  return dot + "}\n";
}

}  // namespace

int RunPlace(const PlaceOptions& o) {
  const std::string cmd = "place";
  if (Status s = CheckOutputFile(o.output, "-o"); !s.ok()) return Fail(cmd, s);
  StatusOr<Placed> placed = LoadPlaced(o.file, o.topology);
  if (!placed.ok()) return Fail(cmd, placed.status());
  PrintReport(*placed);
  if (Status s = placed->program.Save(o.output); !s.ok()) return Fail(cmd, s);
  std::printf("wrote     %s\n", o.output.c_str());
  return kExitOk;
}

int RunNodeGraph(const GraphOptions& o, const std::string& format) {
  const std::string cmd = "graph";
  if (o.node.empty()) {
    return Fail(cmd,
                InvalidArgument("--topology draws a node's part: name it "
                                "with --node"),
                kExitUsage);
  }
  if (o.topology.empty()) {
    return Fail(cmd,
                InvalidArgument("--node needs --topology (the cluster whose "
                                "node it is)"),
                kExitUsage);
  }
  if (o.file.empty()) {
    return Fail(cmd, InvalidArgument("--node draws a program FILE"),
                kExitUsage);
  }
  StatusOr<Placed> placed = LoadPlaced(o.file, o.topology);
  if (!placed.ok()) return Fail(cmd, placed.status());
  if (placed->topology.Rank(o.node) < 0) {
    return Fail(cmd,
                NotFound(o.topology + ": no node '" + o.node +
                         "' (nodes: " + JoinNames(placed->roles.trainers) +
                         ", " + JoinNames(placed->roles.pservers) + ")"),
                kExitUsage);
  }
  const nlohmann::json view = NodeView(*placed, o.node);
  const bool json = format == "json";
  std::ofstream out(o.output);
  out << (json ? view.dump(1) + "\n" : NodeDot(view));
  if (!out.good()) {
    return Fail(cmd, Internal("could not write '" + o.output + "'"));
  }
  std::printf("%s %s: %zu ops, receives %zu variables, sends %zu\n",
              view["role"].get<std::string>().c_str(), o.node.c_str(),
              view["ops"].size(), view["receives"].size(),
              view["sends"].size());
  return kExitOk;
}

}  // namespace parex::cli
