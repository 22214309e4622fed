#include "apps/train/stop_signal.h"

namespace parex::train {
namespace {

volatile sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int sig) { g_stop_signal = sig; }

}  // namespace

StopSignals::StopSignals() {
  struct sigaction on_stop = {};
  on_stop.sa_handler = OnStopSignal;
  sigaction(SIGINT, &on_stop, &old_int_);
  sigaction(SIGTERM, &on_stop, &old_term_);
  installed_ = true;
}

void StopSignals::Restore() {
  if (!installed_) return;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  installed_ = false;
}

int StopSignals::Received() { return g_stop_signal; }

const char* StopSignalName(int sig) {
  return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace parex::train
