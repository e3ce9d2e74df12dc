#!/usr/bin/env python3
"""Turns benchmarks/results/cost/{mf,lda,lasso}.json (strata_plan --measure) into gnuplot scripts and
the measured tables of REPORT.md. Usage: report.py OUT_DIR (called by cost_experiment.sh); each
trainer's knobs come from OUT_DIR/<trainer>.knobs, written by the run that made its JSON.
The prose of REPORT.md outside the markers is kept; the generated part is rewritten."""
import json, os, statistics, sys

out = sys.argv[1]
runs = {t: json.load(open(os.path.join(out, t + ".json"))) for t in ("mf", "lda", "lasso") if os.path.exists(os.path.join(out, t + ".json"))}

def knobs_of(t):
    path = os.path.join(out, t + ".knobs")
    return open(path).read().strip() if os.path.exists(path) else "(not recorded)"

def rel(p, m):
    return abs(p - m) / abs(m)

def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"

def med(v):
    return statistics.median(v) if v else None

gen = []
gp = []
quantities = {("mf", "metric"): "test RMSE", ("lda", "objective"): "-loglik per token", ("lasso", "metric"): "duality gap",
              ("lasso", "objective"): "F(beta)"}
for t, d in runs.items():
    cs = d["heldout"]["configurations"]
    s = d["heldout"]["summary"]
    quantity = quantities.get((t, d["quantity"]), d["quantity"])
    gen += [f"## {t.upper() if t != 'lasso' else 'Lasso'}", "", f"Command: `bash benchmarks/cost_experiment.sh` (knobs: `{knobs_of(t)}`).", ""]
    gen += [f"Probes: {len(d['probes'])} runs in {d['probe_seconds']:.1f} s (budget {d['budget']:.0f} s); "
            f"target: {quantity} <= {d['target']:g}; fitted f* = {d['convergence_model']['optimum']:.4g}.", ""]
    gen += ["| probe | s/iteration |", "|---|---|"]
    for p in d["probes"]:
        c = p["config"]
        label = f"{c['consistency']}" + (f" s={c['staleness']:g}" if c["consistency"] in ("ssp", "essp") else "") + f" m={c['workers']:g} scale={c['scale']:g}"
        gen.append(f"| {label} | {p['seconds_per_iteration']:.4f} |")
    gen += ["", "System model θ (seconds per unit of each term): " +
            ", ".join(f"{k} = {v:.4g}" for k, v in d["system_model"]["terms"].items()) + ".", ""]
    spi = [rel(c["predicted_seconds_per_iteration"], c["measured_seconds_per_iteration"]) for c in cs]
    tt = [(c, rel(c["predicted_seconds"], c["measured_seconds"])) for c in cs
          if c["predicted_seconds"] is not None and c["measured_seconds"] is not None and c["measured_seconds"] >= 0]
    def by(pred):
        return med([e for c, e in zip(cs, spi) if pred(c)])
    def by_t(pred):
        return med([e for c, e in tt if pred(c)])
    groups = [("all", lambda c: True), ("m <= 3 (probed worker counts)", lambda c: c["config"]["workers"] <= 3),
              ("m = 4 (never probed; oversubscribes 2 cores)", lambda c: c["config"]["workers"] == 4)]
    if t == "lasso":  # STRADS rounds: bsp only; the held-out axis besides m is the data fraction
        for frac in sorted({c["config"]["scale"] for c in cs}):
            groups.append((f"scale {frac:g} (never probed)", lambda c, x=frac: c["config"]["scale"] == x))
    else:
        for name in ("bsp", "ssp", "essp", "vap", "async"):
            groups.append((name, lambda c, n=name: c["config"]["consistency"] == n))
    gen += ["| held-out group | configs | median error, s/iteration | median error, time to target |", "|---|---|---|---|"]
    for name, pred in groups:
        n = sum(1 for c in cs if pred(c))
        gen.append(f"| {name} | {n} | {pct(by(pred))} | {pct(by_t(pred))} |")
    missed = [c["label"] for c in cs if c["measured_seconds"] is None or c["measured_seconds"] < 0]
    gen += ["", f"Time to target: {len(tt)} of {len(cs)} configurations reached the target in the measured run"
            + (f"; not reached: {', '.join(missed)}" if missed else "") + ".", ""]
    slow = s["pick_slowdown"]
    gen += [f"Planner's pick: **{s['pick']}**; measured best: **{s['measured_best']}**; the pick took "
            + ("never reached the target" if slow is None else f"{100 * slow:.1f}% longer than the measured best") + ".", ""]
    gen += ["| configuration | predicted s/it | measured s/it | error | predicted its | measured its | predicted s | measured s | error |",
            "|---|---|---|---|---|---|---|---|---|"]
    for c in cs:
        ms = c["measured_seconds"]
        ps = c["predicted_seconds"]
        e2 = pct(rel(ps, ms)) if ps is not None and ms is not None and ms >= 0 else "-"
        gen.append(f"| {c['label']} | {c['predicted_seconds_per_iteration']:.4f} | {c['measured_seconds_per_iteration']:.4f} | "
                   f"{pct(rel(c['predicted_seconds_per_iteration'], c['measured_seconds_per_iteration']))} | "
                   f"{'-' if c['predicted_iterations'] is None else int(c['predicted_iterations'])} | "
                   f"{'-' if c['measured_iterations'] is None or c['measured_iterations'] < 0 else int(c['measured_iterations'])} | "
                   f"{'-' if ps is None else f'{ps:.2f}'} | {'-' if ms is None or ms < 0 else f'{ms:.2f}'} | {e2} |")
    gen += ["", f"![]({t}_time_per_iteration.png) ![]({t}_time_to_target.png)", ""]
    with open(os.path.join(out, f"{t}_spi.dat"), "w") as f:
        for c in cs:
            f.write(f"{c['measured_seconds_per_iteration']} {c['predicted_seconds_per_iteration']} {c['config']['workers']:g}\n")
    with open(os.path.join(out, f"{t}_tt.dat"), "w") as f:
        for c, _ in tt:
            f.write(f"{c['measured_seconds']} {c['predicted_seconds']} {c['config']['workers']:g}\n")
    for kind, title, dat in (("time_per_iteration", "seconds per iteration", "spi"), ("time_to_target", "seconds to target", "tt")):
        gp.append((f"{t}_{kind}.gp", f"""set terminal pngcairo size 560,480
set output '{t}_{kind}.png'
set title '{t.upper() if t != "lasso" else "Lasso"}: {title}, held-out configurations'
set xlabel 'measured'
set ylabel 'predicted'
set logscale xy
set key top left
set grid
plot '{t}_{dat}.dat' using 1:($3<4?$2:1/0) with points pt 7 title 'm <= 3', \\
     '{t}_{dat}.dat' using 1:($3==4?$2:1/0) with points pt 5 title 'm = 4 (not probed)', \\
     x with lines lt -1 title 'predicted = measured', 1.25*x with lines dt 2 lc rgb 'gray' title '+-25%', 0.75*x with lines dt 2 lc rgb 'gray' notitle
"""))

for name, text in gp:
    open(os.path.join(out, name), "w").write(text)

path = os.path.join(out, "REPORT.md")
begin, end = "<!-- generated: begin -->", "<!-- generated: end -->"
old = open(path).read() if os.path.exists(path) else f"# Cost models: measured prediction errors\n\n{begin}\n{end}\n"
if begin not in old:
    old += f"\n{begin}\n{end}\n"
head, rest = old.split(begin, 1)
tail = rest.split(end, 1)[1]
open(path, "w").write(head + begin + "\n" + "\n".join(gen) + "\n" + end + tail)
