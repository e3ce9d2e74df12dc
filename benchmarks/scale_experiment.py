#!/usr/bin/python3
"""strata at the papers' sizes against LIBMF (issue 37): MF on strata_gen's Netflix-shape data.

    bash benchmarks/scale_experiment.sh --size 10m --reps 3          (the wrapper: builds, generates, runs)
    benchmarks/scale_experiment.py --build build-native --libmf /path/to/libmf --size 10m --reps 3

The data comes from `strata_gen mf --size SIZE` (cached in ~/.cache/strata/gen). LIBMF is built out
of tree from its own repository (`make`); this script only runs its `mf-train`.

Protocol, per repetition, interleaved (strata ESSP, strata BSP, LIBMF; 1 then 2 threads):
1. A traced run finds the first epoch whose test RMSE is at or below the target: strata with
   `--eval-every C` (C = clocks per epoch: the true model's RMSE after every epoch, evaluation
   time excluded from its clock), LIBMF with `-p test` (its own va_rmse after every iteration).
   Their per-epoch seconds come from the same runs (strata: the trace's training clock; LIBMF: the
   spacing of its per-iteration lines, read unbuffered, so its own evaluation is inside).
2. A timed run of exactly that many epochs without evaluation, the whole process under
   /usr/bin/time (reading the text files and every set-up on both sides): the time to target, and
   the peak resident memory.
The target is fixed before timing (`--target`): the noise floor of the generated data is the
error of the true model, which no estimator reaches from finite data, so the target is a test
RMSE both programs reach after tuning (see benchmarks/results/scale/REPORT.md). Each program's
settings come from a grid tuned with like effort (in the report); strata runs with
--weighted-lambda --user-order --block 512.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from perf_experiment import Results, field, med, print_medians  # shared with the other experiments

GEN = os.path.expanduser("~/.cache/strata/gen")


def timed(cmd, env=None, stream=None):
    """Runs cmd under /usr/bin/time; returns (its stdout and stderr, wall seconds, peak RSS MB).
    With `stream`, stream(line, seconds since start) sees each output line as it comes."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        start = time.monotonic()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%e %M", "-o", tf.name] + cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=dict(os.environ, **(env or {})))
        out = []
        for line in p.stdout:
            out.append(line)
            if stream:
                stream(line, time.monotonic() - start)
        if p.wait() != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{''.join(out)[-4000:]}")
        wall, kb = tf.read().split()[-2:]
    return "".join(out), float(wall), int(kb) / 1024


class Strata:
    def __init__(self, a, data, model, threads):
        self.a, self.data, self.model, self.threads = a, data, model, threads
        self.name = f"strata-{model}"

    def args(self, epochs):
        a = self.a
        return [os.path.join(a.build, "examples", "strata_mf"), "--data", self.data, "--workers", str(self.threads),
                "--consistency", self.model, "--rank", str(a.rank), "--iterations", str(epochs * a.clocks),
                "--clocks-per-epoch", str(a.clocks), "--lambda", str(a.strata_lambda), "--lr", str(a.strata_lr),
                "--block", str(a.strata_block), "--weighted-lambda", "--user-order", "--quiet"]

    def trace(self, epochs):
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as m:
            out, wall, rss = timed(self.args(epochs) + ["--eval-every", str(self.a.clocks), "--metrics", m.name])
            recs = [json.loads(l) for l in open(m.name) if l.strip()]
        pts = [(r["iteration"] // self.a.clocks, r["elapsed_s"], r["rmse"]) for r in recs
               if "iteration" in r and r.get("rmse") is not None and r["iteration"] % self.a.clocks == 0]
        per_epoch = pts[-1][1] / pts[-1][0] if pts[-1][0] else float("nan")
        return pts, per_epoch, field(out, "read_seconds")


class Libmf:
    def __init__(self, a, data, threads):
        self.a, self.data, self.threads = a, data, threads
        self.name = "libmf"

    def args(self, epochs, validate):
        a = self.a
        cmd = ["stdbuf", "-oL", os.path.join(a.libmf, "mf-train"), "-k", str(a.rank), "-t", str(epochs), "-s", str(self.threads),
               "-l2", str(a.libmf_l2), "-r", str(a.libmf_lr)]
        if validate:
            cmd += ["-p", os.path.join(self.data, "ratings.test.txt")]
        return cmd + [os.path.join(self.data, "ratings.train.txt"), os.path.join(tempfile.gettempdir(), "strata-scale-libmf.model")]

    def trace(self, epochs):
        start = time.monotonic()
        p = subprocess.Popen(self.args(epochs, True), stdout=subprocess.PIPE, text=True)
        pts, stamps = [], []
        for line in p.stdout:
            f = line.split()
            if len(f) >= 3 and f[0].isdigit():
                stamps.append(time.monotonic() - start)
                pts.append((int(f[0]) + 1, stamps[-1], float(f[2])))
        if p.wait() != 0:
            sys.exit("LIBMF failed")
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        return pts, med(gaps), float("nan")


def first_at(pts, target):
    return next((e for e, _, rmse in pts if rmse <= target), None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-native")
    ap.add_argument("--libmf", required=True, help="LIBMF source folder after `make` (mf-train)")
    ap.add_argument("--size", default="10m", help="strata_gen mf size: 10m or netflix")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=["essp", "bsp"])
    ap.add_argument("--rank", type=int, default=64)
    ap.add_argument("--target", type=float, default=0.83)
    ap.add_argument("--max-epochs", type=int, default=40)
    ap.add_argument("--clocks", type=int, default=4, help="strata's clocks per epoch")
    ap.add_argument("--strata-lambda", type=float, default=0.02)
    ap.add_argument("--strata-lr", type=float, default=0.02)
    ap.add_argument("--strata-block", type=int, default=512, help="strata's users / items per row (--block)")
    ap.add_argument("--libmf-l2", type=float, default=0.03)
    ap.add_argument("--libmf-lr", type=float, default=0.1)
    a = ap.parse_args()

    data = os.path.join(GEN, f"mf-{a.size}-s1")
    subprocess.run([os.path.join(a.build, "examples", "strata_gen"), "mf", "--size", a.size, "--out", data], check=True)
    truth = json.load(open(os.path.join(data, "truth.json")))
    print(f"# data {data}: {truth['summary']['ratings_train']} train, {truth['summary']['ratings_test']} test ratings, "
          f"noise floor RMSE {truth['summary']['noise_floor_rmse']:.4f}; target {a.target}", flush=True)
    res = Results()
    put = res.put
    for rep in range(a.reps):
        for th in a.threads:
            progs = [Strata(a, data, m, th) for m in a.models] + [Libmf(a, data, th)]
            for p in progs:
                key = f"mf {p.name} threads={th}"
                pts, per_epoch, read_s = p.trace(a.max_epochs)
                put(f"{key} best_rmse", min(r for _, _, r in pts))
                put(f"{key} seconds_per_epoch", per_epoch)
                e = first_at(pts, a.target)
                if e is None:
                    put(f"{key} time_to_target_s", float("nan"))
                    continue
                put(f"{key} epochs_to_target", e)
                if isinstance(p, Strata):
                    _, wall, rss = timed(p.args(e))
                else:
                    _, wall, rss = timed(p.args(e, False))
                put(f"{key} time_to_target_s", wall)
                put(f"{key} peak_rss_mb", rss)
    print_medians(res)


if __name__ == "__main__":
    main()
