// parex inspect (what a program holds) and parex graph (its SSA graph).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "apps/cli/cli.h"
#include "apps/models.h"
#include "base/file_io.h"
#include "graph/ir/op_role.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "graph/ssa/multi_device_builder.h"
#include "graph/ssa/ssa_dump.h"
#include "kernels/io/model_io.h"
#include "kernels/kernel_registry.h"
#include "kernels/scope.h"

namespace parex::cli {
namespace {

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes,
                units[u]);
  return buf;
}

// Why parex cannot run ops of `type` on CPU places, or "" when it can.
std::string CannotRun(const std::string& type,
                      const std::set<std::string>& with_kernels) {
  const OpSchema* schema = OpSchemaRegistry::Global().Find(type);
  if (schema == nullptr) return "unknown op type";
  if (type == "feed" || type == "fetch") return "";  // the executors' own
  if (schema->control_flow()) return "";  // kernels/control_flow.h runs it
  if (with_kernels.count(type) == 0) return "no CPU kernel";
  return "";
}

// The parameter files a model at `path` (a directory, or a program file with
// `params` or a *.pdiparams beside it) needs, and what is wrong with them:
// one line per missing file of a one-file-per-var directory (every one, not
// the first), or why a combined file does not load (read all-or-nothing into
// a scratch scope, as the executors would). Empty lines: nothing is wrong,
// or the model names no parameter files (a bare program).
struct ParameterCheck {
  std::string layout;                 // what was checked, for the report
  std::vector<std::string> problems;  // one line each
};

ParameterCheck CheckParameterFiles(const std::string& path,
                                   const std::string& params,
                                   const Program& program) {
  namespace fs = std::filesystem;
  ParameterCheck check;
  const std::vector<std::string> names = PersistableTensorNames(program);
  if (names.empty()) return check;
  std::error_code ec;
  std::string combined = params;
  if (combined.empty() && fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / "__params__", ec)) {
      combined = (fs::path(path) / "__params__").string();
    } else if (fs::exists(fs::path(path) / "__model__", ec)) {
      check.layout = "one file per var in " + path;
      for (const std::string& name : names) {
        if (!fs::is_regular_file(fs::path(path) / name, ec)) {
          check.problems.push_back("missing " +
                                   (fs::path(path) / name).string());
        }
      }
      return check;
    } else {
      StatusOr<std::string> pdmodel = OnlyPdmodel(path);
      if (!pdmodel.ok()) return check;
      combined = fs::path(*pdmodel).replace_extension(".pdiparams").string();
    }
  } else if (combined.empty()) {
    combined = fs::path(path).replace_extension(".pdiparams").string();
  }
  if (!fs::exists(combined, ec)) {
    // A bare program file (no parameters beside it) is fine to inspect.
    if (params.empty() && !fs::is_directory(path, ec)) return check;
    check.layout = "combined file " + combined;
    check.problems.push_back("missing " + combined);
    return check;
  }
  check.layout = "combined file " + combined;
  Scope scratch;
  if (Status s = LoadCombinedPersistables(program, combined, &scratch);
      !s.ok()) {
    check.problems.push_back(s.message());
  }
  return check;
}

// The op types of every block and how often each occurs; prints the total
// and the counts, most frequent first.
std::map<std::string, int> PrintOpCounts(const Program& program) {
  std::map<std::string, int> counts;
  int total_ops = 0;
  for (int b = 0; b < program.num_blocks(); ++b) {
    const Block& block = program.block(b);
    for (int i = 0; i < block.num_ops(); ++i) {
      ++counts[block.op(i).type()];
      ++total_ops;
    }
  }
  std::vector<std::pair<std::string, int>> by_count(counts.begin(),
                                                    counts.end());
  std::stable_sort(
      by_count.begin(), by_count.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::printf("  ops              %d\n", total_ops);
  for (const auto& [type, count] : by_count) {
    std::printf("    %-32s %d\n", type.c_str(), count);
  }
  return counts;
}

// The persistable tensors of block 0 and their size.
void PrintParameters(const Program& program) {
  int64_t params_count = 0;
  double bytes = 0;
  int unknown_size = 0;
  for (const auto& var : program.global_block().vars()) {
    if (!var->persistable() || !var->is_tensor()) continue;
    if (var->name() == "feed" || var->name() == "fetch") continue;
    // Inference programs mark no var as a parameter: persistables count.
    ++params_count;
    const int64_t numel = Numel(var->dims());
    if (numel < 0 || numel == kNumelOverflow) {
      ++unknown_size;
      continue;
    }
    bytes += static_cast<double>(numel) * SizeOf(var->dtype());
  }
  std::printf(
      "  parameters       %lld persistable tensors, %s%s\n",
      static_cast<long long>(params_count), HumanBytes(bytes).c_str(),
      unknown_size
          ? (" (+" + std::to_string(unknown_size) + " of unknown size)").c_str()
          : "");
}

// Whether parex runs every op (`counts`) of a program whose validation gave
// `valid` and whose parameter files had `files`' problems.
void PrintRunnable(const std::map<std::string, int>& counts,
                   const Status& valid, const ParameterCheck& files) {
  std::set<std::string> with_kernels;
  for (const KernelKey& k : KernelRegistry::Global().Keys()) {
    if (k.place_kind == Place::Kind::kCPU) with_kernels.insert(k.op_type);
  }
  std::vector<std::string> cannot;
  for (const auto& [type, count] : counts) {
    const std::string why = CannotRun(type, with_kernels);
    if (!why.empty())
      cannot.push_back(type + " (" + why + ", " + std::to_string(count) + "x)");
  }
  if (cannot.empty() && valid.ok()) {
    std::printf(
        "  parex runs every op of this program%s\n",
        files.problems.empty() ? "" : " (once its parameter files are there)");
  } else if (cannot.empty()) {
    std::printf("  invalid: %s\n", valid.message().c_str());
  } else {
    std::printf("  ops parex cannot run: %zu\n", cannot.size());
    for (const std::string& c : cannot) std::printf("    %s\n", c.c_str());
  }
}

}  // namespace

int RunInspect(const std::string& path, const std::string& params) {
  const std::string cmd = "inspect";
  StatusOr<InferenceModel> model = LoadModel(path, params, nullptr,
                                             /*validate=*/false);
  if (!model.ok()) return Fail(cmd, model.status());
  const Program& program = model->program;
  // Validation comes first (a crafted block tree or shape must not reach the
  // summary below); ops parex cannot run are reported, not fatal, so a
  // program whose only fault is such an op is inspected in full.
  const Status valid = ValidateProgram(program);
  bool has_unknown_ops = false;
  for (int b = 0; b < program.num_blocks(); ++b) {
    for (const auto& op : program.block(b).ops()) {
      has_unknown_ops |= OpSchemaRegistry::Global().Find(op->type()) == nullptr;
    }
  }
  if (!valid.ok() && !has_unknown_ops) {
    return Fail(cmd, valid.WithContext("program '" + path + "'"));
  }
  std::vector<std::string> feeds, fetches;
  if (Status targets = FeedFetchTargets(program, &feeds, &fetches);
      !targets.ok()) {
    return Fail(cmd, targets.WithContext("program '" + path + "'"));
  }
  const proto::ProgramDesc& desc = program.proto();
  std::printf("%s\n", path.c_str());
  if (desc.has_version()) {
    const int64_t v = desc.version().version();
    std::printf("  program version  %lld (Paddle %lld.%lld.%lld)\n",
                static_cast<long long>(v), static_cast<long long>(v / 1000000),
                static_cast<long long>(v / 1000 % 1000),
                static_cast<long long>(v % 1000));
  } else {
    std::printf(
        "  program version  none (saved by Paddle before 1.6, or by parex)\n");
  }
  std::printf("  blocks           %d\n", program.num_blocks());
  std::printf("  feeds            %s\n", JoinNames(model->feed_names).c_str());
  std::printf("  fetches          %s\n", JoinNames(model->fetch_names).c_str());
  const std::map<std::string, int> counts = PrintOpCounts(program);
  PrintParameters(program);
  const ParameterCheck files = CheckParameterFiles(path, params, program);
  if (!files.layout.empty() && files.problems.empty()) {
    std::printf("  parameter files  all present (%s)\n", files.layout.c_str());
  } else if (!files.layout.empty()) {
    std::printf("  parameter files  %zu problem%s (%s):\n",
                files.problems.size(), files.problems.size() == 1 ? "" : "s",
                files.layout.c_str());
    for (const std::string& p : files.problems)
      std::printf("    %s\n", p.c_str());
  }
  PrintRunnable(counts, valid, files);
  return kExitOk;
}

namespace {

// --format, or what the output's extension says (.dot, .gv, .json).
StatusOr<std::string> GraphFormat(const GraphOptions& o) {
  std::string format = o.format;
  if (format.empty()) {
    const std::string ext =
        std::filesystem::path(o.output).extension().string();
    format = ext == ".json"                  ? "json"
             : ext == ".dot" || ext == ".gv" ? "dot"
                                             : "";
    if (format.empty()) {
      return InvalidArgument("give --format dot|json (the output '" + o.output +
                             "' ends neither in .dot nor .json)");
    }
  }
  if (format != "dot" && format != "json") {
    return InvalidArgument("--format must be dot or json, not '" + format +
                           "'");
  }
  return format;
}

// The program to draw: an example's training program, or a program file
// with its loss (--loss, or the one op-marked loss of a training program).
struct GraphSource {
  Program program;
  std::string loss;
  std::string what;  // for the summary line
};

// A training program file's loss: --loss, else the one the ops mark (none
// for an inference program). Usage errors.
StatusOr<std::string> FileLoss(const GraphOptions& o, const Block& block) {
  if (!o.loss.empty()) {
    if (block.FindVar(o.loss) == nullptr) {
      return NotFound("--loss: program '" + o.file + "' has no variable '" +
                      o.loss + "'");
    }
    return o.loss;
  }
  if (!HasBackwardOps(block)) return std::string();
  const std::vector<std::string> marked = MarkedLosses(block);
  if (marked.size() == 1) return marked[0];
  std::string names;
  for (const std::string& m : marked) names += (names.empty() ? "" : ", ") + m;
  return InvalidArgument("program '" + o.file + "' is a training program " +
                         (marked.empty()
                              ? std::string("but no op is marked as its loss")
                              : "with several losses marked (" + names + ")") +
                         "; name the loss with --loss");
}

StatusOr<GraphSource> LoadGraphSource(const GraphOptions& o, bool* usage) {
  GraphSource source;
  *usage = true;
  if (!o.model.empty()) {
    if (!o.loss.empty()) {
      return InvalidArgument(
          "--loss is for a program FILE; an example's loss is known");
    }
    PAREX_ASSIGN_OR_RETURN(ExampleKind kind, ParseExampleKind(o.model));
    *usage = false;
    PAREX_ASSIGN_OR_RETURN(ExampleProgram ex, BuildExample(kind));
    source.program = std::move(ex.main);
    source.loss = ex.loss;
    source.what = std::string(ExampleName(kind)) + " (training program)";
    return source;
  }
  *usage = false;
  PAREX_ASSIGN_OR_RETURN(InferenceModel model, LoadModel(o.file, "", nullptr));
  source.program = std::move(model.program);
  source.what = o.file;
  *usage = true;
  PAREX_ASSIGN_OR_RETURN(source.loss,
                         FileLoss(o, source.program.global_block()));
  if (!source.loss.empty()) {
    source.what += " (training program, loss " + source.loss + ")";
  }
  return source;
}

}  // namespace

int RunGraph(const GraphOptions& o) {
  const std::string cmd = "graph";
  if (o.file.empty() == o.model.empty()) {
    return Fail(
        cmd,
        InvalidArgument("name a program FILE or --model, not both or neither"),
        kExitUsage);
  }
  StatusOr<std::string> resolved = GraphFormat(o);
  if (!resolved.ok()) return Fail(cmd, resolved.status(), kExitUsage);
  const std::string& format = *resolved;
  if (Status s = CheckOutputFile(o.output, "-o"); !s.ok()) return Fail(cmd, s);
  if (!o.node.empty() || !o.topology.empty()) return RunNodeGraph(o, format);
  // The graph of places this machine cannot run is still drawn.
  StatusOr<Parallelism> parallel =
      ParseParallelism(o.places, o.mode, /*to_run=*/false);
  if (!parallel.ok()) {
    return Fail(cmd, parallel.status(), PlacesExitCode(parallel.status()));
  }
  bool usage = false;
  StatusOr<GraphSource> source = LoadGraphSource(o, &usage);
  if (!source.ok()) {
    return Fail(cmd, source.status(), usage ? kExitUsage : kExitRuntime);
  }
  StatusOr<SsaGraph> graph = BuildMultiDeviceGraph(
      source->program, parallel->places, source->loss, parallel->build);
  if (!graph.ok()) return Fail(cmd, graph.status());
  Status written = format == "dot" ? WriteSsaGraphDot(*graph, o.output)
                                   : WriteSsaGraphJson(*graph, o.output);
  if (!written.ok()) return Fail(cmd, written);
  std::map<std::string, int> kinds;
  for (const SsaOp& op : graph->ops()) ++kinds[SsaOpKindName(op.kind)];
  std::string summary;
  for (const auto& [k, c] : kinds) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(c) + " " + k;
  }
  std::printf("%s on %zu places (%s): %zu op handles (%s), %zu vars -> %s\n",
              source->what.c_str(), parallel->places.size(), o.mode.c_str(),
              graph->ops().size(), summary.c_str(), graph->vars().size(),
              o.output.c_str());
  return kExitOk;
}

}  // namespace parex::cli
