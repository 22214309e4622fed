#!/usr/bin/env python3
"""Parameter-server training against collective mode (issue 32, acceptance 5).

Runs `parex launch` on 127.0.0.1 in one go, same model, batch, steps and
trainer places (2 trainers of cpu:1): collective mode (Gloo ring all-reduce),
then 1 and 2 pservers of cpu:1 (sync mode). Models: the Fashion MLP and CNN,
and word2vec (bench/programs/word2vec, made by make_word2vec.py: a 1M-row,
16-wide embedding with is_sparse, on 64 words spread over the table, data
drawn here). Prints each run's samples/s, the ratio to collective mode, and
the bytes a trainer moves per step: measured for pserver mode (the trainer's
"pserver traffic" line: gradients or rows sent plus parameters or rows
received), and for the ring the formula of a ring all-reduce, sent +
received = 4 (N-1)/N x the dense gradient bytes (collective mode sums a
sparse gradient as a dense one across nodes). Nothing is asserted; run it by
hand on a quiet machine:

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


WORD2VEC = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "programs", "word2vec")
# Its parameters' bytes: the table, then fc 64x32 + 32 and 32x10 + 10.
WORD2VEC_BYTES = 4 * (1000000 * 16 + 64 * 32 + 32 + 32 * 10 + 10)


def write_word2vec_data(folder):
    import numpy as np
    rng = np.random.default_rng(1)
    ids = (rng.integers(0, 64, size=(4096, 4, 1)) * (1000000 // 64) + 7)
    np.save(os.path.join(folder, "ids.npy"), ids.astype(np.int64))
    np.save(os.path.join(folder, "label.npy"),
            ((ids[:, 0, 0] // 7) % 10).reshape(-1, 1).astype(np.int64))


def job(model):
    if model != "word2vec":
        return ["--model", model]
    return ["--program", os.path.join(WORD2VEC, "main.pdmodel"), "--startup",
            os.path.join(WORD2VEC, "startup.pdmodel"), "--data", "ids=ids.npy",
            "--data", "label=label.npy"]


def run(parex, folder, model, steps, trainers, pservers):
    cmd = [parex, "launch", "--topology", topology(folder, trainers, pservers),
           "--steps", str(steps), "--batch", "64", "--no-progress"] + job(model)
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
    ap.add_argument("--models", default="fashion_mlp,fashion_cnn,word2vec")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        secret = os.path.join(folder, "cluster.secret")
        with open(secret, "w") as f:
            f.write("a-bench-secret-of-more-than-16-bytes")
        os.chmod(secret, 0o600)
        if "word2vec" in args.models:
            write_word2vec_data(folder)
        print("model        mode                samples/s  ratio  KB/step/trainer")
        for model in args.models.split(","):
            base, _ = run(args.parex, folder, model, args.steps, 2, 0)
            rows = []
            for pservers in (1, 2):
                rate, kb = run(args.parex, folder, model, args.steps, 2,
                               pservers)
                rows.append(("pserver x%d (sync)" % pservers, rate, kb))
            dense = WORD2VEC_BYTES / 1e3 if model == "word2vec" else rows[0][2] / 2
            ring_kb = 4 * (2 - 1) / 2 * dense
            print("%-12s %-18s %10.0f  %5.2f  %8.1f (ring formula)" %
                  (model, "collective (ring)", base, 1.0, ring_kb))
            for mode, rate, kb in rows:
                print("%-12s %-18s %10.0f  %5.2f  %8.1f (measured)" %
                      (model, mode, rate, rate / base, kb))


if __name__ == "__main__":
    main()
