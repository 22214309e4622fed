"""The ParallelExecutor user guide's example on parex's Python module.

The guide's script (../shared/seeds/001_*: Executor runs the startup
program, train_exe and test_exe share variables, CPU_NUM places) runs with
`import parex as fluid` on programs PaddlePaddle 2.6.2 built
(guide/make_fixture.py; PaddlePaddle is not needed here), in AllReduce and
Reduce mode, and its losses equal those of `parex train --program` on the
same programs and rows, step by step. Bad calls raise parex.Error (or
TypeError for a wrong Python type) and leave the executor usable; Ctrl-C
in a training loop ends it with KeyboardInterrupt.

Run by ctest with PYTHONPATH=<build>/python and PAREX_BIN=<build>/apps/parex.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

os.environ["CPU_NUM"] = "2"  # before any executor: the guide's way
import parex as fluid  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "guide")
OTHER_PROGRAM = os.path.join(HERE, "..", "apps", "fixtures",
                             "paddle_mlp_momentum")
LOSS = "mean_0.tmp_0"
BATCH = 16


def data():
    with np.load(os.path.join(FIXTURE, "data.npz")) as d:
        return d["x"], d["label"]


def batches():
    x, label = data()
    for start in range(0, len(x), BATCH):
        yield {"x": x[start:start + BATCH], "label": label[start:start + BATCH]}


def run_guide(mode):
    """The guide's script; returns (train losses, test losses, params)."""
    train_program = os.path.join(FIXTURE, "main.pdmodel")
    test_program = os.path.join(FIXTURE, "test.pdmodel")
    with fluid.scope_guard(fluid.Scope()):
        place = fluid.CPUPlace()
        exe = fluid.Executor(place)
        exe.run(os.path.join(FIXTURE, "startup.pdmodel"))

        dev_count = 2
        exec_strategy = fluid.ExecutionStrategy()
        exec_strategy.num_threads = dev_count * 4
        exec_strategy.num_iteration_per_drop_scope = 100
        exec_strategy.use_experimental_executor = True  # Fluid's; accepted
        build_strategy = fluid.BuildStrategy()
        build_strategy.memory_optimize = False
        build_strategy.fuse_all_reduce_ops = True
        build_strategy.gradient_scale_strategy = \
            fluid.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
        build_strategy.reduce_strategy = mode

        train_exe = fluid.ParallelExecutor(use_cuda=False,
                                           main_program=train_program,
                                           build_strategy=build_strategy,
                                           exec_strategy=exec_strategy,
                                           loss_name=LOSS)
        test_exe = fluid.ParallelExecutor(use_cuda=False,
                                          main_program=test_program,
                                          build_strategy=build_strategy,
                                          exec_strategy=exec_strategy,
                                          share_vars_from=train_exe)
        assert train_exe.device_count == 2
        train, test = [], []
        for feed_dict in batches():
            train_loss, = train_exe.run(fetch_list=[LOSS], feed=feed_dict)
            test_loss, = test_exe.run(fetch_list=[LOSS], feed=feed_dict)
            train.append(train_loss)
            test.append(test_loss)
        scope = fluid.global_scope()
        params = {name: np.array(scope.find_var(name).get_tensor())
                  for name in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0")}
    return train, test, params


def cli_losses(mode, workdir):
    """Each step's loss as `parex train --program` reports it (--metrics)."""
    metrics = os.path.join(workdir, "metrics-%s.jsonl" % mode)
    cmd = [os.environ["PAREX_BIN"], "train", "--program", FIXTURE,
           "--data", os.path.join(FIXTURE, "data.npz"), "--batch", str(BATCH),
           "--epochs", "1", "--no-shuffle", "--places", "cpu:2", "--mode",
           mode, "--metrics", metrics, "--no-progress", "--save",
           os.path.join(workdir, "saved-%s" % mode)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise AssertionError("parex train failed:\n%s\n%s"
                             % (run.stdout, run.stderr))
    with open(metrics) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return [line["loss"] for line in lines if not line.get("eval")]


class GuideExampleTest(unittest.TestCase):

    def test_losses_equal_parex_train_in_both_modes(self):
        with tempfile.TemporaryDirectory() as workdir:
            for mode, cli_mode in ((fluid.BuildStrategy.ReduceStrategy.AllReduce,
                                    "allreduce"),
                                   (fluid.BuildStrategy.ReduceStrategy.Reduce,
                                    "reduce")):
                with self.subTest(mode=cli_mode):
                    train, test, params = run_guide(mode)
                    expected = cli_losses(cli_mode, workdir)
                    self.assertEqual(len(train), 6)
                    self.assertEqual(len(expected), len(train))
                    for step, (mine, theirs) in enumerate(zip(train, expected)):
                        # One loss per place, merged as Fluid merges them.
                        self.assertEqual(mine.shape, (2,))
                        self.assertEqual(mine.dtype, np.float32)
                        # --metrics prints the places' mean with %.9g.
                        mean = float(np.float64(mine[0]) + np.float64(mine[1])) / 2
                        self.assertEqual("%.9g" % mean, "%.9g" % theirs,
                                         "step %d" % step)
                    # Training lowered the loss; the test program read the
                    # trained parameters (no optimizer: it changes nothing).
                    self.assertLess(float(train[-1].mean()),
                                    float(train[0].mean()) * 0.5)
                    self.assertLess(float(test[-1].mean()),
                                    float(train[-2].mean()))
                    self.assertEqual(params["fc_0.w_0"].shape, (16, 32))
                    # The trained parameters are those parex train saved,
                    # bit for bit (a Paddle tensor file ends with the data).
                    for name, value in params.items():
                        with open(os.path.join(workdir, "saved-" + cli_mode,
                                               name), "rb") as f:
                            raw = f.read()
                        saved = np.frombuffer(raw[len(raw) - value.nbytes:],
                                              dtype=np.float32)
                        np.testing.assert_array_equal(
                            value.reshape(-1), saved, name)

    def test_both_modes_train_the_same_parameters(self):
        _, _, allreduce = run_guide(fluid.BuildStrategy.ReduceStrategy.AllReduce)
        _, _, reduce = run_guide(fluid.BuildStrategy.ReduceStrategy.Reduce)
        for name in allreduce:
            np.testing.assert_array_equal(allreduce[name], reduce[name], name)

    def test_per_place_feeds_equal_one_split_feed(self):
        def train(split):
            with fluid.scope_guard(fluid.Scope()):
                fluid.Executor(fluid.CPUPlace()).run(
                    os.path.join(FIXTURE, "startup.pdmodel"))
                pe = fluid.ParallelExecutor(
                    use_cuda=False, loss_name=LOSS,
                    main_program=os.path.join(FIXTURE, "main.pdmodel"))
                out = []
                for feed in batches():
                    if split:
                        feed = [{k: v[:8] for k, v in feed.items()},
                                {k: v[8:] for k, v in feed.items()}]
                    out.append(pe.run([LOSS], feed=feed)[0])
                return out
        for a, b in zip(train(False), train(True)):
            np.testing.assert_array_equal(a, b)

    def test_paddle_program_objects_and_bytes_are_taken(self):
        with open(os.path.join(FIXTURE, "main.pdmodel"), "rb") as f:
            data_bytes = f.read()

        class Desc:
            def serialize_to_string(self):
                return data_bytes

        class PaddleLikeProgram:  # what paddle.static.Program offers
            desc = Desc()

        a = fluid.Program.parse(data_bytes)
        self.assertEqual(a.op_types(),
                         fluid.Program.load(
                             os.path.join(FIXTURE, "main.pdmodel")).op_types())
        with fluid.scope_guard(fluid.Scope()):
            fluid.Executor().run(os.path.join(FIXTURE, "startup.pdmodel"))
            for program in (data_bytes, PaddleLikeProgram()):
                pe = fluid.ParallelExecutor(False, loss_name=LOSS,
                                            main_program=program)
                loss, = pe.run([LOSS], feed=next(batches()))
                self.assertEqual(loss.shape, (2,))


class BadCallsTest(unittest.TestCase):

    def setUp(self):
        self.scope = fluid.Scope()
        fluid.Executor().run(os.path.join(FIXTURE, "startup.pdmodel"),
                             scope=self.scope)
        self.pe = fluid.ParallelExecutor(
            use_cuda=False, loss_name=LOSS, scope=self.scope,
            main_program=os.path.join(FIXTURE, "main.pdmodel"))
        self.feed = next(batches())

    def assertRaisesNaming(self, exc, needle, fn, *args, **kwargs):
        with self.assertRaises(exc) as ctx:
            fn(*args, **kwargs)
        self.assertIn(needle, str(ctx.exception))
        return ctx.exception

    def test_bad_calls_raise_and_leave_the_executor_usable(self):
        self.assertRaisesNaming(fluid.Error, "no_such_var", self.pe.run,
                                ["no_such_var"], feed=self.feed)
        wide = dict(self.feed, x=np.zeros((BATCH, 15), np.float32))
        self.assertRaisesNaming(fluid.Error, "'x'", self.pe.run, [LOSS],
                                feed=wide)
        floats = dict(self.feed, label=self.feed["label"].astype(np.float32))
        self.assertRaisesNaming(fluid.Error, "label", self.pe.run, [LOSS],
                                feed=floats)
        self.assertRaisesNaming(fluid.Error, "x", self.pe.run, [LOSS],
                                feed={"label": self.feed["label"]})
        self.assertRaisesNaming(fluid.Error, "3 dicts for 2 places",
                                self.pe.run, [LOSS], feed=[self.feed] * 3)
        self.assertRaisesNaming(TypeError, "dict", self.pe.run, [LOSS],
                                feed=42)
        self.assertRaisesNaming(fluid.Error, "'x'", self.pe.run, [LOSS],
                                feed=dict(self.feed, x=np.array(["a"] * 16)))
        loss, = self.pe.run([LOSS], feed=self.feed)  # still usable
        self.assertTrue(np.all(np.isfinite(loss)))

    def test_what_is_not_a_program_is_refused(self):
        self.assertRaisesNaming(fluid.Error, "bytes", fluid.ParallelExecutor,
                                False, main_program=b"\x07not a program")
        self.assertRaisesNaming(fluid.Error, "no_such.pdmodel",
                                fluid.ParallelExecutor, False,
                                main_program="/nonexistent/no_such.pdmodel")
        self.assertRaisesNaming(TypeError, "paddle.static.Program",
                                fluid.ParallelExecutor, False,
                                main_program=object())
        self.assertRaisesNaming(fluid.Error, "no_loss",
                                fluid.ParallelExecutor, False,
                                loss_name="no_loss", scope=self.scope,
                                main_program=os.path.join(FIXTURE,
                                                          "main.pdmodel"))

    def test_share_vars_from_an_executor_of_another_program_is_refused(self):
        scope = fluid.Scope()
        fluid.Executor().run(os.path.join(OTHER_PROGRAM, "startup.pdmodel"),
                             scope=scope)
        other = fluid.ParallelExecutor(
            False, loss_name="mean_0.tmp_0", scope=scope,
            main_program=os.path.join(OTHER_PROGRAM, "main.pdmodel"))
        self.assertRaisesNaming(
            fluid.Error, "share_vars_from: persistable 'fc_0.",
            fluid.ParallelExecutor, False,
            main_program=os.path.join(FIXTURE, "test.pdmodel"),
            share_vars_from=other)
        self.assertRaisesNaming(TypeError, "share_vars_from",
                                fluid.ParallelExecutor, False,
                                main_program=os.path.join(FIXTURE,
                                                          "test.pdmodel"),
                                share_vars_from="train_exe")

    def test_scope_reads_back_as_numpy(self):
        self.pe.run([LOSS], feed=self.feed)
        with fluid.scope_guard(self.scope):
            w = fluid.global_scope().find_var("fc_0.w_0")
            self.assertIsNotNone(w)
            t = w.get_tensor()
            self.assertEqual(t.shape(), [16, 32])
            self.assertEqual(np.array(t).dtype, np.float32)
            self.assertIsNone(fluid.global_scope().find_var("nope"))


class ArraysTest(unittest.TestCase):
    """Arrays into tensors and back, for every dtype numpy and parex share,
    views that are not contiguous, 0-d and empty arrays (run by hand under
    numpy 2 too, whose dtype struct pybind11 2.10 misreads)."""

    def test_arrays_round_trip_through_a_scope(self):
        scope = fluid.Scope()
        t = scope.var("a").get_tensor()
        base = np.arange(24).reshape(2, 3, 4)
        for dtype in ("bool", "int8", "uint8", "int16", "int32", "int64",
                      "float16", "float32", "float64"):
            for value in (base.astype(dtype), base.astype(dtype)[:, 1:, ::2],
                          np.array(7).astype(dtype), np.zeros((0, 3), dtype)):
                with self.subTest(dtype=dtype, shape=value.shape):
                    t.set(value)
                    self.assertEqual(t.shape(), list(value.shape))
                    back = np.array(t)
                    self.assertEqual(back.dtype, value.dtype)
                    np.testing.assert_array_equal(back, value)
                    np.testing.assert_array_equal(t.numpy(), value)
        with self.assertRaises(fluid.Error) as ctx:
            t.set(np.array([1 + 2j]))
        self.assertIn("'a'", str(ctx.exception))


CTRL_C_SCRIPT = r"""
import os, sys, time
import numpy as np
os.environ["CPU_NUM"] = "2"
import parex as fluid
fixture = sys.argv[1]
fluid.Executor().run(os.path.join(fixture, "startup.pdmodel"))
pe = fluid.ParallelExecutor(False, loss_name="mean_0.tmp_0",
                            main_program=os.path.join(fixture, "main.pdmodel"))
rng = np.random.RandomState(0)
feed = {"x": rng.normal(size=(65536, 16)).astype(np.float32),
        "label": rng.randint(0, 4, size=(65536, 1)).astype(np.int64)}
print("training", flush=True)
try:
    while True:
        pe.run(["mean_0.tmp_0"], feed=feed)
except KeyboardInterrupt:
    print("stopped", flush=True)
    loss, = pe.run(["mean_0.tmp_0"], feed=feed)
    print("usable", bool(np.all(np.isfinite(loss))), flush=True)
"""


class CtrlCTest(unittest.TestCase):

    def test_ctrl_c_in_the_training_loop_raises_keyboard_interrupt(self):
        proc = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT, FIXTURE],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            self.assertEqual(proc.stdout.readline().strip(), "training")
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("stopped", out)
        self.assertIn("usable True", out)


if __name__ == "__main__":
    unittest.main()
