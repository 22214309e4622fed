#!/usr/bin/env python3
"""Data for the README's `parex train --program` tour: 4096 random 12x12
images, each labelled with the quadrant whose pixels have the largest mean
(0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right), as x.npy (float32
[4096, 1, 12, 12]) and label.npy (int64 [4096, 1]) in the working directory.
The program they feed is the CNN PaddlePaddle 2.6 saved in
tests/apps/fixtures/paddle_cnn_bn_adam. Needs numpy only."""
import numpy as np

rng = np.random.RandomState(0)
x = rng.uniform(-1, 1, size=(4096, 1, 12, 12)).astype(np.float32)
quadrants = np.stack([x[:, 0, :6, :6].mean((1, 2)), x[:, 0, :6, 6:].mean((1, 2)),
                      x[:, 0, 6:, :6].mean((1, 2)), x[:, 0, 6:, 6:].mean((1, 2))], 1)
np.save("x.npy", x)
np.save("label.npy", quadrants.argmax(1).astype(np.int64).reshape(-1, 1))
