// libFuzzer target: the UCI bag-of-words reader (ml/io/bag_of_words.hpp). With a token limit of
// 2^20 the token lists must expand within it, and the CSR must be consistent.
#include <strata/ml/io/bag_of_words.hpp>

#include "fuzz_readers.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace io = strata::ml::io;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  strata_fuzz::expect_ok_or_bad_input([&] {
    const auto b = io::detail::parse_bag_of_words(text, "fuzz", std::uint64_t{1} << 20);
    if (b.doc_offsets.size() != std::size_t{b.num_docs} + 1 || b.doc_offsets.back() != b.nnz()) __builtin_trap();
    if (b.num_tokens() > (std::uint64_t{1} << 20)) __builtin_trap();
    for (auto w : b.word_ids)
      if (w >= b.num_words) __builtin_trap();
    std::uint64_t n = 0;
    for (const auto& d : b.token_lists()) n += d.size();
    if (n != b.num_tokens()) __builtin_trap();
  });
  strata_fuzz::expect_ok_or_bad_input([&] { (void)io::detail::parse_word_lines(text, "fuzz"); });
  return 0;
}
