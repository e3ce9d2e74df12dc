#!/usr/bin/python3
"""STRADS' claim at size (issue 37): MF by CCD++ (strata_mf --mode ccd) on strata_gen's 10M-rating
set as the rank grows, to a target test RMSE.

    bash benchmarks/ccd_rank_experiment.sh [--ranks 64 250 1000] [--target 0.825] [--reps 3]

Per repetition (seed 1, 2, 3 of the initial item factors), for each rank: one run of --iterations
outer iterations (every column once each), 2 workers, weighted lambda (--lambda 0.05
--weighted-lambda, the best of 0.02 / 0.05 / 0.1 at rank 64), the whole process under
/usr/bin/time (wall seconds, peak RSS). Time to the target is from the process's start to the
arrival of the first iteration's progress line at or below it (reading and set-up count); seconds
per iteration from the trainer's clock. The test RMSE is exact (every worker's test residuals).
"""
import argparse
import os
import re
import subprocess

from perf_experiment import Results, field, print_medians
from scale_experiment import timed

GEN = os.path.expanduser("~/.cache/strata/gen")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-native")
    ap.add_argument("--size", default="10m")
    ap.add_argument("--ranks", type=int, nargs="+", default=[64, 250, 1000])
    ap.add_argument("--target", type=float, default=0.825)
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--lambda", dest="lam", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    data = os.path.join(GEN, f"mf-{a.size}-s1")
    subprocess.run([os.path.join(a.build, "examples", "strata_gen"), "mf", "--size", a.size, "--out", data], check=True,
                   capture_output=True)
    print(f"# data {data}; {a.threads} workers; target test RMSE {a.target}; lambda {a.lam} weighted", flush=True)
    res = Results()
    for rep in range(a.reps):
        for rank in a.ranks:
            pts = []

            def see(line, t):
                for part in line.split("\r"):
                    m = re.match(r"mf .*iter +(\d+)/\d+ +([0-9.]+)s +test RMSE ([0-9.]+)", part.strip())
                    if m:
                        pts.append((int(m.group(1)), t, float(m.group(2)), float(m.group(3))))

            cmd = [os.path.join(a.build, "examples", "strata_mf"), "--mode", "ccd", "--data", data, "--workers", str(a.threads),
                   "--rank", str(rank), "--iterations", str(a.iterations), "--lambda", str(a.lam), "--weighted-lambda",
                   "--seed", str(rep + 1)]
            out, wall, rss = timed(cmd, stream=see)
            key = f"ccd rank={rank}"
            res.put(f"{key} wall_s", wall)
            res.put(f"{key} peak_rss_mb", rss)
            res.put(f"{key} s_per_iteration", pts[-1][2] / pts[-1][0])
            res.put(f"{key} final_rmse", field(out, "test_rmse"))
            res.put(f"{key} recomputed_minus_kept", field(out, "test_rmse_recomputed") - field(out, "test_rmse"))
            hit = next(((i, t) for i, t, _, r in pts if r <= a.target), None)
            res.put(f"{key} iterations_to_target", hit[0] if hit else float("nan"))
            res.put(f"{key} time_to_target_s", hit[1] if hit else float("nan"))
            print(f"# {key} seed {rep + 1} trace: " + " ".join(f"{i}:{t:.1f}s:{r:.4f}" for i, t, _, r in pts), flush=True)
    print_medians(res)


if __name__ == "__main__":
    main()
