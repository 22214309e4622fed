#include "kernels/example_feed.h"

#include <random>
#include <string>
#include <utility>

#include "kernels/tensor.h"

namespace parex {

FeedMap RandomExampleFeed(const ExampleProgram& example, int64_t rows,
                          uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  FeedMap feed;
  for (const std::string& name : example.feed_names()) {
    const VarDesc* var = example.main.global_block().FindVar(name);
    Dims dims = var->dims();
    dims[0] = rows;
    Tensor t(var->dtype(), dims);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (var->dtype() == DType::kInt64) {
        t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
      } else {
        t.data<float>()[i] = normal(rng);
      }
    }
    feed[name] = std::move(t);
  }
  return feed;
}

}  // namespace parex
