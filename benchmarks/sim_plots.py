#!/usr/bin/env python3
"""Draws the plots of benchmarks/results/sim/REPORT.md (the simulated cluster) from its raw results.

  validate_per_iteration.png, validate_time_to_target.png   validate_*.json, validate*/validate*.json
      (sim_validate.py): simulated against real seconds per iteration / to target, medians and
      min-max over seeds, with y = x and +-10% / +-25%.
  study1_ms_per_iteration_<platform>.png, study1_rmse_vs_time_<platform>_<workers>.png
      consistency*/runs.json (sim_study_consistency.py): time per iteration against workers per
      model; test RMSE against simulated time per model (every seed; the first thick).
  study3_lasso_time_to_target.png, study3_lasso_rounds_per_s.png, study3_lda_loglik_vs_time_<W>.png
      strads/study_lasso.json, strads/study_lda.json (sim_study_strads.py).
  sim_cost.png   scale_*.txt (sim_scale.sh and notes): process wall time and peak memory
      against simulated workers.

Usage: python3 benchmarks/sim_plots.py [--results benchmarks/results/sim] [--out RESULTS/plots]
                                       [--validate FILE ...] [--study1 FILE ...]
(--validate and --study1 pick one commit's files: the defaults take every file, of every commit.)
Needs gnuplot (bash scripts/deps.sh gnuplot-nox). Writes *.gp and *.dat in the out folder, runs gnuplot on
them, deletes them; prints one line per PNG, or which input a skipped plot lacks."""
import argparse, glob, json, math, os, re, shutil, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PT = [7, 5, 9, 13, 11, 15]  # filled circle, square, triangles, diamond, pentagon
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f"]
NAMES = {"ps_essp2": "data-parallel PS, essp s=2", "rotation": "word rotation (STRADS)", "shotgun": "Shotgun (random)"}
TERM = None


def render(out, name, body, blocks, size="900,560"):
    """blocks: lists of rows, written as the data sets 'index 0', 'index 1', ... of NAME.dat."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".dat"), "w") as f:
        f.write("\n\n\n".join("\n".join(" ".join(str(v) for v in r) for r in b) for b in blocks) + "\n")
    with open(os.path.join(out, name + ".gp"), "w") as f:
        f.write(f"set terminal {TERM} noenhanced size {size}\nset output '{name}.png'\nset grid\n"
                f"set key box opaque\n{body.replace('DAT', repr(name + '.dat'))}\n")
    subprocess.run(["gnuplot", name + ".gp"], cwd=out, check=True)
    for ext in (".gp", ".dat"):
        os.remove(os.path.join(out, name + ext))
    print(os.path.join(out, name + ".png"))


def mmm(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None


def lc(i):
    return f"lc rgb '{COLORS[i % len(COLORS)]}'"


def pretty(model):
    if model in NAMES:
        return NAMES[model]
    m = re.fullmatch(r"([a-z_]+?)(\d+)", model)
    return f"{m.group(1)} {'v' if m.group(1) == 'vap' else 's'}={m.group(2)}" if m else model.replace("_", " ")


def model_order(m):
    base = re.sub(r"\d+$", "", m)
    return (["bsp", "ssp", "essp", "vap"].index(base) if base in ["bsp", "ssp", "essp", "vap"] else 9, m)


def log_tics(lo, hi):
    """1-2-5 tics from lo to hi (gnuplot labels only the decades of a log axis)."""
    tics = [m * 10 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in ((1, 2, 5) if hi / lo > 10 else (1, 1.5, 2, 3, 5, 7))]
    return "(" + ", ".join(f"{t:g}" for t in tics if lo <= t <= hi) + ")"


def log2_workers(ws, extra=""):
    tics = ", ".join(str(w) for w in sorted(ws))
    return (f"set logscale x 2\nset xtics ({tics})\nset xrange [{min(ws) / 1.4}:{max(ws) * 1.4}]\n"
            f"set xlabel 'simulated workers{extra}'\n")


def validation(out, files):
    rows, seen, tags = [], set(), []
    for f in files:
        parent, name = os.path.split(os.path.abspath(f)[:-len(".json")])
        stem = f"{os.path.basename(parent)}/{name}" if os.path.basename(parent).startswith("validate") else name
        tag = " ".join(p for p in re.split(r"[/_]", stem) if p not in ("validate", "mf", "lda", "lasso")) or stem
        for r in json.load(open(f)):
            key = (r["trainer"], r["consistency"], r.get("processes", 1), r["workers"], str(r["measured_s_per_it"]), str(r["predicted_s_per_it"]))
            if key not in seen:  # validate/validate.json repeats validate_mf_976a8d2.json
                seen.add(key)
                tags += [tag] if tag not in tags else []
                rows.append((tag, r))
    configs = sorted({(r["trainer"], r["consistency"], r.get("processes", 1), r["workers"]) for _, r in rows})
    for png, mk, pk, what in (("validate_per_iteration", "measured_s_per_it", "predicted_s_per_it", "seconds per iteration"),
                              ("validate_time_to_target", "measured_tt", "predicted_tt", "seconds to target")):
        blocks, plots, vals, titled = [], [], [], set()
        for ci, (tr, cons, p, w) in enumerate(configs):
            for ti, tag in enumerate(tags):
                for t, r in rows:
                    if t == tag and (r["trainer"], r["consistency"], r.get("processes", 1), r["workers"]) == (tr, cons, p, w):
                        m, s = mmm(r[mk]), mmm(r[pk])
                        if m and s:
                            blocks.append([(m[0], s[0], m[1], m[2], s[1], s[2])])
                            vals += [m[1], m[2], s[1], s[2]]
                            label = f"{tr} {cons}{f' P={p}' if p > 1 else ''} W={w}"
                            plots.append(f"DAT index {len(blocks) - 1} with xyerrorbars {lc(ci)} pt {PT[ti % 6]} ps 1.3 "
                                         + ("notitle" if ci in titled else f"title '{label}'"))
                            titled.add(ci)
        if not blocks:
            print(f"skipped {png}.png: no row with {mk} and {pk}")
            continue
        keys = [f"keyentry with points lc black pt {PT[i % 6]} title 'run {t}'" for i, t in enumerate(tags)] if len(tags) > 1 else []
        lo, hi = min(vals) / 1.3, max(vals) * 1.3
        body = (f"set title 'Simulated against real runs on this machine: {what} (median, bars: min-max over seeds)'\n"
                f"set logscale xy\nset xrange [{lo}:{hi}]\nset yrange [{lo}:{hi}]\nset xtics {log_tics(lo, hi)}\n"
                f"set ytics {log_tics(lo, hi)}\nset xlabel 'real (measured) {what}, s'\nset ylabel 'simulated {what}, s'\n"
                "set key outside right top spacing 1.1\nset size ratio -1\n"
                "plot " + ", ".join(plots + keys + [
                    "x with lines lc black title 'y = x'", "1.1*x with lines dt 2 lc rgb 'gray40' title '±10%'",
                    "0.9*x with lines dt 2 lc rgb 'gray40' notitle", "1.25*x with lines dt 3 lc rgb 'gray60' title '±25%'",
                    "0.75*x with lines dt 3 lc rgb 'gray60' notitle"]))
        render(out, png, body, blocks, size="1200,700")


def traces(groups, scale=1.0):
    """groups: [(title, runs)]: every run's trace in its group's colour, the first seed's thick and in the key."""
    blocks, plots = [], []
    for i, (title, runs) in enumerate(groups):
        for j, r in enumerate(sorted(runs, key=lambda r: r["seed"])):
            blocks.append([(t, v / scale) for t, v in r["trace"] if v is not None])
            plots.append(f"DAT index {len(blocks) - 1} with linespoints {lc(i)} pt {PT[i]} "
                         + (f"lw 2.5 ps 1.3 title '{title}'" if j == 0 else "lw 1 ps 0.8 notitle"))
    return blocks, "set key title 'thick: first seed; thin: the others'\n", plots


def study1(out, res, files=None):
    files = files or sorted(glob.glob(os.path.join(res, "consistency*", "runs.json")))
    if not files:
        return print(f"skipped study1_*.png: no {res}/consistency*/runs.json")
    runs, targets = [], {}
    for f in files:  # 16/64 and 256 workers come from different files, each with its own target
        d = json.load(open(f))
        runs += d["runs"]
        targets.update({(r["platform"], r["workers"]): d["target"] for r in d["runs"]})
    for plat in sorted({r["platform"] for r in runs}):
        rs = [r for r in runs if r["platform"] == plat]
        models, ws = sorted({r["model"] for r in rs}, key=model_order), sorted({r["workers"] for r in rs})
        sel = lambda m, w: [r for r in rs if r["model"] == m and r["workers"] == w]
        blocks = [[(w,) + mmm([1000 * r["seconds"] / r["iterations"] for r in sel(m, w)]) for w in ws if sel(m, w)] for m in models]
        body = (f"set title 'Study 1, MF: simulated time per iteration on {plat} (median, bars: min-max over seeds)'\n"
                + log2_workers(ws, " (16 simulated hosts)") + "set ylabel 'simulated ms per iteration'\nset yrange [0:*]\n"
                "set key top left\nplot " + ", ".join(f"DAT index {i} with yerrorlines {lc(i)} pt {PT[i]} lw 2 title '{pretty(m)}'"
                                                    for i, m in enumerate(models)))
        render(out, f"study1_ms_per_iteration_{plat}", body, blocks)
        for w in ws:
            blocks, key, plots = traces([(pretty(m), sel(m, w)) for m in models if sel(m, w)])
            t = targets[(plat, w)]
            body = (f"set title 'Study 1, MF: test RMSE against simulated time, {plat}, {w} workers'\n"
                    f"set xlabel 'simulated time, s'\nset ylabel 'test RMSE (true model)'\nset key top right\n{key}"
                    f"plot {', '.join(plots)}, {t} with lines dt 2 lc black title 'target {t:.4f}'")
            render(out, f"study1_rmse_vs_time_{plat}_{w}", body, blocks)


def study3(out, res):
    path = os.path.join(res, "strads", "study_lasso.json")
    if not os.path.exists(path):
        print(f"skipped study3_lasso_*.png: no {path}")
    else:
        d = json.load(open(path))
        rs, plat = [r for r in d["runs"] if r.get("part") == "lasso"], d.get("platform", "?")
        methods, ws = list(dict.fromkeys(r["method"] for r in rs)), sorted({r["workers"] for r in rs})
        for png, fn, what, yl, opts in (
                ("study3_lasso_time_to_target", lambda r: r.get("to_target"), "time to target",
                 "simulated seconds to F <= F* (1 + 1e-4)", "set logscale y\nset key top left\n"),
                ("study3_lasso_rounds_per_s", lambda r: r["rounds"] / r["seconds"], "rounds per second",
                 "rounds (batches of coefficients) per simulated second", "set yrange [0:*]\nset key top right\n")):
            blocks, plots = [], []
            for i, m in enumerate(methods):
                mine = [r for r in rs if r["method"] == m]
                pts = [(w,) + mmm([fn(r) for r in mine if r["workers"] == w]) for w in ws if mmm([fn(r) for r in mine if r["workers"] == w])]
                missing = sum(1 for r in mine if fn(r) is None)
                title = pretty(m) + ("" if not missing else " (never reached)" if not pts else f" ({missing} runs never reached)")
                if pts:
                    blocks.append(pts)
                    plots.append(f"DAT index {len(blocks) - 1} with yerrorlines {lc(i)} pt {PT[i]} lw 2 title '{title}'")
                else:
                    plots.append(f"keyentry with linespoints {lc(i)} pt {PT[i]} lw 2 title '{title}'")
            body = (f"set title 'Study 3, Lasso on {plat}: {what} (median, bars: min-max over seeds)'\n"
                    + log2_workers(ws, " (16 simulated hosts)") + f"set ylabel '{yl}'\n{opts}plot " + ", ".join(plots))
            render(out, png, body, blocks)
    path = os.path.join(res, "strads", "study_lda.json")
    if not os.path.exists(path):
        return print(f"skipped study3_lda_*.png: no {path}")
    d = json.load(open(path))
    rs, target = [r for r in d["runs"] if r.get("part") == "lda"], d.get("parts", {}).get("lda", {}).get("target")
    methods = list(dict.fromkeys(r["method"] for r in rs))
    for w in sorted({r["workers"] for r in rs}):
        blocks, key, plots = traces([(pretty(m), [r for r in rs if r["method"] == m and r["workers"] == w]) for m in methods
                                     if any(r["method"] == m and r["workers"] == w for r in rs)], 1e6)
        tline = f", {target / 1e6} with lines dt 2 lc black title 'target {target / 1e6:.1f}M'" if target else ""
        body = (f"set title 'Study 3, LDA on {d.get('platform', '?')}, {w} workers: log-likelihood against simulated time'\n"
                f"set xlabel 'simulated time, s'\nset ylabel 'log-likelihood, millions'\nset key bottom right\n{key}"
                f"plot {', '.join(plots)}{tline}")
        render(out, f"study3_lda_loglik_vs_time_{w}", body, blocks)


def workload(head, default):
    for pat, name in (("ps_node", "ps_node (PS runtime alone)"), ("movielens", "MF MovieLens small"),
                      (r"\blda\b", "LDA 10m"), (r"\bmf\b|strata_mf", "MF 10m")):
        if re.search(pat, head, re.I):
            return name
    return default


def sim_cost(out, res):
    files = sorted(glob.glob(os.path.join(res, "scale_*.txt")))
    if not files:
        return print(f"skipped sim_cost.png: no {res}/scale_*.txt")
    blocks, section = [], "MF 10m"  # the first blocks of scale_2026-12-07.txt name no trainer: sim_scale.sh's MF
    for line in (l.rstrip() for f in files for l in open(f)):
        if line.startswith(("== ", "-- ")):  # a run, or a section of runs ("== LDA 10m ...", then "-- ..." lines)
            head, prev = line[3:], blocks[-1] if blocks else {}
            if line.startswith("=="):
                section = workload(head, "MF 10m")
            m, hx = re.search(r"= (\d+) workers", head), re.search(r"(\d+) (?:hosts )?x (\d+)", head)
            w = int(m.group(1)) if m else int(hx.group(1)) * int(hx.group(2)) if hx else prev.get("workers") if head.startswith("the same") else None
            blocks.append({"workers": w, "kind": workload(head, section)})
        elif blocks and (m := re.match(r"sim: .*? ([\d.]+) simulated s in|SIMULATED seconds=([\d.]+)", line)):
            blocks[-1]["sim_s"] = float(m.group(1) or m.group(2))
        elif blocks and (m := re.match(r"process: ([\d.]+) s wall, (\d+) KB peak", line)):
            blocks[-1]["wall"], blocks[-1]["gb"] = float(m.group(1)), int(m.group(2)) / 1e6
    done = [b for b in blocks if all(b.get(k) is not None for k in ("workers", "sim_s", "wall", "gb"))]  # finished runs
    if not done:
        return print("skipped sim_cost.png: no block of scale_*.txt has workers, a sim line and a process line")
    kinds, ws = list(dict.fromkeys(b["kind"] for b in done)), sorted({b["workers"] for b in done})
    data, plots = [], []
    for i, k in enumerate(kinds):
        data.append([(b["workers"], b["wall"], b["gb"]) for b in done if b["kind"] == k])
        plots += [f"keyentry with points {lc(i)} pt 7 ps 1.6 title '{k}'",
                  f"DAT index {i} using ($1/1.08):2 with points {lc(i)} pt 7 ps 1.6 notitle",
                  f"DAT index {i} using ($1*1.08):3 axes x1y2 with points {lc(i)} pt 6 ps 1.8 lw 2 notitle"]
    plots += ["keyentry with points lc black pt 7 ps 1.6 title 'filled, left of the tic: process wall time'",
              "keyentry with points lc black pt 6 ps 1.8 lw 2 title 'open, right of the tic: peak memory'"]
    body = ("set title 'Cost of simulating: one process runs the whole simulated cluster (one point per run)'\n"
            + log2_workers(ws, " (hosts x workers per host)") + f"set logscale y\nset ytics {log_tics(1, 1e4)}\n"
            "set ylabel 'process wall time, s (log scale)'\nset y2label 'peak memory, GB'\nset y2range [0:*]\n"
            "set y2tics\nset ytics nomirror\nset key top left\nplot " + ", ".join(plots))
    render(out, "sim_cost", body, data)


def main():
    global TERM
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results", "sim"))
    ap.add_argument("--out", help="default: RESULTS/plots")
    ap.add_argument("--validate", nargs="+", metavar="FILE",
                    help="sim_validate.py's json files (default: RESULTS/validate_*.json and RESULTS/validate*/validate*.json)")
    ap.add_argument("--study1", nargs="+", metavar="FILE",
                    help="sim_study_consistency.py's runs.json files, one commit's (default: RESULTS/consistency*/runs.json)")
    a = ap.parse_args()
    if not shutil.which("gnuplot"):
        sys.exit("sim_plots.py: gnuplot is missing: run `bash scripts/deps.sh gnuplot-nox`")
    TERM = "pngcairo" if subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True).returncode == 0 else "png"
    out = a.out or os.path.join(a.results, "plots")
    files = a.validate or (sorted(glob.glob(os.path.join(a.results, "validate_*.json")))
                           + sorted(glob.glob(os.path.join(a.results, "validate*", "validate*.json"))))
    if files:
        validation(out, files)
    else:
        print(f"skipped validate_*.png: no {a.results}/validate_*.json or validate*/validate*.json")
    study1(out, a.results, a.study1)
    study3(out, a.results)
    sim_cost(out, a.results)


if __name__ == "__main__":
    main()
