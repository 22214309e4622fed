// The actor runtime's entry point (the executor actors arrive with the
// ParallelExecutor issue). Only actors/ includes CAF headers.
#pragma once

#include <string>

namespace parex {

// "0.17.6": the CAF version parex was built against.
std::string CafVersion();

// Starts an actor system with `num_threads` workers, sends one request to a
// spawned actor and returns its reply (a + b): proves the runtime links and
// schedules.
int PingActorSystem(int num_threads, int a, int b);

}  // namespace parex
