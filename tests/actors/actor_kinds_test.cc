// The actor kinds one by one (issue 12): messages serialise through CAF's
// registered types; an op actor fires on input-ready messages alone; the
// collective actor issues in the plan's order whatever order its inputs come
// in, and a blocking backend's actor does not occupy a scheduler worker; the
// coordinator aborts a step from outside within a bounded time and the next
// step runs clean; stream actors order work across streams by event or Wait
// and report a missing wait as a race.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/runtime/actor_runner.h"
#include "actors/runtime/messages.h"
#include "actors/runtime/runner_state.h"

namespace parex {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

template <class T>
T RoundTrip(caf::actor_system& sys, const T& value) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  caf::message out = caf::make_message(value);
  EXPECT_FALSE(sink(out)) << "serialise";
  caf::binary_deserializer source{sys, buf};
  caf::message in;
  EXPECT_FALSE(source(in)) << "deserialise";
  EXPECT_TRUE(in.match_element<T>(0));
  return in.get_as<T>(0);
}

TEST(MessagesTest, EveryMessageSerialisesThroughItsRegisteredType) {
  std::shared_ptr<WorkerPool> system = WorkerPool::Create(1);
  caf::actor_system& sys = system->system();
  const RunNode run = RoundTrip(sys, RunNode{7, 3, 2, 99});
  EXPECT_EQ(run.step, 7);
  EXPECT_EQ(run.node, 3);
  EXPECT_EQ(run.from, 2);
  EXPECT_EQ(run.flow, 99u);
  const InputReady ready = RoundTrip(sys, InputReady{8, 4, 1, 5});
  EXPECT_EQ(ready.step, 8);
  EXPECT_EQ(ready.node, 4);
  EXPECT_EQ(ready.from, 1);
  EXPECT_EQ(RoundTrip(sys, StreamWork{9, 6, 6, 0}).node, 6);
  EXPECT_EQ(RoundTrip(sys, StepStart{11}).step, 11);
  EXPECT_EQ(RoundTrip(sys, StepDone{12}).step, 12);
  const StepError error = RoundTrip(sys, StepError{13, 2, 9, "op #2 failed"});
  EXPECT_EQ(error.code, 9);
  EXPECT_EQ(error.message, "op #2 failed");
  const AbortStep abort = RoundTrip(sys, AbortStep{-1, 10, "peer gone"});
  EXPECT_EQ(abort.step, -1);
  EXPECT_EQ(abort.reason, "peer gone");
  // The type ids are parex's block, after CAF's own.
  EXPECT_GE(caf::type_id<RunNode>::value, caf::first_custom_type_id);
  EXPECT_EQ(caf::type_id<AbortStep>::value, caf::type_id<RunNode>::value + 6);
}

// 0 and 1 feed 2. The test plays the producers: node 2's op actor is sent
// InputReady messages and nothing else.
TEST(OpActorTest, FiresWhenAllItsInputReadyMessagesHaveArrived) {
  auto g = std::make_shared<TaskGraph>();
  g->nodes.resize(3);
  g->nodes[0].successors = {2};
  g->nodes[1].successors = {2};
  for (int i = 0; i < 3; ++i) g->nodes[i].label = "n" + std::to_string(i);
  std::atomic<int> ran2{0};
  std::atomic<int64_t> step_seen{-1};
  g->task = [&](int node, int64_t step) {
    if (node == 2) {
      step_seen = step;
      ++ran2;
    }
    return Status::Ok();
  };
  ASSERT_TRUE(g->Finalize().ok());
  ActorRunnerOptions options;
  options.num_threads = 2;
  options.fuse_chains = false;
  auto runner = ActorRunner::Create(g, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  RunnerState& rt = *(*runner)->state();
  // What the coordinator does at a step's start, for this one node.
  rt.user_step = 5;
  rt.pending[2].store(2);
  rt.remaining.store(1);
  rt.failed.store(false);
  const caf::actor& op2 = rt.receiver[2];
  caf::anon_send(op2, InputReady{1, 2, 0, 0});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ran2.load(), 0) << "fired after one of two inputs";
  caf::anon_send(op2, InputReady{1, 2, 1, 0});
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (ran2.load() == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ran2.load(), 1);
  EXPECT_EQ(step_seen.load(), 5);
  // Driving by messages left the runner usable: a normal step runs all.
  ASSERT_TRUE((*runner)->Run(6).ok());
  EXPECT_EQ(ran2.load(), 2);
}

// Three collectives of one communicator whose producers finish in reverse
// order: the collective actor still issues them 0, 1, 2.
TEST(CollectiveActorTest, IssuesInThePlansOrderWhateverOrderInputsComeIn) {
  auto g = std::make_shared<TaskGraph>();
  // producers 0..2 (place 0..2), collectives 3..5, consumers 6..8.
  g->nodes.resize(9);
  g->communicators.push_back({"test", false});
  for (int i = 0; i < 3; ++i) {
    g->nodes[i].place = i;
    g->nodes[i].successors = {3 + i};
    g->nodes[3 + i].communicator = 0;
    g->nodes[3 + i].stream = TaskStream::kCommunication;
    g->nodes[3 + i].successors = {6 + i};
    g->nodes[6 + i].place = i;
  }
  std::mutex mu;
  std::vector<int> issued;
  g->task = [&](int node, int64_t) {
    if (node < 3) {
      // Producer 2 finishes first, producer 0 last.
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * (3 - node)));
    }
    if (node >= 3 && node < 6) {
      std::lock_guard<std::mutex> lock(mu);
      issued.push_back(node);
    }
    return Status::Ok();
  };
  ASSERT_TRUE(g->Finalize().ok());
  ActorRunnerOptions options;
  options.num_threads = 3;
  auto runner = ActorRunner::Create(g, options);
  ASSERT_TRUE(runner.ok());
  EXPECT_EQ((*runner)->num_collective_actors(), 1);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE((*runner)->Run(step).ok());
  }
  EXPECT_EQ(issued, (std::vector<int>{3, 4, 5, 3, 4, 5, 3, 4, 5}));
}

// The collectives of an in-process communicator are issued by whichever op
// actor makes one ready (the shortcut of the RunNode to the collective
// actor): with 24 collectives per communicator whose producers, on two
// workers, finish in a shuffled order, over 200 steps and for a blocking
// and a non-blocking communicator side by side, every communicator's
// collectives still run one at a time, in id order, once per step.
TEST(CollectiveActorTest, ConcurrentProducersStillIssueOneAtATimeInOrder) {
  constexpr int kPerComm = 24;
  constexpr int kSteps = 200;
  auto g = std::make_shared<TaskGraph>();
  g->communicators.push_back({"in_process", false});
  g->communicators.push_back({"blocking", true});
  // Per communicator c and k: producer, collective, consumer.
  auto producer = [](int c, int k) { return (c * kPerComm + k) * 3; };
  g->nodes.resize(2 * kPerComm * 3);
  for (int c = 0; c < 2; ++c) {
    for (int k = 0; k < kPerComm; ++k) {
      const int p = producer(c, k);
      g->nodes[p].place = k % 2;
      g->nodes[p].successors = {p + 1};
      g->nodes[p + 1].communicator = c;
      g->nodes[p + 1].stream = TaskStream::kCommunication;
      g->nodes[p + 1].successors = {p + 2};
      g->nodes[p + 2].place = k % 2;
    }
  }
  std::mutex mu;
  std::vector<std::vector<int>> issued(2);
  std::atomic<int> in_flight[2] = {{0}, {0}};
  std::atomic<int> overlaps{0};
  g->task = [&](int node, int64_t step) {
    const int c = node / (kPerComm * 3);
    const int k = (node / 3) % kPerComm;
    if (node % 3 == 0) {
      // Producers finish in an order that changes with the step.
      const int spin_us = static_cast<int>((k * 7 + step * 5) % 11);
      const auto end = Clock::now() + std::chrono::microseconds(spin_us);
      while (Clock::now() < end) {
      }
    } else if (node % 3 == 1) {
      if (in_flight[c].fetch_add(1) != 0) overlaps.fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(mu);
        issued[c].push_back(k);
      }
      in_flight[c].fetch_sub(1);
    }
    return Status::Ok();
  };
  ASSERT_TRUE(g->Finalize().ok());
  ActorRunnerOptions options;
  options.num_threads = 2;
  auto runner = ActorRunner::Create(g, options);
  ASSERT_TRUE(runner.ok());
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE((*runner)->Run(step).ok()) << "step " << step;
  }
  EXPECT_EQ(overlaps.load(), 0);
  for (int c = 0; c < 2; ++c) {
    ASSERT_EQ(issued[c].size(), static_cast<size_t>(kPerComm * kSteps))
        << "communicator " << c;
    for (size_t i = 0; i < issued[c].size(); ++i) {
      ASSERT_EQ(issued[c][i], static_cast<int>(i % kPerComm))
          << "communicator " << c << ", call " << i;
    }
  }
}

// One scheduler worker. A blocking collective waits until an op on another
// place has run: if the collective actor took the only worker, that op could
// never run (the step would hang, and ctest's timeout fail it). Detached, it
// has a thread of its own.
TEST(CollectiveActorTest, ABlockingBackendDoesNotOccupyASchedulerWorker) {
  auto g = std::make_shared<TaskGraph>();
  g->nodes.resize(3);
  g->communicators.push_back({"blocking", true});
  g->nodes[0].communicator = 0;  // the blocking collective (a root)
  g->nodes[1].place = 0;         // an op it waits for, also a root
  g->nodes[0].successors = {2};
  g->nodes[1].successors = {2};
  g->nodes[2].place = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool op_ran = false;
  g->task = [&](int node, int64_t) {
    if (node == 1) {
      std::lock_guard<std::mutex> lock(mu);
      op_ran = true;
      cv.notify_all();
    }
    if (node == 0) {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, std::chrono::seconds(20),
                       [&] { return op_ran; })) {
        return Internal("the op never ran while the collective blocked");
      }
    }
    return Status::Ok();
  };
  ASSERT_TRUE(g->Finalize().ok());
  ActorRunnerOptions options;
  options.num_threads = 1;
  options.scheduler = SchedulerPolicy::kSharing;
  auto runner = ActorRunner::Create(g, options);
  ASSERT_TRUE(runner.ok());
  for (int step = 0; step < 5; ++step) {
    op_ran = false;
    Status s = (*runner)->Run(step);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
}

// A collective that blocks "waiting for a peer" until interrupted; an abort
// from another thread ends the step within 1 s, and the next step is clean.
struct BlockingPeer {
  std::mutex mu;
  std::condition_variable cv;
  bool block = false;    // this step's call waits for the peer
  bool blocked = false;  // a call is waiting now
  bool interrupted = false;
  Status reason;
};

TEST(CoordinatorActorTest, AbortEndsTheStepPromptlyAndTheNextStepIsClean) {
  auto g = std::make_shared<TaskGraph>();
  // 0 -> collective 1 -> 2, and 0 -> 3 -> 4 (a branch that keeps going).
  g->nodes.resize(5);
  g->communicators.push_back({"peer", true});
  g->nodes[0].place = 0;
  g->nodes[0].successors = {1, 3};
  g->nodes[1].communicator = 0;
  g->nodes[1].successors = {2};
  g->nodes[2].place = 0;
  g->nodes[3].place = 0;
  g->nodes[3].successors = {4};
  g->nodes[4].place = 0;
  BlockingPeer peer;
  std::vector<std::atomic<int>> runs(5);
  g->task = [&](int node, int64_t) -> Status {
    if (node == 1) {
      std::unique_lock<std::mutex> lock(peer.mu);
      if (peer.interrupted) return peer.reason;
      if (peer.block) {
        peer.blocked = true;
        peer.cv.notify_all();
        peer.cv.wait(lock, [&] { return peer.interrupted; });
        peer.blocked = false;
        return peer.reason;
      }
    }
    ++runs[node];
    return Status::Ok();
  };
  g->interrupt = [&](const Status& reason) {
    std::lock_guard<std::mutex> lock(peer.mu);
    peer.interrupted = true;
    peer.reason = reason;
    peer.cv.notify_all();
  };
  g->resume = [&] {
    std::lock_guard<std::mutex> lock(peer.mu);
    peer.interrupted = false;
    peer.block = false;
  };
  ASSERT_TRUE(g->Finalize().ok());
  ActorRunnerOptions options;
  options.num_threads = 2;
  auto runner = ActorRunner::Create(g, options);
  ASSERT_TRUE(runner.ok());
  ASSERT_TRUE((*runner)->Run(0).ok());
  {
    std::lock_guard<std::mutex> lock(peer.mu);
    peer.block = true;
  }
  Status result;
  Clock::time_point returned;
  std::thread caller([&] {
    result = (*runner)->Run(1);
    returned = Clock::now();
  });
  {
    std::unique_lock<std::mutex> lock(peer.mu);
    ASSERT_TRUE(peer.cv.wait_for(lock, std::chrono::seconds(10),
                                 [&] { return peer.blocked; }));
  }
  const Clock::time_point aborted = Clock::now();
  (*runner)->Abort(Aborted("node 'trainer-1' lost"));
  caller.join();
  EXPECT_EQ(result.code(), StatusCode::kAborted) << result.ToString();
  EXPECT_THAT(result.message(), HasSubstr("step 1 aborted"));
  EXPECT_THAT(result.message(), HasSubstr("trainer-1"));
  EXPECT_LT(returned - aborted, std::chrono::seconds(1));
  EXPECT_EQ(runs[2].load(), 1) << "the collective's consumer was skipped";
  // The next step starts clean: every node runs once more.
  const int before[5] = {runs[0], runs[1], runs[2], runs[3], runs[4]};
  Status next = (*runner)->Run(2);
  ASSERT_TRUE(next.ok()) << next.ToString();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(runs[i].load(), before[i] + 1) << i;
  // An abort between steps is ignored.
  (*runner)->Abort(Aborted("late"));
  EXPECT_TRUE((*runner)->Run(3).ok());
}

// Two asynchronous places: producers on their compute streams, a consumer on
// a third stream. Each producer writes a value late (the simulated device's
// delay); the consumer reads both. With event or Wait the consumer sees the
// values; without the wait on producer 0, the race is reported.
struct StreamFixture {
  std::shared_ptr<TaskGraph> graph = std::make_shared<TaskGraph>();
  std::atomic<int64_t> written[2];
  std::atomic<int64_t> seen_sum{0};

  StreamFixture() {
    TaskGraph& g = *graph;
    g.nodes.resize(3);
    // The devices take a while; the race check must not depend on whether
    // producer 0 happened to finish before the consumer started.
    g.streams.push_back({"sim:0/compute", 0, TaskStream::kCompute, 1000000});
    g.streams.push_back({"sim:1/compute", 1, TaskStream::kCompute, 1000000});
    g.streams.push_back(
        {"sim:0/communication", 0, TaskStream::kCommunication, 0});
    for (int i = 0; i < 2; ++i) {
      g.nodes[i].label = "producer " + std::to_string(i);
      g.nodes[i].place = i;
      g.nodes[i].stream_actor = i;
      g.nodes[i].successors = {2};
      written[i] = 0;
    }
    g.nodes[2].label = "consumer";
    g.nodes[2].stream_actor = 2;
    g.nodes[2].stream = TaskStream::kCommunication;
    g.task = [this](int node, int64_t step) {
      if (node < 2) {
        written[node] = step;
      } else {
        seen_sum = written[0] + written[1];
      }
      return Status::Ok();
    };
  }
};

TEST(StreamActorTest, EventAndWaitOrderStreamsAndAMissingWaitIsARace) {
  for (StreamWaitStrategy strategy :
       {StreamWaitStrategy::kEvent, StreamWaitStrategy::kWait}) {
    StreamFixture f;
    ASSERT_TRUE(f.graph->Finalize().ok());
    ActorRunnerOptions options;
    options.num_threads = 2;
    options.stream_wait = strategy;
    auto runner = ActorRunner::Create(f.graph, options);
    ASSERT_TRUE(runner.ok()) << runner.status().ToString();
    EXPECT_EQ((*runner)->num_stream_actors(), 3);
    for (int64_t step = 1; step <= 3; ++step) {
      Status s = (*runner)->Run(step);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(f.seen_sum.load(), 2 * step);
    }
  }
  StreamFixture f;
  ASSERT_TRUE(f.graph->Finalize().ok());
  ActorRunnerOptions options;
  options.num_threads = 2;
  options.skip_wait_producer = 0;
  options.skip_wait_consumer = 2;
  auto runner = ActorRunner::Create(f.graph, options);
  ASSERT_TRUE(runner.ok());
  Status s = (*runner)->Run(1);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("race on stream sim:0/communication"));
  EXPECT_THAT(s.message(), HasSubstr("producer 0 on stream sim:0/compute"));
}

TEST(StreamActorTest, ASynchronousNodeReadingAsynchronousWorkIsRefused) {
  StreamFixture f;
  f.graph->nodes[2].stream_actor = -1;
  ASSERT_TRUE(f.graph->Finalize().ok());
  auto runner = ActorRunner::Create(f.graph, {});
  ASSERT_FALSE(runner.ok());
  EXPECT_THAT(runner.status().message(),
              HasSubstr("consumer runs synchronously"));
}

}  // namespace
}  // namespace parex
