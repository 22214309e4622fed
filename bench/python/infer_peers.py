#!/usr/bin/env python3
"""Issue 34's inference table, run by hand: `parex infer --bench` against
ONNX Runtime and Paddle Inference on PaddlePaddle 2.6.2's vision models,
in one run on the same machine.

Each model is paddle.vision.models' constructor in eval mode, batch norms
given random running statistics, saved by paddle.jit.save (input
[None, 3, S, S]) and converted by paddle2onnx. For each batch and thread
count, each runtime runs the same random batch once to warm up, then N
timed runs in a process of its own; the table gives medians, the ratio
parex / peer (<= 1.0 is issue 34's target), peak RSS of each process, and
parex's largest difference from Paddle's output relative to the output's
largest magnitude. parex's threads are its places (cpu:T splits the batch;
a batch of fewer rows than places runs on one place per row, the idle
places' cores lent to oneDNN).

Never a CI dependency. Run:
    python3 -m venv v && v/bin/pip install paddlepaddle==2.6.2 \
        onnxruntime paddle2onnx==1.3.1 onnx 'numpy<2'
    v/bin/python bench/python/infer_peers.py --parex build/apps/parex \
        [--models resnet18,mobilenet_v1] [--batches 1,32,256] [--threads 1,2]
        [--runs N] [--rounds R]
At batch 1 use --runs 200 (with 20 a process's first runs weigh too much)
and --rounds 5: the VM's cross-core speed changes within minutes, and each
round times parex and its peers back to back.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

MODELS = ["resnet18", "resnet50", "mobilenet_v1", "mobilenet_v2",
          "shufflenet_v2_x1_0"]


def save_model(name, size, folder):
    import paddle
    import paddle.vision.models as models
    paddle.seed(34)
    net = getattr(models, name)()
    for layer in net.sublayers():
        if isinstance(layer, paddle.nn.BatchNorm2D):
            c = layer._mean.shape[0]
            layer._mean.set_value(np.random.RandomState(c).uniform(
                -0.5, 0.5, c).astype("float32"))
            layer._variance.set_value(np.random.RandomState(c + 1).uniform(
                0.5, 1.5, c).astype("float32"))
    net.eval()
    spec = [paddle.static.InputSpec([None, 3, size, size], "float32", "x")]
    prefix = os.path.join(folder, "model")
    paddle.jit.save(net, prefix, input_spec=spec)
    subprocess.run([sys.executable, "-m", "paddle2onnx.command",
                    "--model_dir", folder, "--model_filename", "model.pdmodel",
                    "--params_filename", "model.pdiparams", "--save_file",
                    os.path.join(folder, "model.onnx"), "--opset_version",
                    "13"], check=True, capture_output=True)
    return prefix


# Each peer runs in a child process (its own peak RSS): prints a JSON line.
PEER = r"""
import json, statistics, sys, time
import numpy as np
kind, prefix, xfile, threads, runs = sys.argv[1:6]
threads, runs = int(threads), int(runs)
x = np.load(xfile)
if kind == "ort":
    import onnxruntime as ort
    o = ort.SessionOptions()
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(prefix + ".onnx", o,
                             providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    run = lambda: s.run(None, {name: x})[0]
else:
    import paddle.inference as pi
    c = pi.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    c.disable_gpu()
    c.enable_mkldnn()
    c.set_cpu_math_library_num_threads(threads)
    c.disable_glog_info()
    p = pi.create_predictor(c)
    h = p.get_input_handle(p.get_input_names()[0])
    out = p.get_output_handle(p.get_output_names()[0])
    def run():
        h.reshape(x.shape)
        h.copy_from_cpu(x)
        p.run()
        return out.copy_to_cpu()
y = run()
times = []
for _ in range(runs):
    t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
np.save(xfile + "." + kind + ".npy", y)
# VmHWM starts afresh at exec; ru_maxrss would count the forking parent's.
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"median_ms": statistics.median(times) * 1e3,
                  "rss_mib": float(hwm.split()[1]) / 1024}))
"""


def run_peer(kind, prefix, xfile, threads, runs):
    r = subprocess.run([sys.executable, "-c", PEER, kind, prefix, xfile,
                        str(threads), str(runs)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:]
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def run_parex(parex, folder, xfile, threads, runs, batch):
    places = "cpu:%d" % threads  # fewer rows than places: idle ones lend cores
    out = os.path.join(folder, "parex_out")
    r = subprocess.run([parex, "infer", "--model", folder, "--input",
                        "x=" + xfile, "--output", out, "--places", places,
                        "--bench", str(runs)], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:]
    m = re.search(r"median ([0-9.]+) ms.*peak RSS ([0-9.]+) MiB", r.stdout +
                  r.stderr)
    if m is None:
        return None, ["no bench line: " + (r.stdout + r.stderr)[-200:]]
    ys = [f for f in os.listdir(out) if f.endswith(".npy")]
    y = np.load(os.path.join(out, ys[0]))
    return {"median_ms": float(m.group(1)), "rss_mib": float(m.group(2)),
            "y": y}, None


def TimeRounds(args, peers, prefix, folder, xfile, batch, threads):
    """parex and each peer `--rounds` times in turn, so that a spell of the
    VM's weather falls on both: per runtime its medians, RSS (or why it
    failed), parex's last output and Paddle's reference output."""
    t = {"parex": [], "rss": {}, "y": None, "ref": None, "err": None}
    t.update({k: [] for k in peers})
    for _ in range(args.rounds):
        mine, err = run_parex(args.parex, folder, xfile, threads, args.runs,
                              batch)
        t["parex"].append(mine["median_ms"] if mine else None)
        if mine is None:
            t["err"] = err
        else:
            t["rss"]["parex"] = "%.0f" % mine["rss_mib"]
            t["y"] = mine["y"]
        for kind in peers:
            theirs, perr = run_peer(kind, prefix, xfile, threads, args.runs)
            t[kind].append(theirs["median_ms"] if theirs else None)
            if theirs is None:
                t["rss"][kind] = "failed: %s" % perr
                continue
            t["rss"][kind] = "%.0f" % theirs["rss_mib"]
            if kind == "paddle":
                t["ref"] = np.load(xfile + ".paddle.npy")
    return t


def Row(t, peers, name, batch, threads):
    """The table row of TimeRounds' `t`: medians over the rounds, and the
    median of the rounds' ratios (each round's too when there are several)."""
    def timed(key):
        return [v for v in t[key] if v is not None]

    row = [name, str(batch), str(threads)]
    row.append("%.2f" % statistics.median(timed("parex")) if timed("parex")
               else "failed: %s" % t["err"])
    for kind in peers:
        if not timed(kind):
            row += [t["rss"].get(kind, "-"), "-"]
            continue
        row.append("%.2f" % statistics.median(timed(kind)))
        ratios = [a / b for a, b in zip(t["parex"], t[kind])
                  if a is not None and b is not None]
        cell = "%.2f" % statistics.median(ratios) if ratios else "-"
        if len(ratios) > 1:
            cell += " (" + " ".join("%.2f" % x for x in ratios) + ")"
        row.append(cell)
    row.append(" / ".join([t["rss"].get("parex", "-")] +
                          [t["rss"][k] if timed(k) else "-" for k in peers]))
    if t["y"] is not None and t["ref"] is not None:
        d = np.abs(t["y"] - t["ref"]).max() / max(np.abs(t["ref"]).max(),
                                                   1e-30)
        row.append("%.1e" % d)
    else:
        row.append("-")
    return "| " + " | ".join(row) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--parex", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="1,32,256")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--peers", default="ort,paddle")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    peers = args.peers.split(",")
    work = tempfile.mkdtemp(prefix="infer_peers_")
    print("| model | batch | threads | parex ms | " +
          " | ".join("%s ms | parex/%s" % (p, p) for p in peers) +
          " | RSS MiB parex / " + " / ".join(peers) + " | max diff |")
    print("|---" * (6 + 2 * len(peers)) + "|")
    for name in args.models.split(","):
        folder = os.path.join(work, name)
        os.makedirs(folder)
        prefix = save_model(name, args.size, folder)
        for batch in [int(b) for b in args.batches.split(",")]:
            x = np.random.RandomState(batch).uniform(
                -1, 1, (batch, 3, args.size, args.size)).astype("float32")
            xfile = os.path.join(folder, "x%d.npy" % batch)
            np.save(xfile, x)
            for threads in [int(t) for t in args.threads.split(",")]:
                t = TimeRounds(args, peers, prefix, folder, xfile, batch,
                               threads)
                print(Row(t, peers, name, batch, threads), flush=True)


if __name__ == "__main__":
    main()
