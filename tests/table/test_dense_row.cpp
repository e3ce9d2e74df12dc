// dense_row<T>'s in-place wire paths (add_encoded, assign_encoded: what the server's apply and the
// worker cache's refresh use instead of decoding a temporary row) against decode + add, and a
// truncated payload refused without touching the row; the huge-page allocator of core/.
#include <doctest/doctest.h>

#include <strata/core/huge_pages.hpp>
#include <strata/table/client_table.hpp>
#include <strata/table/dense_row.hpp>
#include <strata/table/xtensor.hpp>

#include <xtensor/xmath.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_table_dense_row {

namespace {

strata::dense_row<float> random_row(std::mt19937& rng, std::size_t width) {
  std::uniform_real_distribution<float> u(-2, 2);
  strata::dense_row<float> r(width);
  for (auto& x : r.mutable_span()) x = u(rng);
  return r;
}

std::vector<float> values(const strata::dense_row<float>& r) { return {r.span().begin(), r.span().end()}; }

strata::dense_row<float> row_of(std::vector<float> v) {
  strata::dense_row<float> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r.mutable_span()[i] = v[i];
  return r;
}

/// The (row id, values) pairs of a client table's flush to shard 0.
std::vector<std::pair<strata::row_id, std::vector<float>>> flushed(strata::client_table<strata::dense_row<float>>& t, std::uint64_t seq) {
  std::vector<std::byte> bytes;
  strata::byte_writer w(bytes);
  const auto n = t.flush_to(0, seq, w);
  strata::byte_reader in(bytes);
  std::vector<std::pair<strata::row_id, std::vector<float>>> out;
  for (std::uint32_t i = 0; i < n; ++i) {
    CHECK(in.get<strata::table_id>() == 0);
    const auto r = in.get<strata::row_id>();
    out.emplace_back(r, values(strata::dense_row<float>::decode(in, 4)));
  }
  CHECK(in.done());
  std::sort(out.begin(), out.end());
  return out;
}

/// The VmFlags line of the mapping of /proc/self/smaps that holds address a ("" when none does).
std::string vm_flags_at(const void* a) {
  const auto at = reinterpret_cast<std::uintptr_t>(a);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    if (std::istringstream(line) >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

}  // namespace

TEST_CASE("dense_row add_encoded / assign_encoded equal decode + add / decode, and a truncated payload changes nothing") {
  std::mt19937 rng(5);
  for (std::size_t width : {1u, 7u, 272u}) {
    const auto a = random_row(rng, width), d = random_row(rng, width);
    std::vector<std::byte> bytes;
    strata::byte_writer w(bytes);
    d.encode(w);
    d.encode(w);  // two rows back to back: each call consumes exactly one
    auto via_decode = a;
    {
      strata::byte_reader in(bytes);
      via_decode.add(strata::dense_row<float>::decode(in, width));
    }
    auto in_place = a, assigned = a;
    strata::byte_reader in(bytes);
    in_place.add_encoded(in);
    assigned.assign_encoded(in);
    CHECK(in.done());
    CHECK(values(in_place) == values(via_decode));
    CHECK(values(assigned) == values(d));

    const std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(width * sizeof(float) - 1));
    auto untouched = a;
    strata::byte_reader short_in(cut);
    CHECK_THROWS_AS(untouched.add_encoded(short_in), strata::error);
    CHECK(values(untouched) == values(a));
    strata::byte_reader short_again(cut);
    CHECK_THROWS_AS(untouched.assign_encoded(short_again), strata::error);
    CHECK(values(untouched) == values(a));
  }
}

TEST_CASE("huge_page_allocator: large blocks 2 MiB aligned, small ones ordinary, values kept through growth") {
  std::vector<float, strata::huge_page_allocator<float>> big(1u << 20, 1.5f);  // 4 MiB
  CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % strata::huge_page_allocator<float>::page == 0);
  std::vector<double, strata::huge_page_allocator<double>> small(10, 2.0);
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % alignof(double) == 0);
  for (std::size_t i = 0; i < big.size(); i += 4097) big[i] = static_cast<float>(i);
  big.resize(3u << 20, -1.0f);  // reallocates: the old block goes back by the size it was given
  small.resize(200000, 3.0);    // crosses the threshold
  CHECK(big[4097] == 4097.0f);
  CHECK(big[1] == 1.5f);
  CHECK(big.back() == -1.0f);
  CHECK(small[9] == 2.0);
  CHECK(small.back() == 3.0);
  CHECK(strata::huge_page_allocator<float>() == strata::huge_page_allocator<int>());
}

TEST_CASE("client_table inc_row: a moved delta starts a row's oplog entry, later ones add, flush and cache see every one") {
  strata::client_table<strata::dense_row<float>> t(0, 4, 1);
  std::vector<std::byte> bytes;
  {
    strata::byte_writer w(bytes);
    row_of({10, 20, 30, 40}).encode(w);
  }
  strata::byte_reader in(bytes);
  t.on_row(0, 3, in, 0, false, 0, false);  // row 3 cached (server value), row 7 not
  t.inc_row(3, row_of({1, 2, 3, 4}));  // moved: the oplog entry is this row
  const auto lvalue = row_of({0.5f, 0.5f, 0.5f, 0.5f});
  t.inc_row(3, lvalue);              // copied in, added
  t.inc_row(3, row_of({-1, 0, 0, 1}));  // moved, but the entry exists: added
  t.inc_row(7, row_of({2, 2, 2, 2}));
  t.inc_row(7, row_of({0, 1, 0, 1}));
  CHECK(values(lvalue) == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
  CHECK(values(t.find(3)->data) == std::vector<float>{10.5f, 22.5f, 33.5f, 45.5f});  // read-my-writes
  const auto first = flushed(t, 1);
  REQUIRE(first.size() == 2);
  CHECK(first[0] == std::pair<strata::row_id, std::vector<float>>{3, {0.5f, 2.5f, 3.5f, 5.5f}});
  CHECK(first[1] == std::pair<strata::row_id, std::vector<float>>{7, {2, 3, 2, 3}});
  // After the flush the cached row's remembered oplog entry is stale: a new delta starts a new one.
  t.inc_row(3, row_of({1, 1, 1, 1}));
  const auto second = flushed(t, 2);
  REQUIRE(second.size() == 1);
  CHECK(second[0] == std::pair<strata::row_id, std::vector<float>>{3, {1, 1, 1, 1}});
  CHECK(values(t.find(3)->data) == std::vector<float>{11.5f, 23.5f, 34.5f, 46.5f});
}

TEST_CASE("advise_thread_heap_huge_pages marks a thread's malloc heap for huge pages, and malloc still works") {
#if defined(__linux__) && defined(__GLIBC__)
  bool advised = false;
  std::string flags, big_flags, arrays_flags;
  std::vector<std::vector<float, strata::huge_page_allocator<float>>> arrays;  // made on the thread, freed here
  std::size_t arrays_span = 0;
  int sum = 0;
  std::thread th([&] {
    advised = strata::advise_thread_heap_huge_pages();
    std::vector<std::vector<int>> blocks;  // many small blocks from the advised heap, written and read back
    for (int i = 0; i < 2000; ++i) blocks.emplace_back(std::size_t(100 + i % 300), i);
    for (const auto& b : blocks) sum += b.front() + b.back();
    void* p = std::malloc(256);
    flags = vm_flags_at(p);
    std::free(p);
    // 8 MiB: under the raised mmap threshold it comes from the same heap, megabytes further in.
    std::vector<char> big(std::size_t{8} << 20, 1);
    big_flags = vm_flags_at(big.data() + big.size() - 1);
    // huge_page_allocator's large blocks come from this heap too, packed rather than one 2 MiB page
    // each: three 600 KB arrays lie within 2 MiB (aligned blocks would be 4 MiB apart or more).
    for (float v : {1.0f, 2.0f, 3.0f}) arrays.emplace_back(std::size_t{150'000}, v);
    const auto lo = std::min({arrays[0].data(), arrays[1].data(), arrays[2].data()});
    const auto hi = std::max({arrays[0].data(), arrays[1].data(), arrays[2].data()});
    arrays_span = static_cast<std::size_t>(reinterpret_cast<const char*>(hi) - reinterpret_cast<const char*>(lo));
    arrays_flags = vm_flags_at(arrays[1].data());
  });
  th.join();
  CHECK(sum == 2 * (1999 * 2000 / 2));
  // A kernel built without transparent huge pages refuses the advice (there is nothing to ask for).
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    CHECK_FALSE(advised);
    return;
  }
#if defined(STRATA_DETAIL_FOREIGN_MALLOC)  // a sanitizer's malloc is not glibc's: nothing to advise
  CHECK_FALSE(advised);
#else
  CHECK(advised);  // a thread's first allocations come from a heap of its own
  CHECK(flags.find(" hg") != std::string::npos);      // that heap's mapping carries MADV_HUGEPAGE,
  CHECK(big_flags.find(" hg") != std::string::npos);  // all of it
  CHECK(arrays_span < strata::huge_page_allocator<float>::page);
  CHECK(arrays_flags.find(" hg") != std::string::npos);
  for (std::size_t k = 0; k < arrays.size(); ++k)  // intact, and freed by another thread than their own
    CHECK(std::count(arrays[k].begin(), arrays[k].end(), static_cast<float>(k + 1)) == 150'000);
  arrays.clear();
  // The main thread's heap is left alone, even when the main thread has just freed small blocks
  // that another thread allocated: glibc caches such a chunk in the freeing thread's tcache
  // whatever its arena, so a small probe would come back from the other thread's heap (a
  // meson CI run failed so before the probe took a size those caches do not hold).
  std::vector<void*> foreign;
  std::thread([&] {
    for (std::size_t size : {16, 64, 256, 1000, 4096, 4100})
      for (int i = 0; i < 8; ++i) foreign.push_back(std::malloc(size));
  }).join();
  for (void* q : foreign) std::free(q);
  CHECK(strata::advise_thread_heap_huge_pages() == false);
#endif
#else
  CHECK(strata::advise_thread_heap_huge_pages() == false);
#endif
}

TEST_CASE("as_xtensor views a dense row in place: expressions read its values, assignment writes them") {
  std::mt19937 rng(11);
  auto a = random_row(rng, 37);
  const auto b = random_row(rng, 37);
  const auto va = strata::as_xtensor(static_cast<const strata::dense_row<float>&>(a));
  const auto vb = strata::as_xtensor(b);
  REQUIRE(va.size() == 37);
  double dot = 0;
  for (std::size_t i = 0; i < 37; ++i) dot += double(a[i]) * double(b[i]);
  CHECK(double(xt::sum(va * vb)()) == doctest::Approx(dot).epsilon(1e-5));
  CHECK(va(5) == a[5]);  // a view, not a copy: the same values
  auto wa = strata::as_xtensor(a);
  const auto before = values(a);
  wa = 2.0f * vb + 1.0f;  // writes through to the row's storage
  for (std::size_t i = 0; i < 37; ++i) CHECK(a[i] == 2.0f * b[i] + 1.0f);
  CHECK(values(a) != before);
  strata::dense_row<float> empty;
  CHECK(strata::as_xtensor(empty).size() == 0);
}

}  // namespace test_table_dense_row
