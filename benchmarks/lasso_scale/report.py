"""Summarises benchmarks/lasso_scale.sh's raw file: per program the time to F <= F*(1 + 1e-4)
(whole process, see the script's protocol), median and range over the repetitions, the ratio of
medians against glmnet and sklearn, peak RSS, and the support recovery against the true beta.

  python3 report.py RAW --fstar FSTAR.json --truth truth.beta.txt --glmnet-beta B.txt --strata-beta B1 B2 ...
"""
import argparse
import json
import os
import re
import statistics

ap = argparse.ArgumentParser()
ap.add_argument("raw")
ap.add_argument("--fstar", required=True)
ap.add_argument("--truth", required=True)
ap.add_argument("--glmnet-beta")
ap.add_argument("--strata-beta", nargs="*", default=[])
a = ap.parse_args()
fs = json.load(open(a.fstar))
target = fs["fstar"] * (1 + 1e-4)


def kv(line):
    return dict(re.findall(r"(\w+)=(\S+)", line))


runs = {}
for line in open(a.raw):
    if not line.startswith("run "):
        continue
    f = kv(line)
    prog, wall, rss = f["prog"], float(f["wall"]), int(f["rss_kb"]) / 1024
    r = {"wall": wall, "rss": rss, "reached": True, "F": None, "solve": None}
    if prog.startswith("strata_"):
        pts = [json.loads(l) for l in open(f["trace"])][1:] if os.path.exists(f["trace"]) else []
        hit = next((p for p in pts if p["objective"] <= target), None)
        secs = float(f.get("seconds", "nan"))
        r["read"] = float(f.get("read_seconds", "nan"))
        r["F"] = float(f.get("objective", "nan"))
        if hit is None:
            r["reached"] = False
            r["ttt"] = None
            r["F"] = pts[-1]["objective"] if pts else r["F"]
        else:
            r["ttt"] = wall - (secs - hit["elapsed_s"])
            r["solve"] = hit["elapsed_s"]
    else:
        r["F"] = float(f["F"])
        r["reached"] = r["F"] <= target
        r["ttt"] = wall if r["reached"] else None
        r["read"] = float(f.get("read_seconds", "nan")) + float(f.get("convert_wall", 0))
        r["solve"] = float(f.get("fit_seconds", "nan"))
    runs.setdefault(prog, []).append(r)


def med(xs):
    xs = [x for x in xs if x is not None]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None


print(f"\nF* = {fs['fstar']:.12g} (glmnet, thresh {fs['thresh']}), lambda = {fs['lambda']:.6g} = "
      f"{fs['lambda_fraction']} lambda_max, nnz(F*) = {fs['nnz']}; target F <= {target:.12g}")
base = {p: med([r["ttt"] for r in runs.get(p, [])]) for p in ("glmnet", "sklearn")}
print("\n| program | reached | time to target, s: median (range) | vs glmnet | vs sklearn | read s (median) | solve s (median) | peak RSS MB (max) |")
print("|---|---|---|---|---|---|---|---|")
for prog, rs in runs.items():
    m = med([r["ttt"] for r in rs])
    reached = sum(r["reached"] for r in rs)
    t = f"{m[0]:.1f} ({m[1]:.1f}–{m[2]:.1f})" if m else f"not reached (F = {statistics.median(r['F'] for r in rs):.6g} at the cap; wall {med([r['wall'] for r in rs])[0]:.1f} s)"
    vs = lambda b: f"{m[0] / b[0]:.2f}x" if m and b else "–"
    rd, sv = med([r.get("read") for r in rs]), med([r.get("solve") for r in rs])
    print(f"| {prog} | {reached}/{len(rs)} | {t} | {vs(base['glmnet'])} | {vs(base['sklearn'])} | "
          f"{rd[0]:.1f} | {sv[0]:.2f} | {max(r['rss'] for r in rs):.0f} |" if rd and sv else
          f"| {prog} | {reached}/{len(rs)} | {t} | {vs(base['glmnet'])} | {vs(base['sklearn'])} | {rd[0] if rd else '–'} | – | {max(r['rss'] for r in rs):.0f} |")

truth = {int(l.split()[0]) for l in open(a.truth) if l.strip()}


def support_line(name, sup):
    tp = len(sup & truth)
    prec = tp / len(sup) if sup else 0
    print(f"| {name} | {len(sup)} | {tp} | {prec:.3f} | {tp / len(truth):.3f} |")


print(f"\nSupport recovery against the true beta ({len(truth)} non-zeros):\n")
print("| solution | nnz | true positives | precision | recall |")
print("|---|---|---|---|---|")
if a.glmnet_beta and os.path.exists(a.glmnet_beta):
    support_line("glmnet at F* (thresh 1e-14)", {int(l.split()[0]) for l in open(a.glmnet_beta) if l.strip()})
for path in a.strata_beta:
    if os.path.exists(path):
        sup = {j + 1 for j, l in enumerate(open(path)) if float(l) != 0}
        support_line("strata " + os.path.basename(path)[5:-4] + " (last repetition, stopped at gap <= 1e-4 F)", sup)
