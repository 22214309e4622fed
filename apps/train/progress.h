// Time as parex train reports it, and the live progress line it redraws on
// a terminal (--no-progress, or stdout not a terminal: none).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace parex::train {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since);
// "42s", "3m07s".
std::string Duration(double seconds);

// The line "epoch E/N  step B/M  loss L  S samples/s  ETA T", redrawn at
// most every 0.1 s while `live`. Not thread-safe (the training loop's).
class ProgressLine {
 public:
  // Live when `wanted` (--no-progress not given) and stdout is a terminal.
  explicit ProgressLine(bool wanted);

  bool live() const { return live_; }
  // Redraws the line (unless drawn less than 0.1 s ago): batch `batch` of
  // `batches` in epoch `epoch` of `epochs`, the epoch's mean loss so far,
  // and the rate and ETA of `step` of `total_steps` steps (`samples` rows)
  // since `train_start`.
  void Draw(int epoch, int epochs, int64_t batch, int64_t batches,
            double mean_loss, int64_t samples, int64_t step,
            int64_t total_steps, Clock::time_point train_start);
  // Before a message that must not overwrite the line: ends it.
  void Break() const;
  // Before the epoch's line: erases it.
  void Clear() const;

 private:
  bool live_;
  Clock::time_point last_draw_;
};

}  // namespace parex::train
