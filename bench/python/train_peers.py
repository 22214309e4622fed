#!/usr/bin/env python3
"""Issue 34's training row, run by hand: ResNet-18 (paddle.vision.models,
10 classes, 3x64x64 images) trained with Adam and cross entropy, as a
PaddlePaddle 2.6.2 static program run by `parex train --program`, against
the same network in PyTorch eager (written here as torchvision's, which
PyPI's torch wheel does not bring), on the same threads, in one run.

For each batch and thread count: steps `--warm` + `--steps` on random
images; parex's step time is the median gap between its --metrics lines'
wall_s after the warm-up, PyTorch's the median of its timed steps. Also
printed: parex's first three losses against Paddle's own executor on the
same program, batches and initial parameters (relative difference; several
places with --sync-batch-norm, so that they train as Paddle's one place),
and Paddle's own floor: its three losses from weights one unit in the last
place away, against its losses from the weights themselves (what any
program that adds in another order can expect to meet).
PyTorch starts from its own initial weights: its column is a time only.

Never a CI dependency. Run:
    python3 -m venv v && v/bin/pip install paddlepaddle==2.6.2 torch 'numpy<2'
    v/bin/python bench/python/train_peers.py --parex build/apps/parex \
        [--batches 32,128] [--threads 1,2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

LR = 1e-3


def make_program(folder, batch, steps, rng):
    import paddle
    import paddle.nn.functional as F
    from paddle.vision.models import resnet18
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 34
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3, 64, 64], "float32")
        label = paddle.static.data("label", [None, 1], "int64")
        loss = F.cross_entropy(resnet18(num_classes=10)(x), label)
        paddle.optimizer.Adam(LR).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    persistables = [v for v in main.list_vars()
                    if v.persistable and v.name not in ("feed", "fetch")]
    xs = rng.uniform(-1, 1, (batch * steps, 3, 64, 64)).astype("float32")
    labels = rng.randint(0, 10, (batch * steps, 1)).astype("int64")
    os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    np.save(os.path.join(folder, "data", "x.npy"), xs)
    np.save(os.path.join(folder, "data", "label.npy"), labels)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        with open(os.path.join(folder, "main.pdmodel"), "wb") as f:
            f.write(main.desc.serialize_to_string())
        paddle.static.save_vars(exe, os.path.join(folder, "params"), main,
                                vars=persistables)
        start = {v.name: np.array(scope.find_var(v.name).get_tensor())
                 for v in persistables}

        def three_losses():
            out = []
            for s in range(3):
                rows = slice(s * batch, (s + 1) * batch)
                (l,) = exe.run(main,
                               feed={"x": xs[rows], "label": labels[rows]},
                               fetch_list=[loss])
                out.append(float(np.asarray(l).reshape(-1)[0]))
            return out

        losses = three_losses()
        # Paddle's own floor: the same steps from weights one unit in the
        # last place away (every fp32 weight up or down at random; Adam's
        # moments, powers and rate as they were).
        moved = np.random.RandomState(7)
        for name, a in start.items():
            if a.dtype == np.float32 and a.size > 1 and "moment" not in name \
                    and "pow_acc" not in name and "learning_rate" not in name:
                a = (a * (1 + moved.choice([-1, 1], a.shape) * 2.0 ** -23))
            scope.find_var(name).get_tensor().set(a.astype(start[name].dtype),
                                                  paddle.CPUPlace())
        floor = three_losses()
    paddle.disable_static()
    return xs, labels, losses, floor


def run_parex(parex, folder, batch, threads, total):
    metrics = os.path.join(folder, "m.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    r = subprocess.run([parex, "train", "--program",
                        os.path.join(folder, "main.pdmodel"), "--params",
                        os.path.join(folder, "params"), "--data",
                        os.path.join(folder, "data"), "--batch", str(batch),
                        "--no-shuffle", "--places", "cpu:%d" % threads,
                        "--steps", str(total), "--metrics", metrics,
                        "--no-progress"] +
                       (["--sync-batch-norm"] if threads > 1 else []),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, (r.stderr.strip().splitlines() or ["?"])[-1]
    lines = [json.loads(l) for l in open(metrics) if l.strip()]
    lines = [j for j in lines if "loss" in j and "eval" not in j]
    return lines, [j["loss"] for j in lines[:3]], None


# PyTorch's ResNet-18 (torchvision's layout: 7x7 stem, max pool, four
# stages of two basic blocks, global average pool, fc).
TORCH_NET = r"""
import torch, torch.nn as nn
class Block(nn.Module):
    def __init__(s, cin, cout, stride):
        super().__init__()
        s.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); s.b1 = nn.BatchNorm2d(cout)
        s.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); s.b2 = nn.BatchNorm2d(cout)
        s.down = None
        if stride != 1 or cin != cout:
            s.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(s, x):
        y = torch.relu(s.b1(s.c1(x)))
        y = s.b2(s.c2(y))
        return torch.relu(y + (x if s.down is None else s.down(x)))
class ResNet18(nn.Module):
    def __init__(s, classes=10):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                               nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]; cin = cout
        s.layers = nn.Sequential(*layers)
        s.fc = nn.Linear(512, classes)
    def forward(s, x):
        x = s.layers(s.stem(x))
        return s.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))
"""

TORCH_RUN = TORCH_NET + r"""
import json, statistics, sys, time
import numpy as np
folder, batch, threads, warm, steps = sys.argv[1], *map(int, sys.argv[2:6])
torch.set_num_threads(threads)
torch.manual_seed(34)
xs = torch.from_numpy(np.load(folder + "/data/x.npy"))
ys = torch.from_numpy(np.load(folder + "/data/label.npy")).reshape(-1)
net = ResNet18()
opt = torch.optim.Adam(net.parameters(), lr=%r)
loss_fn = nn.CrossEntropyLoss()
times = []
for s in range(warm + steps):
    rows = slice(s * batch, (s + 1) * batch)
    t = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(net(xs[rows]), ys[rows])
    loss.backward()
    opt.step()
    if s >= warm:
        times.append(time.perf_counter() - t)
print(json.dumps({"ms": statistics.median(times) * 1e3, "torch": torch.__version__}))
""" % LR


def run_torch(folder, batch, threads, warm, steps):
    r = subprocess.run([sys.executable, "-c", TORCH_RUN, folder, str(batch),
                        str(threads), str(warm), str(steps)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--parex", required=True)
    ap.add_argument("--batches", default="32,128")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="train_peers_")
    total = args.warm + args.steps
    print("| batch | threads | parex ms/step | PyTorch eager ms/step | parex / "
          "PyTorch | losses 1-3 vs Paddle's (relative) | Paddle's from weights "
          "one ulp away |")
    print("|---|---|---|---|---|---|---|")
    for batch in [int(b) for b in args.batches.split(",")]:
        folder = os.path.join(work, "b%d" % batch)
        os.makedirs(folder)
        _, _, paddle_losses, floor = make_program(
            folder, batch, total, np.random.RandomState(batch))
        moved = " / ".join("%.1e" % (abs(a - b) / abs(b))
                           for a, b in zip(floor, paddle_losses))
        for threads in [int(t) for t in args.threads.split(",")]:
            lines, losses, err = run_parex(args.parex, folder, batch, threads,
                                           total)
            if lines is None:
                print("| %d | %d | failed: %s | | | | %s |" %
                      (batch, threads, err, moved))
                continue
            walls = [j["wall_s"] for j in lines]
            gaps = [(b - a) * 1e3 for a, b in zip(walls, walls[1:])]
            mine = statistics.median(gaps[args.warm:])
            theirs, terr = run_torch(folder, batch, threads, args.warm,
                                     args.steps)
            diffs = [abs(a - b) / abs(b) for a, b in zip(losses, paddle_losses)]
            diff = " / ".join("%.1e" % d for d in diffs)
            if theirs is None:
                print("| %d | %d | %.1f | failed: %s | | %s | %s |" %
                      (batch, threads, mine, terr, diff, moved))
                continue
            print("| %d | %d | %.1f | %.1f | %.2f | %s | %s |" %
                  (batch, threads, mine, theirs["ms"], mine / theirs["ms"],
                   diff, moved), flush=True)


if __name__ == "__main__":
    main()
