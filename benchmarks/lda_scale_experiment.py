#!/usr/bin/python3
"""strata's LDA at the papers' sizes against WarpLDA (issue 37), on strata_gen's corpora.

    bash benchmarks/lda_scale_experiment.sh --warplda DIR [--size 10m|nytimes] [--reps 3] [--threads 1 2]

The corpus comes from `strata_gen lda --size SIZE` (cached in ~/.cache/strata/gen). WarpLDA is
built out of tree from its own repository; this script runs its `format` (once per corpus: UCI
docword -> its text -> its binary; the seconds are reported apart) and `warplda`.

Protocol, per repetition, interleaved (strata MH, then WarpLDA; for each thread count):
- One run of --iterations sweeps, the whole process under /usr/bin/time (wall seconds, peak RSS),
  with the same K, alpha (per topic; WarpLDA's --alpha is the sum, K times it) and beta.
- Its log-likelihood per token along the way: strata's trace with --eval-every E (the true model,
  a consistent snapshot; evaluation time excluded from the trace's clock), WarpLDA's own line per
  iteration. Both are checked at the end against ONE formula over both programs' final topic
  assignments (strata_lda --save-z, WarpLDA --dumpz; benchmarks/lda_z_loglik.cpp with the corpus's
  V): each program's trace is moved by its offset between its own figure and the common one at
  the final state (reported: strata's is 0, WarpLDA's own formula uses its V, the words it saw).
- Time to the target log-likelihood per token (--target, fixed before the runs): the seconds of
  the first traced point at or above it, plus the process's set-up (reading and preparing; strata:
  its read_seconds and the initial clock, from the trace; WarpLDA: from its start to its
  "Initialization finished" line, read unbuffered).
- Tokens per second per thread: strata's summary (sweep time only); WarpLDA's own Mtokens/s per
  iteration (median), divided by its threads.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from perf_experiment import field, med

GEN = os.path.expanduser("~/.cache/strata/gen")


def timed(cmd, env=None, stream=None):
    """Runs cmd under /usr/bin/time; returns (stdout, wall seconds, peak RSS MB). With `stream`,
    stream(line, seconds since start) sees each stdout line as it comes."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        start = time.monotonic()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%e %M", "-o", tf.name] + cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, **(env or {})))
        out = []
        for line in p.stdout:
            out.append(line)
            if stream:
                stream(line, time.monotonic() - start)
        err = p.stderr.read()
        if p.wait() != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{''.join(out)[-2000:]}\n{err[-2000:]}")
        wall, kb = tf.read().split()[-2:]
    return "".join(out), float(wall), int(kb) / 1024


def common_ll(a, zfile, vocab):
    out = subprocess.run([os.path.join(a.build, "benchmarks", "strata_lda_z_loglik"), "--z", zfile, "--topics", str(a.topics),
                          "--vocab-size", str(vocab), "--alpha", str(a.alpha), "--beta", str(a.beta)],
                         capture_output=True, text=True, check=True).stdout
    return field(out, "per_token")


def run_strata(a, docword, vocab, threads, zfile):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as m:
        cmd = [os.path.join(a.build, "examples", "strata_lda"), "--data", docword, "--workers", str(threads),
               "--consistency", a.consistency, "--sampler", "mh", "--mh-steps", str(a.mh_steps), "--topics", str(a.topics),
               "--alpha", str(a.alpha), "--beta", str(a.beta), "--iterations", str(a.iterations), "--eval-every",
               str(a.eval_every), "--metrics", m.name, "--save-z", zfile, "--quiet", "--seed", str(a.seed)]
        out, wall, rss = timed(cmd)
        recs = [json.loads(l) for l in open(m.name) if l.strip()]
    tokens = field(out, "tokens")
    setup = field(out, "read_seconds")
    pts = [(r["iteration"], setup + r["elapsed_s"], r["objective"] / tokens) for r in recs
           if "iteration" in r and r.get("objective") is not None]
    return dict(pts=pts, wall=wall, rss=rss, tps=field(out, "tokens_per_s_per_thread"), own_final=pts[-1][2])


def run_warplda(a, prefix, threads, zfile):
    pts, rates, init = [], [], [float("nan")]

    def see(line, t):
        if line.startswith("Initialization finished"):
            init[0] = t
        m = re.match(r"Iteration (\d+), ([0-9.]+) s, ([0-9.]+) Mtokens/s, log_likelihood \(per token\) ([-0-9.]+)", line)
        if m:
            pts.append((int(m.group(1)) + 1, t, float(m.group(4))))
            rates.append(float(m.group(3)) * 1e6)

    cmd = ["stdbuf", "-oL", os.path.join(a.warplda, "release", "src", "warplda"), "--prefix", prefix, "--k", str(a.topics),
           "--alpha", str(a.alpha * a.topics), "--beta", str(a.beta), "--niter", str(a.warp_iterations or a.iterations), "--mh", str(a.warp_mh),
           "--dumpmodel=false", "--writeinfo=false", "--dumpz=true", "--z", zfile]
    _, wall, rss = timed(cmd, env={"OMP_NUM_THREADS": str(threads)}, stream=see)
    return dict(pts=pts, wall=wall, rss=rss, tps=med(rates) / threads, own_final=pts[-1][2] if pts else float("nan"), init=init[0])


def warp_input(a, docword, size):
    """WarpLDA's binary corpus for `docword` (made once, beside the corpus): UCI -> its text -> `format`."""
    prefix = os.path.join(os.path.dirname(docword), f"warplda.{size}")
    if not os.path.exists(prefix + ".bin.u.idx"):
        t0 = time.monotonic()
        text = prefix + ".txt"
        with open(docword) as f, open(text, "w") as out:  # "doc doc word word ..." with each word repeated
            for _ in range(3):
                f.readline()
            cur, words = None, []
            for line in f:
                d, w, c = line.split()
                if d != cur:
                    if cur is not None:
                        out.write(f"d{cur} d{cur} {' '.join(words)}\n")
                    cur, words = d, []
                words.extend([f"w{w}"] * int(c))
            if cur is not None:
                out.write(f"d{cur} d{cur} {' '.join(words)}\n")
        t1 = time.monotonic()
        subprocess.run([os.path.join(a.warplda, "release", "src", "format"), "-input", text, "-prefix", prefix],
                       check=True, capture_output=True)
        os.remove(text)
        print(f"# WarpLDA input: text {t1 - t0:.1f} s, format {time.monotonic() - t1:.1f} s (once per corpus)", flush=True)
    return prefix


def first_at(pts, target):
    return next((t for _, t, ll in pts if ll >= target), float("nan"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-native")
    ap.add_argument("--warplda", required=True, help="WarpLDA source folder, built in release/ (warplda, format)")
    ap.add_argument("--size", default="10m", help="strata_gen lda size: 10m or nytimes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.1, help="per topic (WarpLDA gets K times it)")
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--eval-every", type=int, default=2)
    ap.add_argument("--consistency", default="essp")
    ap.add_argument("--mh-steps", type=int, default=2)
    ap.add_argument("--warp-mh", type=int, default=1)
    ap.add_argument("--warp-iterations", type=int, default=0, help="WarpLDA's iterations (0: --iterations; its are cheaper)")
    ap.add_argument("--target", type=float, default=-13.0, help="log-likelihood per token, common formula")
    a = ap.parse_args()

    data = os.path.join(GEN, f"lda-{a.size}-s1")
    subprocess.run([os.path.join(a.build, "examples", "strata_gen"), "lda", "--size", a.size, "--out", data], check=True,
                   capture_output=True)
    docword = os.path.join(data, f"docword.{a.size}.txt")
    with open(docword) as f:
        docs, vocab = int(f.readline()), int(f.readline())
    prefix = warp_input(a, docword, a.size)
    print(f"# corpus {docword}: {docs} docs, V = {vocab}; K = {a.topics}, alpha {a.alpha} per topic, beta {a.beta}; "
          f"target {a.target} per token", flush=True)
    res = {}

    def put(k, v):
        res.setdefault(k, []).append(v)
        print(f"{k}: {v:.6g}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            for th in a.threads:
                for name in ("strata", "warplda"):
                    z = os.path.join(tmp, f"{name}.z")
                    r = run_strata(a, docword, vocab, th, z) if name == "strata" else run_warplda(a, prefix, th, z)
                    key = f"lda {name} threads={th}"
                    put(f"{key} wall_s", r["wall"])
                    put(f"{key} peak_rss_mb", r["rss"])
                    put(f"{key} tokens_per_s_per_thread", r["tps"])
                    common = common_ll(a, z, vocab)
                    put(f"{key} final_ll_per_token", common)
                    put(f"{key} own_minus_common", r["own_final"] - common)
                    # Each program's own trace, moved onto the common formula by the offset measured at
                    # its final state (WarpLDA's own figure uses its V, the words it saw, not the corpus's).
                    off = r["own_final"] - common
                    put(f"{key} time_to_target_s", first_at([(i, t, ll - off) for i, t, ll in r["pts"]], a.target))
                    if "init" in r:
                        put(f"{key} setup_s", r["init"])
                    print(f"# {key} trace: " + " ".join(f"{i}:{t:.1f}s:{ll:.4f}" for i, t, ll in r["pts"]), flush=True)
    print("\n# medians")
    for k, v in res.items():
        print(f"{k}: median {med(v):.6g} of {len(v)} ({' '.join(f'{x:.4g}' for x in v)})")


if __name__ == "__main__":
    main()
