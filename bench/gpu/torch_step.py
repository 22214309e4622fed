#!/usr/bin/env python3
"""PyTorch's training step on one GPU, the peer of parex's CUDA places
(issue 29); scripts/device_check runs it on the lent GPU machine.

The same models as parex's examples (graph/builder/examples.cc), Adam 1e-3,
random data held on the device, one step = forward, backward, optimizer:
  fashion_mlp  784 -> 256 relu -> 128 relu -> 10, mean softmax cross-entropy
  fashion_cnn  conv 5x5 (20, no bias, no padding), batch_norm (eps 1e-5,
               Paddle's momentum 0.9 = PyTorch's 0.1), relu, max pool 2x2 s2;
               the same with 50 filters; fc 800 -> 10, cross-entropy
(parex's programs also compute softmax and accuracy beside the loss; those
are forward-only and small, and left out here as in bench/pytorch_peer.py.)

Two columns per model and batch, ms/step, each the median of --windows
timed windows of --steps steps after a warm-up:
  eager  the step as PyTorch runs it by default (torch.optim.Adam, foreach);
  graph  the whole step captured once as one CUDA graph (torch.cuda.graph,
         Adam(capturable=True)), then replayed: what a static executor can
         reach.

  python3 bench/gpu/torch_step.py [--json FILE]      # on a GPU
  python3 bench/gpu/torch_step.py --device cpu --smoke  # checks the script

--device cpu runs the eager step only (no CUDA graph on a CPU); --smoke runs
2 windows of 2 steps: it checks the script, it times nothing. PyTorch is never
a dependency of parex's build or tests.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def fashion_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def fashion_cnn():
    def conv_bn_pool(cin, cout):
        return [nn.Conv2d(cin, cout, 5, bias=False),
                nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1), nn.ReLU(),
                nn.MaxPool2d(2, 2)]
    return nn.Sequential(*conv_bn_pool(1, 20), *conv_bn_pool(20, 50),
                         nn.Flatten(), nn.Linear(800, 10))


MODELS = {"fashion_mlp": fashion_mlp, "fashion_cnn": fashion_cnn}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_windows(device, run_step, windows, steps):
    """ms/step of each window of `steps` calls of run_step."""
    out = []
    for _ in range(windows):
        sync(device)
        start = time.perf_counter()
        for _ in range(steps):
            run_step()
        sync(device)
        out.append((time.perf_counter() - start) / steps * 1e3)
    return out


def setup(name, batch, device, capturable):
    torch.manual_seed(7)
    model = MODELS[name]().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)
    x = torch.rand(batch, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    return model, opt, x, y


def eager_ms(name, batch, device, args):
    model, opt, x, y = setup(name, batch, device, capturable=False)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    return timed_windows(device, step, args.windows, args.steps)


def graph_ms(name, batch, device, args):
    """The whole step captured as one CUDA graph (PyTorch's 'whole network
    capture'): warm-up on a side stream, capture once, replay."""
    model, opt, x, y = setup(name, batch, device, capturable=True)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    for _ in range(args.warmup):
        graph.replay()
    windows = timed_windows(device, graph.replay, args.windows, args.steps)
    if not torch.isfinite(loss).item():
        raise RuntimeError(f"the captured step's loss is {loss.item()}")
    return windows


def versions(device):
    v = {"torch": torch.__version__, "device": str(device)}
    if device.type == "cuda":
        v["gpu"] = torch.cuda.get_device_name(device)
        v["cuda"] = torch.version.cuda
        v["cudnn"] = torch.backends.cudnn.version()
        try:
            v["nccl"] = ".".join(str(p) for p in torch.cuda.nccl.version())
        except Exception as e:  # a build without NCCL
            v["nccl"] = f"unknown ({e})"
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    ap.add_argument("--models", default="fashion_mlp,fashion_cnn")
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--windows", type=int, default=7)
    ap.add_argument("--steps", type=int, default=50, help="steps per window")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--only", choices=("eager", "graph"),
                    help="time one column only")
    ap.add_argument("--precision", choices=("default", "fp32"),
                    default="default",
                    help="fp32: no TF32 in cuDNN's convolutions or cuBLAS "
                    "(parex's CUDA kernels are plain fp32); default: "
                    "PyTorch's defaults (TF32 convolutions)")
    ap.add_argument("--smoke", action="store_true",
                    help="2 windows of 2 steps: checks, does not time")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    if args.smoke:
        args.windows, args.steps, args.warmup = 2, 2, 1
    device = torch.device(args.device)
    if args.precision == "fp32":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    if device.type == "cuda" and not torch.cuda.is_available():
        print("torch_step: no CUDA device visible to PyTorch", file=sys.stderr)
        return 1
    result = {"versions": versions(device), "rows": [],
              "precision": args.precision,
              "tf32": {"cudnn": torch.backends.cudnn.allow_tf32,
                       "matmul": torch.backends.cuda.matmul.allow_tf32},
              "windows": args.windows, "steps": args.steps}
    print(f"torch {result['versions']}")
    print(f"{'model':12} {'batch':>5} {'eager ms':>9} {'graph ms':>9}")
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            row = {"model": name, "batch": batch}
            if args.only != "graph":
                row["eager_windows"] = eager_ms(name, batch, device, args)
                row["eager_ms"] = statistics.median(row["eager_windows"])
            if device.type == "cuda" and args.only != "eager":
                try:
                    row["graph_windows"] = graph_ms(name, batch, device, args)
                    row["graph_ms"] = statistics.median(row["graph_windows"])
                except Exception as e:  # reported, the other rows still run
                    row["graph_error"] = f"{type(e).__name__}: {e}"
            graph = (f"{row['graph_ms']:9.3f}" if "graph_ms" in row else
                     f"{'-':>9}")
            eager = (f"{row['eager_ms']:9.3f}" if "eager_ms" in row else
                     f"{'-':>9}")
            print(f"{name:12} {batch:5d} {eager} {graph}",
                  flush=True)
            result["rows"].append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
