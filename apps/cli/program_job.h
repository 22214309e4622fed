// parex train --program: a user's own Paddle training program as a
// TrainJob (apps/train/train_job.h), from the files the command line names:
// the main and startup programs, a directory of parameter files, and the
// rows of each fed variable in .npy / .npz files (--data, --eval-data).
#pragma once

#include "apps/train/train_job.h"
#include "apps/train/train_options.h"
#include "base/status.h"

namespace parex::cli {

// The program `o.program` with `o.startup` / `o.params` and the rows of
// `o.data`. Errors name the file, the variable or the option; *usage is set
// for mistakes in the options (a feed the program lacks, rows that differ,
// a wrong dtype, no loss found).
StatusOr<train::TrainJob> ProgramJob(const train::TrainOptions& o, bool* usage);

}  // namespace parex::cli
