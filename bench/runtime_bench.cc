// runtime_bench: the cost of scheduling (issue 5 (a), DESIGN.md §3.4 and
// §6). The same immutable TaskGraph is run, in one process and one run, by
//   - parex's actor runtime (ActorRunner, CAF 0.17, 2 scheduler workers),
//   - a plain thread pool with atomic pending counters (ThreadPoolRunner,
//     2 workers; idle workers poll the queue for 50 µs before they block),
//   - oneTBB's flow graph (TbbFlowGraphRunner, an arena of 2 threads),
// on these graphs, every node busy-waiting its cost (no sleeping):
//   - the SSA graphs of the digits MLP, Fashion MLP and Fashion CNN training
//     programs on places cpu:0 and cpu:1 (BuildMultiDeviceGraph with the
//     default strategy), at 2 µs, 10 µs and mixed {2, 10, 50} µs per node
//     (chosen per node by a seeded RNG);
//   - a layered random DAG of 10,000 nodes (~2.5 inputs each) at 0, 2 and
//     10 µs per node.
// It prints the median wall time per step of each runner and the ratios
// actor/pool and tbb/pool, with the targets of issue 5 beside them
// (printed, never asserted; issue 33's: training graphs <= 1.05 x the pool
// at 10 µs and mixed, <= 1.10 x at 2 µs; the layered DAG <= 1.10 x at 10 µs
// and <= 0.5 µs a node at 0 µs).
//
// Runners take turns in rounds (a pause between turns lets idle workers go
// to sleep), so drift in machine load spreads over all of them. Timings on
// a loaded machine are noise: the load average is printed first.
//
//   runtime_bench [--seconds S]   S seconds of steps per runner and graph
//                                 (default 0.8; the whole run ~35 s)
//   runtime_bench --pool-spin-us U
//                                 the pool's idle workers poll U µs before
//                                 blocking (default 50; 0: block at once)
//   runtime_bench --graph G --cost C
//                                 only graph G and cost C (to profile one)
//   runtime_bench --quick         a smoke run (ctest runtime_bench_smoke):
//                                 a few steps per runner and graph, checking
//                                 that every step returns OK and runs every
//                                 node exactly once, after its predecessors;
//                                 no timing is judged. Exit status 1 if not.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/runtime/actor_runner.h"
#include "apps/models.h"
#include "bench/synthetic_graphs.h"
#include "bench/task_graph_peers.h"
#include "graph/ssa/multi_device_builder.h"

namespace parex {
namespace bench {
namespace {

constexpr int kThreads = 2;
// The layered DAG at 0 µs a node: the actor runner's wall time per node.
constexpr double kActorUsPerNodeTarget = 0.5;
constexpr int kRounds = 8;
constexpr int kQuickWarmupSteps = 2;
constexpr int kQuickSteps = 5;
constexpr double kWarmupSeconds = 0.05;
constexpr auto kPauseBetweenTurns = std::chrono::milliseconds(5);

// Runners in table order; the pool is the reference the ratios divide by.
enum RunnerIndex { kPool = 0, kActor = 1, kTbb = 2, kNumRunners = 3 };
const char* const kRunnerNames[kNumRunners] = {"pool", "actor", "tbb"};

struct RunOptions {
  bool quick = false;
  double seconds_per_runner = 0.8;
  int pool_spin_us = ThreadPoolRunner::kDefaultSpinUs;
  std::string only;       // one graph (its table name), or all when empty
  std::string only_cost;  // one cost (0us, 2us, 10us, mixed), or all
};

// A graph shape (no task yet) and its name in the table.
struct Shape {
  std::string name;
  TaskGraph graph;
};

// Per-node costs of one configuration and its target ratio (0: none).
struct Cost {
  std::string name;
  std::vector<int64_t> cost_ns;
  double target = 0;
};

struct Row {
  std::string graph, cost;
  int nodes = 0, edges = 0;
  double work_us = 0;  // sum of the node costs / kThreads: a lower bound
  double median_us[kNumRunners] = {0, 0, 0};
  double target = 0;
  int actors = 0;  // the actor runner's op actors (run messages per step)
};

StatusOr<std::unique_ptr<TaskRunner>> MakeRunner(
    int which, std::shared_ptr<const TaskGraph> graph,
    const RunOptions& options, int* actors) {
  switch (which) {
    case kPool:
      return std::unique_ptr<TaskRunner>(std::make_unique<ThreadPoolRunner>(
          std::move(graph), kThreads, options.pool_spin_us));
    case kTbb:
      return std::unique_ptr<TaskRunner>(
          std::make_unique<TbbFlowGraphRunner>(std::move(graph), kThreads));
    default: {
      ActorRunnerOptions options;
      options.num_threads = kThreads;
      PAREX_ASSIGN_OR_RETURN(std::unique_ptr<ActorRunner> runner,
                             ActorRunner::Create(std::move(graph), options));
      *actors = runner->num_actors();
      return std::unique_ptr<TaskRunner>(std::move(runner));
    }
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// Runs steps `*step`, `*step` + 1, ... for at least `seconds` and
// `min_steps` steps, appending each step's wall time (µs) to `times`
// when it is not null.
Status RunSteps(TaskRunner& runner, const std::string& what, double seconds,
                int min_steps, int64_t* step, std::vector<double>* times) {
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0; done < min_steps || SecondsSince(start) < seconds;
       ++done) {
    const auto begin = std::chrono::steady_clock::now();
    Status status = runner.Run((*step)++);
    const double us = SecondsSince(begin) * 1e6;
    if (!status.ok()) {
      return status.WithContext(what + " step " + std::to_string(*step - 1));
    }
    if (times != nullptr) times->push_back(us);
  }
  return Status::Ok();
}

// Runs one configuration on every runner and fills row.median_us.
Status Measure(const Shape& shape, const Cost& cost, const RunOptions& options,
               Row* row) {
  auto graph = std::make_shared<TaskGraph>(shape.graph);
  std::shared_ptr<StepChecker> checker;
  if (options.quick) checker = std::make_shared<StepChecker>(*graph);
  graph->task = SpinTask(cost.cost_ns, checker);
  PAREX_RETURN_IF_ERROR(graph->Finalize());
  std::shared_ptr<const TaskGraph> shared = graph;

  std::unique_ptr<TaskRunner> runners[kNumRunners];
  for (int r = 0; r < kNumRunners; ++r) {
    PAREX_ASSIGN_OR_RETURN(runners[r],
                           MakeRunner(r, shared, options, &row->actors));
  }
  const std::string config = shape.name + " " + cost.name;
  // Step numbers grow across runners, so the checker tells the steps of
  // different runners apart.
  int64_t step = 0;
  if (options.quick) {
    for (int r = 0; r < kNumRunners; ++r) {
      const std::string what = config + " " + kRunnerNames[r];
      PAREX_RETURN_IF_ERROR(RunSteps(*runners[r], what, 0,
                                     kQuickWarmupSteps + kQuickSteps, &step,
                                     nullptr));
      PAREX_RETURN_IF_ERROR(checker->Check(step).WithContext(what));
    }
    return Status::Ok();
  }

  std::vector<double> times[kNumRunners];
  for (int r = 0; r < kNumRunners; ++r) {
    PAREX_RETURN_IF_ERROR(
        RunSteps(*runners[r], config, kWarmupSeconds, 3, &step, nullptr));
    std::this_thread::sleep_for(kPauseBetweenTurns);
  }
  const double turn_seconds = options.seconds_per_runner / kRounds;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kNumRunners; ++i) {
      const int r = (round + i) % kNumRunners;  // rotate who goes first
      const std::string what = config + " " + kRunnerNames[r];
      PAREX_RETURN_IF_ERROR(
          RunSteps(*runners[r], what, turn_seconds, 1, &step, &times[r]));
      std::this_thread::sleep_for(kPauseBetweenTurns);
    }
  }
  for (int r = 0; r < kNumRunners; ++r) row->median_us[r] = Median(times[r]);
  return Status::Ok();
}

StatusOr<Shape> TrainingShape(ExampleKind kind) {
  PAREX_ASSIGN_OR_RETURN(ExampleProgram example, BuildExample(kind));
  PAREX_ASSIGN_OR_RETURN(
      SsaGraph ssa,
      BuildMultiDeviceGraph(example.main, {Place::CPU(0), Place::CPU(1)},
                            example.loss, BuildStrategy{}));
  PAREX_ASSIGN_OR_RETURN(TaskGraph graph, SsaReplay(ssa));
  return Shape{ExampleName(kind), std::move(graph)};
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

std::string Ratio(double num, double den) {
  if (den <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", num / den);
  return buf;
}

void PrintTable(const std::vector<Row>& rows) {
  std::printf("\n%-12s %-6s %6s %6s %6s %10s %10s %10s %10s %10s %9s  %s\n",
              "graph", "cost", "nodes", "edges", "actors", "work/2 us",
              "pool us", "actor us", "tbb us", "actor/pool", "tbb/pool",
              "target (actor/pool)");
  for (const Row& row : rows) {
    std::string target = "-";
    if (row.target > 0) {
      const double ratio = row.median_us[kActor] / row.median_us[kPool];
      char buf[48];
      std::snprintf(buf, sizeof(buf), "<= %.2f %s", row.target,
                    ratio <= row.target ? "met" : "MISSED");
      target = buf;
    }
    std::printf(
        "%-12s %-6s %6d %6d %6d %10.1f %10.1f %10.1f %10.1f %10s %9s  %s\n",
        row.graph.c_str(), row.cost.c_str(), row.nodes, row.edges, row.actors,
        row.work_us, row.median_us[kPool], row.median_us[kActor],
        row.median_us[kTbb],
        Ratio(row.median_us[kActor], row.median_us[kPool]).c_str(),
        Ratio(row.median_us[kTbb], row.median_us[kPool]).c_str(),
        target.c_str());
  }
  std::printf(
      "\nactors: the actor runner's op actors (linear chains fused), each "
      "sent one message per step.\nwork/2: the sum of the node costs over "
      "%d threads, a lower bound. Times: median wall time of one step (us).\n",
      kThreads);
  for (const Row& row : rows) {
    if (row.cost != "0us") continue;
    std::printf(
        "%s at 0 us: wall time per node: pool %.3f us, actor %.3f us,"
        " tbb %.3f us (target actor <= %.2f us: %s)\n",
        row.graph.c_str(), row.median_us[kPool] / row.nodes,
        row.median_us[kActor] / row.nodes, row.median_us[kTbb] / row.nodes,
        kActorUsPerNodeTarget,
        row.median_us[kActor] / row.nodes <= kActorUsPerNodeTarget ? "met"
                                                                   : "MISSED");
  }
}

int Main(const RunOptions& options) {
  std::printf(
      "runtime_bench: %d threads per runner (pool spin %d us), %u hardware "
      "threads, load average %s%s\n",
      kThreads, options.pool_spin_us, std::thread::hardware_concurrency(),
      LoadAverage().c_str(),
      options.quick ? " (--quick: checking, not timing)" : "");
  std::vector<Shape> shapes;
  for (ExampleKind kind : {ExampleKind::kDigitsMlp, ExampleKind::kFashionMlp,
                           ExampleKind::kFashionCnn}) {
    StatusOr<Shape> shape = TrainingShape(kind);
    if (!shape.ok()) {
      std::fprintf(stderr, "runtime_bench: %s: %s\n", ExampleName(kind),
                   shape.status().ToString().c_str());
      return 1;
    }
    shapes.push_back(std::move(shape).value());
  }
  StatusOr<TaskGraph> dag = LayeredRandomDag();
  if (!dag.ok()) {
    std::fprintf(stderr, "runtime_bench: %s\n",
                 dag.status().ToString().c_str());
    return 1;
  }
  shapes.push_back(Shape{"layered_dag", std::move(dag).value()});

  constexpr int64_t kUs = 1000;
  std::vector<Row> rows;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const Shape& shape = shapes[s];
    if (!options.only.empty() && shape.name != options.only) continue;
    const int n = shape.graph.size();
    std::vector<Cost> costs;
    if (shape.name == "layered_dag") {
      costs.push_back({"0us", UniformCosts(n, 0), 0});
      costs.push_back({"2us", UniformCosts(n, 2 * kUs), 0});
      costs.push_back({"10us", UniformCosts(n, 10 * kUs), 1.10});
    } else {
      costs.push_back({"2us", UniformCosts(n, 2 * kUs), 1.10});
      costs.push_back({"10us", UniformCosts(n, 10 * kUs), 1.05});
      costs.push_back({"mixed",
                       MixedCosts(n, {2 * kUs, 10 * kUs, 50 * kUs},
                                  static_cast<uint32_t>(17 + s)),
                       1.05});
    }
    for (const Cost& cost : costs) {
      if (!options.only_cost.empty() && cost.name != options.only_cost) {
        continue;
      }
      Row row;
      row.graph = shape.name;
      row.cost = cost.name;
      row.nodes = n;
      row.edges = NumEdges(shape.graph);
      row.target = cost.target;
      for (int64_t ns : cost.cost_ns) row.work_us += ns / 1e3;
      row.work_us /= kThreads;
      std::printf("%s %s ...\n", shape.name.c_str(), cost.name.c_str());
      std::fflush(stdout);
      Status status = Measure(shape, cost, options, &row);
      if (!status.ok()) {
        std::fprintf(stderr, "runtime_bench: %s\n", status.ToString().c_str());
        return 1;
      }
      rows.push_back(std::move(row));
    }
  }
  if (options.quick) {
    std::printf(
        "runtime_bench --quick: every runner ran every node exactly "
        "once per step, in order, on %zu configurations\n",
        rows.size());
    return 0;
  }
  PrintTable(rows);
  std::printf("load average at the end: %s\n", LoadAverage().c_str());
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace parex

int main(int argc, char** argv) {
  CLI::App app{
      "Scheduling cost of parex's actor runtime against a thread "
      "pool and TBB's flow graph"};
  parex::bench::RunOptions options;
  app.add_flag("--quick", options.quick,
               "Smoke run: a few checked steps per configuration, no timing");
  app.add_option("--seconds", options.seconds_per_runner,
                 "Seconds of timed steps per runner and configuration")
      ->check(CLI::PositiveNumber);
  app.add_option("--pool-spin-us", options.pool_spin_us,
                 "Microseconds the pool's idle workers poll before blocking")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--graph", options.only,
                 "Measure only this graph (digits_mlp, fashion_mlp, "
                 "fashion_cnn, layered_dag)");
  app.add_option("--cost", options.only_cost,
                 "Measure only this cost per node (0us, 2us, 10us, mixed)");
  CLI11_PARSE(app, argc, argv);
  return parex::bench::Main(options);
}
