// sparse_row<T>: add (the in-place merge), inc, zero removal and the wire encoding, against a
// std::map reference under many random adds that grow and shrink the row.
#include <doctest/doctest.h>

#include <strata/table/sparse_row.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_table_sparse_row {

namespace {

using row = strata::sparse_row<int>;

/// The row's entries as a map, after checking they are sorted, distinct and non-zero.
std::map<strata::col_id, int> as_map(const row& r) {
  std::map<strata::col_id, int> m;
  for (std::size_t i = 0; i < r.entries().size(); ++i) {
    const auto& [c, v] = r.entries()[i];
    CHECK(v != 0);
    if (i > 0) CHECK(r.entries()[i - 1].first < c);
    m[c] = v;
  }
  return m;
}

void add_ref(std::map<strata::col_id, int>& ref, const std::map<strata::col_id, int>& d) {
  for (const auto& [c, v] : d)
    if ((ref[c] += v) == 0) ref.erase(c);
}

/// A random delta over `width` columns with about `n` entries, values in [-3, 3] \ {0}.
row random_delta(std::mt19937& rng, std::uint32_t width, std::uint32_t n) {
  row d(width);
  std::uniform_int_distribution<std::uint32_t> col(0, width - 1);
  std::uniform_int_distribution<int> val(-3, 3);
  for (std::uint32_t i = 0; i < n; ++i) {
    const int v = val(rng);
    if (v != 0) d.inc(col(rng), v);
  }
  return d;
}

}  // namespace

TEST_CASE("sparse_row add: many random adds that grow and shrink match a map, zeros removed") {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const std::uint32_t width = 1 + seed * 7;
    row r(width);
    std::map<strata::col_id, int> ref;
    for (int step = 0; step < 400; ++step) {
      // Mostly small deltas; now and then the negation of the whole row (empties it) or of half.
      // Every third delta has 1-3 entries: the path for a few columns into a long row.
      row d = random_delta(rng, width, step % 3 == 0 ? 1 + rng() % 3 : 1 + rng() % (width + 2));
      if (step % 37 == 36) {
        d = row(width);
        for (const auto& [c, v] : r.entries()) d.inc(c, -v);
      } else if (step % 23 == 22) {
        for (const auto& [c, v] : r.entries())
          if (c % 2 == 0) d.inc(c, -v - d.get(c));  // cancels column c exactly
      }
      const auto dm = as_map(d);
      r.add(d);
      add_ref(ref, dm);
      REQUIRE(as_map(r) == ref);
      CHECK(r.nnz() == ref.size());
      if (step % 37 == 36) CHECK(r.nnz() == 0);
    }
  }
}

TEST_CASE("sparse_row add: in place when the row has room, also with new columns and cancellations") {
  row r(100);
  for (strata::col_id c = 0; c < 100; c += 10) r.inc(c, 5);  // 0 10 ... 90
  r.reserve(64);
  const auto* before = r.entries().data();
  row d(100);
  d.inc(0, -5);   // cancels: removed
  d.inc(5, 1);    // new, between
  d.inc(50, -5);  // cancels in the middle
  d.inc(90, 2);   // sums
  d.inc(99, 7);   // new, at the end
  r.add(d);
  CHECK(r.entries().data() == before);  // merged in the row's own storage
  const std::map<strata::col_id, int> want{{5, 1}, {10, 5}, {20, 5}, {30, 5}, {40, 5}, {60, 5}, {70, 5}, {80, 5}, {90, 7}, {99, 7}};
  CHECK(as_map(r) == want);
  // Every column already present (the steady state): in place too.
  row e(100);
  e.inc(10, 1);
  e.inc(99, -7);
  r.add(e);
  CHECK(r.entries().data() == before);
  CHECK(r.get(10) == 6);
  CHECK(r.get(99) == 0);
  CHECK(r.nnz() == 9);
  // A few columns into a long row (binary search per column): new, cancelling, summing.
  row big(1000);
  for (strata::col_id c = 0; c < 1000; c += 4) big.inc(c, 1);  // 250 entries
  big.reserve(300);
  const auto* big_at = big.entries().data();
  row f(1000);
  f.inc(2, 9);     // new, near the front
  f.inc(500, -1);  // cancels
  f.inc(996, 3);   // sums, the last entry
  f.inc(999, 1);   // new, past the end
  big.add(f);
  CHECK(big.entries().data() == big_at);
  CHECK(big.nnz() == 251);
  CHECK(big.get(2) == 9);
  CHECK(big.get(500) == 0);
  CHECK(big.get(504) == 1);
  CHECK(big.get(996) == 4);
  CHECK(big.get(999) == 1);
  as_map(big);  // sorted, distinct, no zero
}

TEST_CASE("sparse_row add: into an empty or width-less row, and of an empty row") {
  row a;  // width 0: takes the delta's
  row d(8);
  d.inc(3, 2);
  d.inc(1, -1);
  a.add(d);
  CHECK(a.width() == 8);
  CHECK(a.get(1) == -1);
  CHECK(a.get(3) == 2);
  a.add(row(8));
  CHECK(a.nnz() == 2);
  row b(8);
  b.add(a);
  b.add(a);
  CHECK(b.get(3) == 4);
}

TEST_CASE("sparse_row encoding is unchanged by adds: round trip and the exact bytes") {
  row r(16);
  r.inc(2, 3);
  row d(16);
  d.inc(1, 4);
  d.inc(2, -3);
  d.inc(15, -2);
  r.add(d);
  std::vector<std::byte> buf;
  strata::byte_writer w(buf);
  r.encode(w);
  // u32 count, then (u32 column, i32 value) pairs in column order.
  std::vector<std::uint8_t> want;
  auto put32 = [&](std::uint32_t x) {
    for (int i = 0; i < 4; ++i) want.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
  };
  put32(2);
  put32(1), put32(4);
  put32(15), put32(static_cast<std::uint32_t>(-2));
  REQUIRE(buf.size() == want.size());
  CHECK(std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(buf.data()),
                                  reinterpret_cast<const std::uint8_t*>(buf.data()) + buf.size()) == want);  // little-endian host
  strata::byte_reader rd(buf);
  const row back = row::decode(rd, 16);
  CHECK(back.entries() == r.entries());
}

TEST_CASE("sparse_row add_encoded / assign_encoded match decode + add / decode, one row each, and bad bytes change nothing") {
  for (std::uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    const std::uint32_t width = 1 + seed * 9;
    row r(width);
    std::map<strata::col_id, int> ref;
    for (int step = 0; step < 200; ++step) {
      // Both merge paths (a few columns into a long row, and a general merge), cancellations too.
      row d = random_delta(rng, width, step % 3 == 0 ? 1 + rng() % 3 : 1 + rng() % (width + 2));
      if (step % 29 == 28)
        for (const auto& [c, v] : r.entries()) d.inc(c, -v - d.get(c));
      std::vector<std::byte> bytes;
      strata::byte_writer w(bytes);
      d.encode(w);
      r.encode(w);  // a second row behind it: add_encoded must stop at the end of the first
      strata::byte_reader in(bytes);
      const auto before = r.entries();
      r.add_encoded(in);
      add_ref(ref, as_map(d));
      REQUIRE(as_map(r) == ref);
      row copy(width);
      copy.inc(0, 1);  // assign replaces whatever was there
      copy.assign_encoded(in);
      CHECK(copy.entries() == before);
      CHECK(in.done());
    }
  }
  row r(10);
  r.inc(3, 2);
  r.inc(7, -1);
  const auto kept = r.entries();
  auto bytes_of = [](std::initializer_list<std::uint32_t> words) {
    std::vector<std::byte> b;
    b.reserve(words.size() * sizeof(std::uint32_t));  // (also spares GCC 12 at -O3 a false -Wstringop-overflow)
    strata::byte_writer w(b);
    for (auto x : words) w.put(x);
    return b;
  };
  auto refused = [&](const std::vector<std::byte>& b) {
    strata::byte_reader in(b), again(b);
    CHECK_THROWS_AS(r.add_encoded(in), strata::error);
    CHECK(r.entries() == kept);
    CHECK_THROWS_AS(r.assign_encoded(again), strata::error);
    CHECK(r.entries() == kept);
  };
  refused(bytes_of({2, 1, 5}));           // short: two entries promised, one and a half given
  refused(bytes_of({2, 4, 1, 2, 1}));     // columns out of order
  refused(bytes_of({1, 10, 1}));          // column outside the width
  refused(bytes_of({1000000, 1, 1}));     // a count larger than the payload
}

TEST_CASE("sparse_row<float> add_encoded refuses a non-finite value and keeps the row") {
  strata::sparse_row<float> r(4);
  r.inc(2, 1.5f);
  std::vector<std::byte> b;
  strata::byte_writer w(b);
  w.put(std::uint32_t{1});
  w.put(strata::col_id{1});
  w.put(std::numeric_limits<float>::quiet_NaN());
  strata::byte_reader in(b);
  CHECK_THROWS_AS(r.add_encoded(in), strata::error);
  REQUIRE(r.nnz() == 1);
  CHECK(r.get(2) == 1.5f);
}

}  // namespace test_table_sparse_row
