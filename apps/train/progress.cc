#include "apps/train/progress.h"

#include <unistd.h>

#include <cstdio>

namespace parex::train {

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string Duration(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  } else {
    std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(seconds) / 60,
                  static_cast<int>(seconds) % 60);
  }
  return buf;
}

ProgressLine::ProgressLine(bool wanted)
    : live_(wanted && isatty(STDOUT_FILENO)),
      last_draw_(Clock::now() - std::chrono::seconds(1)) {}

void ProgressLine::Draw(int epoch, int epochs, int64_t batch, int64_t batches,
                        double mean_loss, int64_t samples, int64_t step,
                        int64_t total_steps, Clock::time_point train_start) {
  if (!live_ || Seconds(last_draw_) <= 0.1) return;
  last_draw_ = Clock::now();
  const double elapsed = Seconds(train_start);
  const double eta = elapsed / step * (total_steps - step);
  std::printf(
      "\r\033[Kepoch %d/%d  step %lld/%lld  loss %.4f  %.0f samples/s  "
      "ETA %s",
      epoch + 1, epochs, static_cast<long long>(batch),
      static_cast<long long>(batches), mean_loss, samples / elapsed,
      Duration(eta).c_str());
  std::fflush(stdout);
}

void ProgressLine::Break() const {
  if (live_) std::printf("\n");
}

void ProgressLine::Clear() const {
  if (live_) std::printf("\r\033[K");
}

}  // namespace parex::train
