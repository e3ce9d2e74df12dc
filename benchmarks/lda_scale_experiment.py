#!/usr/bin/python3
"""strata's LDA at the papers' sizes against WarpLDA (issue 37), on strata_gen's corpora.

    bash benchmarks/lda_scale_experiment.sh --warplda DIR [--size 10m|nytimes] [--reps 3] [--threads 1 2]

The corpus comes from `strata_gen lda --size SIZE` (cached in ~/.cache/strata/gen). WarpLDA is
built out of tree from its own repository; this script runs its `format` (once per corpus: UCI
docword -> its text -> its binary; the seconds are reported apart) and `warplda`.

Protocol, per repetition, interleaved (strata MH, --mode ps or rotation, then WarpLDA; for each thread count):
- One run of --iterations sweeps, the whole process under /usr/bin/time (wall seconds, peak RSS),
  with the same K, alpha (per topic; WarpLDA's --alpha is the sum, K times it) and beta.
- Its log-likelihood per token along the way: strata's trace with --eval-every E (the true model,
  a consistent snapshot), WarpLDA's own line per iteration. Both are checked at the end against
  ONE formula over both programs' final topic assignments (strata_lda --save-z, WarpLDA --dumpz;
  benchmarks/lda_z_loglik.cpp with the corpus's V): strata's own figure is that formula (offset
  reported, ~1e-7); WarpLDA's is not (its V is the words it saw, and it drifts against the common
  one as it runs), so the iteration where WarpLDA reaches the target is found by shorter runs of
  the same settings, each scored at its end by the common formula (warp_crossing).
- Time to the target log-likelihood per token (--target, fixed before the runs): from the
  process's start to the arrival of the first iteration's line at or above it (strata: its
  progress line on stderr; WarpLDA: its iteration line, unbuffered), so reading, set-up and the
  evaluations before it count on both sides (strata's snapshot evaluations too: against it).
- Tokens per second per thread: strata's summary (sweep time only); WarpLDA's own Mtokens/s per
  iteration (median), divided by its threads.
"""
import argparse
import json
import os
import re
import subprocess
import tempfile
import time

from perf_experiment import Results, field, med, print_medians
from scale_experiment import timed

GEN = os.path.expanduser("~/.cache/strata/gen")


def gen_corpus(build, size):
    """strata_gen's LDA corpus of `size` (seed 1; made once, cached): its docword file, documents and V."""
    data = os.path.join(GEN, f"lda-{size}-s1")
    subprocess.run([os.path.join(build, "examples", "strata_gen"), "lda", "--size", size, "--out", data], check=True,
                   capture_output=True)
    docword = os.path.join(data, f"docword.{size}.txt")
    with open(docword) as f:
        return docword, int(f.readline()), int(f.readline())


def common_ll(a, zfile, vocab):
    out = subprocess.run([os.path.join(a.build, "benchmarks", "strata_lda_z_loglik"), "--z", zfile, "--topics", str(a.topics),
                          "--vocab-size", str(vocab), "--alpha", str(a.alpha), "--beta", str(a.beta)],
                         capture_output=True, text=True, check=True).stdout
    return field(out, "per_token")


def run_strata(a, docword, vocab, threads, zfile=None, mode="ps"):
    """One strata_lda run (MH sampler, a's settings; --mode `mode`; the final topics to `zfile` if given)."""
    stamps = {}

    def see(line, t):  # its progress lines (stderr, one per iteration, flushed), stamped as they arrive
        m = re.match(r"lda .*iter +(\d+)/\d+ ", line)
        if m:
            stamps[int(m.group(1))] = t

    with tempfile.NamedTemporaryFile(suffix=".jsonl") as m:
        cmd = [os.path.join(a.build, "examples", "strata_lda"), "--data", docword, "--workers", str(threads),
               "--consistency", a.consistency, "--sampler", "mh", "--mh-steps", str(a.mh_steps), "--topics", str(a.topics),
               "--alpha", str(a.alpha), "--beta", str(a.beta), "--iterations", str(a.iterations), "--eval-every",
               str(a.eval_every), "--metrics", m.name, "--seed", str(a.seed), "--mode", mode] + (["--save-z", zfile] if zfile else [])
        out, wall, rss = timed(cmd, stream=see)
        recs = [json.loads(l) for l in open(m.name) if l.strip()]
    tokens = field(out, "tokens")
    # Each evaluated iteration at the moment its line arrived: from the process's start, so reading,
    # set-up and the evaluations before it are inside (the trace's own clock leaves them out).
    pts = [(r["iteration"], stamps.get(r["iteration"], float("nan")), r["objective"] / tokens) for r in recs
           if "iteration" in r and r.get("objective") is not None]
    return dict(pts=pts, wall=wall, rss=rss, tps=field(out, "tokens_per_s_per_thread"), own_final=pts[-1][2],
                clock=[(r["iteration"], r["elapsed_s"]) for r in recs if "iteration" in r and r.get("objective") is not None])


def run_warplda(a, prefix, threads, zfile, niter=0):
    pts, rates, init = [], [], [float("nan")]

    def see(line, t):
        if line.startswith("Initialization finished"):
            init[0] = t
        m = re.match(r"Iteration (\d+), ([0-9.]+) s, ([0-9.]+) Mtokens/s, log_likelihood \(per token\) ([-0-9.]+)", line)
        if m:
            pts.append((int(m.group(1)) + 1, t, float(m.group(4))))
            rates.append(float(m.group(3)) * 1e6)

    cmd = ["stdbuf", "-oL", os.path.join(a.warplda, "release", "src", "warplda"), "--prefix", prefix, "--k", str(a.topics),
           "--alpha", str(a.alpha * a.topics), "--beta", str(a.beta), "--niter", str(niter or a.warp_iterations or a.iterations), "--mh", str(a.warp_mh),
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


def warp_crossing(a, prefix, threads, zfile, vocab, pts, target):
    """The first WarpLDA iteration whose state reaches the target by the common formula: its own
    figure drifts against the common one as it runs (-0.09 per token after 3 iterations, +0.05
    after 12, +0.08 after 40, at 10M tokens), so shorter runs of the same settings are scored at
    their end, from the guess its own trace moved by the final offset gives, one iteration a step."""
    score = {}

    def at(n):
        if n not in score:
            run_warplda(a, prefix, threads, zfile, niter=n)
            score[n] = common_ll(a, zfile, vocab)
        return score[n]

    last = len(pts)
    guess = next((i for i, _, ll in pts if ll >= target), None)
    if guess is None:
        return None, score
    n = min(guess, last)
    if at(n) >= target:
        while n > 1 and at(n - 1) >= target:
            n -= 1
        return n, score
    while n < last and at(n) < target:
        n += 1
    return (n if at(n) >= target else None), score


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
    ap.add_argument("--mode", default="ps", choices=["ps", "rotation"], help="strata_lda --mode")
    ap.add_argument("--mh-steps", type=int, default=2)
    ap.add_argument("--warp-mh", type=int, default=1)
    ap.add_argument("--warp-iterations", type=int, default=0, help="WarpLDA's iterations (0: --iterations; its are cheaper)")
    ap.add_argument("--target", type=float, default=-13.0, help="log-likelihood per token, common formula")
    a = ap.parse_args()

    docword, docs, vocab = gen_corpus(a.build, a.size)
    prefix = warp_input(a, docword, a.size)
    print(f"# corpus {docword}: {docs} docs, V = {vocab}; K = {a.topics}, alpha {a.alpha} per topic, beta {a.beta}; "
          f"target {a.target} per token; strata --mode {a.mode}", flush=True)
    res = Results()
    put = res.put
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            for th in a.threads:
                for name in ("strata", "warplda"):
                    z = os.path.join(tmp, f"{name}.z")
                    r = run_strata(a, docword, vocab, th, z, a.mode) if name == "strata" else run_warplda(a, prefix, th, z)
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
                    if name == "strata":
                        put(f"{key} time_to_target_s", first_at(r["pts"], a.target))
                    else:
                        n, score = warp_crossing(a, prefix, th, z + ".short", vocab, [(i, t, ll - off) for i, t, ll in r["pts"]], a.target)
                        print(f"# {key} common LL after n iterations (shorter runs): " +
                              " ".join(f"{k}:{v:.4f}" for k, v in sorted(score.items())), flush=True)
                        put(f"{key} iterations_to_target", n if n else float("nan"))
                        put(f"{key} time_to_target_s", r["pts"][n - 1][1] if n else float("nan"))
                    if "init" in r:
                        put(f"{key} setup_s", r["init"])
                    print(f"# {key} trace: " + " ".join(f"{i}:{t:.1f}s:{ll:.4f}" for i, t, ll in r["pts"]), flush=True)
                    if "clock" in r:
                        print(f"# {key} training clock (evaluation and set-up excluded): " +
                              " ".join(f"{i}:{t:.1f}s" for i, t in r["clock"]), flush=True)
    print_medians(res)


if __name__ == "__main__":
    main()
