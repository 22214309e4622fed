// parex infer: runs a saved inference program on .npy inputs.
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "actors/trace/trace_summary.h"
#include "apps/cli/cli.h"
#include "apps/cli/infer_chunks.h"
#include "apps/cli/npy.h"
#include "base/file_io.h"
#include "base/logging.h"
#include "graph/builder/inference_fusion.h"
#include "kernels/cpu/blas.h"
#include "kernels/reference_executor.h"

namespace parex::cli {
namespace {

namespace fs = std::filesystem;

std::string ShapeString(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return s + "]";
}

// "min -0.12, max 3.4, mean 0.5" for floating tensors; "" otherwise.
std::string Stats(const Tensor& t) {
  if (t.numel() == 0) return "empty";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v;
    switch (t.dtype()) {
      case DType::kFP32:
        v = t.data<float>()[i];
        break;
      case DType::kFP64:
        v = t.data<double>()[i];
        break;
      case DType::kInt64:
        v = static_cast<double>(t.data<int64_t>()[i]);
        break;
      case DType::kInt32:
        v = t.data<int32_t>()[i];
        break;
      default:
        return "";
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  char buf[128];
  std::snprintf(buf, sizeof(buf), "min %.6g, max %.6g, mean %.6g", lo, hi,
                sum / t.numel());
  return buf;
}

// A var name as a file name: path separators and odd characters become '_'.
std::string FileStem(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
          c == '-'))
      c = '_';
  }
  return s;
}

// --input NAME=FILE.npy pairs; InvalidArgument naming a malformed one.
StatusOr<std::vector<std::pair<std::string, std::string>>> ParseInputs(
    const std::vector<std::string>& inputs) {
  std::vector<std::pair<std::string, std::string>> named;
  for (const std::string& spec : inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return InvalidArgument("--input '" + spec + "': expected NAME=FILE.npy");
    }
    named.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  return named;
}

// The feeds of `model` from the `named` files: each must be one of its
// feeds and every feed given (usage errors, *usage set); a file that cannot
// be read is named.
StatusOr<FeedMap> ReadInputs(
    const std::vector<std::pair<std::string, std::string>>& named,
    const InferenceModel& model, bool* usage) {
  std::string feeds_list;
  for (const std::string& f : model.feed_names)
    feeds_list += (feeds_list.empty() ? "" : ", ") + f;
  FeedMap feed;
  for (const auto& [name, path] : named) {
    if (std::find(model.feed_names.begin(), model.feed_names.end(), name) ==
        model.feed_names.end()) {
      *usage = true;
      return InvalidArgument("--input " + name + ": the model has no feed '" +
                             name + "' (its feeds: " + feeds_list + ")");
    }
    StatusOr<Tensor> t = ReadNpy(path);
    if (!t.ok()) return t.status().WithContext("input '" + name + "'");
    feed[name] = std::move(*t);
  }
  for (const std::string& f : model.feed_names) {
    if (feed.count(f) == 0) {
      *usage = true;
      return InvalidArgument("missing --input " + f +
                             "=FILE.npy (the model's feeds: " + feeds_list +
                             ")");
    }
  }
  return feed;
}

// The output files in `dir` ("": none), one per fetch, named now so that
// one that cannot be replaced (a directory, FIFO or link of that name)
// fails before the run.
StatusOr<std::vector<std::string>> OutputPaths(
    const std::string& dir, const std::vector<std::string>& fetch_names) {
  std::vector<std::string> out_paths;
  if (dir.empty()) return out_paths;
  std::set<std::string> stems;
  for (const std::string& name : fetch_names) {
    std::string stem = FileStem(name);
    while (!stems.insert(stem).second) stem += "_";
    out_paths.push_back((fs::path(dir) / (stem + ".npy")).string());
    std::error_code ec;
    if (fs::exists(dir, ec)) {
      PAREX_RETURN_IF_ERROR(CheckOutputFile(out_paths.back(), "--output"));
    }
  }
  return out_paths;
}

// Prints each output's dtype, shape and statistics, and writes it to its
// path of `out_paths` (when any).
Status ReportOutputs(const std::vector<Tensor>& out,
                     const std::vector<std::string>& fetch_names,
                     const std::vector<std::string>& out_paths) {
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor& t = out[i];
    const std::string& name = fetch_names[i];
    std::printf("  %s: %s %s  %s\n", name.c_str(), DTypeName(t.dtype()),
                ShapeString(t.dims()).c_str(), Stats(t).c_str());
    if (!out_paths.empty()) {
      const std::string& path = out_paths[i];
      PAREX_RETURN_IF_ERROR(WriteNpy(path, t));
      std::printf("    written to %s\n", path.c_str());
    }
  }
  return Status::Ok();
}

// --trace: the trace written and its summary printed.
Status WriteTrace(const std::string& path, const ParallelExecutor& pe,
                  const TraceRecorder& trace) {
  PAREX_RETURN_IF_ERROR(
      WriteFileBytes(path, pe.TraceJson()).WithContext("--trace"));
  std::vector<bool> collective;
  for (const SsaOp& op : pe.graph().ops())
    collective.push_back(IsCollective(op.kind));
  std::printf("trace %s: %s\n", path.c_str(),
              SummarizeTrace(trace.Spans(), collective, pe.num_threads())
                  .ToString()
                  .c_str());
  return Status::Ok();
}

// The rows of a batch: the smallest dim 0 of the feeds of rank >= 1 (0
// when there is none).
int64_t FeedRows(const FeedMap& feed) {
  int64_t rows = 0;
  for (const auto& [name, t] : feed) {
    if (t.rank() == 0) continue;
    rows = rows == 0 ? t.dim(0) : std::min(rows, t.dim(0));
  }
  return rows;
}

// The process's peak resident memory so far, in MiB: Linux's VmHWM, which
// starts afresh at exec (ru_maxrss keeps the high-water mark of the process
// that forked this one, e.g. a Python script's).
double PeakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::strtod(line.c_str() + 6, nullptr) / 1024.0;  // kB
    }
  }
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return usage.ru_maxrss / 1024.0;  // KiB on Linux
}

// The runs --trace records (--trace-from, --trace-runs): the recorder on for
// runs [from, from + count), the first run being 0.
struct TraceWindow {
  TraceRecorder* trace = nullptr;  // null: no --trace
  int from = 0;
  int count = 1;
  void Before(int run) const {
    if (trace != nullptr) trace->set_enabled(run >= from && run - from < count);
  }
};

// --bench: `runs` more runs of `feed` (copied once into where the places
// copy feeds from without staging, when they have such memory), each timed;
// prints the median and p99 (nearest rank) latency, rows/s at the median
// and the peak resident memory.
Status Bench(ParallelExecutor& pe, ChunkedRunner& runner, const FeedMap& feed,
             const std::vector<std::string>& fetch_names, int runs,
             int64_t rows, const TraceWindow& window) {
  FeedMap bench_feed = feed;
  if (Allocator* pinned = pe.feed_allocator()) {
    PAREX_ASSIGN_OR_RETURN(bench_feed, CopyFeed(feed, pinned));
  }
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    window.Before(i + 1);
    const auto start = std::chrono::steady_clock::now();
    StatusOr<std::vector<Tensor>> out = runner.Run(pe, bench_feed, fetch_names);
    if (!out.ok()) {
      return out.status().WithContext("--bench run " + std::to_string(i + 1));
    }
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 == 1
                            ? ms[ms.size() / 2]
                            : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  const size_t p99 =
      static_cast<size_t>(std::ceil(0.99 * static_cast<double>(ms.size()))) - 1;
  std::printf(
      "bench: %d runs of %lld rows: median %.3f ms, p99 %.3f ms, %.1f rows/s; "
      "peak RSS %.1f MiB\n",
      runs, static_cast<long long>(rows), median, ms[p99],
      median > 0 ? static_cast<double>(rows) / (median / 1e3) : 0.0,
      PeakRssMiB());
  return Status::Ok();
}

// The inference fusions (graph/builder/inference_fusion.h), on CPU places:
// the program rewritten, its folded parameters made in `scope` once.
Status FuseModel(const std::vector<Place>& places, InferenceModel* model,
                 Scope* scope) {
  for (const Place& p : places) {
    if (!p.is_cpu()) return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(FusedProgram fused,
                         FuseForInference(model->program, model->fetch_names));
  if (fused.fold.global_block().num_ops() > 0) {
    ReferenceExecutor fold;
    PAREX_RETURN_IF_ERROR(fold.Run(fused.fold, scope, {}, {}).status());
  }
  LogInfo(Subsystem::kApp,
          "fused: " + std::to_string(fused.folded_batch_norms) +
              " batch norms folded into convolutions, " +
              std::to_string(fused.fused_residuals) + " residual adds, " +
              std::to_string(fused.fused_activations) + " activations, " +
              std::to_string(fused.fused_fcs) + " fcs, " +
              std::to_string(fused.dropped_identities) + " identities, " +
              std::to_string(fused.channels_last_ops) +
              " ops channels-last with " + std::to_string(fused.transposes) +
              " transposes");
  model->program = std::move(fused.main);
  return Status::Ok();
}

// How a batch of `rows` runs: on as many places as it has rows when fewer
// than the places (the feeds split along dim 0; a place with no row has
// nothing to do), the places left idle lending their cores to oneDNN's
// calls (one executor worker per busy place, so its threads and OpenMP's
// do not take turns on the same cores); temporaries sharing buffers
// wherever the graph orders their uses apart (memory_optimize, sized for
// the rows of one run): peak memory is the largest live set, not the sum of
// every intermediate. Returns the rows of one run (ChunkRows: a large batch
// runs a chunk at a time).
int64_t PlanRun(int64_t rows, int64_t chunk_rows, std::vector<Place>* places,
                BuildStrategy* build, ExecutionStrategy* exec) {
  if (rows > 0 && rows < static_cast<int64_t>(places->size())) {
    LogInfo(Subsystem::kApp, std::to_string(rows) + " rows: running on " +
                                 std::to_string(rows) + " of " +
                                 std::to_string(places->size()) + " places");
    if ((*places)[0].is_cpu()) {
      cpu::SetIntraOpThreads(
          static_cast<int>(static_cast<int64_t>(places->size()) / rows));
    }
    places->resize(static_cast<size_t>(rows));
  }
  if ((*places)[0].is_cpu()) {
    // One executor worker per place: with more, a place's ops hop between
    // workers, each hop a wake-up and the activations crossing cores.
    exec->num_threads = static_cast<int>(places->size());
  }
  build->memory_optimize = true;
  // Fluid drops a run's temporaries every 100 steps to bound training's
  // memory; a bench of one batch shape would only re-prepare every op then
  // (kernels, oneDNN primitives: a p99 spike each time).
  exec->num_iteration_per_drop_scope = std::numeric_limits<int>::max();
  const int64_t num_places = static_cast<int64_t>(places->size());
  const int64_t chunk =
      ChunkRows(rows, static_cast<int>(num_places), chunk_rows);
  build->memory_plan_batch_per_place =
      std::max<int64_t>(1, (chunk + num_places - 1) / num_places);
  return chunk;
}

// Outputs are checked before any work: kExitOk, or the exit code of the
// failure reported.
int CheckOutputs(const std::string& cmd, const InferOptions& o) {
  if (!o.output.empty()) {
    if (Status s = CheckOutputDir(o.output, "--output"); !s.ok())
      return Fail(cmd, s);
  }
  if (o.trace.empty()) return kExitOk;
  if (Status s = CheckOutputFile(o.trace, "--trace"); !s.ok())
    return Fail(cmd, s);
  if (o.trace_from > o.bench) {
    return Fail(cmd,
                InvalidArgument("--trace-from " + std::to_string(o.trace_from) +
                                " names a run after the last: the runs are "
                                "0 (the first) to --bench's " +
                                std::to_string(o.bench)),
                kExitUsage);
  }
  return kExitOk;
}

// The model of --model / --params with its parameters in `scope`, fused for
// `places` unless --no-fuse.
StatusOr<InferenceModel> PrepareModel(const InferOptions& o,
                                      const std::vector<Place>& places,
                                      Scope* scope) {
  PAREX_ASSIGN_OR_RETURN(InferenceModel model,
                         LoadModel(o.model, o.params, scope));
  if (model.feed_names.empty() || model.fetch_names.empty()) {
    return InvalidArgument("'" + o.model +
                           "' has no feed or no fetch "
                           "targets: is it an inference program?");
  }
  if (o.fuse) {
    PAREX_RETURN_IF_ERROR(FuseModel(places, &model, scope)
                              .WithContext("fusing '" + o.model + "'"));
  }
  return model;
}

Status MakeOutputDir(const std::string& dir) {
  if (dir.empty()) return Status::Ok();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create '" + dir + "': " + ec.message());
  return Status::Ok();
}

// The first run, timed: its outputs reported (and written where --output
// says).
Status FirstRun(const InferOptions& o, ParallelExecutor& pe,
                ChunkedRunner& runner, const std::vector<Place>& places,
                const FeedMap& feed, const InferenceModel& model,
                const std::vector<std::string>& out_paths) {
  const auto start = std::chrono::steady_clock::now();
  PAREX_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                         runner.Run(pe, feed, model.fetch_names));
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  PAREX_RETURN_IF_ERROR(MakeOutputDir(o.output));
  std::printf("parex infer: %s on %zu %s place%s, %.1f ms", o.model.c_str(),
              places.size(), PlaceKindTitle(places[0].kind),
              places.size() == 1 ? "" : "s", ms);
  if (runner.chunked()) {
    std::printf(" (%lld rows a run)", static_cast<long long>(runner.chunk()));
  }
  std::printf("\n");
  return ReportOutputs(out, model.fetch_names, out_paths);
}

}  // namespace

int RunInfer(const InferOptions& o) {
  const std::string cmd = "infer";
  StatusOr<std::vector<Place>> places = RunnablePlaces(o.places);
  if (!places.ok())
    return Fail(cmd, places.status(), PlacesExitCode(places.status()));
  StatusOr<std::vector<std::pair<std::string, std::string>>> named =
      ParseInputs(o.inputs);
  if (!named.ok()) return Fail(cmd, named.status(), kExitUsage);
  if (int code = CheckOutputs(cmd, o); code != kExitOk) return code;
  Scope scope;
  StatusOr<InferenceModel> model = PrepareModel(o, *places, &scope);
  if (!model.ok()) return Fail(cmd, model.status());
  bool usage = false;
  StatusOr<FeedMap> feed = ReadInputs(*named, *model, &usage);
  if (!feed.ok())
    return Fail(cmd, feed.status(), usage ? kExitUsage : kExitRuntime);
  const int64_t rows = FeedRows(*feed);
  StatusOr<std::vector<std::string>> out_paths =
      OutputPaths(o.output, model->fetch_names);
  if (!out_paths.ok()) return Fail(cmd, out_paths.status());
  TraceRecorder trace(/*enabled=*/false);
  const TraceWindow window{o.trace.empty() ? nullptr : &trace, o.trace_from,
                           o.trace_runs};
  window.Before(0);
  ExecutionStrategy exec;
  exec.trace = window.trace;
  BuildStrategy build;
  ChunkedRunner runner(PlanRun(rows, o.chunk_rows, &*places, &build, &exec));
  StatusOr<std::unique_ptr<ParallelExecutor>> pe = ParallelExecutor::Create(
      *places, model->program, "", &scope, build, exec);
  if (!pe.ok()) return Fail(cmd, pe.status());
  if (Status s = FirstRun(o, **pe, runner, *places, *feed, *model, *out_paths);
      !s.ok())
    return Fail(cmd, s);
  if (o.bench > 0) {
    if (Status s = Bench(**pe, runner, *feed, model->fetch_names, o.bench, rows,
                         window);
        !s.ok())
      return Fail(cmd, s);
  }
  if (!o.trace.empty()) {
    if (Status s = WriteTrace(o.trace, **pe, trace); !s.ok())
      return Fail(cmd, s);
  }
  return kExitOk;
}

}  // namespace parex::cli
