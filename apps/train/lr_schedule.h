// --lr-schedule: the learning rate of each step for programs whose rate is
// a plain persistable variable (PaddlePaddle 2.x's LRScheduler sets it from
// Python before each step; parex sets it on every place). The schedules and
// their formulas are Paddle's (paddle.optimizer.lr), `step` counting the
// steps run before (0 for the first):
//   constant:LR                  LR
//   piecewise:B1,B2,...:V0,V1,...  V_i, i = how many boundaries B <= step
//                                (PiecewiseDecay; one value more than bounds)
//   exponential:LR,GAMMA         LR * GAMMA^step (ExponentialDecay)
//   cosine:LR,T_MAX[,ETA_MIN]    ETA_MIN + (LR - ETA_MIN)(1 + cos(pi step /
//                                T_MAX)) / 2 (CosineAnnealingDecay's closed
//                                form)
//   warmup:STEPS,START,END[:INNER]  START + (END - START) step / STEPS while
//                                step < STEPS, then INNER at step - STEPS, or
//                                END without one (LinearWarmup)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "base/status.h"

namespace parex::train {

using LrSchedule = std::function<double(int64_t step)>;

// InvalidArgument naming the part of `spec` that is wrong.
StatusOr<LrSchedule> ParseLrSchedule(const std::string& spec);

// Sets `rate` into each of `vars` on every place of `pe` (each holds its own
// copy of a persistable in AllReduce mode), as Paddle's LRScheduler does
// before a step. InvalidArgument naming the variable and place when one is
// not a one-element float tensor.
Status SetLearningRate(ParallelExecutor* pe,
                       const std::vector<std::string>& vars, double rate);

}  // namespace parex::train
