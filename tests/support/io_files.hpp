#pragma once
// What the reader tests share: a data file under the system's temporary folder (with the check
// file a test may write beside it, both removed at the end), and the message of the bad_input
// error a read throws.
#include <doctest/doctest.h>

#include <strata/core/error.hpp>
#include <strata/ml/io/file_check.hpp>

#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <unistd.h>

namespace strata_test {

/// tmp/strata_test_<pid>_<name> holding `text`; it and its check file are removed at the end.
struct temp_file {
  std::filesystem::path path;
  temp_file(const std::string& name, const std::string& text)
      : path(std::filesystem::temp_directory_path() / ("strata_test_" + std::to_string(::getpid()) + "_" + name)) {
    write(text);
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  /// Replaces the file's contents.
  void write(const std::string& text) const { std::ofstream(path, std::ios::binary | std::ios::trunc) << text; }
  ~temp_file() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    std::filesystem::remove(strata::ml::io::check_path(path), ec);
  }
};

/// The message of the strata::error that `f` throws, checking it is bad_input; "" if none.
template <class F>
std::string bad_input_message(F&& f) {
  try {
    f();
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::bad_input);
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw a non-strata exception: " << e.what());
  }
  return "";
}

}  // namespace strata_test
