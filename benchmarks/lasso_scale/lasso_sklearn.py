"""scikit-learn's Lasso on a libsvm file, y centred as strata_lasso centres it, no intercept:
F(b) = 1/(2n)||y - Xb||^2 + alpha ||b||_1 (sklearn's objective; alpha = lambda).
  python3 lasso_sklearn.py FILE calibrate LAMBDA TOL1,TOL2,...   # F and fit time per tol
  python3 lasso_sklearn.py FILE fit LAMBDA TOL                   # one timed run, prints F
Run with Debian's /usr/bin/python3 (python3-sklearn)."""
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import Lasso

t0 = time.perf_counter()
path, mode, lam = sys.argv[1], sys.argv[2], float(sys.argv[3])
X, y = load_svmlight_file(path)
y = y - y.mean()
X = X.tocsc()  # Lasso's sparse coordinate descent works on columns (fit would convert too)
t_read = time.perf_counter() - t0
n = X.shape[0]


def fit(tol):
    t1 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: F is checked instead
        m = Lasso(alpha=lam, fit_intercept=False, tol=tol, selection="cyclic", max_iter=100000).fit(X, y)
    secs = time.perf_counter() - t1
    r = y - X @ m.coef_
    F = r @ r / (2 * n) + lam * np.abs(m.coef_).sum()
    return F, int((m.coef_ != 0).sum()), secs, m.n_iter_


if mode == "calibrate":
    for tol in sys.argv[4].split(","):
        F, nnz, secs, it = fit(float(tol))
        print(f"sklearn tol={tol} F={F:.17g} nnz={nnz} epochs={it} fit_seconds={secs:.3f}", flush=True)
else:
    F, nnz, secs, it = fit(float(sys.argv[4]))
    print(f"sklearn summary: tol={sys.argv[4]} F={F:.17g} nnz={nnz} epochs={it} read_seconds={t_read:.3f} fit_seconds={secs:.3f}")
