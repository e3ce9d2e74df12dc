#!/usr/bin/env python3
"""Summarises benchmarks/results/essp/metrics/*.jsonl[.gz] (written by essp_experiment.sh) into
REPORT.md, summary.json and gnuplot scripts (*.gp, rendered by the experiment script).

Usage: report.py OUT_DIR "knobs text" [wall seconds]

Trace names: {transport}_{straggler}_{app}_{model tag}_seed{n}.jsonl, transport inproc|tcp,
straggler none|slow, model tag bsp, ssp_s1, essp_s3, vap, async. Objectives are the true model's
at the evaluated iterations (--eval-every; null elsewhere)."""
import glob, gzip, json, math, os, re, statistics, sys

out, knobs = sys.argv[1], sys.argv[2]
wall = sys.argv[3] if len(sys.argv) > 3 else "?"
NAME = re.compile(r"^(inproc|tcp)_(none|slow)_(mf|lda)_(.+)_seed(\d+)\.jsonl(\.gz)?$")
# Target: the objective BSP reaches (mean over seeds) at the evaluated iteration nearest half its
# iterations (at or before), in the same scenario: a level every bounded model should reach.
SIGN = {"mf": -1, "lda": +1}  # +1: larger is better


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        lines = [json.loads(l) for l in f if l.strip()]
    return lines[0]["config"], lines[1:]


runs = {}  # (tr, st, app) -> tag -> [run]
for f in sorted(glob.glob(os.path.join(out, "metrics", "*.jsonl*"))):
    m = NAME.match(os.path.basename(f))
    if not m:
        continue
    tr, st, app, tag, seed = m.group(1), m.group(2), m.group(3), m.group(4), int(m.group(5))
    try:
        cfg, its = load(f)
    except Exception as e:  # an unfinished run
        print(f"skipping {f}: {e}", file=sys.stderr)
        continue
    summ_path = re.sub(r"\.jsonl(\.gz)?$", ".summary", f)
    summ = open(summ_path).read() if os.path.exists(summ_path) else ""
    runs.setdefault((tr, st, app), {}).setdefault(tag, []).append({"seed": seed, "cfg": cfg, "its": its, "summary": summ})


def order(tag):
    base = tag.split("_")[0]
    s = int(tag.split("_s")[1]) if "_s" in tag else 0
    return (["bsp", "ssp", "essp", "vap", "async"].index(base), s)


def evaluated(run):
    return [(it["iteration"], it["elapsed_s"], it["objective"]) for it in run["its"] if it.get("objective") is not None]


def hist(runs_, key):
    h = {}
    for r in runs_:
        for it in r["its"]:
            for k, v in it.get(key, {}).get("hist", {}).items():
                h[int(k)] = h.get(int(k), 0) + v
    return h


def hstats(h):
    n = sum(h.values())
    if not n:
        return None
    mean = sum(k * v for k, v in h.items()) / n
    return {"n": n, "mean": mean, "min": min(h), "max": max(h), "neg": sum(v for k, v in h.items() if k < 0) / n,
            "le0": sum(v for k, v in h.items() if k <= 0) / n}


def field(summary, key):
    m = re.search(r"\b%s=([^ \n]+)" % key, summary)
    return m.group(1) if m else None


def mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.mean(xs) if xs else None


def fmt(x, spec=".3g"):
    return "—" if x is None else format(x, spec)


summary = {}
gp = []
dat = []
report = []
for key in sorted(runs, key=lambda k: (k[2], k[0], k[1])):
    tr, st, app = key
    rs = runs[key]
    tags = sorted(rs, key=order)
    sgn = SIGN[app]
    obj0 = mean([evaluated(r)[0][2] for r in rs.get("bsp", rs[tags[0]]) if evaluated(r)])
    bsp_final = mean([evaluated(r)[-1][2] for r in rs.get("bsp", []) if evaluated(r)])
    half_at, halves = None, []
    for r in rs.get("bsp", []):
        ev = evaluated(r)
        if ev:
            half = [p for p in ev if p[0] <= ev[-1][0] / 2]
            half_at = half[-1][0]
            halves.append(half[-1][2])
    target = mean(halves)
    rows = {}
    for t in tags:
        per = []
        for r in rs[t]:
            ev = evaluated(r)
            hit = next(((i, s) for i, s, o in ev if target is not None and sgn * (o - target) >= 0), (None, None))
            at_half = [o for i, _, o in ev if i == half_at]
            per.append({"seed": r["seed"], "final": ev[-1][2] if ev else None, "half": at_half[0] if at_half else None, "iters": ev[-1][0] if ev else None,
                        "seconds": ev[-1][1] if ev else None, "hit_iter": hit[0], "hit_s": hit[1],
                        "rmse": float(field(r["summary"], "test_rmse")) if app == "mf" and field(r["summary"], "test_rmse") else None})
        reached = [p for p in per if p["hit_s"] is not None]
        rows[t] = {
            "seeds": len(per),
            "final": mean([p["final"] for p in per]),
            "half": mean([p["half"] for p in per]),
            "seconds": mean([p["seconds"] for p in per]),
            "hit_iter": mean([p["hit_iter"] for p in reached]) if len(reached) == len(per) else None,
            "hit_s": mean([p["hit_s"] for p in reached]) if len(reached) == len(per) else None,
            "reached": f"{len(reached)}/{len(per)}",
            "rmse": mean([p["rmse"] for p in per]),
            "writer": hstats(hist(rs[t], "writer_staleness")),
            "minclock": hstats(hist(rs[t], "staleness")),
            "writer_hist": hist(rs[t], "writer_staleness"),
        }
    summary["/".join(key)] = {"target": target, "target_iteration": half_at, "objective0": obj0, "models": {t: {k: v for k, v in rows[t].items() if k != "writer_hist"} for t in tags}}

    # Plots: objective vs iteration and vs seconds (seed-mean at each evaluated iteration).
    label = f"{app}_{tr}_{st}"
    for t in tags:
        pts = {}
        for r in rs[t]:
            for i, s, o in evaluated(r):
                pts.setdefault(i, []).append((s, o))
        fn = f"{label}_{t}.dat"
        with open(os.path.join(out, fn), "w") as d:
            for i in sorted(pts):
                d.write(f"{i} {statistics.mean(p[0] for p in pts[i])} {statistics.mean(p[1] for p in pts[i])}\n")
        h = rows[t]["writer_hist"]
        n = sum(h.values())
        with open(os.path.join(out, f"{label}_{t}_hist.dat"), "w") as d:
            for k in sorted(h):
                if -12 <= k <= 12 and n:
                    d.write(f"{k} {h[k] / n}\n")
    ylabel = "training objective (true model)" if app == "mf" else "joint log-likelihood (true model)"
    tline = f"set arrow from graph 0, first {target} to graph 1, first {target} nohead dt 2\n" if target is not None else ""
    for x, col, xl in (("iter", 1, "iteration (clock)"), ("time", 2, "seconds (evaluation excluded)")):
        plots = ", ".join(f"'{label}_{t}.dat' using {col}:3 with linespoints title '{t}'" for t in tags)
        yr = ""
        if app == "mf" and target is not None:
            yr = f"set yrange [*:{bsp_final + 2 * (target - bsp_final)}]\n"
        gp.append((f"{label}_vs_{x}.gp", f"set terminal pngcairo noenhanced size 760,460\nset output '{label}_vs_{x}.png'\n"
                   f"set title '{app} {tr} straggler={st}'\nset xlabel '{xl}'\nset ylabel '{ylabel}'\nset key outside right\n{yr}{tline}set grid\nplot {plots}\n"))
    ht = [t for t in tags if t != "bsp"]
    plots = ", ".join(f"'{label}_{t}_hist.dat' using 1:2 with linespoints title '{t}'" for t in ht)
    gp.append((f"{label}_writer_staleness.gp", f"set terminal pngcairo noenhanced size 760,460\nset output '{label}_writer_staleness.png'\n"
               f"set title 'per-writer staleness, {app} {tr} straggler={st}'\nset xlabel 'per-writer staleness (c-1) - t_q (clipped to -12..12)'\n"
               f"set ylabel 'fraction of (read, writer) pairs'\nset key outside right\nset grid\nplot {plots}\n"))

    report.append(f"### {app.upper()} over {'delayed<inproc>' if tr == 'inproc' else 'TCP processes'}, straggler {'worker ' + str(3) + ' (messages x FACTOR slower)' if st == 'slow' else 'none'}\n")
    report.append(f"![]({label}_vs_iter.png) ![]({label}_vs_time.png) ![]({label}_writer_staleness.png)\n")
    report.append(f"Target objective: {fmt(target, '.6g')} (BSP's at iteration {half_at}; initial {fmt(obj0, '.6g')}, BSP's final {fmt(bsp_final, '.6g')}).\n")
    hdr = "| model | seeds | per-writer mean | per-writer min..max | per-writer < 0 | per-writer <= 0 | min-clock mean | objective at target iteration | final objective | " + \
          ("test RMSE | " if app == "mf" else "") + "reached | iterations to target | seconds to target | seconds (run) |"
    report.append(hdr)
    report.append("|" + "---|" * hdr.count("|")[:-1] if False else "|" + "---|" * (hdr.count("|") - 1))
    for t in tags:
        r = rows[t]
        w, mc = r["writer"], r["minclock"]
        cells = [t, str(r["seeds"]), fmt(w and w["mean"], ".2f"), f"{w['min']}..{w['max']}" if w else "—", fmt(w and w["neg"], ".2f"),
                 fmt(w and w["le0"], ".2f"), fmt(mc and mc["mean"], ".2f"), fmt(r["half"], ".7g"), fmt(r["final"], ".7g")]
        if app == "mf":
            cells.append(fmt(r["rmse"], ".4f"))
        cells += [r["reached"], fmt(r["hit_iter"], ".3g"), fmt(r["hit_s"], ".3g"), fmt(r["seconds"], ".3g")]
        report.append("| " + " | ".join(cells) + " |")
    report.append("")

# Claims, ESSP against SSP at the same s, per scenario.
claims = []
for k, v in summary.items():
    ms = v["models"]
    svals = sorted({int(t.split("_s")[1]) for t in ms if t.startswith("ssp_s")})
    for s in svals:
        a, b = ms.get(f"ssp_s{s}"), ms.get(f"essp_s{s}")
        if not a or not b:
            continue
        aw, bw = a["writer"], b["writer"]
        claims.append({
            "scenario": k, "s": s,
            "staleness_ssp": aw and aw["mean"], "staleness_essp": bw and bw["mean"],
            "neg_ssp": aw and aw["neg"], "neg_essp": bw and bw["neg"],
            "iters_ssp": a["hit_iter"], "iters_essp": b["hit_iter"],
            "final_ssp": a["final"], "final_essp": b["final"], "half_ssp": a["half"], "half_essp": b["half"],
            "sec_ssp": a["hit_s"], "sec_essp": b["hit_s"],
        })
    if len(svals) >= 2:
        for m in ("ssp", "essp"):
            secs = [ms.get(f"{m}_s{s}", {}).get("hit_s") for s in svals]
            v.setdefault("sensitivity", {})[m] = {"s": svals, "seconds_to_target": secs}
summary["claims"] = claims

with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1, sort_keys=True)
for name, text in gp:
    with open(os.path.join(out, name), "w") as f:
        f.write(text)

lines = [
    "# ESSP experiment: per-writer staleness and convergence of the true model",
    "",
    f"Command: `bash benchmarks/essp_experiment.sh` (knobs: `{knobs}`); wall time of the runs and report {wall} s.",
    "",
    "Generated by `benchmarks/essp/report.py` from `metrics/*.jsonl[.gz]` (one JSON Lines trace per run, "
    "`{transport}_{straggler}_{app}_{model}_seed{n}`); `summary.json` holds every figure below. A hand-written "
    "verdict follows the generated part.",
    "",
    "Definitions (README, \"Consistency models, precisely\"): per-writer staleness = (c − 1) − t_q for every read and every "
    "other worker q, t_q the clock tag of q's newest flush the row held; min-clock staleness = (c − 1) − t, t the clock "
    "through which the row held every worker's updates. Objectives are the true model's, evaluated on a consistent "
    "snapshot of the tables (`--eval-every`), seed-means at each evaluated iteration; seconds exclude evaluation. "
    "\"Reached\": seeds whose run reached the target; iterations/seconds to target are means over seeds and shown only "
    "when every seed reached it.",
    "",
    "## ESSP against SSP at the same s (generated)",
    "",
    "| scenario | s | per-writer mean SSP | ESSP | share < 0 SSP | ESSP | objective at target iteration SSP | ESSP | iterations to target SSP | ESSP | final objective SSP | ESSP | seconds to target SSP | ESSP |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]
for c in claims:
    lines.append(f"| {c['scenario']} | {c['s']} | {fmt(c['staleness_ssp'], '.2f')} | {fmt(c['staleness_essp'], '.2f')} | {fmt(c['neg_ssp'], '.2f')} | "
                 f"{fmt(c['neg_essp'], '.2f')} | {fmt(c['half_ssp'], '.7g')} | {fmt(c['half_essp'], '.7g')} | {fmt(c['iters_ssp'], '.3g')} | {fmt(c['iters_essp'], '.3g')} | {fmt(c['final_ssp'], '.6g')} | "
                 f"{fmt(c['final_essp'], '.6g')} | {fmt(c['sec_ssp'], '.3g')} | {fmt(c['sec_essp'], '.3g')} |")
lines.append("")
sens = [(k, v["sensitivity"]) for k, v in summary.items() if isinstance(v, dict) and "sensitivity" in v]
if sens:
    lines.append("Sensitivity to s (seconds to target at each s):")
    lines.append("")
    for k, sv in sens:
        lines.append(f"- {k}: SSP {sv['ssp']['seconds_to_target']}, ESSP {sv['essp']['seconds_to_target']} (s = {sv['ssp']['s']})")
    lines.append("")
lines.append("## Per scenario (generated)")
lines.append("")
lines += report
verdict = os.path.join(out, "VERDICT.md")
if os.path.exists(verdict):
    lines.append(open(verdict).read())
with open(os.path.join(out, "REPORT.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
