#!/usr/bin/env python3
"""Study 3 of issue 39: STRADS schedulers at 16-256 workers on a simulated cluster of 16 hosts
(examples/platforms/cluster16_10gbe.txt), CPU time measured: strata_lasso's priority scheduler,
round robin and Shotgun (random) on strata_gen's Lasso data, and strata_lda's block rotation against
data-parallel LDA on the parameter server.

Lasso (the flags of benchmarks/lasso_scale.sh, the tuned ones: batch 1,000, sequential batch steps,
lambda = 0.1 lambda_max): per run the simulated seconds, rounds per simulated second, the objective
F and the simulated time to the target F <= F* (1 + 1e-4), F* from one tight inproc run of the
priority scheduler (gap <= 1e-8 F; the same problem, so the same optimum). LDA (strata_gen's 10m
corpus, K = 100): simulated seconds per sweep and the log-likelihood of each sweep (the true counts:
LDA's workers push every count change before the clock), time to the worst final log-likelihood of
all runs. Seeds 1..reps, medians and spread (max - min) / median.

  python3 benchmarks/sim_study_strads.py --build build [--reps 3] [--wpn 1,4,16] [--parts lasso,lda]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(os.path.expanduser("~"), ".cache", "strata", "gen")
PLATFORM = os.path.join(ROOT, "examples", "platforms", "cluster16_10gbe.txt")
LASSO = {"priority": ["--scheduler", "priority", "--batch", "1000", "--sweeps", "3", "--evaluate-every", "300"],
         "round_robin": ["--scheduler", "round_robin", "--batch", "1000", "--evaluate-every", "300"],
         "shotgun": ["--scheduler", "random", "--batch", "1000", "--evaluate-every", "300"]}
LDA = {"rotation": ["--mode", "rotation", "--consistency", "bsp"], "ps_essp2": ["--mode", "ps", "--consistency", "essp", "--staleness", "2"]}


def trace_of(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f]
    return lines[0]["config"], lines[1:]


def sim_line(stderr):
    return next((l for l in stderr.splitlines() if l.startswith("sim: ")), "")


def run(cmd, ok=(0,)):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in ok:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p


def sim_runs(a, out, part, methods, argv, ok=(0,)):
    """Runs every (seed, workers per host, method) of one part on the 16 simulated hosts, seeds
    outermost; yields (method, workers per host, seed, the process, the trace's iterations).
    argv(flags): the trainer's command line for a method's flags, without seed, trace and cluster."""
    for seed in range(1, a.reps + 1):
        for wpn in a.wpn:
            for name, flags in methods.items():
                metrics = os.path.join(out, f"{part}-{name}-16x{wpn}-s{seed}.jsonl")
                p = run([*argv(flags), "--seed", str(seed), "--metrics", metrics, "--transport", "sim", "--platform", PLATFORM,
                         "--nodes", "16", "--workers", str(wpn)], ok=ok)
                yield name, wpn, seed, p, trace_of(metrics)[1]


def lasso_part(a, out):
    data_dir = os.path.join(GEN, f"lasso-{a.lasso_size}-s1")
    run([os.path.join(a.build, "examples", "strata_gen"), "lasso", "--size", a.lasso_size, "--out", data_dir, "--quiet"])
    data = os.path.join(data_dir, f"lasso.{a.lasso_size}.svm")
    exe = os.path.join(a.build, "examples", "strata_lasso")
    common = ["--data", data, "--lambda-fraction", "0.1", "--batch-steps", "sequential", "--quiet"]
    ref = os.path.join(out, "lasso-reference.jsonl")
    run([exe, *common, *LASSO["priority"], "--workers", "2", "--tolerance", "1e-8", "--metrics", ref])
    fstar = min(l["objective"] for l in trace_of(ref)[1] if l.get("objective") is not None)
    target = fstar * (1 + 1e-4)
    rows = []
    argv = lambda flags: [exe, *common, *flags, "--tolerance", "1e-4", "--rounds", str(a.lasso_rounds)]
    # returncode 3: not converged within --rounds (the trace is still written)
    for name, wpn, seed, p, its in sim_runs(a, out, "lasso", LASSO, argv, ok=(0, 3)):
        evals = [l for l in its if l.get("objective") is not None]
        hit = next((l["elapsed_s"] for l in evals if l["objective"] <= target), None)
        last = its[-1]
        rows.append(dict(part="lasso", method=name, workers=16 * wpn, seed=seed, seconds=last["elapsed_s"], rounds=last["iteration"] + 1,
                         converged=p.returncode == 0, gap=evals[-1].get("gap"), objective=evals[-1]["objective"], to_target=hit,
                         sim=sim_line(p.stderr)))
        print(json.dumps(rows[-1]), flush=True)
    return dict(fstar=fstar, target=target), rows


def lda_part(a, out):
    data_dir = os.path.join(GEN, "lda-10m-s1")
    run([os.path.join(a.build, "examples", "strata_gen"), "lda", "--size", "10m", "--out", data_dir, "--quiet"])
    exe = os.path.join(a.build, "examples", "strata_lda")
    rows = []
    argv = lambda flags: [exe, "--data", os.path.join(data_dir, "docword.10m.txt"), "--topics", "100", "--iterations",
                          str(a.lda_iterations), *flags, "--quiet"]
    for name, wpn, seed, p, its in sim_runs(a, out, "lda", LDA, argv):
        trace = [(l["elapsed_s"], l["objective"]) for l in its if l.get("objective") is not None]
        rows.append(dict(part="lda", method=name, workers=16 * wpn, seed=seed, seconds=its[-1]["elapsed_s"],
                         sweeps=a.lda_iterations, trace=trace, final=trace[-1][1], sim=sim_line(p.stderr)))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "trace"}), flush=True)
    target = min(r["final"] for r in rows)  # log-likelihood: higher is better; every run reaches the worst final
    for r in rows:
        r["to_target"] = next(t for t, v in r["trace"] if v >= target)
    return dict(target=target), rows


def med_spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, 0
    m = statistics.median(xs)
    return m, (max(xs) - min(xs)) / abs(m) if m else 0.0, len(xs)


def table(rows, part, keys):
    print(f"\n{part}: medians over seeds (spread = (max - min) / median)")
    print(f"{'method':<12} {'workers':>7} " + " ".join(f"{k:>22}" for k, _ in keys))
    for method in dict.fromkeys(r["method"] for r in rows if r["part"] == part):
        for w in sorted({r["workers"] for r in rows if r["part"] == part}):
            rs = [r for r in rows if r["part"] == part and r["method"] == method and r["workers"] == w]
            cells = []
            for _, f in keys:
                m, s, n = med_spread([f(r) for r in rs])
                cells.append(f"{m:>12.4g} ({s:5.1%}){'' if n == len(rs) else f' {n}/{len(rs)}':>2}" if m is not None else f"{'-':>22}")
            print(f"{method:<12} {w:>7} " + " ".join(cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--wpn", default="1,4,16", help="workers per host (16 hosts)")
    ap.add_argument("--parts", default="lasso,lda")
    ap.add_argument("--lasso-size", default="100k")
    ap.add_argument("--lasso-rounds", type=int, default=30000)
    ap.add_argument("--lda-iterations", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "sim", "strads"))
    a = ap.parse_args()
    a.wpn = [int(x) for x in a.wpn.split(",")]
    os.makedirs(a.out, exist_ok=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = dict(commit=commit, platform="cluster16_10gbe", reps=a.reps, wpn=a.wpn, parts={})
    rows = []
    if "lasso" in a.parts:
        info, r = lasso_part(a, a.out)
        result["parts"]["lasso"] = info
        rows += r
        table(rows, "lasso", [("simulated s", lambda r: r["seconds"]), ("rounds/sim s", lambda r: r["rounds"] / r["seconds"]),
                              ("time to F*(1+1e-4) s", lambda r: r["to_target"])])
    if "lda" in a.parts:
        info, r = lda_part(a, a.out)
        result["parts"]["lda"] = info
        rows += r
        table(rows, "lda", [("sim s per sweep", lambda r: r["seconds"] / r["sweeps"]), ("final loglik", lambda r: r["final"]),
                            ("time to target s", lambda r: r["to_target"])])
    result["runs"] = rows
    with open(os.path.join(a.out, "study_" + "_".join(a.parts.split(",")) + ".json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
