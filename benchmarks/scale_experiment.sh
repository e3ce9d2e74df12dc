#!/usr/bin/env bash
# The scale experiment (issue 37): strata's MF trainer against LIBMF on strata_gen's Netflix-shape
# data, interleaved, medians of --reps (benchmarks/scale_experiment.py says the protocol). LIBMF is
# built out of tree from its own repository (`make` in its folder; the machines here reach no
# source host, so its folder is given): strata builds nothing of it and links nothing of it.
#
#   bash benchmarks/scale_experiment.sh --libmf DIR [--size 10m|netflix] [--reps 3] [more flags of the .py]
#
# Wall time on the 2-core machine: --size 10m --reps 3 about 12 minutes (after the build and the
# data, 3 s to generate); --size netflix about ten times that per repetition.
exec bash "$(dirname "${BASH_SOURCE[0]}")/native.sh" scale_experiment.py strata_mf strata_gen -- "$@"
