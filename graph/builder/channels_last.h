// The channels_last inference rewrite (InferenceFusions::channels_last,
// inference_fusion.h): convolutions run channels-last (data_format NHWC,
// what oneDNN's kernels read without reordering), with the ops between them
// that do not care about the layout (activations, elementwise ops of two
// such tensors of one shape, concat and split along the channels, and
// ShuffleNet's channel shuffle: reshape2 / transpose2 / reshape2 rewritten
// to shuffle the last dim), and pool2d on a channels-last input (its NHWC
// kernel); transpose2 where a tensor crosses between the layouts (feeds,
// fetches, flatten, ...). Fetched vars keep their layout. Training programs
// too (RunChannelsLast's `training`).
#pragma once

#include <string>
#include <vector>

#include "graph/ir/program.h"

namespace parex {

// Rewrites `block` (block 0 of `program`, a one-block program, as a
// protobuf the caller then makes the program of); `converted` counts the
// ops that run channels-last, `transposes` the transpose2 ops added.
// `training`: a training program (BuildStrategy::channels_last): batch
// norms, channel-bias adds and the gradient ops (conv2d, pool2d,
// batch_norm, the activations', the element-wise ops', sum) channels-last
// too, the forward's channel shuffles left channels-first.
void RunChannelsLast(const Program& program,
                     const std::vector<std::string>& fetch_names,
                     proto::BlockDesc* block, int* converted, int* transposes,
                     bool training = false);

// `program` (one block) with RunChannelsLast's training rewrite applied,
// the vars in `keep` (fetches, the loss) left in their layout.
Program TrainingChannelsLast(const Program& program,
                             const std::vector<std::string>& keep);

}  // namespace parex
