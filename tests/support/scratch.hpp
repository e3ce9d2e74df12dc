#pragma once
// A fresh folder under the system's temporary folder for one test, removed at its end.
#include <filesystem>
#include <string>

#include <unistd.h>

namespace strata_test {

struct scratch {
  std::filesystem::path dir;
  /// tmp/strata-<name>-<pid>, emptied first.
  explicit scratch(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / ("strata-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() { std::filesystem::remove_all(dir); }
};

}  // namespace strata_test
