#!/usr/bin/env python3
"""Turns benchmarks/results/strads/metrics/*.jsonl into REPORT.md and gnuplot plots.

Usage: report.py OUT_DIR "COMMAND"

F* is the smallest objective any run reached (the reference solvers at their tightest
tolerances included). "To 1e-3" is the first evaluation point whose F <= F* (1 + 1e-3); points
come every EVERY rounds, so rounds and seconds are rounded up to an evaluation, and seconds
include the evaluations themselves (a full gradient each).
"""
import glob
import gzip
import json
import math
import os
import re
import statistics
import subprocess
import tempfile
import sys

out, command = sys.argv[1], sys.argv[2]
mdir = os.path.join(out, "metrics")


def opened(path):
    """A trace, or its gzipped copy (the script compresses the committed traces)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def traces(pattern):
    """Trace files matching pattern (*.jsonl), by their .jsonl name, gzipped or not."""
    return sorted({f[:-3] if f.endswith(".gz") else f for f in glob.glob(pattern) + glob.glob(pattern + ".gz")})


def load(path):
    lines = [json.loads(l) for l in opened(path)]
    return lines[0].get("config", {}), [r for r in lines[1:] if "iteration" in r]


refs = [json.loads(l) for l in opened(os.path.join(mdir, "references.jsonl"))]
ref_head, refs = refs[0], refs[1:]
runs = {}
for f in traces(os.path.join(mdir, "lasso_*.jsonl")):
    m = re.match(r"lasso_(\w+?)_(w\d+|tcp2)_s(\d+)\.jsonl", os.path.basename(f))
    runs[(m.group(1), m.group(2), int(m.group(3)))] = load(f)[1]
fstar = min([r["objective"] for r in refs] + [p["objective"] for pts in runs.values() for p in pts])


def first(pts, rel):
    for p in pts:
        if p["objective"] <= fstar * (1 + rel):
            return p["iteration"], p["elapsed_s"]
    return None, None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, f="{:.3g}"):
    return "—" if x is None else f.format(x)


scheds = ["round_robin", "random", "priority", "filtered"]
label = {"round_robin": "round robin", "random": "uniform random (Shotgun)", "priority": "priority",
         "filtered": "priority + dependency filter"}
shapes = sorted({k[1] for k in runs}, key=lambda s: (s == "tcp2", s))
rows, summary = [], {}
for shape in shapes:
    for s in scheds:
        seeds = sorted(k[2] for k in runs if k[0] == s and k[1] == shape)
        if not seeds:
            continue
        pts = [runs[(s, shape, x)] for x in seeds]
        r3 = [first(p, 1e-3) for p in pts]
        r4 = [first(p, 1e-4) for p in pts]
        rps = [p[-1]["iteration"] / p[-1]["elapsed_s"] for p in pts if p[-1]["elapsed_s"] > 0]
        summary[(s, shape)] = dict(rounds3=med([a for a, _ in r3]), sec3=med([b for _, b in r3]), sec4=med([b for _, b in r4]),
                                  rps=med(rps), n=len(seeds), miss=sum(a is None for a, _ in r3),
                                  spread=(min((b for _, b in r3 if b is not None), default=None),
                                          max((b for _, b in r3 if b is not None), default=None)))
for shape in shapes:
    base = summary.get(("round_robin", shape))
    for s in scheds:
        v = summary.get((s, shape))
        if not v:
            continue
        ratio = (base["sec3"] / v["sec3"]) if base and base["sec3"] and v["sec3"] else None
        name = {"tcp2": "2 TCP processes x 1"}.get(shape, shape[1:] + (" worker" if shape == "w1" else " workers"))
        rows.append(f"| {label[s]} | {name} | {v['n']} | {fmt(v['rounds3'], '{:.0f}')} | {fmt(v['sec3'])} "
                    f"({fmt(v['spread'][0])}–{fmt(v['spread'][1])}) | {fmt(v['sec4'])} | {fmt(v['rps'], '{:.0f}')} | "
                    f"{fmt(ratio, '{:.2f}x')} |" + (f" {v['miss']} seed(s) never got there |" if v["miss"] else ""))


def best_ref(solver, rel):
    ok = [r for r in refs if r["solver"] == solver and r["objective"] <= fstar * (1 + rel)]
    return min(ok, key=lambda r: r["seconds"]) if ok else None


# Plots: relative suboptimality against seconds and rounds, seed 1, one worker.
plots = []
tmp = tempfile.mkdtemp()
if subprocess.run(["sh", "-c", "command -v gnuplot"], capture_output=True).returncode == 0:
    for xkey, xlabel, name in [("elapsed_s", "seconds", "lasso_seconds"), ("iteration", "rounds", "lasso_rounds")]:
        data = []
        for s in scheds:
            key = (s, "w1", 1)
            if key not in runs:
                continue
            path = os.path.join(tmp, f"{name}_{s}.dat")
            with open(path, "w") as f:
                for p in runs[key]:
                    f.write(f"{p[xkey]} {max((p['objective'] - fstar) / fstar, 1e-12)}\n")
            data.append(f"'{path}' using 1:2 with linespoints title '{label[s]}'")
        png = os.path.join(out, f"{name}.png")
        script = (f"set terminal pngcairo size 800,500 noenhanced; set output '{png}'; set logscale y; set xlabel '{xlabel}';"
                  f"set ylabel '(F - F*) / F*'; set title 'Lasso, spam, {ref_head['fraction']} lambda_max, 1 worker, seed 1';"
                  "set key top right; plot " + ", ".join(data))
        subprocess.run(["gnuplot", "-e", script], check=True)
        plots.append(os.path.basename(png))
    lda = traces(os.path.join(mdir, "lda_*.jsonl"))
    if lda:
        data = []
        for f in lda:
            path = os.path.join(tmp, os.path.basename(f)[:-6] + ".dat")
            with open(path, "w") as o:
                for p in load(f)[1]:
                    o.write(f"{p['elapsed_s']} {p['loglik']}\n")
            data.append(f"'{path}' using 1:2 with linespoints title '{os.path.basename(f)[4:-6]}'")
        png = os.path.join(out, "lda_loglik.png")
        subprocess.run(["gnuplot", "-e", f"set terminal pngcairo size 800,500 noenhanced; set output '{png}'; set xlabel 'seconds';"
                        "set ylabel 'log-likelihood'; set title 'LDA, SpamAssassin: rotation vs ESSP'; set key bottom right;"
                        "plot " + ", ".join(data)], check=True)
        plots.append(os.path.basename(png))

lda_rows = []
for f in traces(os.path.join(mdir, "lda_*.jsonl")):
    pts = load(f)[1]
    t, ll = pts[-1]["elapsed_s"], pts[-1]["loglik"]
    lda_rows.append((os.path.basename(f)[4:-6], t, ll, (ll - pts[0]["loglik"]) / t if t > 0 else float("nan"), pts))
target = min(r[2] for r in lda_rows) if lda_rows else None

md = ["## Results (generated by benchmarks/strads/report.py)", "",
      f"Command: `{command}`", "",
      f"Problem: `{ref_head['data']}`, n = {ref_head['n']}, d = {ref_head['d']}, F(β) = 1/(2n)‖y − Xβ‖² + λ‖β‖₁, "
      f"λ = {ref_head['fraction']} λ_max = {ref_head['lambda']:.6g}; F* = {fstar:.12g} (the smallest F any run reached).", "",
      "## Lasso: rounds and seconds to within 1e-3 of F*, by scheduler and workers", "",
      "Medians over seeds (spread of seconds in brackets). Rounds/s: the whole run's rounds per second (to the stop at",
      "gap ≤ TOL × F). \"vs round robin\": round robin's median seconds to 1e-3 / this row's, same shape.", "",
      "| scheduler | workers | seeds | rounds to 1e-3 | seconds to 1e-3 | seconds to 1e-4 | rounds/s | vs round robin |",
      "|---|---|---|---|---|---|---|---|", *rows, ""]
big = {}
for f in sorted(glob.glob(os.path.join(mdir, "big_*.err"))):
    m = re.match(r"big_(\w+?)_b(\d+)\.err", os.path.basename(f))
    key, trace = (m.group(1), int(m.group(2))), f[:-4] + ".jsonl"
    if os.path.exists(trace) or os.path.exists(trace + ".gz"):
        pts = load(trace)[1]
        r3, r4 = first(pts, 1e-3), first(pts, 1e-4)
        big[key] = f"{fmt(r3[0], '{:.0f}')} rounds, {fmt(r3[1])} s to 1e-3; {fmt(r4[1])} s to 1e-4"
    else:
        err = open(f).read().strip()
        d = re.search(r"diverged at round (\d+)", err)
        big[key] = f"diverged at round {d.group(1)}" if d else "failed: " + (err.splitlines() or ["?"])[-1][:120]
if big:
    md += ["## Lasso: larger batches (1 worker, seed 1)", "",
           "Where stepping many coefficients together stops working and the dependency filter is meant to help.", "",
           "| batch | " + " | ".join(label[s] for s in ["random", "priority", "filtered"]) + " |", "|---|---|---|---|"]
    for b in sorted({k[1] for k in big}):
        md.append(f"| {b} | " + " | ".join(big.get((s, b), "—") for s in ["random", "priority", "filtered"]) + " |")
    md.append("")
md += ["## Lasso: time to within 1e-4 of F*, single process, against the reference solvers", "",
       "Reference solvers run at a ladder of tolerances (benchmarks/strads/lasso_references.py); each is timed around",
       "its fit alone; the row is the fastest run whose F is within 1e-4 of F* (a choice of tolerance made after the",
       "fact, in their favour). strata: the median over seeds of the first evaluation within 1e-4 (evaluations included).", "",
       "| solver | setting | seconds to 1e-4 | F |", "|---|---|---|---|"]
for solver in ["sklearn", "glmnet"]:
    b = best_ref(solver, 1e-4)
    md.append(f"| {solver} | tol {b['tol']:g} | {b['seconds']:.3f} | {b['objective']:.10g} |" if b else f"| {solver} | — | never | |")
for s in scheds:
    v = summary.get((s, "w1"))
    if v:
        md.append(f"| strata {label[s]} | 1 worker, batch {os.environ.get('BATCH', '64')} | {fmt(v['sec4'], '{:.3f}')} | |")
md += ["", "All reference runs:", "", "| solver | tol | seconds | F | (F − F*)/F* | nnz |", "|---|---|---|---|---|---|"]
for r in refs:
    md.append(f"| {r['solver']} | {r['tol']:g} | {r['seconds']:.3f} | {r['objective']:.12g} | {(r['objective'] - fstar) / fstar:.1e} | {r['nnz']} |")
md += ["", "## LDA: word rotation vs the data-parallel ESSP trainer (SpamAssassin, all documents)", "",
       "| run | seconds | final LL | LL gain / s | seconds to the worst run's final LL |", "|---|---|---|---|---|"]
for name, t, ll, gain, pts in lda_rows:
    reach = next((p["elapsed_s"] for p in pts if p["loglik"] >= target), None)
    md.append(f"| {name} | {t:.2f} | {ll:.6g} | {gain:.3g} | {fmt(reach, '{:.2f}')} |")
md += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
# REPORT.md: the hand-written findings above the marker are kept; everything below it is regenerated.
marker = "<!-- generated: begin -->"
path = os.path.join(out, "REPORT.md")
old = open(path).read() if os.path.exists(path) else ""
head = old.split(marker, 1)[0] if marker in old else "# The STRADS experiment\n\n"
open(path, "w").write(head + marker + "\n" + "\n".join(md))
print("\n".join(md))
