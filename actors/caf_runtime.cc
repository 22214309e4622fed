#include "actors/caf_runtime.h"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

namespace parex {

std::string CafVersion() {
  return std::to_string(CAF_MAJOR_VERSION) + "." +
         std::to_string(CAF_MINOR_VERSION) + "." +
         std::to_string(CAF_PATCH_VERSION);
}

int PingActorSystem(int num_threads, int a, int b) {
  caf::actor_system_config config;
  config.set("scheduler.max-threads", static_cast<size_t>(num_threads));
  config.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system system{config};
  // CAF 0.17's init_fun_factory dereferences a null shared_ptr<tuple<>>
  // when the spawned function takes no arguments (UBSan reports it), so
  // every function parex spawns takes at least one.
  auto adder = system.spawn(
      [](int bias) -> caf::behavior {
        return {[bias](int x, int y) { return x + y + bias; }};
      },
      0);
  int result = -1;
  caf::scoped_actor self{system};
  self->request(adder, caf::infinite, a, b)
      .receive([&](int sum) { result = sum; }, [&](caf::error&) {});
  self->send_exit(adder, caf::exit_reason::user_shutdown);
  return result;
}

}  // namespace parex
