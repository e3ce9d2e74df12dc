#!/usr/bin/env python3
"""strata_lasso against scikit-learn's Lasso on the diabetes data (the LARS paper's 442 x 10).

Usage: lasso_reference.py STRATA_LASSO [LAMBDA_FRACTION ...]

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
        for sched in ["round_robin", "random", "priority", "filtered"]:
            for workers in [1, 2]:
                out = os.path.join(tmp, "beta.txt")
                cmd = [exe, "--data", data, "--standardize", "--lambda-fraction", repr(frac), "--scheduler", sched,
                       "--workers", str(workers), "--tolerance", "1e-10", "--rho", "0.9", "--out", out, "--quiet"]
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                if run.returncode != 0:
                    print(f"FAIL {sched} x{workers} at {frac} lambda_max: exit {run.returncode}: {run.stderr.strip()}")
                    failed += 1
                    continue
                b = np.loadtxt(out)
                f = objective(b, lam)
                gap = float(run.stdout.split(" gap=")[1].split()[0])
                rel = abs(f - f_ref) / f_ref
                same = np.array_equal(b != 0, ref != 0)
                ok = rel <= 1e-6 and same and gap <= 1e-6 * f
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {sched:>11} x{workers} lambda={frac} lambda_max: F={f:.12g} "
                      f"sklearn={f_ref:.12g} rel={rel:.1e} gap={gap:.1e} support={int((b != 0).sum())}/"
                      f"{int((ref != 0).sum())}{'' if same else ' DIFFERENT'}")
sys.exit(1 if failed else 0)
