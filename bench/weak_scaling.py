#!/usr/bin/env python3
"""What a second node costs (issue 33, acceptance 2): weak scaling on 127.0.0.1.

Each round runs, on this machine and in this order:
  - two independent one-node `parex train` processes side by side, each on
    `cpu:P` with B rows a step, pinned to disjoint cores as `parex launch`
    pins its nodes: the no-communication limit;
  - `parex launch` with two nodes of `cpu:P` and a global batch of 2B (B rows
    a node), which all-reduces the gradients every step; with
    `--collective mpi`, the same two nodes in a topology of collective MPI,
    started by `mpirun -np 2` (each bound to its share of the cores).
A one-node process prints its own samples/s; each cluster node prints the
cluster's (the global batch's rows a second). The ratio is the cluster's
samples/s over the independent pair's sum. Prints every round and the
median. Nothing is asserted; run it by hand on a quiet machine:

    python3 bench/weak_scaling.py [--parex build/apps/parex] [--model fashion_cnn]
        [--places 1,2] [--batch 64] [--steps 200] [--rounds 5]
        [--collective gloo|mpi]
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def topology(folder, places, collective):
    path = os.path.join(folder, "two_nodes_cpu%d.pbtxt" % places)
    lines = ['cluster: "bench"', 'secret_file: "cluster.secret"']
    if collective == "mpi":
        lines.append("collective: MPI")
    for name in ("a", "b"):
        lines.append('node { name: "%s" host: "127.0.0.1" port: %d '
                     'places: "cpu:%d" }' % (name, free_port(), places))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def rates(text, prefix=""):
    found = re.findall(re.escape(prefix) + r"throughput\s+(\d+) samples/s",
                       text)
    return [float(r) for r in found]


def account(text, prefix=""):
    found = re.findall(re.escape(prefix) + r"step account\s+(.*)", text)
    return found[-1] if found else "(none)"


def independent(parex, folder, args, places):
    """Two one-node processes side by side: their samples/s, summed, and
    the first one's step account."""
    cores = os.cpu_count() or 1
    procs = []
    for k in range(2):
        cmd = [parex, "train", "--model", args.model, "--places",
               "cpu:%d" % places, "--batch", str(args.batch), "--steps",
               str(args.steps), "--no-progress", "--save", "alone%d" % k]
        if shutil.which("taskset") and cores >= 2:
            half = cores // 2
            cmd = ["taskset", "-c",
                   "%d-%d" % (k * half, k * half + half - 1)] + cmd
        procs.append(subprocess.Popen(cmd, cwd=folder, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    total = 0.0
    first = None
    for p in procs:
        out, _ = p.communicate(timeout=900)
        if p.returncode != 0:
            sys.exit("failed: %s\n%s" % (" ".join(p.args), out))
        total += rates(out)[-1]
        first = first or account(out)
    return total, first


def cluster(parex, folder, args, places):
    """Two nodes of one cluster: the cluster's samples/s and node a's step
    account."""
    path = topology(folder, places, args.collective)
    train = ["--model", args.model, "--batch", str(2 * args.batch), "--steps",
             str(args.steps), "--no-progress", "--save", "joined"]
    if args.collective == "mpi":
        cores = os.cpu_count() or 1
        cmd = [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
               "2", "--map-by", "ppr:2:node:pe=%d" % max(1, cores // 2),
               "--bind-to", "core", parex, "node", "--topology", path]
        prefix = ""  # mpirun passes the nodes' output on as it is
    else:
        cmd = [parex, "launch", "--topology", path]
        prefix = "[a] "
    cmd += train
    out = subprocess.run(cmd, cwd=folder, capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return rates(out.stdout, prefix)[-1], account(out.stdout, prefix)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--parex",
                    default=os.path.join(here, "..", "build", "apps", "parex"))
    ap.add_argument("--model", default="fashion_cnn")
    ap.add_argument("--places", default="1,2",
                    help="CPU places per node, one measurement each")
    ap.add_argument("--batch", type=int, default=64, help="rows a node")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--collective", choices=("gloo", "mpi"), default="gloo",
                    help="the cluster's collective (mpi: started by mpirun)")
    ap.add_argument("--mpirun", default="mpirun")
    args = ap.parse_args()
    parex = os.path.abspath(args.parex)
    with tempfile.TemporaryDirectory() as folder:
        secret = os.path.join(folder, "cluster.secret")
        with open(secret, "w") as f:
            f.write("a-bench-secret-of-more-than-16-bytes")
        os.chmod(secret, 0o600)
        print("%s, %d rows a node, %d steps; samples/s of the "
              "two processes together" % (args.model, args.batch, args.steps))
        print("places/node  round  independent  2-node cluster  ratio")
        for places in (int(p) for p in args.places.split(",")):
            ratios = []
            for r in range(args.rounds):
                alone, alone_account = independent(parex, folder, args, places)
                joined, joined_account = cluster(parex, folder, args, places)
                ratios.append(joined / alone)
                print("cpu:%-8d %5d  %11.0f  %14.0f  %5.3f" %
                      (places, r + 1, alone, joined, ratios[-1]))
                sys.stdout.flush()
            print("cpu:%-8d median ratio %.3f (target >= 0.95 at cpu:1)" %
                  (places, statistics.median(ratios)))
            print("  last round, step account of one process alone: %s" %
                  alone_account)
            print("  last round, step account of node a:            %s" %
                  joined_account)


if __name__ == "__main__":
    main()
