#!/usr/bin/python3
"""Reads the outputs of benchmarks/load_test.sh and benchmarks/soak_test.sh (strata_load_node's
rank<r>_from<c>.json / .rss.csv) and writes REPORT.md, summary.json and RSS plots (SVG).

    benchmarks/reliability_report.py [--load DIR] [--soak DIR] [--out DIR]

Resident memory is "flat after warm-up" when, over the second half of a run (by time), the
least-squares slope of the RSS floor (the least RSS of each twentieth of the run, so that a
checkpoint's transient buffers do not count as growth) times that half's length stays within 5%
of the floor's mean; the slope of the raw samples is reported too (MB/min). Throughput is reported over the whole run and in steady state (the second
half, from the samples' clock counts). Exit status 1 when a check (lost update, equality) failed.
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

FLAT_FRACTION = 0.05


def read_csv(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append({k: float(v) for k, v in r.items()})
    return rows


def slope(xs, ys):
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0


def rss_stats(samples):
    """samples: dicts with t_s, rss_kb, worker_clocks, bytes_sent. Second half by time."""
    if len(samples) < 2:
        raise SystemExit("reliability_report: a run with fewer than 2 RSS samples (use a shorter --sample-ms)")
    t_end = samples[-1]["t_s"]
    half = [s for s in samples if s["t_s"] >= t_end / 2]
    if len(half) < 2:
        half = samples[-2:]
    xs = [s["t_s"] / 60 for s in half]
    ys = [s["rss_kb"] / 1024 for s in half]
    sl = slope(xs, ys)
    mean = sum(ys) / len(ys)
    span_min = (half[-1]["t_s"] - half[0]["t_s"]) / 60
    dt = half[-1]["t_s"] - half[0]["t_s"]
    # The floor: the least RSS of each window (a twentieth of the run, at least 5 s), so that a
    # checkpoint's transient buffers (a few samples high) do not read as growth; a leak raises it.
    win = max(5.0, t_end / 20)
    floors = {}
    for s in samples:
        k = int(s["t_s"] // win)
        floors[k] = min(floors.get(k, s["rss_kb"]), s["rss_kb"])
    fl = [((k + 0.5) * win, v / 1024) for k, v in sorted(floors.items()) if (k + 0.5) * win >= t_end / 2]
    if len(fl) < 2:
        fl = [((k + 0.5) * win, v / 1024) for k, v in sorted(floors.items())][-2:]
    fsl = slope([t / 60 for t, _ in fl], [y for _, y in fl])
    fmean = sum(y for _, y in fl) / len(fl)
    fspan = (fl[-1][0] - fl[0][0]) / 60
    return {
        "samples": len(samples),
        "duration_s": round(t_end, 1),
        "second_half_samples": len(half),
        "rss_mb_start_of_second_half": round(ys[0], 1),
        "rss_mb_end": round(ys[-1], 1),
        "rss_mb_mean_second_half": round(mean, 1),
        "rss_mb_max": round(max(s["rss_kb"] for s in samples) / 1024, 1),
        "rss_slope_mb_per_min_second_half": round(sl, 3),
        "rss_drift_over_second_half_mb": round(sl * span_min, 2),
        "rss_floor_mb_second_half": [round(fl[0][1], 1), round(fl[-1][1], 1)],
        "rss_floor_slope_mb_per_min_second_half": round(fsl, 3),
        "flat": abs(fsl * fspan) <= FLAT_FRACTION * fmean,
        "steady_worker_clocks_per_s": round((half[-1]["worker_clocks"] - half[0]["worker_clocks"]) / dt, 2) if dt > 0 else None,
        "steady_bytes_per_s": round((half[-1]["bytes_sent"] - half[0]["bytes_sent"]) / dt, 1) if dt > 0 else None,
    }


def svg_plot(series, title, path, marks=()):
    """series: [(label, [(t_s, rss_mb)])]; a plain SVG line chart (no plotting library needed)."""
    W, H, L, R, T, B = 760, 320, 60, 150, 30, 40
    pts = [p for _, s in series for p in s]
    if not pts:
        return
    tmax = max(p[0] for p in pts) or 1
    ymax = max(p[1] for p in pts) * 1.1 or 1
    X = lambda t: L + (W - L - R) * t / tmax
    Y = lambda y: H - B - (H - T - B) * y / ymax
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>', f'<text x="{L}" y="18" font-size="13">{title}</text>',
           f'<line x1="{L}" y1="{H-B}" x2="{W-R}" y2="{H-B}" stroke="black"/>', f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>']
    for i in range(6):
        y = ymax * i / 5
        out.append(f'<text x="{L-6}" y="{Y(y)+4:.1f}" text-anchor="end">{y:.0f}</text>')
        out.append(f'<line x1="{L}" y1="{Y(y):.1f}" x2="{W-R}" y2="{Y(y):.1f}" stroke="#ddd"/>')
        t = tmax * i / 5
        out.append(f'<text x="{X(t):.1f}" y="{H-B+16}" text-anchor="middle">{t:.0f}</text>')
    out.append(f'<text x="{(L+W-R)/2}" y="{H-6}" text-anchor="middle">seconds</text>')
    out.append(f'<text x="14" y="{(T+H-B)/2}" transform="rotate(-90 14 {(T+H-B)/2})" text-anchor="middle">RSS (MB)</text>')
    for t, label in marks:
        out.append(f'<line x1="{X(t):.1f}" y1="{T}" x2="{X(t):.1f}" y2="{H-B}" stroke="#999" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{X(t)+3:.1f}" y="{T+10}" fill="#555">{label}</text>')
    for i, (label, s) in enumerate(series):
        c = colors[i % len(colors)]
        d = " ".join(f"{X(t):.1f},{Y(y):.1f}" for t, y in s)
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.3" points="{d}"/>')
        out.append(f'<text x="{W-R+8}" y="{T+14*i+10}" fill="{c}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def ranks_of(folder, suffix):
    files = glob.glob(os.path.join(folder, f"rank*_from*{suffix}"))
    key = lambda f: tuple(int(x) for x in re.findall(r"rank(\d+)_from(\d+)", f)[0])
    return sorted(files, key=key)


def load_section(load_dir, out_dir, summary, md, key="load", title="Load", note=""):
    env = open(os.path.join(load_dir, "env.txt")).read().strip() if os.path.exists(os.path.join(load_dir, "env.txt")) else ""
    md.append(f"## {title}\n")
    if note:
        md.append(note + "\n")
    md.append("```\n" + env + "\n```\n")
    models = sorted(d for d in os.listdir(load_dir) if os.path.isdir(os.path.join(load_dir, d)))
    summary[key] = {}
    ok = True
    digests = {}
    md.append("| model | rank | elapsed s | clocks/s (whole run) | worker clocks/s (steady) | incs/s | MB/s sent | RSS MB start of 2nd half → end | slope MB/min (2nd half) | floor slope MB/min | flat | cells checked | lost updates |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in models:
        runs = []
        series = []
        for jf in ranks_of(os.path.join(load_dir, m), ".json"):
            j = json.load(open(jf))
            samples = read_csv(jf[: -len(".json")] + ".rss.csv")
            st = rss_stats(samples)
            runs.append({"rank": j["rank"], "json": j, "rss": st})
            series.append((f"{m} rank {j['rank']}", [(s["t_s"], s["rss_kb"] / 1024) for s in samples]))
            digests.setdefault(j["rank"], {})[m] = j["shard_sha256"]
            ok = ok and j["lost_updates"] == 0 and j["exact_in_float"]
            md.append(f"| {j['model']} | {j['rank']} | {j['elapsed_s']:.1f} | {j['clocks_per_s']:.1f} | {st['steady_worker_clocks_per_s']} | "
                      f"{j['incs_per_s']:.0f} | {j['bytes_per_s']/1e6:.1f} | {st['rss_mb_start_of_second_half']} → {st['rss_mb_end']} | "
                      f"{st['rss_slope_mb_per_min_second_half']} | {st['rss_floor_slope_mb_per_min_second_half']} | {'yes' if st['flat'] else 'NO'} | "
                      f"{j['cells_checked']} | {j['lost_updates']} |")
        if not runs:
            continue
        j0 = runs[0]["json"]
        tot = {
            "model": j0["model"], "processes": j0["nodes"], "workers_per_process": j0["workers_per_node"],
            "floats": j0["floats"], "rows": j0["rows"], "width": j0["width"], "clocks": j0["clocks"],
            "elapsed_s": max(r["json"]["elapsed_s"] for r in runs),
            "clocks_per_s": min(r["json"]["clocks_per_s"] for r in runs),
            "steady_clocks_per_s": round(min(r["rss"]["steady_worker_clocks_per_s"] for r in runs) / j0["workers_per_node"], 2),
            "incs_per_s_total": round(sum(r["json"]["incs_per_s"] for r in runs)),
            "bytes_per_s_total": round(sum(r["json"]["bytes_per_s"] for r in runs)),
            "peak_rss_mb_per_process": max(r["rss"]["rss_mb_max"] for r in runs),
            "rss_slope_mb_per_min_max": max(abs(r["rss"]["rss_slope_mb_per_min_second_half"]) for r in runs),
            "rss_floor_slope_mb_per_min_max": max(abs(r["rss"]["rss_floor_slope_mb_per_min_second_half"]) for r in runs),
            "rss_flat": all(r["rss"]["flat"] for r in runs),
            "cells_checked": sum(r["json"]["cells_checked"] for r in runs),
            "lost_updates": sum(r["json"]["lost_updates"] for r in runs),
            "ranks": [{"rank": r["rank"], **r["rss"]} for r in runs],
        }
        summary[key][m] = tot
        svg_plot(series, f"{title}, {m}: RSS per process", os.path.join(out_dir, f"rss_{key}_{m}.svg"))
    same = all(len(set(d.values())) == 1 for d in digests.values()) if digests else False
    summary[key + "_models_agree"] = same
    md.append("")
    for m, t in summary[key].items():
        md.append(f"- **{m}**: {t['processes']} processes × {t['workers_per_process']} workers, {t['floats']:,} floats "
                  f"({t['rows']:,} rows × {t['width']}), {t['clocks']} clocks in {t['elapsed_s']:.0f} s: {t['clocks_per_s']:.1f} clocks/s over the "
                  f"whole run (warm-up included), {t['steady_clocks_per_s']} clocks/s in steady state, {t['incs_per_s_total']:,} incs/s and "
                  f"{t['bytes_per_s_total']/1e6:.1f} MB/s sent (all processes); peak RSS {t['peak_rss_mb_per_process']} MB per process, "
                  f"largest |RSS slope| over the second half {t['rss_slope_mb_per_min_max']} MB/min (floor: {t['rss_floor_slope_mb_per_min_max']}; "
                  f"{'flat' if t['rss_flat'] else 'NOT flat'}); "
                  f"{t['cells_checked']:,} cells checked, {t['lost_updates']} lost updates. Plot: `rss_{key}_{m}.svg`.")
    md.append(f"- Final shards identical across models ({', '.join(summary[key])}): **{'yes' if same else 'NO'}** "
              "(the same plan; every sum is exact in float).\n")
    return ok and same


def soak_section(soak_dir, out_dir, summary, md):
    env = open(os.path.join(soak_dir, "env.txt")).read().strip() if os.path.exists(os.path.join(soak_dir, "env.txt")) else ""
    md.append("## Soak (kill and resume)\n")
    md.append("```\n" + env + "\n```\n")
    runs = {}
    for jf in ranks_of(os.path.join(soak_dir, "soak"), ".rss.csv"):
        r, frm = (int(x) for x in re.findall(r"rank(\d+)_from(\d+)", jf)[0])
        runs.setdefault(r, {})[frm] = {"samples": read_csv(jf), "json": None}
        j = jf[: -len(".rss.csv")] + ".json"
        if os.path.exists(j):
            runs[r][frm]["json"] = json.load(open(j))
    refs = {json.load(open(f))["rank"]: json.load(open(f)) for f in ranks_of(os.path.join(soak_dir, "reference"), ".json")}
    t0 = min((a["samples"][0]["unix_s"] for v in runs.values() for a in v.values() if a["samples"] and "unix_s" in a["samples"][0]), default=0)
    series, ranks, ok = [], [], True
    kill_t = None
    md.append("| rank | attempt (from clock) | samples | duration s | RSS MB start of 2nd half → end | slope MB/min (2nd half) | floor MB (2nd half) | floor slope MB/min | flat | lost updates | shard SHA-256 = uninterrupted run's |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(runs):
        for frm in sorted(runs[r]):
            a = runs[r][frm]
            st = rss_stats(a["samples"])
            j = a["json"]
            same = None
            if j is not None:
                same = r in refs and refs[r]["shard_sha256"] == j["shard_sha256"]
                ok = ok and same and j["lost_updates"] == 0 and j["exact_in_float"] and refs[r]["lost_updates"] == 0
            elif frm == 0:
                end = a["samples"][-1]["unix_s"] - t0 if "unix_s" in a["samples"][-1] else None
                kill_t = end if kill_t is None else min(kill_t, end)
            ranks.append({"rank": r, "from_clock": frm, "finished": j is not None, "lost_updates": j["lost_updates"] if j else None,
                          "equal_to_uninterrupted": same, **(st or {})})
            if st:
                md.append(f"| {r} | {'first (interrupted)' if frm == 0 else f'resumed ({frm})'} | {st['samples']} | {st['duration_s']} | "
                          f"{st['rss_mb_start_of_second_half']} → {st['rss_mb_end']} | {st['rss_slope_mb_per_min_second_half']} | "
                          f"{st['rss_floor_mb_second_half'][0]} → {st['rss_floor_mb_second_half'][1]} | "
                          f"{st['rss_floor_slope_mb_per_min_second_half']} | {'yes' if st['flat'] else 'NO'} | {j['lost_updates'] if j else '(killed or stopped)'} | "
                          f"{('yes' if same else 'NO') if j else '—'} |")
            series.append((f"rank {r} {'first' if frm == 0 else 'resumed'}",
                           [((s["unix_s"] - t0) if "unix_s" in s else s["t_s"], s["rss_kb"] / 1024) for s in a["samples"]]))
    finished = [x for x in ranks if x["finished"]]
    resumed_from = sorted({x["from_clock"] for x in finished})
    all_equal = bool(finished) and len(finished) == len(refs) and all(x["equal_to_uninterrupted"] for x in finished)
    ok = ok and all_equal and len(finished) == len(runs) and all(f > 0 for f in resumed_from)
    ref0 = next(iter(refs.values()), None)
    summary["soak"] = {
        "resumed_from_clock": resumed_from,
        "ranks": ranks,
        "lost_updates": sum(x["lost_updates"] or 0 for x in finished),
        "reference_lost_updates": sum(x["lost_updates"] for x in refs.values()),
        "equal_to_uninterrupted": all_equal,
        "rss_flat": all(x.get("flat", False) for x in ranks if x["finished"]),
        "reference_elapsed_s": max((x["elapsed_s"] for x in refs.values()), default=None),
        "floats": ref0["floats"] if ref0 else None,
        "clocks": ref0["clocks"] if ref0 else None,
    }
    marks = [(kill_t, "SIGKILL")] if kill_t is not None else []
    svg_plot(series, "soak: RSS per process (first attempt, then the resumed one)", os.path.join(out_dir, "rss_soak.svg"), marks)
    s = summary["soak"]
    md.append("")
    md.append(f"- Resumed from clock {resumed_from} on every rank; {len(finished)} of {len(runs)} ranks finished; "
              f"lost updates: {s['lost_updates']} (uninterrupted run: {s['reference_lost_updates']}).")
    md.append(f"- Final tables equal to the uninterrupted run's (per-shard SHA-256): **{'yes' if all_equal else 'NO'}**.")
    md.append(f"- RSS flat over the second half of the resumed attempt on every rank: {'yes' if s['rss_flat'] else 'NO'}. Plot: `rss_soak.svg`.\n")
    return ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load", default=os.path.join(here, "results/reliability/load"))
    ap.add_argument("--soak", default=os.path.join(here, "results/reliability/soak"))
    ap.add_argument("--out", default=os.path.join(here, "results/reliability"))
    ap.add_argument("--before", default=os.path.join(here, "results/reliability/before_view_compaction/load"),
                    help="a load run of the code before a fix, reported beside the current one")
    ap.add_argument("--before-note", default="The same load test on the code before the worker's per-writer clock "
                    "vectors (views) were compacted: every rows message with new writer clocks added a view of P clocks "
                    "that was never freed, so resident memory grew with the number of clocks. Kept to show what the "
                    "soak found; the lost-update and equality checks passed then too.")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    summary, md, ok = {}, ["# Load and soak report\n",
                            "Written by `benchmarks/reliability_report.py` from the outputs of `benchmarks/load_test.sh` and "
                            "`benchmarks/soak_test.sh` (strata_load_node). \"Flat\": over the second half of a run, the least-squares "
                            "slope of the RSS floor (the least RSS of each twentieth of the run, so a checkpoint's transient "
                            f"buffers do not count) times that half's length is within {FLAT_FRACTION:.0%} of the floor's mean.\n"], True
    notes = os.path.join(a.out, "NOTES.md")  # hand-written findings, kept at the top of the report
    if os.path.exists(notes):
        md.append(open(notes).read().strip() + "\n")
    if os.path.isdir(a.load):
        ok = load_section(a.load, a.out, summary, md) and ok
    if os.path.isdir(a.soak):
        ok = soak_section(a.soak, a.out, summary, md) and ok
    if a.before and os.path.isdir(a.before):
        # Reported, not judged: its memory growth is the finding.
        load_section(a.before, a.out, summary, md, key="before_fix", title="Load before the fix", note=a.before_note)
    if not summary:
        print(f"reliability_report: neither {a.load} nor {a.soak} holds results", file=sys.stderr)
        return 1
    summary["all_checks_passed"] = ok
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(a.out, "REPORT.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"reliability report: {'checks passed' if ok else 'CHECKS FAILED'}; {a.out}/REPORT.md")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
