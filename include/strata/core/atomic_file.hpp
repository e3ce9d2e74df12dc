#pragma once
/// \file Writing a whole file so that a reader sees either its previous content or all of the new
/// one, never a prefix: the bytes go to a temporary file beside the target (`<target>.tmp-<pid>`,
/// in the same folder, so the rename stays on one filesystem), then fsync, rename over the target,
/// fsync of the folder. On any failure the temporary file is removed, the target is untouched and
/// the strata::error names the target and the system's reason ("No space left on device",
/// "Read-only file system", "File too large"): its code is the errno (std::generic_category), so
/// what() ends in strerror's text, not in "malformed input".
///
/// A target that exists and is not a regular file (a device such as /dev/null or /dev/full, a
/// FIFO) is written in place: it cannot be replaced. A symbolic link is followed: the file it
/// names is replaced.
///
///     strata::write_file_atomic("model.txt", text);          // std::string_view or bytes
///     strata::atomic_file f("big.bin");                      // or piece by piece:
///     f.write(part1); f.write(part2); f.commit();            // no commit: nothing changes
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <strata/core/error.hpp>

namespace strata {

/// The error of a failed system call on `p`: "cannot <what> <p>: <strerror(err)>".
inline error file_error(const std::filesystem::path& p, std::string_view what, int err = errno) {
  return error(std::error_code(err, std::generic_category()), "cannot " + std::string(what) + " " + p.string());
}

namespace detail {
/// Writes all of `bytes` to `fd` (retrying short writes and EINTR); `p` names the file in errors.
inline void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& p) {
  const auto* at = reinterpret_cast<const char*>(bytes.data());
  std::size_t left = bytes.size();
  while (left > 0) {
    const ::ssize_t n = ::write(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw file_error(p, "write");
    at += n;
    left -= static_cast<std::size_t>(n);
  }
}
/// fsync of the folder `dir` (the rename's directory entry reaches the disk).
inline void fsync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw file_error(dir, "open the folder");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) throw file_error(dir, "fsync the folder", err);  // EINVAL: a filesystem without it
}
}  // namespace detail

/// A file being written: every byte goes to a temporary file, and `commit()` puts it in place of
/// the target. Destroyed without a commit (an exception, a failed write), it removes the
/// temporary file and the target keeps its previous content (or stays absent).
class atomic_file {
 public:
  explicit atomic_file(std::filesystem::path target) : target_(std::move(target)) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(target_, ec))) {
      auto real = fs::canonical(target_, ec);
      if (!ec) target_ = std::move(real);
    }
    const auto st = fs::status(target_, ec);
    in_place_ = fs::exists(st) && !fs::is_regular_file(st);
    if (in_place_) {
      fd_ = ::open(target_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      if (fd_ < 0) throw file_error(target_, "open for writing");
      return;
    }
    tmp_ = target_;
    tmp_ += ".tmp-" + std::to_string(::getpid());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) throw error(std::error_code(errno, std::generic_category()),
                             "cannot write " + target_.string() + " (creating " + tmp_.string() + ")");
  }
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
  }

  /// The file this writes (a symbolic link's file).
  const std::filesystem::path& target() const noexcept { return target_; }

  void write(std::span<const std::byte> bytes) { detail::write_all(fd_, bytes, target_); }
  void write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }

  /// fsync, rename over the target, fsync of its folder. Throws (and leaves the target as it was)
  /// when any step fails.
  void commit() {
    if (!in_place_ && ::fsync(fd_) != 0) throw file_error(target_, "fsync");  // a device or FIFO has nothing to sync
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw file_error(target_, "write (close)");
    if (in_place_) return void(committed_ = true);
    if (::rename(tmp_.c_str(), target_.c_str()) != 0)
      throw error(std::error_code(errno, std::generic_category()), "cannot rename " + tmp_.string() + " to " + target_.string());
    committed_ = true;
    detail::fsync_dir(target_.parent_path());
  }

 private:
  std::filesystem::path target_, tmp_;
  int fd_ = -1;
  bool in_place_ = false, committed_ = false;
};

/// Replaces `p` by `bytes` atomically (see the file comment). The folder must exist.
inline void write_file_atomic(const std::filesystem::path& p, std::span<const std::byte> bytes) {
  atomic_file f(p);
  f.write(bytes);
  f.commit();
}
inline void write_file_atomic(const std::filesystem::path& p, std::string_view text) {
  write_file_atomic(p, std::as_bytes(std::span(text.data(), text.size())));
}

}  // namespace strata
