#!/usr/bin/python3
"""strata against LIBMF and WarpLDA, side by side on the same data (issue 13's table).

    scripts/fetch_data.sh movielens spam
    cmake -S . -B build-native -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_NATIVE=ON
    ninja -C build-native strata_mf strata_lda
    benchmarks/perf_experiment.py --build build-native --libmf /path/to/libmf --warplda /path/to/warplda/release \
        --reps 5 > benchmarks/results/perf/raw.txt

The peers are built out of tree from their own repositories (LIBMF: `make`; WarpLDA: see
benchmarks/results/perf/REPORT.md); this script only runs them. Every configuration runs
--reps times, interleaved (strata, peer, strata, peer, ...), and each figure is the median.

MF: rank 16, test RMSE target 0.90 (ratings.train/test.txt). strata: time = the trace's
elapsed_s (evaluation excluded) of the first iteration at or below the target; the clock starts
after the set-up (data partition, each worker's ratings grouped by item block, its local model
copies), whose seconds are reported beside it, and `time_to_0.90_with_setup_s` adds them. LIBMF:
its API through benchmarks/peers/libmf_time.cpp (compiled here against LIBMF's mf.o): the fewest
iterations reaching the target, timed without file I/O, its own set-up included, in a process
that has already trained (warm). strata's runs are cold processes; `--variant warm='--repeat 2'`
times strata's second training in one process instead.
LDA: K = 50, alpha 0.1 per topic (WarpLDA's --alpha is the sum: 5), beta 0.01, SpamAssassin.
tokens/s per thread from each program's own figure; time to a fixed log-likelihood per token: the
median per-token LL strata reaches with 1 worker after --sweeps sweeps, and each run's time to
reach it (strata: the trace; WarpLDA: the sum of its per-iteration times until its per-token LL
is at least the target). WarpLDA's per-token LL is its own figure, printed as it is.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

DATA = os.environ.get("STRATA_DATA", os.path.expanduser("~/.cache/strata"))


def run(cmd, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    r = subprocess.run(cmd, capture_output=True, text=True, env=e)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout


def trace(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    return [l for l in lines if "iteration" in l]


def field(text, name):
    m = re.search(rf"\b{name}=([-+0-9.eE]+)", text)
    return float(m.group(1)) if m else float("nan")


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def print_medians(res):
    """The closing table of an experiment: each key's median and its values, in the order put."""
    print("\n# medians")
    for k, v in res.items():
        print(f"{k}: median {med(v):.6g} of {len(v)} ({' '.join(f'{x:.4g}' for x in v)})")


class Results(dict):
    """An experiment's figures: put(key, value) keeps and prints each as it comes."""

    def put(self, k, v):
        self.setdefault(k, []).append(v)
        print(f"{k}: {v:.6g}", flush=True)


def variants(specs):
    """The default configuration ("", no flags), then each NAME=FLAGS of --variant / --lda-variant."""
    out = [("", [])]
    for spec in specs:
        name, flags = spec.split("=", 1)
        out.append((name, flags.split()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-native")
    ap.add_argument("--libmf", help="LIBMF source folder after `make` (mf.h, mf.o)")
    ap.add_argument("--warplda", help="WarpLDA build folder (src/warplda, src/format)")
    ap.add_argument("--warplda-iterations", type=int, default=0,
                    help="iterations of each WarpLDA run (default: --sweeps), so that it can reach strata's log-likelihood; "
                         "its tokens/s are still those of its first --sweeps iterations")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=["essp", "bsp"])
    ap.add_argument("--mf-iterations", type=int, default=60)
    ap.add_argument("--sweeps", type=int, default=50)
    ap.add_argument("--skip", choices=["mf", "lda"], nargs="*", default=[])
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=FLAGS",
                    help="extra strata_mf flags, e.g. nospin='--spin-us 0' (repeatable; each runs as its own "
                         "configuration, named model/NAME)")
    ap.add_argument("--lda-variant", action="append", default=[], metavar="NAME=FLAGS",
                    help="extra strata_lda flags, e.g. mh='--sampler mh' (repeatable; named lda strata/NAME; "
                         "the log-likelihood target stays the default sampler's)")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    tmp = tempfile.mkdtemp(prefix="strata_perf_")
    res = {}

    def put(key, val):
        res.setdefault(key, []).append(val)
        print(key, val, flush=True)

    if "mf" not in a.skip:
        train, test = os.path.join(DATA, "ratings.train.txt"), os.path.join(DATA, "ratings.test.txt")
        libmf = None
        if a.libmf:
            libmf = os.path.join(tmp, "libmf_time")
            run(["g++", "-O3", "-march=native", "-fopenmp", "-DUSESSE", "-DUSEOMP", "-std=c++11", "-I", a.libmf,
                 os.path.join(here, "peers", "libmf_time.cpp"), os.path.join(a.libmf, "mf.o"), "-o", libmf, "-pthread"])
        mf_configs = [(m, m + ("/" + n if n else ""), f) for m in a.models for n, f in variants(a.variant)]
        for rep in range(a.reps):
            for th in a.threads:
                for model, label, extra in mf_configs:
                    m = os.path.join(tmp, "mf.jsonl")
                    out = run([os.path.join(a.build, "examples", "strata_mf"), "--rank", "16", "--iterations", str(a.mf_iterations),
                               "--workers", str(th), "--consistency", model, "--quiet", "--metrics", m] + extra)
                    model = label
                    t = next((it["elapsed_s"] for it in trace(m) if it.get("rmse", 9) <= 0.90), float("nan"))
                    put(f"mf strata {model} threads={th} time_to_0.90_s", t)
                    put(f"mf strata {model} threads={th} setup_s", field(out, "setup_seconds"))
                    put(f"mf strata {model} threads={th} time_to_0.90_with_setup_s", t + field(out, "setup_seconds"))
                    put(f"mf strata {model} threads={th} updates_per_s_per_thread", field(out, "updates_per_s_per_thread"))
                    put(f"mf strata {model} threads={th} final_rmse", field(out, "test_rmse"))
                if libmf:
                    out = run([libmf, train, test, "16", str(th), "0.90", "1"])
                    put(f"mf libmf threads={th} time_to_0.90_s", field(out, "time_to_target_s"))
                    put(f"mf libmf threads={th} updates_per_s_per_thread", field(out, "updates_per_s_per_thread"))

    if "lda" not in a.skip:
        docword = os.path.join(DATA, "docword.spam.txt")
        tokens = None
        warp_bin = None
        if a.warplda:
            # UCI docword -> "doc label w w ..." text -> WarpLDA's binary format.
            text = os.path.join(tmp, "spam.warp.txt")
            docs = {}
            with open(docword) as f:
                D = int(f.readline()); f.readline(); f.readline()
                for line in f:
                    d, w, c = line.split()
                    docs.setdefault(int(d), []).extend([w] * int(c))
            with open(text, "w") as f:
                for d in range(1, D + 1):
                    if d in docs:
                        f.write(f"{d} x {' '.join(docs[d])}\n")
            warp_bin = os.path.join(tmp, "spam.warp.bin")
            run([os.path.join(a.warplda, "src", "format"), "-input", text, "-prefix", os.path.join(tmp, "spam.warp")])
        lls = {}
        lda_variants = variants(a.lda_variant)
        for rep in range(a.reps):
            for th in a.threads:
                for vname, extra in lda_variants:
                    m = os.path.join(tmp, "lda.jsonl")
                    out = run([os.path.join(a.build, "examples", "strata_lda"), "--topics", "50", "--iterations", str(a.sweeps),
                               "--workers", str(th), "--quiet", "--metrics", m] + extra)
                    tokens = int(field(out, "tokens"))
                    tr = trace(m)
                    label = "strata" + ("/" + vname if vname else "")
                    put(f"lda {label} threads={th} tokens_per_s_per_thread", field(out, "tokens_per_s_per_thread"))
                    put(f"lda {label} threads={th} loglik_per_token", field(out, "loglik") / tokens)
                    lls.setdefault((label, th), []).append([(it["elapsed_s"], it["loglik"] / tokens) for it in tr if "loglik" in it])
                if warp_bin:
                    out = run([os.path.join(a.warplda, "src", "warplda"), "--prefix", os.path.join(tmp, "spam.warp"), "--k", "50",
                               "--alpha", "5", "--beta", "0.01", "--niter", str(a.warplda_iterations or a.sweeps), "--dumpmodel=false", "--dumpz=false",
                               "--writeinfo=false"], env={"OMP_NUM_THREADS": str(th)})
                    its = re.findall(r"Iteration \d+, ([0-9.]+) s, ([0-9.]+) Mtokens/s, log_likelihood \(per token\) ([-0-9.]+)", out)
                    secs = [float(s) for s, _, _ in its]
                    put(f"lda warplda threads={th} tokens_per_s_per_thread", med([float(r) * 1e6 for _, r, _ in its[: a.sweeps]]) / th)
                    put(f"lda warplda threads={th} loglik_per_token", float(its[min(a.sweeps, len(its)) - 1][2]))
                    lls.setdefault(("warplda", th), []).append(
                        [(sum(secs[: i + 1]), float(ll)) for i, (_, _, ll) in enumerate(its)])
        # Time to the per-token LL strata reaches with 1 worker after the last sweep (median).
        target = med([run_[-1][1] for run_ in lls.get(("strata", 1), [])])
        print(f"lda target loglik_per_token {target}", flush=True)
        for key, runs in lls.items():
            for r in runs:
                t = next((s for s, ll in r if ll >= target), float("nan"))
                name = f"lda {key[0]} threads={key[1]}"
                put(f"{name} time_to_target_s", t)

    print_medians(res)


if __name__ == "__main__":
    main()
