// server_table's row storage: rows found by a row-indexed vector for dense ids and by a hash map
// for far ones, one row per id whichever way it was made (also when the vector grows past an id
// first stored far), held deltas (exact models) folded exactly, and their rows kept for the next
// held deltas (dense and sparse rows); checked against a plain std::map model of the table.
#include <doctest/doctest.h>

#include <strata/table/dense_row.hpp>
#include <strata/table/server_table.hpp>
#include <strata/table/sparse_row.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_table_server_table {

namespace {

using drow = strata::dense_row<float>;

template <class R>
std::vector<std::byte> encoded(const R& r) {
  std::vector<std::byte> out;
  strata::byte_writer w(out);
  r.encode(w);
  return out;
}
template <class R>
void apply(strata::server_table<R>& t, strata::row_id r, const R& d, strata::clock_type tag, bool immediate, strata::worker_id from = 0) {
  const auto bytes = encoded(d);
  strata::byte_reader in(bytes);
  t.apply(r, in, tag, from, immediate);
}
drow row_of(std::initializer_list<float> v) {
  drow r(v.size());
  std::copy(v.begin(), v.end(), r.mutable_span().begin());
  return r;
}

}  // namespace

TEST_CASE("server_table: near and far row ids each hold one row, the same after the index grows past a far id") {
  strata::server_table<drow> t(2);
  // 1'000'000 is past the vector's reach for an empty table: stored far. Rows below it then grow
  // the vector past it; the far row must still be the one found (no second, zero row made).
  const std::vector<strata::row_id> ids = {3, 1'000'000, 0, 70'000, 5, 1'000'000, 3};
  std::map<strata::row_id, std::pair<float, float>> want;
  auto add = [&](strata::row_id r, float a, float b) {
    apply(t, r, row_of({a, b}), 0, true);
    want[r].first += a;
    want[r].second += b;
  };
  float v = 1;
  for (auto r : ids) add(r, v, -v), v += 1;
  for (strata::row_id r = 100; r < 100'000; r += 97) add(r, 0.5f, 0.25f);  // the vector grows to reach 1'000'000
  add(1'000'000, 100, 1);
  auto got = t.row_ids();
  std::sort(got.begin(), got.end());
  std::vector<strata::row_id> keys;
  for (const auto& [r, x] : want) keys.push_back(r);
  CHECK(got == keys);
  for (const auto& [r, x] : want) {
    CHECK(t.row(r).get(0) == x.first);
    CHECK(t.row(r).get(1) == x.second);
  }
  CHECK(t.row_ids().size() == want.size());  // reading made no rows
  // Subscribers of a far and of a near row, and of a row never written.
  t.subscribe(1'000'000, 4);
  t.subscribe(3, 2);
  t.subscribe(3, 2);
  REQUIRE(t.subscribers(1'000'000) != nullptr);
  CHECK(*t.subscribers(1'000'000) == std::vector<strata::worker_id>{4});
  CHECK(*t.subscribers(3) == std::vector<strata::worker_id>{2});
  CHECK(t.subscribers(4) == nullptr);
  CHECK(t.subscribers(9'000'000) == nullptr);
  t.reset(false);  // rows stay, subscriptions go
  CHECK(t.subscribers(3)->empty());
  CHECK(t.row(3).get(0) == want[3].first);
  t.reset(true);
  CHECK(t.row_ids().empty());
  CHECK(t.row(1'000'000).get(0) == 0.0f);  // a fresh zero row
}

TEST_CASE("server_table: held deltas fold exactly by clock, and their rows are kept for the next ones") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const std::size_t width = 5;
  strata::server_table<drow> t(width);
  std::map<strata::row_id, std::vector<double>> want;
  std::map<strata::clock_type, std::map<strata::row_id, std::vector<double>>> held;
  for (strata::clock_type c = 0; c < 6; ++c) {
    for (int k = 0; k < 40; ++k) {
      const strata::row_id r = rng() % 12;
      drow d(width);
      for (auto& x : d.mutable_span()) x = u(rng);
      apply(t, r, d, c, false);
      auto& h = held[c][r];
      h.resize(width, 0.0);
      for (std::size_t i = 0; i < width; ++i) h[i] += d.get(static_cast<strata::col_id>(i));
    }
    if (c == 0) CHECK(t.spare_rows() == 0);
    // Nothing is in the rows before its clock is folded.
    std::vector<strata::row_id> changed;
    t.fold(c, changed);  // folds clocks < c
    if (c > 0) {
      std::sort(changed.begin(), changed.end());
      std::vector<strata::row_id> expect;
      for (const auto& [r, h] : held[c - 1]) expect.push_back(r);
      CHECK(changed == expect);
      for (const auto& [r, h] : held[c - 1]) {
        auto& w = want[r];
        w.resize(width, 0.0);
        for (std::size_t i = 0; i < width; ++i) w[i] += h[i];
      }
      CHECK(t.spare_rows() > 0);  // the folded rows are kept
    }
    for (const auto& [r, w] : want)
      for (std::size_t i = 0; i < width; ++i) CHECK(t.row(r).get(static_cast<strata::col_id>(i)) == doctest::Approx(w[i]).epsilon(1e-5));
  }
  // A held delta in a kept row holds exactly its own values (the kept row's old values are gone).
  std::vector<strata::row_id> changed;
  t.fold(100, changed);
  REQUIRE(t.spare_rows() > 0);
  apply(t, 50, row_of({1, 2, 3, 4, 5}), 200, false);
  CHECK(t.row(50).get(0) == 0.0f);  // held, not applied
  changed.clear();
  t.fold(201, changed);
  CHECK(changed == std::vector<strata::row_id>{50});
  for (int i = 0; i < 5; ++i) CHECK(t.row(50).get(static_cast<strata::col_id>(i)) == static_cast<float>(i + 1));
  // A short payload for a new held row throws and holds nothing.
  std::vector<std::byte> shortp(8);
  strata::byte_reader in(shortp);
  CHECK_THROWS(t.apply(51, in, 300, 0, false));
  changed.clear();
  t.fold(301, changed);
  CHECK(changed.empty());
}

TEST_CASE("server_table: held deltas of clocks that arrive out of order fold by clock, each clock whole") {
  // Under a staleness bound, flushes of several clocks reach a shard interleaved (workers are at
  // different clocks), and a clock's held deltas may arrive after a later clock's.
  strata::server_table<drow> t(1);
  const std::vector<std::pair<strata::clock_type, float>> arrivals = {{3, 1000}, {1, 10}, {2, 100}, {1, 10}, {0, 1}, {3, 1000}, {2, 100}};
  for (auto [c, v] : arrivals) apply(t, 9, row_of({v}), c, false);
  std::vector<strata::row_id> changed;
  float want = 0;
  for (strata::clock_type below = 0; below <= 4; ++below) {
    changed.clear();
    t.fold(below, changed);
    if (below > 0) {
      want += below == 1 ? 1 : below == 2 ? 20 : below == 3 ? 200 : 2000;
      CHECK(changed == std::vector<strata::row_id>{9});
    } else {
      CHECK(changed.empty());
    }
    CHECK(t.row(9).get(0) == want);
  }
  // A clock older than every held one, after others were folded: held, then folded on its own.
  apply(t, 9, row_of({5}), 7, false);
  apply(t, 9, row_of({3}), 5, false);
  changed.clear();
  t.fold(6, changed);
  CHECK(t.row(9).get(0) == want + 3);
  t.fold(8, changed);
  CHECK(t.row(9).get(0) == want + 8);
}

TEST_CASE("server_table: a clock's float deltas fold in writer order, whatever order they arrived in") {
  // 1e8f + 1 == 1e8f: the sum of three writers' deltas depends on its order. Folded in writer
  // order (0, 1, 2) it is (1e8 + 1) - 1e8 = 0 for every arrival order; summed in arrival order,
  // the order 2, 0, 1 would give (-1e8 + 1e8) + 1 = 1. A BSP run's tables are then the same bits
  // however its flushes are interleaved by threads and sockets (issue 36 item 17).
  const float delta[3] = {1e8f, 1.0f, -1e8f};
  const std::vector<std::vector<strata::worker_id>> orders = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}};
  for (const auto& order : orders) {
    CAPTURE(order);
    strata::server_table<drow> t(1);
    for (auto w : order) apply(t, 4, row_of({delta[w]}), 0, false, w);
    apply(t, 4, row_of({0.5f}), 1, false, order[0]);  // a later clock stays held
    std::vector<strata::row_id> changed;
    t.fold(1, changed);
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    CHECK(changed == std::vector<strata::row_id>{4});
    CHECK(t.row(4).get(0) == 0.0f);
    t.fold(2, changed);
    CHECK(t.row(4).get(0) == 0.5f);
  }
}

TEST_CASE("server_table: sparse held deltas fold exactly by clock, in rows kept from earlier clocks") {
  // A kept sparse row keeps its entries' storage: a held delta decoded into it must hold exactly
  // its own entries (none of the old row's columns), including sums that cancel to zero.
  using srow = strata::sparse_row<std::int32_t>;
  std::mt19937 rng(11);
  const std::size_t width = 30;
  strata::server_table<srow> t(width);
  std::map<strata::row_id, std::map<strata::col_id, std::int64_t>> want;
  auto wanted = [&](strata::row_id r, strata::col_id col) -> std::int64_t {
    auto it = want.find(r);
    if (it == want.end()) return 0;
    auto jt = it->second.find(col);
    return jt == it->second.end() ? 0 : jt->second;
  };
  for (strata::clock_type c = 0; c < 8; ++c) {
    std::map<strata::row_id, std::map<strata::col_id, std::int64_t>> held;
    for (int k = 0; k < 40; ++k) {
      const strata::row_id r = rng() % 10;
      srow d(width);
      const int n = 1 + static_cast<int>(rng() % 6);
      for (int j = 0; j < n; ++j) d.inc(static_cast<strata::col_id>(rng() % width), static_cast<std::int32_t>(rng() % 7) - 3);
      apply(t, r, d, c, false);
      auto& h = held[r];  // an empty delta is held too (and reported changed)
      for (auto [col, v] : d.entries()) h[col] += v;
    }
    for (const auto& [r, h] : held)  // nothing is in the rows before its clock is folded
      for (strata::col_id col = 0; col < width; ++col) CHECK(t.row(r).get(col) == wanted(r, col));
    std::vector<strata::row_id> changed;
    t.fold(c + 1, changed);
    std::sort(changed.begin(), changed.end());
    std::vector<strata::row_id> expect;
    for (const auto& [r, h] : held) {
      expect.push_back(r);
      for (auto [col, v] : h) want[r][col] += v;
    }
    CHECK(changed == expect);
    CHECK(t.spare_rows() > 0);  // the folded rows are kept for the next clock's deltas
    for (const auto& [r, m] : want)
      for (strata::col_id col = 0; col < width; ++col) CHECK(t.row(r).get(col) == wanted(r, col));
  }
}

}  // namespace test_table_server_table
