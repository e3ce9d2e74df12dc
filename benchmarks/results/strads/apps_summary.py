#!/usr/bin/env python3
"""Summarises strata_lda / strata_mf --metrics traces (JSON Lines): per run, the last iteration's
elapsed seconds and metric, LL gain per second (LDA), and the first elapsed time at which each
run reached the target (LDA: the worst final LL of the runs; MF: the largest final RMSE).
Usage: apps_summary.py lda|mf FILE..."""
import json, sys

kind, files = sys.argv[1], sys.argv[2:]
runs = {}
for f in files:
    its = [json.loads(l) for l in open(f)]
    its = [r for r in its if "iteration" in r]
    key = "loglik" if kind == "lda" else "rmse"
    runs[f] = [(r["iteration"], r["elapsed_s"], r[key]) for r in its]
better = (lambda a, b: a >= b) if kind == "lda" else (lambda a, b: a <= b)
target = min(r[-1][2] for r in runs.values()) if kind == "lda" else max(r[-1][2] for r in runs.values())
print(f"target {target:.6g}")
for f, r in runs.items():
    it, t, m = r[-1]
    reach = next((x[1] for x in r if better(x[2], target)), float("nan"))
    extra = f" LL gain/s {(m - r[0][2]) / t:.4g}" if kind == "lda" and t > 0 else ""
    print(f"{f}: iterations {it} seconds {t:.2f} final {m:.6g} time-to-target {reach:.2f}s{extra}")
