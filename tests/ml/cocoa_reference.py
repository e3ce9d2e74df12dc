#!/usr/bin/env python3
"""strata_cocoa against scikit-learn's solvers on real data (Debian python3-sklearn's bundled copies).

Usage: cocoa_reference.py STRATA_COCOA LAUNCH_SH [PLATFORM]

Writes breast_cancer (569 x 30, standardised, labels +1/-1) and diabetes (442 x 10, raw and
standardised) as libsvm, runs strata_cocoa to a relative duality gap of 1e-7 (1e-6 for the elastic
net, whose dual converges slowly with several workers), and checks, per run:
  - strata's primal P(w) (recomputed here from the w it writes) within 1e-6 relative of the
    reference's P at its own optimum: LinearSVC(loss='hinge', C=1/(lambda n)) for the SVM,
    Ridge(alpha=lambda n) for ridge, ElasticNet(alpha=lambda, l1_ratio) for the elastic net, all
    without intercept (P(w) = (1/n) sum phi + lambda(1-rho)/2 |w|^2 + lambda rho |w|_1 is their
    objective up to a constant factor);
  - the P strata reports equals the recomputed one (1e-9 relative), and its dual D <= the
    reference's P (weak duality: a dual above a primal value would be a bug).
Runs cover 1, 2, 3 and 4 workers in one process, CoCoA (averaging), 2 tcp processes (LAUNCH_SH),
and, with PLATFORM, the simulated transport. Exits 1 on any mismatch; a missing reference is a
failure, not a skip.
"""
import os
import subprocess
import sys
import tempfile

import warnings
warnings.simplefilter("ignore")  # liblinear warns at tol 1e-10 while its objective is already exact to 1e-9

try:
    import numpy as np
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.linear_model import ElasticNet, Ridge
    from sklearn.svm import LinearSVC
except ImportError as e:
    sys.exit(f"cocoa_reference: {e}: run scripts/deps.sh (python3-sklearn) first")

exe, launch = sys.argv[1], sys.argv[2]
platform = sys.argv[3] if len(sys.argv) > 3 else ""
tmp = tempfile.mkdtemp(prefix="cocoa_ref_")


def write_libsvm(path, X, y):
    with open(path, "w") as f:
        for row, t in zip(X, y):
            f.write(f"{t:.17g} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(row) if v != 0) + "\n")


def standardise(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


Xb, yb = load_breast_cancer(return_X_y=True)
Xb = standardise(Xb)
yb = np.where(yb == 1, 1.0, -1.0)
Xd_raw, yd_raw = load_diabetes(return_X_y=True, scaled=False)
Xd, yd = standardise(Xd_raw), yd_raw - yd_raw.mean()
files = {"bc": os.path.join(tmp, "bc.libsvm"), "db": os.path.join(tmp, "db.libsvm"), "db_raw": os.path.join(tmp, "db_raw.libsvm")}
write_libsvm(files["bc"], Xb, yb)
write_libsvm(files["db"], Xd, yd)
write_libsvm(files["db_raw"], Xd_raw, yd_raw)


def primal(X, y, w, loss, lam, rho):
    a = X @ w
    phi = np.maximum(0, 1 - y * a) if loss == "hinge" else 0.5 * (a - y) ** 2
    return phi.mean() + lam * (1 - rho) / 2 * (w @ w) + lam * rho * np.abs(w).sum()


def reference(X, y, loss, lam, rho):
    n = len(y)
    if loss == "hinge":
        m = LinearSVC(loss="hinge", C=1 / (lam * n), fit_intercept=False, dual=True, tol=1e-10, max_iter=10**6).fit(X, y)
    elif rho == 0:
        m = Ridge(alpha=lam * n, fit_intercept=False, solver="cholesky").fit(X, y)
    else:
        m = ElasticNet(alpha=lam, l1_ratio=rho, fit_intercept=False, tol=1e-14, max_iter=10**6).fit(X, y)
    return primal(X, y, m.coef_.ravel(), loss, lam, rho)


def run(name, data, X, y, loss, lam, rho, args, prefix=(), tol=1e-7):
    out = os.path.join(tmp, name + ".w")
    cmd = list(prefix) + [exe, "--data", files[data], "--loss", loss, "--lambda", str(lam), "--l1-ratio", str(rho),
                          "--tolerance", str(tol), "--iterations", "20000", "--out", out, "--quiet"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    summary = [l for l in p.stdout.splitlines() if "cocoa summary:" in l]
    if p.returncode != 0 or not summary:
        print(f"FAIL {name}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        return False
    f = dict(kv.split("=", 1) for kv in summary[0].split("cocoa summary:")[1].split() if "=" in kv)
    w = np.loadtxt(out)
    P = primal(X, y, w, loss, lam, rho)
    R = reference(X, y, loss, lam, rho)
    D = float(f["dual"])
    ok = abs(P - R) <= 1e-6 * abs(R) and abs(float(f["primal"]) - P) <= 1e-9 * abs(P) and D <= R * (1 + 1e-12)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: rounds {f['iterations']}, P {P:.12g} (strata says {f['primal']}), "
          f"reference {R:.12g}, rel diff {abs(P - R) / abs(R):.2e}, D {D:.12g}, rel gap {f['rel_gap']}")
    return ok


lp = ["--base-port", "11990"]
cases = [
    ("svm_1", "bc", Xb, yb, "hinge", 1e-2, 0, ["--workers", "1"]),
    ("svm_2", "bc", Xb, yb, "hinge", 1e-2, 0, ["--workers", "2"]),
    ("svm_4", "bc", Xb, yb, "hinge", 1e-2, 0, ["--workers", "4"]),
    ("svm_2_lambda1e-3", "bc", Xb, yb, "hinge", 1e-3, 0, ["--workers", "2"]),
    ("svm_3_averaging", "bc", Xb, yb, "hinge", 1e-2, 0, ["--workers", "3", "--aggregation", "averaging"]),
    ("ridge_1", "db", Xd, yd, "squared", 1e-2, 0, ["--workers", "1"]),
    ("ridge_3", "db", Xd, yd, "squared", 1e-2, 0, ["--workers", "3"]),
    ("ridge_2_standardize", "db_raw", Xd, yd, "squared", 1e-2, 0, ["--workers", "2", "--standardize"]),
    ("elastic_1", "db", Xd, yd, "squared", 1e-2, 0.5, ["--workers", "1"]),
    ("elastic_2", "db", Xd, yd, "squared", 1e-2, 0.5, ["--workers", "2"], (), 1e-6),
]
ok = all([run(*c) for c in cases])
ok = run("svm_tcp_2x2", "bc", Xb, yb, "hinge", 1e-2, 0, ["--transport", "tcp", "--workers", "2"],
         ["bash", launch, "-n", "2", "--base-port", "11990", "--"]) and ok
ok = run("ridge_tcp_3x1", "db", Xd, yd, "squared", 1e-2, 0, ["--transport", "tcp", "--workers", "1"],
         ["bash", launch, "-n", "3", "--base-port", "11996", "--"]) and ok
if platform:
    ok = run("svm_sim_2x2", "bc", Xb, yb, "hinge", 1e-2, 0, ["--transport", "sim", "--platform", platform, "--nodes", "2", "--workers", "2"]) and ok
sys.exit(0 if ok else 1)
