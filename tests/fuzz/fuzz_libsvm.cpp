// libFuzzer target: the libsvm reader (ml/io/libsvm.hpp): finite values, increasing in-range
// columns, and a width bounded by the data.
#include <strata/ml/io/libsvm.hpp>

#include "fuzz_readers.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace io = strata::ml::io;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  strata_fuzz::expect_ok_or_bad_input([&] {
    const auto d = io::detail::parse_libsvm(text, "fuzz");
    if (d.row_offsets.size() != d.num_rows() + 1 || d.row_offsets.back() != d.nnz()) __builtin_trap();
    if (d.num_features > std::max<std::uint64_t>(std::uint64_t{1} << 24, 8 * std::uint64_t{d.nnz()})) __builtin_trap();
    for (auto c : d.indices)
      if (c >= d.num_features) __builtin_trap();
    for (double v : d.values)
      if (!std::isfinite(v)) __builtin_trap();
    for (double v : d.labels)
      if (!std::isfinite(v)) __builtin_trap();
  });
  return 0;
}
