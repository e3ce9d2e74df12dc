#pragma once
// A deterministic parameter-server workload shared by the in-process invariant tests
// (tests/consistency/test_models.cpp) and the TCP node program (tests/net/ps_node.cpp): a seeded plan
// of integer increments (worker w only adds to column w) and reads, and the check of one read
// against its consistency model's guarantee.
#include <strata/consistency/model.hpp>
#include <strata/runtime/params.hpp>

#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace strata_test {

/// The plan: rows each worker increments and reads at each clock, and the running sums.
struct plan {
  int P, clocks, rows;
  std::vector<std::vector<std::vector<int>>> incs, reads;
  std::vector<long> cum_;
  plan(int p, int c, int r, std::uint64_t seed) : P(p), clocks(c), rows(r), incs(p), reads(p) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> row(0, r - 1), n(0, 4);
    cum_.assign(static_cast<std::size_t>(p * r * (c + 1)), 0);
    for (int w = 0; w < p; ++w) {
      incs[w].resize(c);
      reads[w].resize(c);
      for (int k = 0; k < c; ++k) {
        for (int i = n(rng); i > 0; --i) incs[w][k].push_back(row(rng));
        for (int i = 1 + n(rng) / 2; i > 0; --i) reads[w][k].push_back(row(rng));
      }
      for (int rr = 0; rr < r; ++rr)
        for (int k = 0; k < c; ++k) {
          long add = 0;
          for (int x : incs[w][k]) add += x == rr;
          at(w, rr, k) = at(w, rr, k - 1) + add;
        }
    }
  }
  long& at(int w, int r, long c) { return cum_[static_cast<std::size_t>((w * rows + r) * (clocks + 1) + c + 1)]; }
  /// Increments by worker w to row r at clocks <= c.
  long cum(int w, int r, long c) const {
    if (c < -1) c = -1;
    if (c >= clocks) c = clocks - 1;
    return cum_[static_cast<std::size_t>((w * rows + r) * (clocks + 1) + c + 1)];
  }
};

struct violations {
  std::atomic<long> count{0};
  std::mutex mu;
  std::string first;
  void add(const std::string& what) {
    if (count++ == 0) {
      std::lock_guard lk(mu);
      first = what;
    }
  }
};

/// One read of row r by `self` at clock c; `own_now` = self's increments to r made at clock c so far.
void check_read(const plan& pl, const strata::model_params& mp, int self, int r, long c, long own_now,
                const std::vector<long>& v, violations& bad) {
  const std::string where =
      "worker " + std::to_string(self) + " clock " + std::to_string(c) + " row " + std::to_string(r) + ": ";
  if (v[self] != pl.cum(self, r, c - 1) + own_now) bad.add(where + "read-my-writes broken");
  if (mp.staleness == strata::unbounded) {
    for (int w = 0; w < pl.P; ++w)
      if (w != self && (v[w] < 0 || v[w] > pl.cum(w, r, pl.clocks - 1))) bad.add(where + "value out of range");
    return;
  }
  if (!mp.exact) {
    // Applied on arrival (SSP, ESSP): every other worker's updates through c - s - 1 are in.
    for (int w = 0; w < pl.P; ++w)
      if (w != self && (v[w] < pl.cum(w, r, c - mp.staleness - 1) || v[w] > pl.cum(w, r, pl.clocks - 1)))
        bad.add(where + "read misses updates older than the staleness bound: writer " + std::to_string(w) + " column " +
                std::to_string(v[w]) + ", expected " + std::to_string(pl.cum(w, r, c - mp.staleness - 1)) + " to " +
                std::to_string(pl.cum(w, r, pl.clocks - 1)));
    return;
  }
  // Exact snapshots (BSP): every other column is as of one clock t with c - s - 1 <= t <= c - 1.
  for (long t = c - 1; t >= c - mp.staleness - 1; --t) {
    bool all = true;
    for (int w = 0; w < pl.P && all; ++w)
      if (w != self && v[w] != pl.cum(w, r, t)) all = false;
    if (all) return;
  }
  std::string got;
  for (auto x : v) got += " " + std::to_string(x);
  bad.add(where + "no clock within the staleness bound explains the read:" + got);
}

/// The per-writer clocks `wc` of the copy of row r that `self` read at clock c (values `v`): for
/// every other worker q the row holds exactly q's increments through wc[q] (flushes apply whole and
/// in order; under a value bound a flush may carry part of clock wc[q], so then at least those through
/// wc[q] - 1), and never fewer than the model's bound lets it. Adds each (c - 1) - wc[q] to `expect`,
/// except for a writer that had finished (wc[q] == finished_clock): the row then holds all its
/// increments, and no read records a figure for it.
void check_writers(const plan& pl, const strata::model_params& mp, int self, int r, long c, const std::vector<long>& v,
                   const std::vector<strata::clock_type>& wc, std::map<std::int64_t, std::uint64_t>& expect, violations& bad) {
  const std::string where =
      "worker " + std::to_string(self) + " clock " + std::to_string(c) + " row " + std::to_string(r) + ": ";
  if (wc.size() != static_cast<std::size_t>(pl.P)) return bad.add(where + "no writer clocks for a cached row");
  const bool partial = std::isfinite(mp.value_bound);
  for (int q = 0; q < pl.P; ++q) {
    if (q == self) continue;
    const long lo = pl.cum(q, r, partial ? wc[q] - 1 : wc[q]), hi = pl.cum(q, r, wc[q]);
    if (v[q] < lo || v[q] > hi)
      bad.add(where + "writer " + std::to_string(q) + " at clock " + std::to_string(wc[q]) + " does not explain column value " +
              std::to_string(v[q]) + " (expected " + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    if (wc[q] == strata::finished_clock) continue;  // cum() clamps: lo == hi == every increment of q
    const std::int64_t s = (c - 1) - wc[q];
    if (mp.staleness != strata::unbounded && s > mp.staleness)
      bad.add(where + "per-writer staleness " + std::to_string(s) + " above the bound");
    if (mp.exact && mp.staleness == 0 && s != 0) bad.add(where + "per-writer staleness " + std::to_string(s) + " under BSP");
    ++expect[s];
  }
}

}  // namespace strata_test
