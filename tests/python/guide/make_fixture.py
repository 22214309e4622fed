#!/usr/bin/env python3
"""Makes the user guide's fixture for tests/python/guide_test.py.

PaddlePaddle 2.6.2 (CPU wheel from PyPI) builds the guide's setting: a
classifier (fc-relu-fc, softmax_with_cross_entropy, mean) trained with
Momentum, and its test program cloned for test before minimize(), as the
ParallelExecutor user guide does. Saved into this folder:
  main.pdmodel, startup.pdmodel, test.pdmodel   Paddle's serialized programs
  data.npz                                      x [96, 16] float32,
                                                label [96, 1] int64
  paddle_losses.txt                             the loss Paddle's own
                                                Executor computed at each of
                                                the 6 steps of 16 rows (one
                                                place), for bench/python/
Run: python3 -m venv v && v/bin/pip install paddlepaddle==2.6.2 &&
     v/bin/python make_fixture.py
Never needed by CI: the outputs are committed.
"""
import os

import numpy as np
import paddle

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS, FEATURES, CLASSES, BATCH = 96, 16, 4, 16


def build():
    """The programs, the test program and the loss variable."""
    main_prog = paddle.static.Program()
    startup = paddle.static.Program()
    main_prog.random_seed = 11
    startup.random_seed = 11
    with paddle.static.program_guard(main_prog, startup):
        x = paddle.static.data("x", [None, FEATURES], "float32")
        label = paddle.static.data("label", [None, 1], "int64")
        hidden = paddle.static.nn.fc(x, 32, activation="relu")
        logits = paddle.static.nn.fc(hidden, CLASSES)
        loss = paddle.mean(
            paddle.nn.functional.softmax_with_cross_entropy(logits, label))
        test_prog = main_prog.clone(for_test=True)
        paddle.optimizer.Momentum(learning_rate=0.05,
                                  momentum=0.9).minimize(loss)
    return main_prog, startup, test_prog, loss


def main():
    paddle.enable_static()
    main_prog, startup, test_prog, loss = build()
    for name, prog in (("main", main_prog), ("startup", startup),
                       ("test", test_prog)):
        with open(os.path.join(HERE, name + ".pdmodel"), "wb") as f:
            f.write(prog.desc.serialize_to_string())
    rng = np.random.RandomState(30)
    centers = rng.normal(0, 1, size=(CLASSES, FEATURES))
    label = rng.randint(0, CLASSES, size=(ROWS, 1)).astype(np.int64)
    x = (centers[label[:, 0]] +
         rng.normal(0, 0.8, size=(ROWS, FEATURES))).astype(np.float32)
    np.savez(os.path.join(HERE, "data.npz"), x=x, label=label)

    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    losses = []
    for step in range(ROWS // BATCH):
        rows = slice(step * BATCH, (step + 1) * BATCH)
        (value,) = exe.run(main_prog, feed={"x": x[rows], "label": label[rows]},
                           fetch_list=[loss])
        losses.append(float(np.asarray(value).reshape(-1)[0]))
    with open(os.path.join(HERE, "paddle_losses.txt"), "w") as f:
        for value in losses:
            f.write("%.9g\n" % value)
    print("loss:", loss.name)
    print("ops:", [op.type for op in main_prog.global_block().ops])
    print("losses:", losses)


if __name__ == "__main__":
    main()
