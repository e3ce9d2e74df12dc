#pragma once
/// \file Shared plumbing for strata's text-format readers: whole-stream slurping, a line cursor
/// with line numbers, whitespace-separated fields parsed with std::from_chars, and the
/// "<file>:<line>: <what>" error convention.
#include <strata/core/error.hpp>
#include <strata/core/printable.hpp>
#include <strata/ml/io/file_check.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace strata::ml::io::detail {

/// Reads the rest of a stream into one string; a single bulk read is far faster than
/// per-field `operator>>`. For streams; files are read in chunks by file_lines.
inline std::string slurp(std::istream& in, std::string_view name) {
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw strata::error(errc::bad_input, std::string(name) + ": read error");
  return text;
}

/// Opens a file for reading; failure throws strata::error carrying the OS error code, so the
/// error_code overloads can tell "no such file" from "malformed line".
inline std::string slurp_file(const std::filesystem::path& file) {
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int e = errno != 0 ? errno : EIO;
    throw strata::error(std::error_code(e, std::generic_category()), file.string() + ": cannot open");
  }
  return slurp(in, file.string());
}

/// Throws the readers' one error: bad_input with "<name>:<line>: <what>".
[[noreturn]] inline void fail(std::string_view name, std::size_t line, std::string_view what) {
  std::string msg;
  msg.reserve(name.size() + what.size() + 24);
  msg.append(name).append(":").append(std::to_string(line)).append(": ").append(what);
  throw strata::error(errc::bad_input, msg);
}

/// Throws a refusal of well-formed input past a limit: refused with "<name>:<line>: <what>" (so
/// the message does not end in "malformed input").
[[noreturn]] inline void refuse(std::string_view name, std::size_t line, std::string_view what) {
  std::string msg;
  msg.append(name).append(":").append(std::to_string(line)).append(": ").append(what);
  throw strata::error(errc::refused, msg);
}

/// A token quoted for an error message (printable(): escaped), cut short so a binary blob cannot
/// flood the log.
inline std::string quoted(std::string_view tok) {
  constexpr std::size_t max_len = 40;
  std::string s = "'";
  s.append(printable(tok.substr(0, max_len)));
  if (tok.size() > max_len) s.append("...");
  s.append("'");
  return s;
}

/// Walks a text buffer line by line, counting lines from 1 and dropping a trailing '\r'.
class line_cursor {
 public:
  /// A UTF-8 byte order mark at the start of the text is skipped (editors on Windows write one).
  explicit line_cursor(std::string_view text) noexcept : text_(text) {
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
  }

  /// Sets `line` to the next line (without its terminator); false at the end of the text.
  bool next(std::string_view& line) noexcept {
    if (pos_ >= text_.size()) return false;
    const std::size_t end = text_.find('\n', pos_);
    const std::size_t stop = end == std::string_view::npos ? text_.size() : end;
    line = text_.substr(pos_, stop - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = stop + 1;
    ++line_no_;
    return true;
  }
  /// The 1-based number of the line last returned by next().
  std::size_t line_number() const noexcept { return line_no_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t line_no_ = 0;
};

/// A line_cursor over a buffer with file_lines' (empty) end check, so that one parser serves both.
struct buffer_lines : line_cursor {
  using line_cursor::line_cursor;
  void verify_end() const noexcept {}
};

/// Walks a file line by line like line_cursor, reading it in chunks (8 MiB by default; a longer
/// line grows the buffer), so a reader never holds the whole file: the data sets of the scale
/// runs are gigabytes of text. A line's view is valid until the next call. When the file has a
/// check file (file_check.hpp), its size is compared on opening (a file cut short is refused
/// before any line is parsed) and its line count and checksum at the end (`verify_end`).
class file_lines {
 public:
  explicit file_lines(const std::filesystem::path& file, std::size_t chunk = std::size_t{8} << 20)
      : name_(file.string()), buf_(chunk, '\0') {
    errno = 0;
    f_ = std::fopen(file.c_str(), "rb");
    if (!f_) {
      const int e = errno != 0 ? errno : EIO;
      throw strata::error(std::error_code(e, std::generic_category()), name_ + ": cannot open");
    }
    std::error_code ec;
    size_ = std::filesystem::file_size(file, ec);
    if (ec) size_ = 0;
    try {
      check_ = read_check(file);
      if (check_ && check_->bytes != size_) verify_check(file, *check_, {size_, 0, 0});
    } catch (...) {
      std::fclose(f_);
      throw;
    }
    path_ = file;
  }
  file_lines(const file_lines&) = delete;
  file_lines& operator=(const file_lines&) = delete;
  ~file_lines() { std::fclose(f_); }

  /// Sets `line` to the next line (without its terminator); false at the end of the file.
  bool next(std::string_view& line) {
    for (;;) {
      const char* at = static_cast<const char*>(std::memchr(buf_.data() + begin_, '\n', end_ - begin_));
      if (at || (eof_ && begin_ < end_)) {
        const std::size_t stop = at ? static_cast<std::size_t>(at - buf_.data()) : end_;
        line = std::string_view(buf_.data() + begin_, stop - begin_);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        begin_ = at ? stop + 1 : end_;
        first_ = false;
        newlines_ += at != nullptr;
        ++line_no_;
        return true;
      }
      if (eof_) return false;
      refill();
    }
  }
  /// The 1-based number of the line last returned by next().
  std::size_t line_number() const noexcept { return line_no_; }
  /// The file's size in bytes when it was opened.
  std::uint64_t file_size() const noexcept { return size_; }
  /// After next() returned false: compares the bytes read with the check file, if there is one.
  void verify_end() const {
    if (check_) verify_check(path_, *check_, {sum_.bytes(), newlines_, sum_.value()});
  }

 private:
  void refill() {
    if (begin_ > 0) {  // keep the unfinished line at the front
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_, begin_ = 0;
    }
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);  // a line longer than the buffer
    const std::size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, f_);
    if (std::ferror(f_)) throw strata::error(errc::bad_input, name_ + ": read error");
    if (check_) sum_.update({buf_.data() + end_, got});
    end_ += got;
    eof_ = got == 0 || std::feof(f_);
    if (first_ && (end_ >= 3 || eof_)) {  // the file's first bytes: a UTF-8 BOM is skipped, as line_cursor does
      first_ = false;
      if (end_ >= 3 && std::string_view(buf_.data(), 3) == "\xEF\xBB\xBF") begin_ = 3;
    }
  }
  std::string name_;
  std::filesystem::path path_;
  std::FILE* f_ = nullptr;
  std::string buf_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false, first_ = true;
  std::uint64_t size_ = 0, newlines_ = 0;
  std::size_t line_no_ = 0;
  std::optional<file_check> check_;
  stream_checksum sum_;
};

/// True for the blanks that separate fields (space, tab, and stray CR/FF/VT).
constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/// Splits one line into whitespace-separated fields.
class fields {
 public:
  explicit fields(std::string_view line) noexcept : rest_(line) {}

  /// The next field, or an empty view when the line has no more.
  std::string_view next() noexcept {
    skip_blanks();
    std::size_t n = 0;
    while (n < rest_.size() && !is_blank(rest_[n])) ++n;
    const std::string_view tok = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return tok;
  }
  /// True when only blanks remain.
  bool at_end() noexcept {
    skip_blanks();
    return rest_.empty();
  }
  /// What is left of the line (after leading blanks), for "trailing text" messages.
  std::string_view rest() noexcept {
    skip_blanks();
    return rest_;
  }

 private:
  void skip_blanks() noexcept {
    std::size_t n = 0;
    while (n < rest_.size() && is_blank(rest_[n])) ++n;
    rest_.remove_prefix(n);
  }
  std::string_view rest_;
};

/// True when the line holds nothing but blanks.
inline bool is_blank_line(std::string_view line) noexcept {
  for (char c : line)
    if (!is_blank(c)) return false;
  return true;
}

/// Parses a whole token as an unsigned integer; false on any stray character or overflow.
template <class UInt>
bool parse_uint(std::string_view tok, UInt& out) noexcept {
  static_assert(std::is_unsigned_v<UInt>);
  if (tok.empty()) return false;
  const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  return ec == std::errc() && p == tok.data() + tok.size();
}

/// Parses a whole token as a finite floating-point number. A leading '+' is accepted because
/// libsvm files write labels as "+1", which std::from_chars alone rejects.
template <class Float>
bool parse_float(std::string_view tok, Float& out) noexcept {
  static_assert(std::is_floating_point_v<Float>);
  if (!tok.empty() && tok.front() == '+') {
    tok.remove_prefix(1);
    if (!tok.empty() && (tok.front() == '-' || tok.front() == '+')) return false;
  }
  if (tok.empty()) return false;
  const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  return ec == std::errc() && p == tok.data() + tok.size() && std::isfinite(out);
}

/// Runs a throwing reader and turns a strata::error into `ec` plus an empty result, so callers
/// that prefer error codes never see an exception from malformed or missing input.
template <class F>
auto catch_into(std::error_code& ec, F&& read) -> decltype(read()) {
  ec.clear();
  try {
    return std::forward<F>(read)();
  } catch (const strata::error& e) {
    ec = e.code();
    return {};
  }
}

}  // namespace strata::ml::io::detail
