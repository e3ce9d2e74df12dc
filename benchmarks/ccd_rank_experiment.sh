#!/usr/bin/env bash
# MF by CCD++ as the rank grows (issue 37; benchmarks/ccd_rank_experiment.py says the protocol).
#
#   bash benchmarks/ccd_rank_experiment.sh --ranks 64 250 1000 --target 0.825 [--reps 3] [more flags of the .py]
exec bash "$(dirname "${BASH_SOURCE[0]}")/native.sh" ccd_rank_experiment.py strata_mf strata_gen -- "$@"
