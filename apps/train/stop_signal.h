// SIGINT / SIGTERM while training: the running step finishes, a checkpoint
// is written (--checkpoint-dir), and the run exits with 128 + the signal.
// StopSignals routes both signals to a flag for as long as it is installed;
// the training loop polls Received() between steps.
#pragma once

#include <signal.h>

namespace parex::train {

class StopSignals {
 public:
  // Installs the handler for SIGINT and SIGTERM.
  StopSignals();
  // Restores the handlers there were (once; Restore may come first).
  ~StopSignals() { Restore(); }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  void Restore();

  // The last stop signal received (0: none yet). Async-signal-safe state:
  // one process-wide flag, whatever StopSignals installed it.
  static int Received();

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
  bool installed_ = false;
};

// "SIGINT" or "SIGTERM", as the stop lines name the signal.
const char* StopSignalName(int sig);

}  // namespace parex::train
