#!/usr/bin/python3
"""LDA peers that Debian ships, on the same SpamAssassin bag of words strata_lda trains on.

    apt-get install python3-gensim python3-sklearn
    scripts/fetch_data.sh spam
    benchmarks/peers_debian.py [--topics 50] [--passes 5] [--workers 1 2] [--reps 3]

gensim LdaMulticore (online variational Bayes, `workers` extra processes) and scikit-learn
LatentDirichletAllocation (batch variational Bayes, n_jobs threads). Both are variational, not
collapsed Gibbs: their bounds/perplexities are not on the joint log-likelihood basis strata_lda and
WarpLDA report, so the comparison is throughput only: tokens processed per second per worker
(passes x tokens / training seconds / workers), median of `reps` runs, with each run's own
perplexity printed so that a run that learned nothing is visible. Data loading is not timed.
Prints one line per (library, workers).
"""
import argparse
import os
import statistics
import sys
import time


def read_docword(path):
    with open(path) as f:
        D = int(f.readline()); W = int(f.readline()); f.readline()
        docs = [[] for _ in range(D)]
        for line in f:
            d, w, c = line.split()
            docs[int(d) - 1].append((int(w) - 1, int(c)))
    return D, W, docs


def main():
    ap = argparse.ArgumentParser()
    data = os.environ.get("STRATA_DATA", os.path.expanduser("~/.cache/strata"))
    ap.add_argument("--data", default=os.path.join(data, "docword.spam.txt"))
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", choices=["gensim", "sklearn"], default=None)
    a = ap.parse_args()
    if not os.path.exists(a.data):
        sys.exit(f"{a.data} missing: run scripts/fetch_data.sh spam")
    D, W, docs = read_docword(a.data)
    tokens = sum(c for d in docs for _, c in d)
    print(f"corpus: docs={D} vocab={W} tokens={tokens} topics={a.topics} passes={a.passes}", flush=True)
    alpha = 0.1  # strata_lda's per-topic prior
    beta = 0.01

    if a.only in (None, "gensim"):
        try:
            from gensim.models import LdaMulticore
        except ImportError:
            sys.exit("gensim missing: apt-get install python3-gensim")
        for wk in a.workers:
            secs, perp = [], []
            for r in range(a.reps):
                t0 = time.perf_counter()
                m = LdaMulticore(docs, num_topics=a.topics, id2word=None, workers=wk, passes=a.passes,
                                 alpha=[alpha] * a.topics, eta=beta, random_state=r + 1, chunksize=2000, eval_every=None)
                secs.append(time.perf_counter() - t0)
                perp.append(m.log_perplexity(docs))
            s = statistics.median(secs)
            print(f"gensim LdaMulticore workers={wk} seconds_median={s:.2f} runs={' '.join(f'{x:.2f}' for x in secs)} "
                  f"tokens_per_s_per_worker={a.passes * tokens / s / wk:.0f} log_perplexity_bound={' '.join(f'{x:.3f}' for x in perp)}",
                  flush=True)

    if a.only in (None, "sklearn"):
        try:
            from scipy.sparse import csr_matrix
            from sklearn.decomposition import LatentDirichletAllocation
        except ImportError:
            sys.exit("scikit-learn missing: apt-get install python3-sklearn")
        rows, cols, vals = [], [], []
        for d, ws in enumerate(docs):
            for w, c in ws:
                rows.append(d); cols.append(w); vals.append(c)
        X = csr_matrix((vals, (rows, cols)), shape=(D, W))
        for wk in a.workers:
            secs, perp = [], []
            for r in range(a.reps):
                t0 = time.perf_counter()
                m = LatentDirichletAllocation(n_components=a.topics, doc_topic_prior=alpha, topic_word_prior=beta,
                                              learning_method="batch", max_iter=a.passes, n_jobs=wk, random_state=r + 1)
                m.fit(X)
                secs.append(time.perf_counter() - t0)
                perp.append(m.perplexity(X))
            s = statistics.median(secs)
            print(f"sklearn LatentDirichletAllocation n_jobs={wk} seconds_median={s:.2f} runs={' '.join(f'{x:.2f}' for x in secs)} "
                  f"tokens_per_s_per_worker={a.passes * tokens / s / wk:.0f} perplexity={' '.join(f'{x:.1f}' for x in perp)}",
                  flush=True)


if __name__ == "__main__":
    main()
