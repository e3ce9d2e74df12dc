#!/usr/bin/env bash
# The LDA scale experiment (issue 37): strata_lda (MH sampler) against WarpLDA on strata_gen's
# corpora, interleaved, medians of --reps (benchmarks/lda_scale_experiment.py says the protocol).
# WarpLDA is built out of tree from its own repository (release/ of its CMake build; its gflags
# from Debian's libgflags-dev): strata builds nothing of it and links nothing of it.
#
#   bash benchmarks/lda_scale_experiment.sh --warplda DIR [--size 10m|nytimes] [--reps 3] [more flags of the .py]
exec bash "$(dirname "${BASH_SOURCE[0]}")/native.sh" lda_scale_experiment.py strata_lda strata_gen strata_lda_z_loglik -- "$@"
