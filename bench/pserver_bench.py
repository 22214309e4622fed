#!/usr/bin/env python3
"""Parameter-server training against collective mode (issue 32, acceptance 5).

Runs `parex launch` on 127.0.0.1 in one go, same model, batch, steps and
trainer places (2 trainers of cpu:1): collective mode (Gloo ring all-reduce),
then 1 and 2 pservers of cpu:1 (sync mode). Prints each run's samples/s, the
ratio to collective mode, and the bytes a trainer moves per step: measured
for pserver mode (the trainer's "pserver traffic" line: gradients sent plus
parameters received), and for the ring the formula of a ring all-reduce,
sent + received = 4 (N-1)/N x the gradient bytes, with those bytes taken as
half the pserver traffic (what a trainer sends: one copy of every gradient).
Nothing is asserted; run it by hand on a quiet machine:

    python3 bench/pserver_bench.py [--parex build/apps/parex] [--steps 200]
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def topology(folder, trainers, pservers):
    path = os.path.join(folder, "t%d_p%d.pbtxt" % (trainers, pservers))
    lines = ['cluster: "bench"', 'secret_file: "cluster.secret"']
    for t in range(trainers):
        lines.append('node { name: "t%d" host: "127.0.0.1" port: %d '
                     'places: "cpu:1" }' % (t, free_port()))
    for p in range(pservers):
        lines.append('node { name: "ps%d" host: "127.0.0.1" port: %d '
                     'places: "cpu:1" role: PSERVER }' % (p, free_port()))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def run(parex, folder, model, steps, trainers, pservers):
    cmd = [parex, "launch", "--topology", topology(folder, trainers, pservers),
           "--model", model, "--steps", str(steps), "--batch", "64",
           "--no-progress"]
    out = subprocess.run(cmd, cwd=folder, capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    rate = float(re.search(r"\[t0\] throughput\s+(\d+)", out.stdout).group(1))
    traffic = re.search(r"\[t0\] pserver traffic .*: ([\d.]+) KB a step",
                        out.stdout)
    return rate, float(traffic.group(1)) if traffic else None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--parex",
                    default=os.path.join(here, "..", "build", "apps", "parex"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--models", default="fashion_mlp,fashion_cnn")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        secret = os.path.join(folder, "cluster.secret")
        with open(secret, "w") as f:
            f.write("a-bench-secret-of-more-than-16-bytes")
        os.chmod(secret, 0o600)
        print("model        mode                samples/s  ratio  KB/step/trainer")
        for model in args.models.split(","):
            base, _ = run(args.parex, folder, model, args.steps, 2, 0)
            rows = []
            for pservers in (1, 2):
                rate, kb = run(args.parex, folder, model, args.steps, 2,
                               pservers)
                rows.append(("pserver x%d (sync)" % pservers, rate, kb))
            ring_kb = 4 * (2 - 1) / 2 * rows[0][2] / 2
            print("%-12s %-18s %10.0f  %5.2f  %8.1f (ring formula)" %
                  (model, "collective (ring)", base, 1.0, ring_kb))
            for mode, rate, kb in rows:
                print("%-12s %-18s %10.0f  %5.2f  %8.1f (measured)" %
                      (model, mode, rate, rate / base, kb))


if __name__ == "__main__":
    main()
