#!/usr/bin/env python3
"""Turns benchmarks/results/essp/metrics/*.jsonl into gnuplot scripts and REPORT.md.
Usage: report.py OUT_DIR "knobs text"   (called by benchmarks/essp_experiment.sh)."""
import glob, json, os, re, sys

out, knobs = sys.argv[1], sys.argv[2]
runs = {}
for f in sorted(glob.glob(os.path.join(out, "metrics", "*.jsonl"))):
    app, tag = os.path.basename(f)[:-6].split("_", 1)
    lines = [json.loads(l) for l in open(f)]
    summ = open(f[:-6] + ".summary").read()
    runs.setdefault(app, {})[tag] = {"cfg": lines[0]["config"], "its": lines[1:], "summary": summ}

def order(tag):
    base = tag.split("_")[0]
    return (["bsp", "ssp", "essp", "vap", "async"].index(base), tag)

def field(summary, key):
    m = re.search(r"\b%s=([^ \n]+)" % key, summary)
    return m.group(1) if m else "?"

metric = {"mf": "rmse", "lda": "loglik"}
better = {"mf": lambda a, b: a <= b, "lda": lambda a, b: a >= b}
final_key = {"mf": "test_rmse", "lda": "loglik"}

gp = []
for app, rs in runs.items():
    tags = sorted(rs, key=order)
    for t in tags:
        with open(os.path.join(out, f"{app}_{t}.dat"), "w") as d:
            for it in rs[t]["its"]:
                d.write(f'{it["iteration"]} {it["elapsed_s"]} {it[metric[app]]}\n')
        hist = {}
        for it in rs[t]["its"]:
            for k, v in it["staleness"]["hist"].items():
                hist[int(k)] = hist.get(int(k), 0) + v
        n = sum(hist.values()) or 1
        with open(os.path.join(out, f"{app}_{t}_hist.dat"), "w") as d:
            for k in sorted(hist):
                d.write(f"{k} {hist[k] / n}\n")
        rs[t]["hist"] = {k: v / n for k, v in hist.items()}
    ylabel = "test RMSE" if app == "mf" else "joint log-likelihood"
    for x, col, xl in (("iter", 1, "iteration (clock)"), ("time", 2, "seconds")):
        plots = ", ".join(f"'{app}_{t}.dat' using {col}:3 with linespoints title '{t}'" for t in tags)
        yr = "set yrange [0.86:1.0]\n" if app == "mf" else ""
        gp.append((f"{app}_vs_{x}.gp", f"set terminal pngcairo noenhanced size 800,500\nset output '{app}_vs_{x}.png'\n"
                   f"set xlabel '{xl}'\nset ylabel '{ylabel}'\nset key outside right\n{yr}set grid\nplot {plots}\n"))
    plots = ", ".join(f"'{app}_{t}_hist.dat' using 1:2 with linespoints title '{t}'" for t in tags)
    gp.append((f"{app}_staleness.gp", f"set terminal pngcairo noenhanced size 800,500\nset output '{app}_staleness.png'\n"
               f"set xlabel 'observed staleness (clocks; VAP/async tails beyond 12 cut off)'\nset ylabel 'fraction of reads'\n"
               f"set key outside right\nset grid\nset xrange [-1:12]\nset xtics 1\nplot {plots}\n"))
for name, text in gp:
    open(os.path.join(out, name), "w").write(text)

def time_to(its, app, target):
    for it in its:
        if it["iteration"] > 0 and better[app](it[metric[app]], target):
            return it["elapsed_s"], it["iteration"]
    return None, None

md = ["# ESSP experiment: strata's reproduction of Dai et al. (AAAI 2015)", "",
      "Command: `bash benchmarks/essp_experiment.sh` (knobs: `%s`)." % knobs, "",
      "Machine: 2 cores; all workers and server shards are threads of one process; the network is the "
      "`delayed<inproc>` transport (every message delayed by DELAY µs plus uniform jitter up to DELAY/2, "
      "messages to and from the straggler worker delayed FACTOR times more).", "",
      "MF: MovieLens small, fixed 90/10 split, biased MF rank 16, 4 clocks per epoch; metric = test RMSE "
      "(per iteration from each worker's view; the final value is exact, from the server tables). "
      "LDA: the first LDA_DOCS SpamAssassin documents, SparseLDA sampler; metric = joint log-likelihood "
      "(iteration 0 and the final value exact; in between each worker's view, exact under BSP).", ""]
findings = []
for app, rs in runs.items():
    tags = sorted(rs, key=order)
    md += [f"## {app.upper()}", "",
           "![](%s_vs_iter.png) ![](%s_vs_time.png) ![](%s_staleness.png)" % (app, app, app), "",
           "| model | iterations | seconds | final %s | mean staleness | reads with staleness <= 0 | wait s (all workers) | MB sent |" % metric[app],
           "|---|---|---|---|---|---|---|---|"]
    for t in tags:
        s = rs[t]["summary"]
        le0 = sum(v for k, v in rs[t]["hist"].items() if k <= 0)
        md.append(f"| {t} | {field(s, 'iterations')} | {field(s, 'seconds')} | {field(s, final_key[app])} | "
                  f"{field(s, 'staleness_mean')} | {le0:.2f} | {field(s, 'wait_s')} | "
                  f"{int(field(s, 'bytes_sent')) / 1e6:.1f} |")
    md.append("")
    svals = sorted({int(t.split("_s")[1]) for t in tags if "_s" in t})
    sens = {"ssp": [], "essp": []}
    for s in svals:
        a, b = rs.get(f"ssp_s{s}"), rs.get(f"essp_s{s}")
        if not a or not b:
            continue
        fa, fb = float(field(a["summary"], final_key[app])), float(field(b["summary"], final_key[app]))
        target = fa if not better[app](fa, fb) else fb  # the worse of the two finals: both reach it
        ta, ia = time_to(a["its"], app, target)
        tb, ib = time_to(b["its"], app, target)
        sens["ssp"].append(ta); sens["essp"].append(tb)
        per_it = "ahead" if better[app](fb, fa) and fb != fa else "not ahead"
        per_s = "ahead" if (tb is not None and ta is not None and tb < ta) else "not ahead"
        le0a = sum(v for k, v in a["hist"].items() if k <= 0)
        le0b = sum(v for k, v in b["hist"].items() if k <= 0)
        findings.append(f"- {app.upper()} s={s}: to reach {metric[app]} {target:.4g}, SSP needs {ia} iterations / "
                        f"{ta if ta is None else round(ta, 2)} s, ESSP {ib} iterations / {tb if tb is None else round(tb, 2)} s "
                        f"-> ESSP {per_s} per second; final {metric[app]} SSP {fa:.4g} vs ESSP {fb:.4g} -> ESSP {per_it} "
                        f"per iteration. Reads with staleness <= 0: SSP {le0a:.2f}, ESSP {le0b:.2f}.")
    for m in ("ssp", "essp"):
        v = [x for x in sens[m] if x is not None]
        if len(v) >= 2:
            findings.append(f"- {app.upper()} {m.upper()} seconds-to-target over s={svals}: {[round(x, 2) for x in v]} "
                            f"(spread {max(v) - min(v):.2f} s)")

md += ["## Do the paper's findings reproduce?", "", *findings, ""]
bench = []
for name in ("bench_mf.txt", "bench_lda.txt"):
    p = os.path.join(out, "metrics", name)
    if os.path.exists(p):
        bench += ["    " + l.rstrip() for l in open(p) if l.strip()]
md += ["## Throughput per worker thread vs a plain single-threaded loop (same binary, 1 worker, BSP, no latency)", "",
       *bench, ""]
open(os.path.join(out, "REPORT.md"), "w").write("\n".join(md) + "\n")
