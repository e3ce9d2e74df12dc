// dense_row<T>'s in-place wire paths (add_encoded, assign_encoded: what the server's apply and the
// worker cache's refresh use instead of decoding a temporary row) against decode + add, and a
// truncated payload refused without touching the row; the huge-page allocator of core/.
#include <doctest/doctest.h>

#include <strata/core/huge_pages.hpp>
#include <strata/table/dense_row.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace {

strata::dense_row<float> random_row(std::mt19937& rng, std::size_t width) {
  std::uniform_real_distribution<float> u(-2, 2);
  strata::dense_row<float> r(width);
  for (auto& x : r.mutable_span()) x = u(rng);
  return r;
}

std::vector<float> values(const strata::dense_row<float>& r) { return {r.span().begin(), r.span().end()}; }

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
