// Reading data files in chunks and checking them against their check files
// (include/strata/ml/io/file_check.hpp, io/detail/line_reader.hpp's file_lines): a file read in
// chunks of any size gives the lines a whole-buffer read gives; the checksum does not depend on how
// the bytes were cut; a file cut short or changed is refused naming the file, before or after
// parsing; and the ratings reader's compact paths (ids kept in 32 bits, a table for remapping, a
// switch to 64-bit records) agree with each other.
#include <doctest/doctest.h>

#include "../support/io_files.hpp"

#include <strata/core/error.hpp>
#include <strata/ml/io/bag_of_words.hpp>
#include <strata/ml/io/file_check.hpp>
#include <strata/ml/io/libsvm.hpp>
#include <strata/ml/io/ratings.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_file_check {

namespace io = strata::ml::io;
using strata_test::bad_input_message;
using strata_test::temp_file;

namespace {

/// Every line file_lines gives for `path` with chunks of `chunk` bytes.
std::vector<std::string> file_lines_of(const std::filesystem::path& path, std::size_t chunk) {
  io::detail::file_lines lines(path, chunk);
  std::vector<std::string> out;
  std::string_view line;
  while (lines.next(line)) out.emplace_back(line);
  CHECK(lines.line_number() == out.size());
  lines.verify_end();
  return out;
}

/// Every line line_cursor gives for the same text in one buffer.
std::vector<std::string> cursor_lines_of(std::string_view text) {
  io::detail::line_cursor lines(text);
  std::vector<std::string> out;
  std::string_view line;
  while (lines.next(line)) out.emplace_back(line);
  return out;
}

}  // namespace

TEST_CASE("file_lines: any chunk size gives the lines of a whole-buffer read (long lines, CRLF, BOM, no final newline)") {
  std::string text = "\xEF\xBB\xBF" "first line\r\n\n";
  text += std::string(100, 'x') + "\n";  // longer than the small chunks: the buffer grows
  for (int k = 0; k < 50; ++k) text += std::to_string(k * 7919) + " " + std::to_string(k) + "\r\n";
  text += "last line without newline";
  temp_file f("lines.txt", text);
  const auto want = cursor_lines_of(text);
  REQUIRE(want.size() == 54);
  CHECK(want.front() == "first line");
  for (std::size_t chunk : {1u, 2u, 3u, 7u, 64u, 4096u}) {
    CAPTURE(chunk);
    CHECK(file_lines_of(f.path, chunk) == want);
  }
  temp_file empty("empty.txt", "");
  CHECK(file_lines_of(empty.path, 16).empty());
}

TEST_CASE("stream_checksum: the value depends on the bytes only, not on how they were cut") {
  std::mt19937_64 rng(7);
  std::string bytes(1000, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  io::stream_checksum whole;
  whole.update(bytes);
  for (std::size_t piece : {1u, 3u, 5u, 8u, 13u, 999u}) {
    io::stream_checksum cut;
    for (std::size_t at = 0; at < bytes.size(); at += piece) cut.update(std::string_view(bytes).substr(at, piece));
    CHECK(cut.value() == whole.value());
    CHECK(cut.bytes() == bytes.size());
  }
  // One flipped bit, one byte fewer, one zero byte more: all different values.
  std::string flipped = bytes;
  flipped[500] = static_cast<char>(flipped[500] ^ 1);
  io::stream_checksum a, b, c;
  a.update(flipped);
  b.update(std::string_view(bytes).substr(0, 999));
  c.update(bytes + std::string(1, '\0'));
  CHECK(a.value() != whole.value());
  CHECK(b.value() != whole.value());
  CHECK(c.value() != whole.value());
}

TEST_CASE("check files: a whole file reads, one cut short or changed is refused naming the file") {
  std::string text;
  for (int u = 0; u < 40; ++u) text += std::to_string(u) + " " + std::to_string(u % 9) + " " + std::to_string(1 + u % 5) + "\n";
  temp_file f("ratings.txt", text);
  const io::file_check c = io::compute_check(f.path);
  CHECK(c.bytes == text.size());
  CHECK(c.lines == 40);
  io::write_check(f.path, c);
  REQUIRE(io::read_check(f.path) == c);
  CHECK(io::read_ratings(f.path).size() == 40);

  // Cut short: refused on opening, before a line is parsed (the cut last line would otherwise be
  // a "missing rating" or, cut at a line end, a silently shorter data set).
  f.write(text.substr(0, text.size() - 6));
  std::string m = bad_input_message([&] { io::read_ratings(f.path); });
  CHECK(m.find(f.path.string()) != std::string::npos);
  CHECK(m.find("cut short") != std::string::npos);
  CHECK(m.find("regenerate") != std::string::npos);
  f.write(text.substr(0, text.rfind('\n', text.size() - 2) + 1));  // whole lines only
  CHECK(bad_input_message([&] { io::read_ratings(f.path); }).find("cut short") != std::string::npos);

  // Same size, one digit changed: found by the checksum at the end of the read.
  std::string changed = text;
  changed[0] = '9';
  f.write(changed);
  m = bad_input_message([&] { io::read_ratings(f.path); });
  CHECK(m.find("checksum differs") != std::string::npos);

  // The other readers check too.
  const std::string docword = "2\n3\n3\n1 1 2\n1 3 1\n2 2 4\n";
  temp_file d("docword.txt", docword);
  io::write_check(d.path, io::compute_check(d.path));
  CHECK(io::read_bag_of_words(d.path).nnz() == 3);
  std::string d2 = docword;
  d2[d2.size() - 2] = '5';
  d.write(d2);
  CHECK(bad_input_message([&] { io::read_bag_of_words(d.path); }).find("checksum differs") != std::string::npos);
  const std::string svm = "1 1:0.5 3:2\n-1 2:1\n";
  temp_file s("data.svm", svm);
  io::write_check(s.path, io::compute_check(s.path));
  CHECK(io::read_libsvm(s.path).num_rows() == 2);
  s.write(svm.substr(0, svm.size() - 1));
  CHECK(bad_input_message([&] { io::read_libsvm(s.path); }).find("cut short") != std::string::npos);

  // A damaged check file is an error naming it, not a reason to trust the data.
  std::ofstream(io::check_path(s.path), std::ios::binary | std::ios::trunc) << "strata-check 1 bytes=12 lines=x\n";
  m = bad_input_message([&] { io::read_libsvm(s.path); });
  CHECK(m.find(io::check_path(s.path).string() + ":1:") == 0);
}

TEST_CASE("io ratings: the table, the sorted list and the 64-bit records give the same dense ids") {
  // The same ratings with ids spread three ways: small (remapped through a table), sparse up to
  // 2^32-1 (sorted list), and with one id past 2^32 half way through (64-bit records from there).
  const std::vector<std::uint64_t> base{5, 17, 3, 17, 9, 5, 40, 3};
  for (std::uint64_t scale : {std::uint64_t{1}, std::uint64_t{100000000}, std::uint64_t{3000000000}}) {
    CAPTURE(scale);
    std::string text;
    for (std::size_t k = 0; k < base.size(); ++k)
      text += std::to_string(base[k] * scale) + " " + std::to_string(base[(k + 3) % base.size()]) + " " + std::to_string(k) + "\n";
    temp_file f("spread.txt", text);
    const auto rs = io::read_ratings(f.path);
    REQUIRE(rs.size() == base.size());
    CHECK(rs.num_users == 5);  // 3, 5, 9, 17, 40
    CHECK(rs.num_items == 5);
    for (std::size_t k = 0; k < base.size(); ++k) {
      CHECK(rs.user_id(rs.ratings[k].user) == base[k] * scale);
      CHECK(rs.item_id(rs.ratings[k].item) == base[(k + 3) % base.size()]);
      CHECK(rs.ratings[k].value == static_cast<float>(k));
    }
    CHECK(rs.ratings[2].user == 0);  // user 3 (scaled) is the smallest: index 0
    CHECK(rs.ratings[6].user == 4);  // user 40 the largest
  }
}

TEST_CASE("io ratings: share_ids keeps an identity set as it is and remaps a subset through a table") {
  // Train holds users 0..5 (the identity); test only users 1 and 4 (remapped when read alone).
  auto train = io::detail::parse_ratings("0 0 1\n1 1 1\n2 2 1\n3 0 1\n4 1 1\n5 2 1\n", "train");
  auto test = io::detail::parse_ratings("4 2 5\n1 0 3\n", "test");
  CHECK_FALSE(train.remapped());
  CHECK(test.remapped());
  CHECK(test.ratings[0].user == 1);  // user 4 is test's second user
  io::share_ids(train, test);
  CHECK_FALSE(train.remapped());
  CHECK_FALSE(test.remapped());
  CHECK(test.num_users == 6);
  CHECK(test.ratings[0].user == 4);
  CHECK(test.ratings[1].user == 1);
  CHECK(test.ratings[0].item == 2);
  CHECK(train.ratings[4].user == 4);
}

}  // namespace test_ml_file_check
