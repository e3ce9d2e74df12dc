// A user-written row type: a fixed-size histogram of 8 counters that travels as 8 raw integers,
// written against strata::row_type alone, in a table of an ESSP system.
#include <strata/strata.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>

struct hist8 {
  using value_type = long;
  std::array<long, 8> bins{};
  std::size_t w = 0;  // 0 = not yet sized (a default-made row)
  hist8() = default;
  explicit hist8(std::size_t width) : w(width) {}
  void inc(strata::col_id c, long d) {
    strata::check_column(c, w);  // a bad column is an error at the call, naming column and width
    bins[c] += d;
  }
  void add(const hist8& o) {
    if (w == 0) w = o.w;
    for (std::size_t i = 0; i < bins.size(); ++i) bins[i] += o.bins[i];
  }
  long get(strata::col_id c) const { return bins.at(c); }
  std::size_t width() const noexcept { return w; }
  bool empty() const noexcept { return w == 0; }
  double magnitude() const noexcept {
    double m = 0;
    for (long b : bins) m += static_cast<double>(std::labs(b));
    return m;
  }
  void encode(strata::byte_writer& out) const { out.put(bins); }
  static hist8 decode(strata::byte_reader& in, std::size_t width) {
    hist8 h(width);
    h.bins = in.get<std::array<long, 8>>();
    return h;
  }
};
static_assert(strata::row_type<hist8>);

int main() {
  strata::system<strata::essp<1>> sys({.nodes = 2, .workers_per_node = 2});
  auto t = sys.add_table<hist8>(8);
  sys.run([&](strata::worker& w) -> strata::task<> {
    for (int c = 0; c < 20; ++c) {
      co_await w.inc(t, 0, static_cast<strata::col_id>((w.id() + c) % 8), 1L);  // one count per clock
      co_await w.clock();
    }
  });
  const hist8 h = sys.row(t, 0);
  long total = 0;
  for (strata::col_id b = 0; b < 8; ++b) total += h.get(b);
  std::printf("hist8: %ld counts in 8 bins (expected 80): %ld %ld %ld %ld %ld %ld %ld %ld\n", total, h.get(0), h.get(1),
              h.get(2), h.get(3), h.get(4), h.get(5), h.get(6), h.get(7));
  return total == 80 ? 0 : 1;
}
