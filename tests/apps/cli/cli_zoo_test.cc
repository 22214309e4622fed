// Paddle 2.x models saved by paddle.jit.save as users save them (tests/apps/
// fixtures/paddle_zoo/make_zoo.py): MobileNet-v2 (relu6), MobileNet-v3
// small (hard_sigmoid, hard_swish), a 1-D conv text classifier (reduce_max)
// and a Transformer encoder whose position ids come from the input's length
// (shape, slice, cast, range), and shapes given as tensors (reshape2,
// slice, fill_constant, expand_v2 reading them at run time), and a
// channels-last (NHWC) CNN. `parex infer`
// runs each on one and on two places and gives Paddle's outputs within 1e-4
// (relative to the largest).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "apps/cli/npy.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

const std::string kZoo = std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_zoo";

struct ZooModel {
  const char* name;
  const char* feed;
};

TEST(CliZooTest, PaddleModelsRunAsInPaddleOnOneAndTwoPlaces) {
  for (const ZooModel& m :
       {ZooModel{"mobilenet_v2", "x"}, ZooModel{"mobilenet_v3_small", "x"},
        ZooModel{"text_cnn", "ids"}, ZooModel{"pos_encoder", "ids"},
        ZooModel{"dynamic_shapes", "x"}, ZooModel{"nhwc_cnn", "x"}}) {
    const std::string model = kZoo + "/" + m.name;
    StatusOr<Tensor> want = ReadNpy(model + "/y.npy");
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    // As saved (--no-fuse) and rewritten by the inference fusions (batch
    // norms folded, activations fused, channels-last convolutions).
    for (const std::string fuse : {"", "--no-fuse"}) {
      for (const char* places : {"cpu:1", "cpu:2"}) {
        SCOPED_TRACE(std::string(m.name) + " on " + places + " " + fuse);
        const std::string dir = ScratchDir(std::string("zoo_") + m.name);
        std::vector<std::string> args = {
            "infer",
            "--model",
            model + "/model.pdmodel",
            "--params",
            model + "/model.pdiparams",
            "--input",
            std::string(m.feed) + "=" + model + "/x.npy",
            "--output",
            "out",
            "--places",
            places};
        if (!fuse.empty()) args.push_back(fuse);
        CliRun run = RunParex(args, dir);
        ASSERT_EQ(run.exit_code, 0) << run.err;
        const std::string line = run.out.substr(run.out.find("\n  ") + 3);
        const std::string fetch = line.substr(0, line.find(':'));
        std::string file = fetch;
        std::replace(file.begin(), file.end(), '/', '_');
        StatusOr<Tensor> got = ReadNpy(dir + "/out/" + file + ".npy");
        ASSERT_TRUE(got.ok()) << got.status().ToString() << "\n" << run.out;
        ASSERT_EQ(got->dims(), want->dims());
        double scale = 0, worst = 0;
        for (int64_t i = 0; i < want->numel(); ++i) {
          scale = std::max(scale, std::abs(double{want->data<float>()[i]}));
          worst = std::max(worst, std::abs(double{got->data<float>()[i]} -
                                           want->data<float>()[i]));
        }
        EXPECT_GT(scale, 0.1);  // outputs that say something
        EXPECT_LT(worst, 1e-4 * scale);
      }
    }
  }
}

}  // namespace
}  // namespace parex::testing
