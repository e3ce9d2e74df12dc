#!/usr/bin/env python3
"""Study 1 of issue 39, first cut: BSP vs SSP vs ESSP vs VAP on a simulated cluster of 16 hosts, at
16, 64 and 256 workers, with and without stragglers (examples/platforms/cluster16_10gbe.txt and
cluster16_stragglers.txt), strata_mf on MovieLens small, CPU time measured, 3 seeds.

Per run: simulated time per iteration, the true model's test RMSE (--eval-every: a consistent
snapshot between segments, which costs no simulated time), the time to a target RMSE (the worst
final RMSE of all runs, so that every run reaches it), and the mean observed staleness.

  python3 benchmarks/sim_study_consistency.py --build build [--reps 3] [--iterations 20]
      [--data DIR --extra "TRAINER FLAGS"] [--wpn 1,4,16] [--models ...] [--out DIR]

The second cut (REPORT.md) ran strata_gen's 10M ratings: --data ~/.cache/strata/gen/mf-10m-s1
--extra "--rank 32 --clocks-per-epoch 4 --user-order --average-items"; the third the same at
--wpn 64 (1,024 workers), --out benchmarks/results/sim/consistency_10m_1024.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {"bsp": ["--consistency", "bsp"], "ssp2": ["--consistency", "ssp", "--staleness", "2"],
          "essp2": ["--consistency", "essp", "--staleness", "2"], "vap": ["--consistency", "vap", "--value-bound", "64"]}


def run(a, platform, model, wpn, seed):
    tag = f"{platform}-{model}-16x{wpn}-s{seed}"
    metrics = os.path.join(a.out, tag + ".jsonl")
    cmd = [os.path.join(a.build, "examples", "strata_mf"), *MODELS[model], *(["--data", a.data] if a.data else []), *a.extra.split(), "--iterations", str(a.iterations),
           "--eval-every", str(a.eval_every), "--seed", str(seed), "--quiet", "--metrics", metrics, "--transport", "sim",
           "--platform", os.path.join(ROOT, "examples", "platforms", platform + ".txt"), "--nodes", "16", "--workers", str(wpn)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    summary = [l for l in p.stdout.splitlines() if " summary: " in l][-1]  # staleness_mean
    fields = dict(kv.split("=", 1) for kv in summary.split() if "=" in kv)
    with open(metrics) as f:
        its = [json.loads(l) for l in f][1:]
    trace = [(l["elapsed_s"], l["rmse"]) for l in its if l.get("rmse") is not None]
    sim = [l for l in p.stderr.splitlines() if l.startswith("sim: ")]
    # Time per iteration from the trace (the training time its elapsed_s counts; the summary's seconds
    # also count the segments' starts under --eval-every).
    return dict(platform=platform, model=model, workers=16 * wpn, seed=seed, seconds=its[-1]["elapsed_s"],
                iterations=a.iterations, staleness=float(fields["staleness_mean"]), trace=trace, final=trace[-1][1],
                sim=sim[0] if sim else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--eval-every", type=int, default=2)
    ap.add_argument("--wpn", default="1,4,16")
    ap.add_argument("--models", default="bsp,ssp2,essp2,vap")
    ap.add_argument("--platforms", default="cluster16_10gbe,cluster16_stragglers")
    ap.add_argument("--data", default="", help="strata_mf --data (default: the trainer's, MovieLens small)")
    ap.add_argument("--extra", default="", help="more strata_mf flags, one string")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "sim", "consistency"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    runs = []
    for platform in a.platforms.split(","):
        for wpn in (int(x) for x in a.wpn.split(",")):
            for seed in range(1, a.reps + 1):
                for model in a.models.split(","):  # interleaved by seed
                    r = run(a, platform, model, wpn, seed)
                    runs.append(r)
                    print(f"{platform} {model} {r['workers']} workers seed {seed}: {r['seconds'] / r['iterations'] * 1e3:.2f} ms/it, "
                          f"final rmse {r['final']:.4f}, staleness {r['staleness']:.2f}", flush=True)
    target = max(r["final"] for r in runs)
    for r in runs:
        r["to_target"] = next((t for t, v in r["trace"] if v <= target), float("nan"))
    with open(os.path.join(a.out, "runs.json"), "w") as f:
        json.dump(dict(target=target, runs=runs), f, indent=1)
    print(f"\ntarget test RMSE {target:.4f} (the worst final RMSE); medians over seeds, [min, max]")
    print("| platform | workers | model | ms / iteration | time to target, s | final RMSE | mean staleness |")
    print("|---|---|---|---|---|---|---|")
    key = lambda r: (r["platform"], r["workers"], r["model"])
    for k in sorted({key(r) for r in runs}, key=lambda k: (k[0], k[1], list(MODELS).index(k[2]))):
        rs = [r for r in runs if key(r) == k]
        it = [r["seconds"] / r["iterations"] * 1e3 for r in rs]
        tt = [r["to_target"] for r in rs]
        fin = [r["final"] for r in rs]
        st = [r["staleness"] for r in rs]
        fmt = lambda xs, p: f"{statistics.median(xs):.{p}f} [{min(xs):.{p}f}, {max(xs):.{p}f}]"
        print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(it, 2)} | {fmt(tt, 3)} | {fmt(fin, 4)} | {statistics.median(st):.2f} |")


if __name__ == "__main__":
    main()
