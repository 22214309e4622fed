#include "actors/runtime/worker_pool.h"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <thread>

#include "actors/runtime/messages.h"

namespace parex {

WorkerPool::~WorkerPool() {
  system_.reset();  // waits for every actor of the system
}

std::shared_ptr<WorkerPool> WorkerPool::Create(int num_threads,
                                               SchedulerPolicy policy,
                                               int spin_us) {
  if (num_threads <= 0) {
    num_threads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  std::shared_ptr<WorkerPool> result(new WorkerPool());
  result->num_threads_ = num_threads;
  result->config_ = std::make_unique<caf::actor_system_config>();
  caf::actor_system_config& config = *result->config_;
  config.add_message_types<caf::id_block::parex>();
  config.set("scheduler.max-threads", static_cast<size_t>(num_threads));
  // One message per resume: an op actor gets one message per step anyway,
  // and a chain that yields to a collective (op_actor.h) must give its
  // worker up, not read its own continuation at once.
  config.set("scheduler.max-throughput", static_cast<size_t>(1));
  // Idle workers poll only when each can have a core: with more workers
  // than cores a polling worker takes time from a working one.
  if (static_cast<unsigned>(num_threads) >
      std::thread::hardware_concurrency()) {
    spin_us = 0;
  }
  UseSchedulerPolicy(config, policy, spin_us);
  result->system_ = std::make_unique<caf::actor_system>(config);
  return result;
}

}  // namespace parex
