#!/usr/bin/env python3
"""Choosing m for CoCoA+ the way Hemingway does, checked: time to a duality gap against m,
predicted by strata_plan from short probes and measured, with naive predictors beside the model.

  python3 benchmarks/cocoa_ucurve.py --mode real --ms 1,2,3,4 --probe-workers 1,2,3 --out DIR
  python3 benchmarks/cocoa_ucurve.py --mode sim --platform examples/platforms/fattree256.txt \\
      --ms 1,2,4,8,16,32,64,128,256 --probe-workers 1,2,4,8 --out DIR

Per seed (1..3 by default), interleaved: every m of --ms is trained to the target by strata_cocoa
(real: m worker threads in one process, as the planner's probes run; sim: m simulated hosts of
--platform, one worker each), then strata_plan --trainer cocoa probes (--fractions x
--probe-workers, 12 rounds each, within --budget seconds) and predicts every m. The target is a
duality gap of --target-rel x P*, P* from a one-worker run to a relative gap of --pstar-gap (1e-9)
before any timing. Each measured run goes on to a gap --overshoot x the target (default 100x below: a few more
rounds), so that its time per round is not only its first, slower rounds. Time to target is read from the true model's gap (--eval-every 1), time per round is the
trace's mean after the first round (as the planner's timing_of).

Naive predictors, from the same probes the model saw: "nearest probe" (the full-data probe whose m
is nearest in log m: its seconds per round, and its rounds to the target, read from its trace or
extrapolated from the slope of log(gap) over its rounds) and "linear in size" (the nearest probe's
seconds per round scaled by (s/m) / (s_p/m_p), Ernest's naive baseline, with the same rounds).

Writes DIR/runs/*.jsonl, DIR/plan_s*.json, DIR/summary.json and DIR/table.md.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["real", "sim"], required=True)
ap.add_argument("--data", default=os.path.expanduser("~/.cache/strata/gen/cocoa-200k/lasso.n200000-f20000-m100-s200-g10-e1.svm"))
ap.add_argument("--loss", default="squared")
ap.add_argument("--lam", type=float, default=1e-2)
ap.add_argument("--binarize", action="store_true", help="labels > 0 become +1, the others -1 (hinge loss on a regression data set)")
ap.add_argument("--ms", default="1,2,3,4")
ap.add_argument("--probe-workers", default="1,2,3")
ap.add_argument("--fractions", default="0.25,0.5,1")
ap.add_argument("--budget", type=float, default=20)
ap.add_argument("--seeds", default="1,2,3")
ap.add_argument("--target-rel", type=float, default=1e-5)
ap.add_argument("--pstar-gap", type=float, default=1e-9, help="P* from one worker to this relative gap (well below --target-rel)")
ap.add_argument("--max-rounds", type=int, default=400)
ap.add_argument("--overshoot", type=float, default=0.01, help="measured runs stop at a gap of this x the target (< 1: a few rounds past it)")
ap.add_argument("--platform", default="")
ap.add_argument("--build", default="build")
ap.add_argument("--out", required=True)
ap.add_argument("--analyze-only", action="store_true", help="no runs: recompute the tables from DIR's summary.json and plan files")
ap.add_argument("--refit", action="store_true", help="with --analyze-only: refit the planner (strata_plan --refit, the current commit's models) "
                "on each seed's saved probes; tables as table_refit.md, summary_refit.json (not blind: the probes and runs were seen)")
a = ap.parse_args()
ms = [int(x) for x in a.ms.split(",")]
seeds = [int(x) for x in a.seeds.split(",")]
cocoa = os.path.join(a.build, "examples", "strata_cocoa")
plan = os.path.join(a.build, "examples", "strata_plan")
os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
common = ["--data", a.data, "--loss", a.loss, "--lambda", str(a.lam)] + (["--binarize"] if a.binarize else [])


def sh(cmd, **kw):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode not in (0, 3):
        sys.exit(f"cocoa_ucurve: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p, time.time() - t0


def read_trace(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    return [l for l in lines if "iteration" in l]


def per_round(tr, warm=1):
    a_, b_ = tr[warm], tr[-1]
    return (b_["elapsed_s"] - a_["elapsed_s"]) / max(1, b_["iteration"] - a_["iteration"])


def reach(tr, target):
    for r in tr:
        if r.get("gap") is not None and r["gap"] <= target:
            return r["iteration"], r["elapsed_s"]
    return None, None


def rounds_by_slope(tr, target):
    """Rounds to the target: read, or log(gap) extrapolated linearly over the trace after round 1."""
    it, _ = reach(tr, target)
    if it is not None:
        return it
    pts = [(r["iteration"], math.log(r["gap"])) for r in tr[1:] if r.get("gap") and r["gap"] > 0]
    if len(pts) < 2:
        return math.inf
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx > 0 else 0
    if slope >= 0:
        return math.inf
    return pts[-1][0] + (math.log(target) - pts[-1][1]) / slope


def run_args(m, seed):
    if a.mode == "sim":
        return ["--transport", "sim", "--platform", a.platform, "--nodes", str(m), "--workers", "1", "--seed", str(seed)]
    return ["--workers", str(m), "--seed", str(seed)]


if a.analyze_only:
    prev = json.load(open(os.path.join(a.out, "summary.json")))
    pstar, target, rows = prev["pstar"], prev["target"], prev["rows"]
else:
    # P*: one worker to a relative gap of 1e-9.
    p, _ = sh([cocoa] + common + ["--workers", "1", "--iterations", "5000", "--tolerance", str(a.pstar_gap), "--quiet"])
    pstar = float(p.stdout.split("primal=")[1].split()[0])
    target = a.target_rel * pstar
    print(f"P* = {pstar:.12g}, target gap {target:.6g}", flush=True)

    rows = []
    for seed in seeds:
        for m in ms:
            trace = os.path.join(a.out, "runs", f"m{m}_s{seed}.jsonl")
            p, wall = sh([cocoa] + common + run_args(m, seed) + ["--iterations", str(a.max_rounds), "--eval-every", "1",
                                                                "--tolerance", str(a.overshoot * a.target_rel), "--metrics", trace, "--quiet"])
            tr = read_trace(trace)
            it, sec = reach(tr, target)
            rss = float(p.stdout.split("peak_rss_mb=")[-1].split()[0])
            rows.append({"seed": seed, "m": m, "s_per_round": per_round(tr), "rounds": it, "seconds": sec, "wall_s": wall, "peak_rss_mb": rss})
            print(f"seed {seed} m {m}: {per_round(tr) * 1e3:.2f} ms/round, target at round {it}, {sec} s (wall {wall:.1f} s)", flush=True)
        out = os.path.join(a.out, f"plan_s{seed}.json")
        cmd = [plan, "--trainer", "cocoa"] + common + ["--fractions"] + a.fractions.split(",") + ["--probe-workers"] + a.probe_workers.split(",") + \
              ["--heldout-workers"] + [str(m) for m in ms] + ["--budget", str(a.budget), "--probe-iterations", "12", "--optimum", "0",
                                                             "--target", repr(target), "--seed", str(seed), "--out", out]
        if a.mode == "sim":
            cmd += ["--platform", a.platform]
        p, wall = sh(cmd)
        print(p.stdout.split("strata_plan: cocoa")[-1], flush=True)


# Predictions and naive predictors per seed and m.
prefix = "refit" if a.refit else "plan"
if a.refit:
    for seed in seeds:
        cmd = [plan, "--trainer", "cocoa"] + common + ["--heldout-workers"] + [str(m) for m in ms] + ["--optimum", "0", "--target", repr(target),
              "--seed", str(seed), "--refit", os.path.join(a.out, f"plan_s{seed}.json.traces"), "--out", os.path.join(a.out, f"refit_s{seed}.json")]
        if a.mode == "sim":
            cmd += ["--platform", a.platform]
        sh(cmd)
result = []
for seed in seeds:
    pl = json.load(open(os.path.join(a.out, f"{prefix}_s{seed}.json")))
    pred = {int(e["config"]["workers"]): e for e in pl["ranking"]}
    probes = []
    for pr in pl["probes"]:
        tr = read_trace(pr["trace"])
        probes.append({"m": pr["config"]["workers"], "s": pr["config"]["scale"], "spr": per_round(tr), "rounds": rounds_by_slope(tr, target)})
    full = [q for q in probes if q["s"] == 1] or probes
    for m in ms:
        meas = next(r for r in rows if r["seed"] == seed and r["m"] == m)
        e = pred[m]
        near = min(full, key=lambda q: (abs(math.log(q["m"]) - math.log(m)), q["m"]))
        lin_spr = near["spr"] * (1.0 / m) / (near["s"] / near["m"])
        result.append({
            "seed": seed, "m": m, "probed_at_full_data": any(q["m"] == m and q["s"] == 1 for q in probes),
            "measured_spr": meas["s_per_round"], "measured_s": meas["seconds"], "measured_rounds": meas["rounds"],
            "model_spr": e["seconds_per_iteration"], "model_s": e["seconds"], "model_lo": e.get("seconds_lo"), "model_hi": e.get("seconds_hi"),
            "model_rounds": e["iterations"],
            "nearest_spr": near["spr"], "nearest_s": near["spr"] * near["rounds"], "linear_spr": lin_spr, "linear_s": lin_spr * near["rounds"],
            "nearest_rounds": near["rounds"],
            "pick": pl["ranking"][0]["config"]["workers"], "probe_seconds": pl["probe_seconds"], "probes": len(pl["probes"]),
        })


def err(p, m):
    if p is None or m is None or not (isinstance(p, (int, float)) and math.isfinite(p)):
        return None
    return abs(p - m) / m


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


summary = {"mode": a.mode, "pstar": pstar, "target": target, "ms": ms, "seeds": seeds, "rows": rows, "result": result, "args": vars(a)}
lines = ["| m | measured s/round (spread) | model | nearest | linear | measured time to target (spread) | model [90% interval] | nearest | linear |",
         "|---|---|---|---|---|---|---|---|---|"]
per_m = {}
for m in ms:
    R = [r for r in result if r["m"] == m]
    ms_spr = [r["measured_spr"] for r in R]
    ms_s = [r["measured_s"] for r in R if r["measured_s"] is not None]
    spread = lambda xs: (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 else 0
    f = lambda x: "-" if x is None or not math.isfinite(x) else f"{x:.3g}"
    per_m[m] = {k: med([r[k] for r in R]) for k in ["measured_spr", "model_spr", "nearest_spr", "linear_spr", "measured_s", "model_s", "nearest_s", "linear_s"]}
    lo, hi = med([r["model_lo"] for r in R]), med([r["model_hi"] for r in R])
    probed = sum(1 for r in R if r["probed_at_full_data"])
    lines.append(f"| {m}{f' (probed at full data in {probed} of {len(R)} seeds)' if probed else ''} | {f(per_m[m]['measured_spr'])} ({100 * spread(ms_spr):.0f}%) | "
                 f"{f(per_m[m]['model_spr'])} | {f(per_m[m]['nearest_spr'])} | {f(per_m[m]['linear_spr'])} | "
                 f"{f(per_m[m]['measured_s'])} ({100 * spread(ms_s) if ms_s else 0:.0f}%) | {f(per_m[m]['model_s'])} [{f(lo)}, {f(hi)}] | "
                 f"{f(per_m[m]['nearest_s'])} | {f(per_m[m]['linear_s'])} |")
errs = {}
for kind in ["spr", "s"]:
    for who in ["model", "nearest", "linear"]:
        for scope, sel in [("all", lambda r: True), ("unprobed", lambda r: not r["probed_at_full_data"])]:
            xs = [err(r[f"{who}_{kind}"], r[f"measured_{kind}"]) for r in result if sel(r)]
            errs[f"{who}_{kind}_{scope}"] = med(xs)
            errs[f"{who}_{kind}_{scope}_n"] = sum(1 for x in xs if x is not None)
# Noise floor: each seed's measurement predicting another seed's (median over pairs).
floor = {}
for kind, key in [("spr", "measured_spr"), ("s", "measured_s")]:
    xs = []
    for m in ms:
        R = [r[key] for r in result if r["m"] == m and r[key] is not None]
        xs += [abs(x - y) / y for i, x in enumerate(R) for j, y in enumerate(R) if i != j]
    floor[kind] = med(xs)
covered = [r for r in result if r["model_lo"] is not None and r["measured_s"] is not None and r["model_hi"] is not None]
cover = sum(1 for r in covered if r["model_lo"] <= r["measured_s"] <= r["model_hi"])
best = {seed: min((r for r in result if r["seed"] == seed and r["measured_s"] is not None), key=lambda r: r["measured_s"])["m"] for seed in seeds}
picks = {seed: next(r["pick"] for r in result if r["seed"] == seed) for seed in seeds}
slow = []
for seed in seeds:
    pk = next((r for r in result if r["seed"] == seed and r["m"] == picks[seed]), None)
    bs = next(r for r in result if r["seed"] == seed and r["m"] == best[seed])
    slow.append(None if pk is None or pk["measured_s"] is None else pk["measured_s"] / bs["measured_s"] - 1)
rounds_err = {who: med([err(r[f"{who}_rounds"], r["measured_rounds"]) for r in result]) for who in ["model", "nearest"]}
summary.update({"rounds_errors": rounds_err, "errors": errs, "noise_floor": floor, "coverage": [cover, len(covered)], "measured_best": best, "picks": picks, "pick_slowdown": slow, "per_m": per_m})
pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"
lines += ["", f"Median relative error, all m (unprobed m only): time per round model {pct(errs['model_spr_all'])} ({pct(errs['model_spr_unprobed'])}), "
          f"nearest probe {pct(errs['nearest_spr_all'])} ({pct(errs['nearest_spr_unprobed'])}), linear {pct(errs['linear_spr_all'])} ({pct(errs['linear_spr_unprobed'])}); "
          f"time to target model {pct(errs['model_s_all'])} ({pct(errs['model_s_unprobed'])}, {errs['model_s_all_n']} predicted), nearest probe {pct(errs['nearest_s_all'])} "
          f"({pct(errs['nearest_s_unprobed'])}), linear {pct(errs['linear_s_all'])} ({pct(errs['linear_s_unprobed'])}). "
          f"Rounds to the target: model {pct(rounds_err['model'])}, nearest probe {pct(rounds_err['nearest'])}. "
          f"Noise floor (seed predicting seed): per round {pct(floor['spr'])}, to target {pct(floor['s'])}. "
          f"90% intervals hold the measured time in {cover} of {len(covered)}. Measured best m per seed {best}, planner's pick {picks}, "
          f"pick slower than the best by {[pct(x) for x in slow]}."]
suffix = "_refit" if a.refit else ""
open(os.path.join(a.out, f"table{suffix}.md"), "w").write("\n".join(lines) + "\n")
if a.refit:
    summary["refit_note"] = "the current commit's planner refitted on the saved probes: not blind"
json.dump(summary, open(os.path.join(a.out, f"summary{suffix}.json"), "w"), indent=1)
print("\n".join(lines))
