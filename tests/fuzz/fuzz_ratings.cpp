// libFuzzer target: the rating-triple reader (ml/io/ratings.hpp) and share_ids. Checks that
// every dense index is inside the set's shape and names an original id, whatever the input.
#include <strata/ml/io/ratings.hpp>

#include "fuzz_readers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace io = strata::ml::io;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  strata_fuzz::expect_ok_or_bad_input([&] {
    auto a = io::detail::parse_ratings(text, "fuzz");
    auto b = io::detail::parse_ratings(text.substr(text.size() / 2), "fuzz");
    const auto a_ids = a.user_ids;
    io::share_ids(a, b);
    for (const auto* s : {&a, &b}) {
      if (!std::is_sorted(s->user_ids.begin(), s->user_ids.end())) __builtin_trap();
      for (const auto& r : s->ratings)
        if (r.user >= s->num_users || r.item >= s->num_items) __builtin_trap();
      if (!s->user_ids.empty() && s->user_ids.size() != s->num_users) __builtin_trap();
    }
    if (a.num_users > a.size() + b.size()) __builtin_trap();  // rows follow the distinct ids, not the largest
  });
  return 0;
}
