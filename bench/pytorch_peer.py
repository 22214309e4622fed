#!/usr/bin/env python3
"""parex against PyTorch eager on CPU (issue 13), run by hand.

The same models as parex's examples (graph/builder/examples.h), the same batch,
the same number of threads, random data, Adam 1e-3, one training step =
forward, backward, optimizer update:
  fashion_mlp  784 -> 256 relu -> 128 relu -> 10, softmax cross-entropy
  fashion_cnn  conv 5x5 (20, no bias), batch_norm, relu, max pool 2x2 s2;
               conv 5x5 (50, no bias), batch_norm, relu, max pool 2x2 s2;
               fc 800 -> 10, softmax cross-entropy
parex's step is timed by `training_bench --step-time` (a ParallelExecutor on
`places` CPU places with one scheduler worker per place); PyTorch's here with
torch.set_num_threads(threads). The two take turns for `--rounds` rounds so
drift in machine load spreads over both; medians of the per-round mean step
times are printed with the ratio parex / PyTorch (target <= 1.0).

  pip install torch            # PyPI's wheel; its CPU path is what runs
  python3 bench/pytorch_peer.py [--build build] [--rounds 5] [--steps 20]

PyTorch is never a dependency of parex's build or tests.
"""
import argparse
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5, bias=False), nn.BatchNorm2d(20), nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5, bias=False), nn.BatchNorm2d(50), nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(800, 10))


def torch_step_ms(model_name, batch, threads, steps):
    torch.set_num_threads(threads)
    torch.manual_seed(7)
    model = mlp() if model_name == "fashion_mlp" else cnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    # Warm-up as training_bench's: 3 steps and at least 0.3 s.
    warm = time.perf_counter()
    done = 0
    while done < 3 or time.perf_counter() - warm < 0.3:
        step()
        done += 1
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps * 1e3


def parex_step_ms(build, model_name, batch, places, steps):
    out = subprocess.run(
        [f"{build}/bench/training_bench", "--step-time", "--model", model_name,
         "--batch", str(batch), "--places", str(places), "--steps", str(steps)],
        check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("step_ms "):
            return float(line.split()[1])
    raise RuntimeError("training_bench printed no step_ms line:\n" + out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--pause", type=float, default=1.0,
                    help="seconds of quiet before each turn")
    args = ap.parse_args()
    configs = [("fashion_mlp", 64, 1), ("fashion_mlp", 256, 1),
               ("fashion_cnn", 32, 1), ("fashion_cnn", 256, 1),
               ("fashion_mlp", 256, 2), ("fashion_cnn", 256, 2)]
    print(f"PyTorch {torch.__version__}, parex {args.build}; "
          f"{args.rounds} rounds of {args.steps} steps, medians")
    print("| model | batch | threads (parex places) | parex ms/step | "
          "PyTorch ms/step | parex / PyTorch |")
    print("|---|---|---|---|---|---|")
    for model_name, batch, threads in configs:
        ours, theirs = [], []
        for _ in range(args.rounds):
            # A pause before each turn: PyTorch's OpenMP workers spin for a
            # while after its last step, which would take a core from
            # parex's first milliseconds (measured: the 2-thread MLP at
            # batch 256 timed 3.9 ms a step for parex right after PyTorch's
            # turn, 1.9 ms alone).
            time.sleep(args.pause)
            ours.append(parex_step_ms(args.build, model_name, batch, threads,
                                      args.steps))
            time.sleep(args.pause)
            theirs.append(torch_step_ms(model_name, batch, threads,
                                        args.steps))
        p, t = statistics.median(ours), statistics.median(theirs)
        print(f"| {model_name} | {batch} | {threads} | {p:.2f} | {t:.2f} | "
              f"{p / t:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
