"""The user guide's training loop as two nodes of a cluster, from Python.

Two Python processes join a topology on 127.0.0.1 (parex.Cluster), each
with one CPU place, and run the guide's program with
ParallelExecutor(num_trainers=2, trainer_id=rank), each feeding its half of
every batch (Fluid's multi-trainer way). Their losses must equal, bit for
bit, those of one process with two places fed the whole batches: node a's
those of place 0, node b's those of place 1. A node named wrongly, and
num_trainers that do not match the cluster, raise parex.Error.

Run by ctest with PYTHONPATH=<build>/python.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

import numpy as np

os.environ["CPU_NUM"] = "2"
import parex  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "guide")
LOSS = "mean_0.tmp_0"
BATCH = 16

NODE_SCRIPT = r"""
import json, os, sys
import numpy as np
import parex as fluid
topology, node, fixture = sys.argv[1:4]
with fluid.Cluster(topology, node) as cluster:
    fluid.Executor().run(os.path.join(fixture, "startup.pdmodel"))
    train_exe = fluid.ParallelExecutor(
        use_cuda=False, loss_name="mean_0.tmp_0",
        main_program=os.path.join(fixture, "main.pdmodel"),
        num_trainers=cluster.size, trainer_id=cluster.rank)
    data = np.load(os.path.join(fixture, "data.npz"))
    half = 16 // cluster.size
    losses = []
    for start in range(0, len(data["x"]), 16):
        rows = slice(start + cluster.rank * half, start + (cluster.rank + 1) * half)
        loss, = train_exe.run([ "mean_0.tmp_0"],
                              feed={"x": data["x"][rows], "label": data["label"][rows]})
        losses.append([float(v) for v in loss])
    result = json.dumps({"node": cluster.node, "rank": cluster.rank,
                         "places": [str(p) for p in cluster.places],
                         "losses": losses})
    if len(sys.argv) > 4:
        # mpirun forwards the ranks' stdout in chunks that may interleave
        # within a line, so under it each rank writes a file of its own.
        with open(os.path.join(sys.argv[4], "%d.json" % cluster.rank), "w") as f:
            f.write(result)
    else:
        print(result, flush=True)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_topology(directory, extra=""):
    secret = os.path.join(directory, "cluster.secret")
    with open(secret, "w") as f:
        f.write("a-python-test-secret-of-more-than-16-bytes")
    os.chmod(secret, 0o600)
    path = os.path.join(directory, "cluster.pbtxt")
    with open(path, "w") as f:
        f.write('cluster: "python"\nsecret_file: "cluster.secret"\n'
                "connect_timeout_ms: 30000\ncollective_timeout_ms: 60000\n" +
                extra)
        for name in ("a", "b"):
            f.write('node { name: "%s" host: "127.0.0.1" port: %d '
                    'places: "cpu:1" }\n' % (name, free_port()))
    return path


def one_process_losses():
    with parex.scope_guard(parex.Scope()):
        parex.Executor().run(os.path.join(FIXTURE, "startup.pdmodel"))
        pe = parex.ParallelExecutor(
            False, loss_name=LOSS,
            main_program=os.path.join(FIXTURE, "main.pdmodel"))
        with np.load(os.path.join(FIXTURE, "data.npz")) as d:
            x, label = d["x"], d["label"]
        return [pe.run([LOSS], feed={"x": x[s:s + BATCH],
                                     "label": label[s:s + BATCH]})[0]
                for s in range(0, len(x), BATCH)]


class ClusterFromPythonTest(unittest.TestCase):

    def test_two_nodes_train_as_one_process_with_two_places(self):
        expected = one_process_losses()
        with tempfile.TemporaryDirectory() as directory:
            topology = write_topology(directory)
            procs = [subprocess.Popen(
                [sys.executable, "-c", NODE_SCRIPT, topology, node, FIXTURE],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for node in ("a", "b")]
            outputs = []
            try:
                for proc in procs:
                    out, err = proc.communicate(timeout=120)
                    self.assertEqual(proc.returncode, 0, err)
                    outputs.append(json.loads(out.strip().splitlines()[-1]))
            finally:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
        for rank, result in enumerate(outputs):
            self.assertEqual(result["rank"], rank)
            self.assertEqual(result["places"], ["cpu:0"])
            self.assertEqual(len(result["losses"]), len(expected))
            for step, (mine, theirs) in enumerate(zip(result["losses"],
                                                      expected)):
                self.assertEqual(len(mine), 1)
                # float32 values carried as Python floats: exact.
                self.assertEqual(np.float32(mine[0]), theirs[rank],
                                 "node %s step %d" % (result["node"], step))

    def test_nodes_started_by_mpirun_train_as_one_process(self):
        # A topology of collective MPI: mpirun starts the two scripts, each
        # the node of its rank (no node given), the sums through OpenMPI.
        expected = one_process_losses()
        mpirun = shutil.which("mpirun")
        self.assertIsNotNone(mpirun, "mpirun (openmpi-bin) is not installed")
        with tempfile.TemporaryDirectory() as directory:
            topology = write_topology(directory, "collective: MPI\n")
            run = subprocess.run(
                [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca",
                 "btl_vader_single_copy_mechanism", "none", "-np", "2",
                 sys.executable, "-c", NODE_SCRIPT, topology, "", FIXTURE,
                 directory],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            outputs = []
            for rank in range(2):
                with open(os.path.join(directory, "%d.json" % rank)) as f:
                    outputs.append(json.load(f))
        self.assertEqual([o["node"] for o in outputs], ["a", "b"])
        for rank, result in enumerate(outputs):
            self.assertEqual(result["rank"], rank)
            self.assertEqual(len(result["losses"]), len(expected))
            for step, (mine, theirs) in enumerate(zip(result["losses"],
                                                      expected)):
                self.assertEqual(np.float32(mine[0]), theirs[rank],
                                 "rank %d step %d" % (rank, step))

    def test_wrong_node_and_trainer_numbers_are_refused(self):
        with tempfile.TemporaryDirectory() as directory:
            topology = write_topology(directory)
            with self.assertRaises(parex.Error) as ctx:
                parex.Cluster(topology, "z")
            self.assertIn("no node 'z'", str(ctx.exception))
        with self.assertRaises(parex.Error) as ctx:
            parex.ParallelExecutor(
                False, loss_name=LOSS, num_trainers=2, trainer_id=1,
                main_program=os.path.join(FIXTURE, "main.pdmodel"))
        self.assertIn("join the cluster first", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
