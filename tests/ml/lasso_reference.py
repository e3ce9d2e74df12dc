#!/usr/bin/env python3
"""strata_lasso against scikit-learn's Lasso on the diabetes data (the LARS paper's 442 x 10).

Usage: lasso_reference.py STRATA_LASSO [LAMBDA_FRACTION ...]

Also: every column of diabetes in one round with --batch-steps sequential, and a wide sparse
design of correlated column groups (strata_gen's Lasso shape, unstandardised) with batches of
300-500 stepped sequentially, each against sklearn's optimum within 1e-6.

Writes the raw diabetes data (sklearn's bundled copy, Debian python3-sklearn) as libsvm, runs
strata_lasso --standardize on it with every scheduler at 1 and 2 workers, and solves the same
standardised problem with sklearn.linear_model.Lasso(fit_intercept=False): strata's scaling
F = 1/(2n)||y - Xb||^2 + lambda ||b||_1 is sklearn's with alpha = lambda. Checks, per run:
objective within 1e-6 relative of sklearn's, the same support, and the duality gap strata
reports <= 1e-6 F. Prints one line per run; exits 1 on any mismatch.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Lasso
except ImportError as e:  # a missing reference is a failure, not a skip
    sys.exit(f"lasso_reference: {e}: run scripts/deps.sh (python3-sklearn) first")

exe = sys.argv[1]
fractions = [float(f) for f in sys.argv[2:]] or [0.01, 0.1]
X, y = load_diabetes(return_X_y=True, scaled=False)
n, d = X.shape
# strata's --standardize: centre each column, scale to ||x_j||^2 = n; centre y.
Xs = (X - X.mean(axis=0)) / X.std(axis=0)
yc = y - y.mean()
lmax = np.max(np.abs(Xs.T @ yc)) / n


def solve(cmd, out, label):
    """Runs strata_lasso (cmd writes β to `out`); returns (β, the duality gap it reports), or None
    after printing why the run failed."""
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        print(f"FAIL {label}: exit {run.returncode}: {run.stderr.strip()}")
        return None
    return np.loadtxt(out), float(run.stdout.split(" gap=")[1].split()[0])


def objective(b, lam):
    r = yc - Xs @ b
    return r @ r / (2 * n) + lam * np.abs(b).sum()


failed = 0
with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "diabetes.libsvm")
    with open(data, "w") as f:
        for row, t in zip(X, y):
            f.write(repr(float(t)) + " " + " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(map(float, row))) + "\n")
    for frac in fractions:
        lam = frac * lmax
        ref = Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=10**6).fit(Xs, yc).coef_
        f_ref = objective(ref, lam)
        runs = [(s, w, []) for s in ["round_robin", "random", "priority", "filtered"] for w in [1, 2]]
        # Every column in one round (the 10 diabetes columns are correlated), stepped sequentially.
        runs += [(s, 2, ["--batch", "10", "--batch-steps", "sequential"]) for s in ["round_robin", "priority"]]
        for sched, workers, extra in runs:
            sched_label = sched + ("/seq" if extra else "")
            out = os.path.join(tmp, "beta.txt")
            cmd = [exe, "--data", data, "--standardize", "--lambda-fraction", repr(frac), "--scheduler", sched,
                   "--workers", str(workers), "--tolerance", "1e-10", "--rho", "0.9", "--out", out, "--quiet"] + extra
            got = solve(cmd, out, f"{sched_label} x{workers} at {frac} lambda_max")
            if got is None:
                failed += 1
                continue
            b, gap = got
            f = objective(b, lam)
            rel = abs(f - f_ref) / f_ref
            same = np.array_equal(b != 0, ref != 0)
            ok = rel <= 1e-6 and same and gap <= 1e-6 * f
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {sched_label:>15} x{workers} lambda={frac} lambda_max: F={f:.12g} "
                  f"sklearn={f_ref:.12g} rel={rel:.1e} gap={gap:.1e} support={int((b != 0).sum())}/"
                  f"{int((ref != 0).sum())}{'' if same else ' DIFFERENT'}")

# A wide sparse design shaped like strata_gen's Lasso data (groups of 10 consecutive columns
# correlated ~0.9, a few groups active per row, 1% of the columns in the true support), not
# standardised: the configuration of benchmarks/lasso_scale.sh. Batches far over what parallel
# steps survive on such groups, stepped sequentially (the Gram entries the workers push), must
# reach sklearn's optimum with every scheduler.
rng = np.random.default_rng(5)
n2, groups, g, active = 400, 300, 10, 12
d2 = groups * g
rows = []
for i in range(n2):
    cols, vals = [], []
    for grp in np.sort(rng.choice(groups, size=active, replace=False)):
        z = rng.normal()
        for j in range(grp * g, grp * g + g):
            cols.append(j)
            vals.append(round(z + 0.3 * rng.normal(), 6))
    rows.append((cols, vals))
beta = np.zeros(d2)
beta[rng.choice(d2, size=30, replace=False)] = rng.uniform(0.5, 1.5, 30) * rng.choice([-1, 1], 30)
X2 = np.zeros((n2, d2))
for i, (cols, vals) in enumerate(rows):
    X2[i, cols] = vals
y2 = np.round(X2 @ beta + rng.normal(size=n2), 9)
y2c = y2 - y2.mean()
lmax2 = np.max(np.abs(X2.T @ y2c)) / n2
lam2 = 0.1 * lmax2
ref2 = Lasso(alpha=lam2, fit_intercept=False, tol=1e-14, max_iter=10**6).fit(X2, y2c).coef_
r2 = y2c - X2 @ ref2
f_ref2 = r2 @ r2 / (2 * n2) + lam2 * np.abs(ref2).sum()
with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "wide.libsvm")
    with open(data, "w") as f:
        for (cols, vals), t in zip(rows, y2):
            f.write(repr(float(t)) + " " + " ".join(f"{j + 1}:{v!r}" for j, v in zip(cols, vals)) + "\n")
    for sched, batch in [("priority", 300), ("random", 300), ("round_robin", 500)]:
        out = os.path.join(tmp, "beta.txt")
        cmd = [exe, "--data", data, "--lambda", repr(lam2), "--scheduler", sched, "--workers", "2", "--batch", str(batch),
               "--batch-steps", "sequential", "--sweeps", "2", "--tolerance", "1e-10", "--out", out, "--quiet"]
        got = solve(cmd, out, f"wide {sched} batch {batch} sequential")
        if got is None:
            failed += 1
            continue
        b, gap = got
        r = y2c - X2 @ b
        f = r @ r / (2 * n2) + lam2 * np.abs(b).sum()
        rel = abs(f - f_ref2) / f_ref2
        ok = rel <= 1e-6 and gap <= 1e-6 * f
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} wide {n2}x{d2} {sched:>11} x2 batch {batch} sequential: F={f:.12g} "
              f"sklearn={f_ref2:.12g} rel={rel:.1e} gap={gap:.1e} nnz={int((b != 0).sum())}/{int((ref2 != 0).sum())}")
sys.exit(1 if failed else 0)
