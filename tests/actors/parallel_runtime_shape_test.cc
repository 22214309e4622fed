// The ParallelExecutor on the runtime's real shape (issue 12): simulated
// asynchronous places (sim:N, stream actors) give the reference executor's
// losses with the event and the Wait strategy, and repeat cpu:N bit for bit;
// removing one cross-stream wait is reported as a race; a step aborted from
// outside (a peer lost while a collective waits for it) ends within 1 s and
// the next step matches the reference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "actors/comm/in_process_communicator.h"
#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "graph/ssa/multi_thread_transpile.h"
#include "graph/ssa/parallel_do.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBatch = 16;

double RelDiff(double a, double b) {
  return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-6});
}

void StartupInto(const ExampleProgram& ex, Scope* scope) {
  ReferenceExecutor startup;
  StatusOr<std::vector<Tensor>> r = startup.Run(ex.startup, scope, {}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

bool HasBatchNorm(const Program& p) {
  const Block& b = p.global_block();
  for (int i = 0; i < b.num_ops(); ++i) {
    if (b.op(i).type() == "batch_norm") return true;
  }
  return false;
}

// Each step's loss on the reference executor: the whole batch on one place
// (one loss), or, for a model with batch_norm (whose statistics are per
// place), the multi-thread transpile over 2 places (one loss per place).
std::vector<std::vector<double>> ReferenceLosses(
    const ExampleProgram& ex, const std::vector<FeedMap>& data) {
  Scope scope;
  StartupInto(ex, &scope);
  ReferenceExecutor exec;
  Program program = ex.main;
  std::vector<std::string> fetch{ex.loss};
  if (HasBatchNorm(ex.main)) {
    StatusOr<Program> t =
        TranspileMultiThread(ex.main, ex.loss, ex.feed_names(), 2);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok()) return {};
    program = *t;
    fetch = {ex.loss + "@THREAD@0", ex.loss + "@THREAD@1"};
  }
  std::vector<std::vector<double>> losses;
  for (const FeedMap& feed : data) {
    StatusOr<std::vector<Tensor>> r = exec.Run(program, &scope, feed, fetch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return losses;
    losses.emplace_back();
    for (const Tensor& t : *r) losses.back().push_back(t.data<float>()[0]);
  }
  return losses;
}

// The largest relative difference between a 2-place step's losses and the
// reference's (its mean against one reference loss, or place by place).
double Worst(const std::vector<float>& got, const std::vector<double>& want) {
  if (want.size() == 1) {
    double mean = 0;
    for (float l : got) mean += l;
    return RelDiff(mean / static_cast<double>(got.size()), want[0]);
  }
  double worst = got.size() == want.size() ? 0 : 1;
  for (size_t p = 0; p < std::min(got.size(), want.size()); ++p) {
    worst = std::max(worst, RelDiff(got[p], want[p]));
  }
  return worst;
}

double MeanOf(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sum += t.data<float>()[i];
  return sum / static_cast<double>(t.numel());
}

struct ParallelRun {
  std::vector<std::vector<float>> losses;  // per step, per place
  Status status;
};

ParallelRun RunOn(const ExampleProgram& ex, const std::vector<FeedMap>& data,
                  const std::vector<Place>& places,
                  const ExecutionStrategy& exec) {
  ParallelRun run;
  Scope scope;
  StartupInto(ex, &scope);
  auto pe =
      ParallelExecutor::Create(places, ex.main, ex.loss, &scope, {}, exec);
  if (!pe.ok()) {
    run.status = pe.status();
    return run;
  }
  for (const FeedMap& feed : data) {
    StatusOr<std::vector<Tensor>> r = (*pe)->Run(feed, {ex.loss});
    if (!r.ok()) {
      run.status = r.status();
      return run;
    }
    const Tensor& t = (*r)[0];
    run.losses.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  }
  return run;
}

struct SimCase {
  ExampleKind kind;
  StreamWaitStrategy wait;
};

class SimPlacesTest : public ::testing::TestWithParam<SimCase> {};

TEST_P(SimPlacesTest, MatchTheReferenceAndRepeatCpuPlacesBitForBit) {
  const SimCase c = GetParam();
  StatusOr<ExampleProgram> ex = BuildExample(c.kind);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  std::vector<FeedMap> data;
  for (int s = 0; s < 5; ++s)
    data.push_back(RandomExampleFeed(*ex, kBatch, 40 + s));
  const std::vector<std::vector<double>> ref = ReferenceLosses(*ex, data);
  ExecutionStrategy exec;
  exec.stream_wait = c.wait;
  exec.sim_delay_us = 20;  // the device completes work later than issued
  const ParallelRun sim =
      RunOn(*ex, data, {Place::Sim(0), Place::Sim(1)}, exec);
  ASSERT_TRUE(sim.status.ok()) << sim.status.ToString();
  const ParallelRun cpu = RunOn(*ex, data, {Place::CPU(0), Place::CPU(1)}, {});
  ASSERT_TRUE(cpu.status.ok()) << cpu.status.ToString();
  ASSERT_EQ(sim.losses.size(), ref.size());
  for (size_t s = 0; s < ref.size(); ++s) {
    EXPECT_LT(Worst(sim.losses[s], ref[s]), 1e-5) << "step " << s;
    EXPECT_EQ(sim.losses[s], cpu.losses[s]) << "step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, SimPlacesTest,
    ::testing::Values(
        SimCase{ExampleKind::kDigitsMlp, StreamWaitStrategy::kEvent},
        SimCase{ExampleKind::kDigitsMlp, StreamWaitStrategy::kWait},
        SimCase{ExampleKind::kFashionCnn, StreamWaitStrategy::kEvent},
        SimCase{ExampleKind::kFashionCnn, StreamWaitStrategy::kWait}),
    [](const ::testing::TestParamInfo<SimCase>& info) {
      return std::string(ExampleName(info.param.kind)) +
             (info.param.wait == StreamWaitStrategy::kEvent ? "_event"
                                                            : "_wait");
    });

// Every cross-stream input of the graph, removed one at a time for a sample
// of them (the all-reduce's input from place 0, the optimizer's input from
// the all-reduce): each removal is reported as a race. A stream is in order,
// so a removed wait is not a race when an earlier op on the consumer's
// stream already waited for a later op on the producer's stream; the order
// in which ready ops reach a stream varies from run to run, so a run may be
// ordered that way. Such a run must then match the waits-kept run bit for
// bit, and within a bounded number of runs the race must be reported.
TEST(SimPlacesTest, RemovingOneCrossStreamWaitIsReportedAsARace) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  StartupInto(*ex, &scope);
  auto probe = ParallelExecutor::Create({Place::Sim(0), Place::Sim(1)},
                                        ex->main, ex->loss, &scope);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  const SsaGraph& g = (*probe)->graph();
  std::vector<std::pair<int, int>> removals;  // producer, consumer
  ASSERT_FALSE(g.grads.empty());
  for (const GradInfo& info : {g.grads.front(), g.grads.back()}) {
    const SsaOp& c = g.op(info.collective);
    for (int v : c.inputs) {
      const int producer = g.var(v).generator;
      if (producer >= 0 && g.op(producer).place == 0) {
        removals.push_back({producer, c.id});
      }
    }
    for (int v : c.outputs) {
      for (int reader : g.var(v).readers) {
        if (g.op(reader).kind == SsaOpKind::kComputation) {
          removals.push_back({c.id, reader});
          break;
        }
      }
    }
  }
  ASSERT_GE(removals.size(), 4u);
  const std::vector<FeedMap> data = {RandomExampleFeed(*ex, kBatch, 3),
                                     RandomExampleFeed(*ex, kBatch, 4)};
  const ParallelRun kept = RunOn(*ex, data, {Place::Sim(0), Place::Sim(1)}, {});
  ASSERT_TRUE(kept.status.ok()) << kept.status.ToString();
  constexpr int kMaxRuns = 12;
  for (const auto& [producer, consumer] : removals) {
    SCOPED_TRACE(g.OpLabel(producer) + " -> " + g.OpLabel(consumer));
    for (StreamWaitStrategy wait :
         {StreamWaitStrategy::kEvent, StreamWaitStrategy::kWait}) {
      ExecutionStrategy exec;
      exec.stream_wait = wait;
      exec.skip_wait_producer = producer;
      exec.skip_wait_consumer = consumer;
      bool reported = false;
      for (int attempt = 0; attempt < kMaxRuns && !reported; ++attempt) {
        const ParallelRun run =
            RunOn(*ex, data, {Place::Sim(0), Place::Sim(1)}, exec);
        if (run.status.ok()) {
          // Ordered through another wait: then it computed what the
          // waits-kept run did.
          EXPECT_EQ(run.losses, kept.losses) << "attempt " << attempt;
          continue;
        }
        reported = true;
        EXPECT_THAT(run.status.message(), HasSubstr("race on stream"));
        EXPECT_THAT(run.status.message(), HasSubstr(g.OpLabel(producer)));
      }
      EXPECT_TRUE(reported)
          << "a removed wait passed silently in " << kMaxRuns << " runs";
    }
  }
}

// The in-process backend, but a call in an armed step waits for a "peer"
// that never comes, until the step is aborted (Interrupt).
class LostPeerCommunicator : public Communicator {
 public:
  explicit LostPeerCommunicator(std::vector<Place> places)
      : inner_(std::move(places)) {}
  const char* backend() const override { return "lost_peer"; }
  int world_size() const override { return inner_.world_size(); }
  int local_size() const override { return inner_.local_size(); }
  int first_local_rank() const override { return 0; }
  Place place(int rank) const override { return inner_.place(rank); }
  bool blocking() const override { return true; }
  void Interrupt(const Status& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
    reason_ = reason;
    cv_.notify_all();
  }
  void Resume() override {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = false;
    armed_ = false;
  }
  void Arm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
  }
  bool WaitUntilBlocked() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20),
                        [&] { return blocked_; });
  }
  int calls() const { return calls_; }

  Status AllReduce(std::string_view name, TensorGroups groups) override {
    PAREX_RETURN_IF_ERROR(Gate());
    return inner_.AllReduce(name, groups);
  }
  Status Reduce(std::string_view name, TensorGroups groups, int root) override {
    PAREX_RETURN_IF_ERROR(Gate());
    return inner_.Reduce(name, groups, root);
  }
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override {
    PAREX_RETURN_IF_ERROR(Gate());
    return inner_.Broadcast(name, groups, root);
  }
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override {
    PAREX_RETURN_IF_ERROR(Gate());
    return inner_.AllGather(name, inputs, outputs);
  }

 private:
  Status Gate() {
    std::unique_lock<std::mutex> lock(mu_);
    ++calls_;
    if (interrupted_) return reason_;
    if (!armed_) return Status::Ok();
    blocked_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return interrupted_; });
    blocked_ = false;
    return reason_;
  }

  InProcessCommunicator inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool blocked_ = false;
  bool interrupted_ = false;
  int calls_ = 0;
  Status reason_;
};

TEST(ParallelAbortTest, AStepAbortedFromOutsideEndsWithin1sAndTheNextMatches) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  const std::vector<FeedMap> data = {RandomExampleFeed(*ex, kBatch, 1),
                                     RandomExampleFeed(*ex, kBatch, 2),
                                     RandomExampleFeed(*ex, kBatch, 3)};
  Scope scope;
  StartupInto(*ex, &scope);
  auto comm = std::make_shared<LostPeerCommunicator>(
      std::vector<Place>{Place::CPU(0), Place::CPU(1)});
  ExecutionStrategy exec;
  exec.communicator = comm;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope, {}, exec);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  StatusOr<std::vector<Tensor>> first = (*pe)->Run(data[0], {ex->loss});
  ASSERT_TRUE(first.ok()) << first.status().ToString();

  // Step 2: the first collective waits for a peer that is gone.
  comm->Arm();
  StatusOr<std::vector<Tensor>> aborted = Internal("not run");
  Clock::time_point returned;
  std::thread caller([&] {
    aborted = (*pe)->Run(data[2], {ex->loss});
    returned = Clock::now();
  });
  ASSERT_TRUE(comm->WaitUntilBlocked());
  const Clock::time_point abort_at = Clock::now();
  (*pe)->Abort(Aborted("node 'trainer-1' (10.0.0.2:4242) lost"));
  caller.join();
  ASSERT_FALSE(aborted.ok());
  EXPECT_EQ(aborted.status().code(), StatusCode::kAborted);
  EXPECT_THAT(aborted.status().message(), HasSubstr("trainer-1"));
  EXPECT_LT(returned - abort_at, std::chrono::seconds(1));

  // The aborted step updated no parameter (its first collective never ran,
  // and every optimizer op needs one): the next step is the reference's
  // second step.
  StatusOr<std::vector<Tensor>> next = (*pe)->Run(data[1], {ex->loss});
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  const std::vector<std::vector<double>> ref =
      ReferenceLosses(*ex, {data[0], data[1]});
  ASSERT_EQ(ref.size(), 2u);
  EXPECT_LT(RelDiff(MeanOf((*first)[0]), ref[0][0]), 1e-5);
  EXPECT_LT(RelDiff(MeanOf((*next)[0]), ref[1][0]), 1e-5)
      << MeanOf((*next)[0]) << " vs " << ref[1][0];
}

TEST(ParallelAbortTest, AbortWithoutAStepInFlightIsIgnored) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  StartupInto(*ex, &scope);
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope);
  ASSERT_TRUE(pe.ok());
  (*pe)->Abort(Aborted("nobody"));
  EXPECT_TRUE((*pe)->Run(RandomExampleFeed(*ex, kBatch, 1), {ex->loss}).ok());
}

TEST(SimPlacesTest, MixedPlaceKindsAreRefused) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  StartupInto(*ex, &scope);
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::Sim(1)}, ex->main,
                                     ex->loss, &scope);
  ASSERT_FALSE(pe.ok());
  EXPECT_THAT(pe.status().message(), HasSubstr("different kinds"));
}

}  // namespace
}  // namespace parex
