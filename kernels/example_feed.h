// Synthetic feeds for the example programs (graph/builder/examples.h): for
// benchmarks and equivalence tests, where the values need not mean anything.
#pragma once

#include <cstdint>

#include "graph/builder/examples.h"
#include "kernels/feed.h"

namespace parex {

// A synthetic batch of `rows` rows shaped like the example's feeds:
// standard-normal features (and regression labels), class labels uniform in
// [0, 10). Seeded: the same seed gives the same batch. For benchmarks and
// equivalence tests, where the values need not mean anything.
FeedMap RandomExampleFeed(const ExampleProgram& example, int64_t rows,
                          uint32_t seed);

}  // namespace parex
