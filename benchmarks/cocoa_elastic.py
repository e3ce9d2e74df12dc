#!/usr/bin/env python3
"""Elastic m against fixed m on CoCoA+ (time to a duality gap) or MF (time to a test RMSE), 3 seeds, interleaved.

  python3 benchmarks/cocoa_elastic.py --mode real --fixed 1,2,4 --elastic 1,2,4 --out DIR
  python3 benchmarks/cocoa_elastic.py --trainer mf --data DIR --target-rmse 0.94 --mode real --fixed 1,2,4 --elastic 1,2,4 --out DIR
  python3 benchmarks/cocoa_elastic.py --mode sim --platform examples/platforms/fattree256.txt \\
      --fixed 1,16,64,256 --elastic 1,4,16,64,256 --out DIR

Per seed, every fixed m and then the elastic run (strata_cocoa --elastic, segments of --every
rounds, the next m chosen by cost/elastic.hpp from the run's own trace) train to the same target
(--target-rel x P*, P* from a one-worker run to a relative gap of 1e-9); time to target is the
true model's (--eval-every 1). MF (--trainer mf): strata_mf, data-parallel SGD under BSP with
--average-items, to a test RMSE of --target-rmse (the elastic run's policy follows it). Real: worker threads in one process; the elastic run's switches
(restarting the workers, re-partitioning) are in its time. Sim: simulated hosts of --platform,
one worker each; switches cost no simulated time (not measured).
Writes DIR/*.jsonl, DIR/summary.json and DIR/table.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["real", "sim"], required=True)
ap.add_argument("--trainer", choices=["cocoa", "mf"], default="cocoa")
ap.add_argument("--data", default=os.path.expanduser("~/.cache/strata/gen/cocoa-200k/lasso.n200000-f20000-m100-s200-g10-e1.svm"))
ap.add_argument("--target-rmse", type=float, default=0.94, help="mf: the test RMSE to reach")
ap.add_argument("--loss", default="squared")
ap.add_argument("--lam", type=float, default=1e-2)
ap.add_argument("--fixed", default="1,2,4")
ap.add_argument("--elastic", default="1,2,4")
ap.add_argument("--every", type=int, default=10)
ap.add_argument("--seeds", default="1,2,3")
ap.add_argument("--target-rel", type=float, default=1e-5)
ap.add_argument("--max-rounds", type=int, default=600)
ap.add_argument("--platform", default="")
ap.add_argument("--build", default="build")
ap.add_argument("--out", required=True)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
cocoa = os.path.join(a.build, "examples", "strata_cocoa")
if a.trainer == "cocoa":
    common = [cocoa, "--data", a.data, "--loss", a.loss, "--lambda", str(a.lam), "--quiet", "--eval-every", "1",
              "--iterations", str(a.max_rounds), "--tolerance", str(a.target_rel)]
else:
    common = [os.path.join(a.build, "examples", "strata_mf"), "--data", a.data, "--consistency", "bsp", "--average-items", "--quiet",
              "--eval-every", "1", "--iterations", str(a.max_rounds)]


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"cocoa_elastic: {' '.join(args)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def shape(m):
    if a.mode == "sim":
        return ["--transport", "sim", "--platform", a.platform, "--nodes", str(m), "--workers", "1"]
    return ["--workers", str(m)]


def reached(trace, target):
    with open(trace) as f:
        for line in f:
            r = json.loads(line)
            v = r.get("gap" if a.trainer == "cocoa" else "rmse")
            if r.get("iteration", 0) > 0 and v is not None and v <= target:
                return r["iteration"], r["elapsed_s"]
    return None, None


if a.trainer == "cocoa":
    out = run([cocoa, "--data", a.data, "--loss", a.loss, "--lambda", str(a.lam), "--workers", "1", "--iterations", "2000", "--tolerance", "1e-9", "--quiet"])
    pstar = float(out.split("primal=")[1].split()[0])
    target = a.target_rel * pstar
else:
    pstar, target = None, a.target_rmse
rows = []
for seed in [int(s) for s in a.seeds.split(",")]:
    for kind in [f"m={m}" for m in a.fixed.split(",")] + ["elastic"]:
        trace = os.path.join(a.out, f"{kind.replace('=', '')}_s{seed}.jsonl")
        if kind == "elastic":
            args = common + shape(max(int(m) for m in a.elastic.split(","))) + ["--elastic", a.elastic, "--elastic-every", str(a.every)]
            if a.trainer == "mf":
                args += ["--adaptive-target", str(target)]
        else:
            args = common + shape(int(kind[2:]))
        out = run(args + ["--seed", str(seed), "--metrics", trace])
        it, sec = reached(trace, target)
        segs = [l for l in out.splitlines() if l.startswith(a.trainer + " elastic:")]
        switch = sum(float(l.split("(switch ")[1].split()[0]) for l in segs)
        path = [int(l.split(" m=")[1].split()[0].rstrip(":")) for l in segs]
        rows.append({"seed": seed, "kind": kind, "rounds": it, "seconds": sec, "switch_wall_s": switch, "path": path})
        print(f"seed {seed} {kind}: target at round {it}, {sec} s" + (f", m by segment {path}, switches {switch:.2f} s wall" if segs else ""), flush=True)

kinds = [f"m={m}" for m in a.fixed.split(",")] + ["elastic"]
lines = ["| run | time to target, median [min, max] (s) | rounds, median | seeds reaching |", "|---|---|---|---|"]
med = {}
for k in kinds:
    xs = [r["seconds"] for r in rows if r["kind"] == k and r["seconds"] is not None]
    its = [r["rounds"] for r in rows if r["kind"] == k and r["rounds"] is not None]
    med[k] = statistics.median(xs) if xs else None
    lines.append(f"| {k} | {med[k]:.3f} [{min(xs):.3f}, {max(xs):.3f}] | {statistics.median(its):.0f} | {len(xs)} |" if xs else f"| {k} | not reached | - | 0 |")
fixed = {k: v for k, v in med.items() if k != "elastic" and v is not None}
best = min(fixed, key=fixed.get) if fixed else None
if best and med["elastic"]:
    per_seed = []
    for s in sorted({r["seed"] for r in rows}):
        fx = [r["seconds"] for r in rows if r["seed"] == s and r["kind"] != "elastic" and r["seconds"] is not None]
        el = next((r["seconds"] for r in rows if r["seed"] == s and r["kind"] == "elastic"), None)
        per_seed.append(f"{min(fx) / el:.2f}x" if fx and el else "-")
    lines += ["", f"Best fixed: {best} ({fixed[best]:.3f} s); elastic {med['elastic']:.3f} s: {fixed[best] / med['elastic']:.2f}x the best fixed m's speed "
              f"(> 1: elastic faster). Per seed, the seed's best fixed time / elastic time: " + ", ".join(per_seed)]
open(os.path.join(a.out, "table.md"), "w").write("\n".join(lines) + "\n")
json.dump({"args": vars(a), "pstar": pstar, "target": target, "rows": rows, "median": med}, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
print("\n".join(lines))
