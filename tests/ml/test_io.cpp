#include <doctest/doctest.h>

#include "../support/io_files.hpp"

#include <strata/core/error.hpp>
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/io/libsvm.hpp>
#include <strata/ml/io/ratings.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_io {

namespace io = strata::ml::io;
using strata_test::bad_input_message;
using strata_test::temp_file;

namespace {

/// The message of the strata::error that `f` throws, checking it is a refusal (errc::refused: a
/// well-formed file past a limit) that does not call itself malformed; "" if none.
template <class F>
std::string refused_message(F&& f) {
  try {
    f();
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::refused);
    CHECK(std::string(e.what()).find("malformed input") == std::string::npos);
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw a non-strata exception: " << e.what());
  }
  return "";
}

io::rating_set ratings_of(const std::string& text) {
  std::istringstream in(text);
  return io::read_ratings(in, "x.txt");
}
io::bag_of_words bow_of(const std::string& text) {
  std::istringstream in(text);
  return io::read_bag_of_words(in, "x.txt");
}
io::libsvm_data libsvm_of(const std::string& text) {
  std::istringstream in(text);
  return io::read_libsvm(in, "x.txt");
}

}  // namespace

TEST_CASE("io ratings: a good file parses to exact values") {
  const auto rs = ratings_of("0 30 2.5\n# a comment\n\n0 833 3\r\n  2\t7 4.5  \n1 0 0.5");
  REQUIRE(rs.size() == 4);
  CHECK(rs.ratings[0].user == 0);
  CHECK(rs.item_id(rs.ratings[0].item) == 30);
  CHECK(rs.ratings[0].value == 2.5f);
  CHECK(rs.item_id(rs.ratings[1].item) == 833);
  CHECK(rs.ratings[1].value == 3.0f);
  CHECK(rs.ratings[2].user == 2);
  CHECK(rs.item_id(rs.ratings[2].item) == 7);
  CHECK(rs.ratings[2].value == 4.5f);
  CHECK(rs.ratings[3].user == 1);
  CHECK(rs.ratings[3].value == 0.5f);
  CHECK(rs.num_users == 3);   // users 0..2: dense already, kept as they are
  CHECK(rs.user_ids.empty());
  CHECK(rs.num_items == 4);   // items 0, 7, 30, 833: remapped in id order
  CHECK(rs.item_ids == std::vector<std::uint64_t>{0, 7, 30, 833});
  CHECK(rs.ratings[0].item == 2);
  CHECK(rs.mean() == doctest::Approx((2.5 + 3 + 4.5 + 0.5) / 4));
  CHECK(ratings_of("").empty());
}

TEST_CASE("io ratings: malformed lines report file:line and what was wrong") {
  auto msg = [](const std::string& text) { return bad_input_message([&] { ratings_of(text); }); };
  CHECK(msg("0 1 2\n1 2 3\nx 1 2\n").rfind("x.txt:3: bad user id 'x'", 0) == 0);
  CHECK(msg("0 1 2\n0 1\n").rfind("x.txt:2: missing rating", 0) == 0);
  CHECK(msg("0\n").rfind("x.txt:1: missing item id", 0) == 0);
  CHECK(msg("0 -1 2\n").rfind("x.txt:1: bad item id '-1'", 0) == 0);
  CHECK(msg("0 1 nan\n").rfind("x.txt:1: bad rating 'nan'", 0) == 0);
  CHECK(msg("0 1 2abc\n").rfind("x.txt:1: bad rating", 0) == 0);
  CHECK(msg("\n\n0 1 2 99\n").rfind("x.txt:3: trailing text '99'", 0) == 0);
  CHECK(msg("18446744073709551616 1 2\n").rfind("x.txt:1: bad user id", 0) == 0);  // 2^64
  CHECK(msg("1 18446744073709551616 2\n").rfind("x.txt:1: bad item id", 0) == 0);
  CHECK(msg("0 1 inf\n").rfind("x.txt:1: bad rating 'inf'", 0) == 0);
  CHECK(msg("0 1 -inf\n").rfind("x.txt:1: bad rating '-inf'", 0) == 0);
  CHECK(msg("0 1 1e39\n").rfind("x.txt:1: bad rating '1e39'", 0) == 0);  // overflows a float
}

TEST_CASE("io readers: error messages escape what is not printable, a UTF-8 BOM is skipped") {
  auto msg = [](const std::string& text) { return bad_input_message([&] { ratings_of(text); }); };
  // A NUL, an escape sequence and a bell come back as \xNN, so the message is whole and inert.
  const std::string m = msg(std::string("0 1 2\nx\0y\x1b[2J\a 1 2\n", 19));
  CHECK(m.rfind("x.txt:2: bad user id 'x\\x00y\\x1b[2J\\x07'", 0) == 0);
  CHECK(m.find('\0') == std::string::npos);
  CHECK(msg("0 1 2\n0 1 \xff\\\n").rfind("x.txt:2: bad rating '\\xff\\x5c'", 0) == 0);
  // A BOM at the start of a file is skipped by every reader; elsewhere it is named, escaped.
  const auto rs = ratings_of("\xEF\xBB\xBF" "0 1 2\n3 4 5\n");
  CHECK(rs.size() == 2);
  CHECK(rs.user_id(0) == 0);
  CHECK(msg("0 1 2\n\xEF\xBB\xBF" "0 1 2\n").rfind("x.txt:2: bad user id '\\xef\\xbb\\xbf0'", 0) == 0);
  CHECK(bow_of("\xEF\xBB\xBF" "1\n2\n1\n1 2 3\n").num_tokens() == 3);
  CHECK(libsvm_of("\xEF\xBB\xBF" "1 1:2\n").num_rows() == 1);
}

TEST_CASE("io vocab: a file starting with a UTF-8 BOM reads as the same file without it") {
  const std::string words = "alpha\nbeta\ngamma\n";
  std::istringstream plain(words), marked("\xEF\xBB\xBF" + words);
  const auto want = io::read_vocab(plain, "v.txt");
  REQUIRE(want == std::vector<std::string>{"alpha", "beta", "gamma"});
  CHECK(io::read_vocab(marked, "v.txt") == want);
  temp_file f("bom_vocab.txt", "\xEF\xBB\xBF" + words);
  CHECK(io::read_vocab(f.path) == want);
  // A BOM-only first line is an empty entry: word ids would shift by one, so it is refused.
  std::istringstream only("\xEF\xBB\xBF\nalpha\n");
  CHECK(bad_input_message([&] { io::read_vocab(only, "v.txt"); }).rfind("v.txt:1: empty line", 0) == 0);
}

TEST_CASE("io ratings: file and error_code overloads") {
  temp_file good("good.txt", "3 4 5\n");
  const auto rs = io::read_ratings(good.path);
  REQUIRE(rs.size() == 1);
  CHECK(rs.num_users == 1);
  CHECK(rs.user_id(0) == 3);

  temp_file bad("bad.txt", "3 4 5\n3 4\n");
  const std::string m = bad_input_message([&] { io::read_ratings(bad.path); });
  CHECK(m.rfind(bad.path.string() + ":2: missing rating", 0) == 0);

  std::error_code ec = make_error_code(strata::errc::timeout);
  const auto ok = io::read_ratings(good.path, ec);
  CHECK(!ec);
  CHECK(ok.size() == 1);
  const auto none = io::read_ratings(bad.path, ec);
  CHECK(ec == strata::errc::bad_input);
  CHECK(none.empty());
  CHECK(none.num_users == 0);
  io::read_ratings(std::filesystem::path("/nonexistent/strata/ratings.txt"), ec);
  CHECK(ec == std::errc::no_such_file_or_directory);
  CHECK_THROWS_AS(io::read_ratings(std::filesystem::path("/nonexistent/strata/ratings.txt")), strata::error);
  std::istringstream in("1 2 x\n");
  CHECK(io::read_ratings(in, "s", ec).empty());
  CHECK(ec == strata::errc::bad_input);
}

TEST_CASE("io ratings: sparse ids become dense rows (memory follows the distinct ids), the originals are kept") {
  // 100 good lines and one user id 4000000000: two users' worth of rows, not four billion.
  std::string text;
  for (int k = 0; k < 100; ++k) text += std::to_string(k % 2) + " " + std::to_string(k % 7) + " 3\n";
  text += "4000000000 18446744073709551615 4.5\n";
  const auto rs = ratings_of(text);
  REQUIRE(rs.size() == 101);
  CHECK(rs.num_users == 3);
  CHECK(rs.num_items == 8);
  CHECK(rs.remapped());
  CHECK(rs.user_ids == std::vector<std::uint64_t>{0, 1, 4000000000});
  CHECK(rs.ratings[100].user == 2);
  CHECK(rs.ratings[100].item == 7);
  CHECK(rs.item_id(7) == 18446744073709551615ULL);
  CHECK(rs.ratings[99].user == 1);  // the dense part keeps its ids
  CHECK(rs.ratings[99].item == 99 % 7);
  CHECK(rs.user_ids.capacity() <= 3);
  // Dense ids (every id 0..n-1 present) are the identity: nothing remapped, nothing stored.
  const auto dense = ratings_of("1 0 2\n0 1 3\n");
  CHECK_FALSE(dense.remapped());
  CHECK(dense.num_users == 2);
  CHECK(dense.ratings[0].user == 1);
}

TEST_CASE("io ratings: share_ids puts train and test (and a model's ids) in one id space") {
  auto train = ratings_of("10 5 1\n30 7 2\n");
  auto test = ratings_of("20 7 3\n30 9 4\n");
  CHECK(train.ratings[1].user == 1);  // 30 is train's second user
  CHECK(test.ratings[1].user == 1);   // and test's second too: different spaces before sharing
  const std::vector<std::uint64_t> model_users{40};
  io::share_ids(train, test, model_users);
  CHECK(train.user_ids == std::vector<std::uint64_t>{10, 20, 30, 40});
  CHECK(test.user_ids == train.user_ids);
  CHECK(train.item_ids == std::vector<std::uint64_t>{5, 7, 9});
  CHECK(test.item_ids == train.item_ids);
  CHECK(train.num_users == 4);
  CHECK(test.num_users == 4);
  CHECK(test.num_items == 3);
  // Every rating now names its original user and item through the shared lists.
  CHECK(train.user_id(train.ratings[1].user) == 30);
  CHECK(test.user_id(test.ratings[0].user) == 20);
  CHECK(test.user_id(test.ratings[1].user) == 30);
  CHECK(test.item_id(test.ratings[1].item) == 9);
  CHECK(train.ratings[1].item == test.ratings[0].item);  // item 7 in both
  CHECK(train.ratings[1].user == test.ratings[1].user);  // user 30 in both
  // Sets whose union is dense end up with no remapping at all.
  auto a = ratings_of("0 0 1\n2 2 1\n"), b = ratings_of("1 1 1\n");
  io::share_ids(a, b);
  CHECK_FALSE(a.remapped());
  CHECK_FALSE(b.remapped());
  CHECK(a.ratings[1].user == 2);
  CHECK(b.ratings[0].item == 1);
}

TEST_CASE("io bag_of_words: UCI docword parses to exact CSR and token lists") {
  const auto b = bow_of("3\n4\n4\n1 1 2\n1 4 1\n3 2 3\n3 3 1\n");
  CHECK(b.num_docs == 3);
  CHECK(b.num_words == 4);
  REQUIRE(b.nnz() == 4);
  CHECK(b.doc_offsets == std::vector<std::uint64_t>{0, 2, 2, 4});
  CHECK(b.word_ids == std::vector<std::uint32_t>{0, 3, 1, 2});
  CHECK(b.counts == std::vector<std::uint32_t>{2, 1, 3, 1});
  CHECK(b.num_tokens() == 7);
  const auto docs = b.token_lists();
  REQUIRE(docs.size() == 3);
  CHECK(docs[0] == std::vector<std::uint32_t>{0, 0, 3});
  CHECK(docs[1].empty());
  CHECK(docs[2] == std::vector<std::uint32_t>{1, 1, 1, 2});
}

TEST_CASE("io bag_of_words: malformed input reports file:line") {
  auto msg = [](const std::string& text) { return bad_input_message([&] { bow_of(text); }); };
  CHECK(msg("3\n4\n2\n1 1 2\n1 5 1\n").rfind("x.txt:5: bad word id '5'", 0) == 0);
  CHECK(msg("3\n4\n2\n0 1 2\n").rfind("x.txt:4: bad doc id '0'", 0) == 0);
  CHECK(msg("3\n4\n2\n1 1 0\n").rfind("x.txt:4: bad count '0'", 0) == 0);
  CHECK(msg("3\n4\n2\n1 2 1\n1 2 1\n").rfind("x.txt:5: entry (1, 2) out of order or duplicated", 0) == 0);
  CHECK(msg("3\n4\n2\n2 1 1\n1 2 1\n").rfind("x.txt:5: entry (1, 2) out of order", 0) == 0);
  CHECK(msg("3\n4\n3\n1 1 1\n").rfind("x.txt:4: found 1 entries, header says NNZ 3", 0) == 0);
  CHECK(msg("3\n4\n1\n1 1 1\n2 2 2\n").rfind("x.txt:5: more entries than the header's NNZ 1", 0) == 0);
  CHECK(msg("3\nfour\n1\n").rfind("x.txt:2: bad header W", 0) == 0);
  CHECK(msg("3\n4\n").rfind("x.txt:3: missing header line NNZ", 0) == 0);
  CHECK(msg("3\n4\n99\n").rfind("x.txt:3: NNZ 99 exceeds D*W", 0) == 0);
  CHECK(msg("3\n4\n1\n1 1 1 7\n").rfind("x.txt:4: trailing text '7'", 0) == 0);
}

TEST_CASE("io bag_of_words: sizes from the file never become unbounded allocations") {
  auto msg = [](const std::string& text) { return bad_input_message([&] { bow_of(text); }); };
  auto refused = [](const std::string& text) { return refused_message([&] { bow_of(text); }); };
  // One count of 2e9 would be expanded into 2e9 topic assignments (8 GB): refused at its line.
  const std::string big = refused("3\n5\n4\n1 1 3\n1 2 2\n2 3 2000000000\n3 5 1\n");
  CHECK(big.rfind("x.txt:6: count 2000000000 brings the corpus to 2000000005 tokens, over the limit of 1073741824", 0) == 0);
  CHECK(big.find("7629 MiB") != std::string::npos);  // 2000000005 x 4 bytes
  // The limit is the caller's: raised, the same corpus reads (nothing is expanded here).
  std::istringstream in("3\n5\n4\n1 1 3\n1 2 2\n2 3 2000000000\n3 5 1\n");
  const auto b = io::read_bag_of_words(in, "x.txt", 3'000'000'000ULL);
  CHECK(b.num_tokens() == 2000000006ULL);
  std::istringstream small("1\n2\n1\n1 1 11\n");
  CHECK(refused_message([&] { io::read_bag_of_words(small, "s.txt", 10); }).rfind("s.txt:4: count 11", 0) == 0);
  // Header sizes that a file of a few bytes cannot describe are refused before any allocation.
  CHECK(msg("4000000000\n5\n1\n1 1 1\n").rfind("x.txt:1: header D (number of documents) 4000000000 is more", 0) == 0);
  CHECK(msg("3\n4000000000\n1\n1 1 1\n").rfind("x.txt:2: header W (vocabulary size) 4000000000 is more", 0) == 0);
  CHECK(bow_of("1048576\n1048576\n1\n5 7 1\n").num_docs == 1048576);  // 2^20 is always allowed
}

TEST_CASE("io vocab: one entry per line, blank lines only at the end") {
  std::istringstream in("spam\nham\r\nham\n\n");
  CHECK(io::read_vocab(in, "v.txt") == std::vector<std::string>{"spam", "ham", "ham"});
  std::istringstream gap("a\n\nb\n");
  CHECK(bad_input_message([&] { io::read_vocab(gap, "v.txt"); }).rfind("v.txt:2: empty line", 0) == 0);
  std::istringstream two("a\nb c\n");
  CHECK(bad_input_message([&] { io::read_vocab(two, "v.txt"); }).rfind("v.txt:2: more than one entry", 0) == 0);
}

TEST_CASE("io libsvm: good lines parse to exact CSR, labels with '+'") {
  const auto d = libsvm_of("+1 1:0.5 3:-2 # comment\n\n-1\n0.25 2:1e-3 10:4\n");
  REQUIRE(d.num_rows() == 3);
  CHECK(d.labels == std::vector<double>{1.0, -1.0, 0.25});
  CHECK(d.row_offsets == std::vector<std::uint64_t>{0, 2, 2, 4});
  CHECK(d.indices == std::vector<std::uint32_t>{0, 2, 1, 9});
  CHECK(d.values == std::vector<double>{0.5, -2.0, 1e-3, 4.0});
  CHECK(d.num_features == 10);
  CHECK(d.row_values(2)[1] == 4.0);
  CHECK(d.row_indices(1).empty());
}

TEST_CASE("io libsvm: malformed lines report file:line") {
  auto msg = [](const std::string& text) { return bad_input_message([&] { libsvm_of(text); }); };
  CHECK(msg("1 1:2\n1 2:3\nabc 1:2\n").rfind("x.txt:3: bad label 'abc'", 0) == 0);
  CHECK(msg("1 1:2 3\n").rfind("x.txt:1: bad feature '3'", 0) == 0);
  CHECK(msg("1 0:2\n").rfind("x.txt:1: bad feature index '0'", 0) == 0);
  CHECK(msg("1 3:2 2:1\n").rfind("x.txt:1: feature index 2 not above the previous 3", 0) == 0);
  CHECK(msg("1 3:2 3:1\n").rfind("x.txt:1: feature index 3 not above", 0) == 0);
  CHECK(msg("1\n1 2:x\n").rfind("x.txt:2: bad value 'x' for feature 2", 0) == 0);
  CHECK(msg("1 2:inf\n").rfind("x.txt:1: bad value 'inf'", 0) == 0);
  CHECK(msg("++1 2:1\n").rfind("x.txt:1: bad label", 0) == 0);
  std::error_code ec;
  std::istringstream in("1 2:x\n");
  const auto d = io::read_libsvm(in, "s", ec);
  CHECK(ec == strata::errc::bad_input);
  CHECK(d.num_rows() == 0);
  CHECK(d.row_offsets == std::vector<std::uint64_t>{0});
}

TEST_CASE("io libsvm: a stray huge feature index is refused naming its line, not made into billions of columns") {
  auto msg = [](const std::string& text) { return bad_input_message([&] { libsvm_of(text); }); };
  auto refused = [](const std::string& text) { return refused_message([&] { libsvm_of(text); }); };
  const std::string m = refused("1 1:1 3:2\n-1 2:1 4000000000:1\n1 5:1\n");
  CHECK(m.rfind("x.txt:2: feature index 4000000000 would make that many columns for 5 stored values", 0) == 0);
  CHECK(m.find("61035 MiB") != std::string::npos);
  // Up to 2^24 columns are always fine, and beyond that as long as the data is not mostly empty.
  CHECK(libsvm_of("1 16777216:1\n").num_features == 16777216);
  CHECK(refused("1 16777217:1\n").rfind("x.txt:1: feature index 16777217", 0) == 0);
  CHECK(msg("nan 1:1\n").rfind("x.txt:1: bad label 'nan'", 0) == 0);
  CHECK(msg("1 1:-nan\n").rfind("x.txt:1: bad value '-nan'", 0) == 0);
}

TEST_CASE("io libsvm: a caller's column cap is checked while reading, at the first line past it") {
  const io::libsvm_cap cap{100, "the program's reason"};
  std::istringstream ok("1 1:1 100:2\n");
  CHECK(io::detail::parse_libsvm("1 1:1 100:2\n", "x.txt", cap).num_features == 100);
  // Line 2 passes the cap; line 3 (a malformed line) is never reached.
  const std::string m = refused_message([&] { io::detail::parse_libsvm("1 1:1\n2 3:1 101:5\nbad line\n", "x.txt", cap); });
  CHECK(m.rfind("x.txt:2: feature index 101 is over the limit of 100 columns (the program's reason)", 0) == 0);
  temp_file f("wide.libsvm", "1 1:1 2200000:2\n2 5:1\n");
  CHECK(refused_message([&] { io::read_libsvm(f.path, {2096640, ""}); }).rfind(f.path.string() + ":1: feature index 2200000", 0) == 0);
  CHECK(io::read_libsvm(f.path).num_features == 2200000);  // without a cap: the reader's own rule
}

TEST_CASE("io: readers are not bothered by binary garbage") {
  std::string junk;
  std::uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1664525u + 1013904223u;
    junk.push_back(static_cast<char>(x >> 24));
  }
  CHECK_THROWS_AS(ratings_of(junk), strata::error);
  CHECK_THROWS_AS(bow_of(junk), strata::error);
  CHECK_THROWS_AS(libsvm_of(junk), strata::error);
}

TEST_CASE("io bag_of_words: a large corpus parses to its exact counts") {
  // A third of the SpamAssassin docword (2k docs × 115 entries, ~0.5M tokens). How fast it reads is
  // a benchmark's business (benchmarks/results/scale/REPORT.md), not this test's.
  std::string text;
  const std::uint32_t D = 2000, per_doc = 115, W = 16000;
  text += std::to_string(D) + "\n" + std::to_string(W) + "\n" + std::to_string(D * per_doc) + "\n";
  for (std::uint32_t d = 1; d <= D; ++d)
    for (std::uint32_t i = 0; i < per_doc; ++i)
      text += std::to_string(d) + " " + std::to_string(1 + i * 131 + d % 131) + " " + std::to_string(1 + (d + i) % 3) + "\n";
  std::istringstream in(text);
  const auto b = io::read_bag_of_words(in, "big.txt");
  CHECK(b.nnz() == std::size_t{D} * per_doc);
  std::uint64_t tokens = 0;
  for (std::uint32_t d = 0; d < D; ++d)
    for (std::uint32_t i = 0; i < per_doc; ++i) tokens += 1 + (d + 1 + i) % 3;
  CHECK(b.num_tokens() == tokens);
  std::uint64_t listed = 0;
  for (const auto& doc : b.token_lists()) listed += doc.size();
  CHECK(listed == tokens);
}

}  // namespace test_ml_io
