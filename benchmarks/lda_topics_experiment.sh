#!/usr/bin/env bash
# LDA by word rotation against the parameter server's data-parallel trainer as K grows (issue 37;
# benchmarks/lda_topics_experiment.py says the protocol).
#
#   bash benchmarks/lda_topics_experiment.sh --topics 1000 10000 --targets T1 T2 [--reps 3] [more flags of the .py]
exec bash "$(dirname "${BASH_SOURCE[0]}")/native.sh" lda_topics_experiment.py strata_lda strata_gen -- "$@"
