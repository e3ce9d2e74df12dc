#!/usr/bin/python3
"""STRADS' claim at size (issue 37): LDA by word rotation (model parallel) against the parameter
server's data-parallel trainer as the number of topics K grows, on strata_gen's corpora.

    bash benchmarks/lda_topics_experiment.sh [--size 10m] [--topics 1000 10000] [--targets -12.9 -15.5] [--reps 3]

Both run strata_lda with the MH sampler (--mh-steps 2, alpha 0.1 per topic, beta 0.01), 2 workers,
ESSP s=2 for the parameter server (rotation reads no table: its word rows travel with their block
and are exact). Per repetition, interleaved, for each K: rotation, then the parameter server; the
whole process under /usr/bin/time (wall seconds, peak RSS). Each K has its target log-likelihood
per token (--targets, fixed before the timed runs); time to it is from the process's start to the
arrival of the first evaluated iteration at or above it (reading, set-up and the evaluations before
it count). The LL is the true model's: rotation's exact state after each sweep, the parameter
server's consistent snapshot (--eval-every). "Data-parallel dense" is what a data-parallel worker
would hold as a dense V x K table of 4-byte counts (the layout of a cache that keeps whole rows).
"""
import argparse
import types

from lda_scale_experiment import first_at, gen_corpus, run_strata
from perf_experiment import Results, print_medians


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-native")
    ap.add_argument("--size", default="10m", help="strata_gen lda size")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--topics", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--targets", type=float, nargs="+", required=True, help="LL per token, one per --topics")
    ap.add_argument("--iterations", type=int, nargs="+", default=[8], help="sweeps, one per --topics or one for all")
    ap.add_argument("--modes", nargs="+", default=["rotation", "ps"])
    a = ap.parse_args()
    if len(a.targets) != len(a.topics):
        raise SystemExit("--targets needs one value per --topics")
    sweeps = a.iterations * len(a.topics) if len(a.iterations) == 1 else a.iterations

    docword, docs, vocab = gen_corpus(a.build, a.size)
    print(f"# corpus {docword}: {docs} docs, V = {vocab}; {a.threads} workers; targets " +
          ", ".join(f"K={k}: {t}" for k, t in zip(a.topics, a.targets)), flush=True)
    res = Results()
    for rep in range(a.reps):
        for K, target, n in zip(a.topics, a.targets, sweeps):
            for mode in a.modes:
                s = types.SimpleNamespace(build=a.build, consistency="essp", mh_steps=2, topics=K, alpha=0.1, beta=0.01,
                                          iterations=n, eval_every=1, seed=a.seed + rep)
                r = run_strata(s, docword, vocab, a.threads, mode=mode)
                key = f"lda K={K} {mode}"
                res.put(f"{key} wall_s", r["wall"])
                res.put(f"{key} peak_rss_mb", r["rss"])
                res.put(f"{key} tokens_per_s_per_thread", r["tps"])
                res.put(f"{key} final_ll_per_token", r["pts"][-1][2])
                res.put(f"{key} time_to_target_s", first_at(r["pts"], target))
                res.put(f"{key} sweeps_to_target", next((i for i, _, ll in r["pts"] if ll >= target), float("nan")))
                print(f"# {key} seed {s.seed} trace: " + " ".join(f"{i}:{t:.1f}s:{ll:.4f}" for i, t, ll in r["pts"]), flush=True)
        if rep == 0:
            for K in a.topics:
                print(f"# K={K}: a dense V x K table of 4-byte counts is {vocab * K * 4 / 2**20:.0f} MB per data-parallel worker",
                      flush=True)
    print_medians(res)


if __name__ == "__main__":
    main()
