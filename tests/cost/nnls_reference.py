#!/usr/bin/env python3
"""Reference NNLS for tests/cost/test_nnls.cpp: scipy.optimize.nnls on problem files.

Usage: nnls_reference.py PROBLEM... ; each PROBLEM file holds "m n", then m rows of A, then the m
entries of b (whitespace-separated, written with 17 significant digits). For each file, prints one
line: "<file> <residual norm> <x_0> ... <x_{n-1}>". Exit status 3 (with a message naming
scripts/deps.sh) when scipy cannot be imported.
"""
import sys

try:
    import numpy as np
    from scipy.optimize import nnls
except ImportError as e:  # the C++ test turns this into a failure that names scripts/deps.sh
    print(f"nnls_reference.py: cannot import scipy ({e}); run scripts/deps.sh (Debian python3-scipy)", file=sys.stderr)
    sys.exit(3)

for path in sys.argv[1:]:
    with open(path) as f:
        vals = f.read().split()
    m, n = int(vals[0]), int(vals[1])
    nums = np.array([float(v) for v in vals[2:]])
    A = nums[: m * n].reshape(m, n)
    b = nums[m * n : m * n + m]
    x, rnorm = nnls(A, b, maxiter=50 * n)
    print(path, repr(float(rnorm)), " ".join(repr(float(v)) for v in x))
