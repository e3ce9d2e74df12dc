#!/usr/bin/env python3
"""Reference Lasso solvers on a libsvm problem, timed: scikit-learn's Lasso and R's glmnet.

Usage: lasso_references.py DATA.libsvm LAMBDA_FRACTION OUT.jsonl [--standardize]

The problem is strata_lasso's: y centred, X as stored (or, with --standardize, each column
centred and scaled to ||x_j||^2 = n), no intercept, F(b) = 1/(2n)||y - Xb||^2 + lambda ||b||_1,
lambda = LAMBDA_FRACTION * lambda_max. sklearn's Lasso(alpha=lambda, fit_intercept=False) has
this scaling. glmnet's gaussian objective is 1/(2n) RSS + lambda ||b||_1 too, but it scales y to
unit variance internally, so it is given y/sd(y) and lambda/sd(y) and its coefficients are
multiplied back by sd(y) (glmnet's FAQ). Every solver runs at a ladder of tolerances; each run is
timed inside its own language around the fit alone (no data loading) and its objective is
computed here from its coefficients. One JSON line per run: solver, tol, seconds, objective, nnz.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import Lasso

data, frac, out_path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
standardize = "--standardize" in sys.argv[4:]
X, y = load_svmlight_file(data)
X = sp.csc_matrix(X)
n, d = X.shape
if standardize:
    Xd = X.toarray()
    Xd = (Xd - Xd.mean(axis=0)) / np.where(Xd.std(axis=0) > 0, Xd.std(axis=0), 1)
    X = Xd
y = y - y.mean()
lmax = np.max(np.abs(X.T @ y)) / n
lam = frac * lmax


def objective(b):
    r = y - X @ b
    return float(r @ r / (2 * n) + lam * np.abs(b).sum())


rows = []
for tol in [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 1e-12]:
    m = Lasso(alpha=lam, fit_intercept=False, tol=tol, max_iter=100000, selection="cyclic")
    t0 = time.perf_counter()
    m.fit(X, y)
    sec = time.perf_counter() - t0
    rows.append({"solver": "sklearn", "tol": tol, "seconds": sec, "objective": objective(m.coef_),
                 "nnz": int(np.count_nonzero(m.coef_))})

sd = float(np.sqrt(np.mean(y * y)))
with tempfile.TemporaryDirectory() as tmp:
    Xc = sp.coo_matrix(X)
    np.savetxt(os.path.join(tmp, "x.txt"), np.column_stack([Xc.row + 1, Xc.col + 1, Xc.data]), fmt="%d %d %.17g")
    np.savetxt(os.path.join(tmp, "y.txt"), y / sd, fmt="%.17g")
    tols = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12, 1e-14]
    script = f"""
suppressMessages({{library(Matrix); library(glmnet)}})
t <- read.table("{tmp}/x.txt"); y <- scan("{tmp}/y.txt", quiet = TRUE)
X <- sparseMatrix(i = t[[1]], j = t[[2]], x = t[[3]], dims = c({n}, {d}))
for (th in c({", ".join(map(repr, tols))})) {{
  s <- system.time(f <- glmnet(X, y, family = "gaussian", lambda = {lam / sd!r}, standardize = FALSE,
                               intercept = FALSE, thresh = th, maxit = 10000000))[["elapsed"]]
  b <- as.numeric(coef(f))[-1]
  write(c(th, s, b), file = sprintf("{tmp}/glmnet_%g.txt", th), ncolumns = 1)
}}
"""
    r = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("glmnet failed: " + r.stderr)
    for th in tols:
        v = np.loadtxt(os.path.join(tmp, f"glmnet_{th:g}.txt"))
        b = v[2:] * sd
        rows.append({"solver": "glmnet", "tol": float(v[0]), "seconds": float(v[1]), "objective": objective(b),
                     "nnz": int(np.count_nonzero(b))})

with open(out_path, "w") as f:
    f.write(json.dumps({"data": data, "n": n, "d": d, "lambda": lam, "lambda_max": lmax, "fraction": frac}) + "\n")
    for row in rows:
        f.write(json.dumps(row) + "\n")
for row in rows:
    print(f"{row['solver']:8s} tol={row['tol']:<8g} {row['seconds']:8.4f} s  F={row['objective']:.12g} nnz={row['nnz']}")
