// Times LIBMF's mf_train through its public API (mf.h), linked against a LIBMF built out of
// tree from its own repository (benchmarks/perf_experiment.py compiles this file against it; no
// LIBMF code is in strata). No file I/O is timed: for t = 1, 2, ... iterations it trains from
// scratch with nr_iters = t and computes the test RMSE; the first t that reaches the target is
// then timed `reps` times and the median printed.
#include "mf.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace mf;
int main(int argc, char** argv) {
  if (argc < 6) { std::fprintf(stderr, "usage: train test k threads target [reps]\n"); return 2; }
  mf_problem tr = read_problem(argv[1]), te = read_problem(argv[2]);
  const int k = std::atoi(argv[3]), th = std::atoi(argv[4]);
  const double target = std::atof(argv[5]);
  const int reps = argc > 6 ? std::atoi(argv[6]) : 5;
  mf_parameter p = mf_get_default_param();
  p.k = k; p.nr_threads = th; p.quiet = true;
  int hit = 0; double rmse = 0;
  for (int t = 1; t <= 100; ++t) {
    p.nr_iters = t;
    mf_model* m = mf_train(&tr, p);
    rmse = calc_rmse(&te, m);
    mf_destroy_model(&m);
    if (rmse <= target) { hit = t; break; }
  }
  if (!hit) { std::printf("libmf: target not reached in 100 iterations (rmse %.4f)\n", rmse); return 1; }
  p.nr_iters = hit;
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    mf_model* m = mf_train(&tr, p);
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    mf_destroy_model(&m);
  }
  std::sort(s.begin(), s.end());
  const double med = s[s.size() / 2];
  std::printf("libmf k=%d threads=%d iterations=%d test_rmse=%.4f time_to_target_s=%.4f updates_per_s_per_thread=%.0f runs=", k, th, hit, rmse, med,
              double(tr.nnz) * hit / med / th);
  for (double x : s) std::printf("%.4f ", x);
  std::printf("\n");
}
