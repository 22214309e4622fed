#!/usr/bin/env python3
"""The user guide's training loop on PaddlePaddle 2.6.2 and on parex, side by
side (issue 30, acceptance 2). Run by hand, never by CI:

    python3 -m venv v && v/bin/pip install paddlepaddle==2.6.2
    PYTHONPATH=build/python v/bin/python bench/python/guide_vs_paddle.py

(parex's module is built for Debian's python3 3.11; a venv of another 3.11
imports it too.) Paddle builds the guide's program (tests/python/guide/
make_fixture.py's build()); both executors start from the parameters Paddle's
startup program made; the script runs the same batches on both and prints
each step's loss, the largest relative difference (target <= 1e-5) and the
median step time of each, with parex's as a ratio of Paddle's.

PaddlePaddle 2.6 has no multi-place ParallelExecutor any more (Fluid's was
removed in 2.5; CompiledProgram runs one place), so the loss comparison is
at one place each (CPU_NUM=1), and parex's 2-place time is printed beside
it.
"""
import os
import statistics
import sys
import time

import numpy as np
import paddle

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python", "guide"))
from make_fixture import BATCH, build  # noqa: E402

STEPS = int(os.environ.get("STEPS", "200"))
WARMUP = 10


def batches(x, label):
    for step in range(STEPS):
        start = (step * BATCH) % (len(x) - BATCH + 1)
        yield {"x": x[start:start + BATCH], "label": label[start:start + BATCH]}


def time_loop(run, x, label):
    losses, times = [], []
    for feed in batches(x, label):
        t0 = time.perf_counter()
        losses.append(run(feed))
        times.append(time.perf_counter() - t0)
    return losses, statistics.median(times[WARMUP:]) * 1e3


def main():
    paddle.enable_static()
    main_prog, startup, _, loss = build()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    names = [v.name for v in main_prog.list_vars()
             if v.persistable and v.name not in ("feed", "fetch")]
    start = {n: np.array(paddle.static.global_scope().find_var(n).get_tensor())
             for n in names}
    rng = np.random.RandomState(3)
    x = rng.normal(size=(4096, 16)).astype(np.float32)
    label = rng.randint(0, 4, size=(4096, 1)).astype(np.int64)

    compiled = paddle.static.CompiledProgram(main_prog)
    paddle_losses, paddle_ms = time_loop(
        lambda feed: float(np.asarray(
            exe.run(compiled, feed=feed, fetch_list=[loss])[0]).reshape(-1)[0]),
        x, label)

    import parex
    results = {}
    for places in (1, 2):
        os.environ["CPU_NUM"] = str(places)
        scope = parex.Scope()
        for n, value in start.items():
            scope.var(n).get_tensor().set(value)
        pe = parex.ParallelExecutor(False, loss_name=loss.name,
                                    main_program=main_prog, scope=scope)
        results[places] = time_loop(
            lambda feed: float(np.mean(pe.run([loss.name], feed=feed)[0])),
            x, label)
    parex_losses, parex_ms = results[1]
    worst = max(abs(a - b) / max(abs(a), abs(b), 1e-12)
                for a, b in zip(paddle_losses, parex_losses))
    print("steps %d, batch %d" % (STEPS, BATCH))
    for step in (0, 1, 2, STEPS // 2, STEPS - 1):
        print("step %4d  paddle %.9g  parex %.9g"
              % (step, paddle_losses[step], parex_losses[step]))
    print("largest relative loss difference %.3g (target <= 1e-5): %s"
          % (worst, "ok" if worst <= 1e-5 else "FAIL"))
    print("median step  paddle 1 place %.3f ms | parex 1 place %.3f ms "
          "(ratio %.2f) | parex 2 places %.3f ms (ratio %.2f)"
          % (paddle_ms, parex_ms, parex_ms / paddle_ms, results[2][1],
             results[2][1] / paddle_ms))
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
