A=/tmp/strata-b217/build; B=/tmp/strata-build-time-44aae5c/build
for r in $(seq 1 15); do
  for p in "b217da7 $A" "44aae5c $B"; do set -- $p
    echo "$1 run$r $($2/examples/strata_mf --workers 2 --iterations 400 2>&1 | grep summary)" >> mf.txt
  done
done
for r in $(seq 1 5); do
  for p in "b217da7 $A" "44aae5c $B"; do set -- $p
    echo "$1 run$r $($2/examples/strata_lda --workers 2 --iterations 10 2>&1 | grep summary)" >> lda.txt
    $2/benchmarks/strata_bench_core > bench_core_$1_run$r.txt 2>&1
  done
done
echo finished > done.flag
