#pragma once
/// \file Writing a whole file atomically: a temporary file beside it, fsync, rename. A reader sees
/// the old file or the complete new one, never a truncated one (a full disk, a crash mid-write).
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

namespace strata::ml::io {

/// Writes `text` to `path` atomically; throws std::runtime_error naming the file and the reason
/// (the temporary file is removed on failure, the old `path` is kept).
inline void write_file_atomic(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const auto fail = [&](const char* step, int fd) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + " (" + step + " " + tmp + ": " + std::strerror(err) + ")");
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", -1);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write", fd);
    done += static_cast<std::size_t>(w);
  }
  if (::fsync(fd) != 0) fail("fsync", fd);
  if (::close(fd) != 0) fail("close", -1);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", -1);
}

}  // namespace strata::ml::io
