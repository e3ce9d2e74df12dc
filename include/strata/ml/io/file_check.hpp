#pragma once
/// \file The check file written beside a generated data file (`<file>.check`: its size, its line
/// count and a 64-bit checksum of its bytes), so that a reader tells a whole file from one cut
/// short or changed since it was written: text formats have no trailer that LIBMF, WarpLDA or
/// glmnet would skip, so the trailer lives beside the file. Readers verify it when it is there.
#include <strata/core/error.hpp>

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <system_error>

namespace strata::ml::io {

/// A 64-bit checksum of a byte stream, fed in chunks of any size (the value depends only on the
/// bytes, not on how they were cut): 8-byte words mixed by multiply-rotate, the tail and the
/// length folded in at the end. Not cryptographic: it tells a damaged file, not a forged one.
class stream_checksum {
 public:
  void update(std::span<const char> bytes) noexcept {
    const char* p = bytes.data();
    std::size_t n = bytes.size();
    total_ += n;
    if (held_ > 0) {  // complete the word a previous chunk began
      const std::size_t take = n < 8 - held_ ? n : 8 - held_;
      std::memcpy(tail_ + held_, p, take);
      held_ += take, p += take, n -= take;
      if (held_ < 8) return;
      mix(load(tail_));
      held_ = 0;
    }
    for (; n >= 8; p += 8, n -= 8) mix(load(p));
    std::memcpy(tail_, p, n);
    held_ = n;
  }
  /// The checksum of every byte given so far.
  std::uint64_t value() const noexcept {
    char last[8] = {};
    std::memcpy(last, tail_, held_);
    std::uint64_t h = h_;
    h = std::rotl((h ^ load(last)) * k1, 31) * k2;
    h ^= total_;
    h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33;
    return h;
  }
  /// Bytes given so far.
  std::uint64_t bytes() const noexcept { return total_; }

 private:
  static constexpr std::uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
  static std::uint64_t load(const char* p) noexcept {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    return w;
  }
  void mix(std::uint64_t w) noexcept { h_ = std::rotl((h_ ^ w) * k1, 31) * k2; }
  std::uint64_t h_ = 0x243F6A8885A308D3ull;
  std::uint64_t total_ = 0;
  char tail_[8] = {};
  std::size_t held_ = 0;
};

/// What the check file records of its data file.
struct file_check {
  std::uint64_t bytes = 0;     ///< the data file's size
  std::uint64_t lines = 0;     ///< its '\n'-terminated lines
  std::uint64_t checksum = 0;  ///< stream_checksum of all its bytes
  bool operator==(const file_check&) const = default;
};

/// The check file of `data`: "<data>.check".
inline std::filesystem::path check_path(const std::filesystem::path& data) {
  std::filesystem::path p = data;
  p += ".check";
  return p;
}

/// The one line a check file holds.
inline std::string format_check(const file_check& c) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(c.checksum));
  return "strata-check 1 bytes=" + std::to_string(c.bytes) + " lines=" + std::to_string(c.lines) + " checksum=" + hex +
         "\n";
}

/// Writes the check file of `data` (through a temporary name and a rename, so a check file is
/// never half written). Throws strata::error with the OS error naming the file.
inline void write_check(const std::filesystem::path& data, const file_check& c) {
  const auto path = check_path(data);
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << format_check(c);
    out.flush();
    if (!out) throw strata::error(std::error_code(errno ? errno : EIO, std::generic_category()), tmp.string() + ": cannot write");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw strata::error(ec, path.string() + ": cannot rename the check file into place");
}

/// Reads the check file of `data`: nullopt when there is none; a check file that does not parse
/// is an error naming it (a damaged check is no reason to trust the data).
inline std::optional<file_check> read_check(const std::filesystem::path& data) {
  const auto path = check_path(data);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  file_check c;
  unsigned long long b = 0, l = 0, k = 0;
  int used = 0;
  if (std::sscanf(line.c_str(), "strata-check 1 bytes=%llu lines=%llu checksum=%16llx%n", &b, &l, &k, &used) != 3 ||
      static_cast<std::size_t>(used) != line.size())
    throw strata::error(errc::bad_input, path.string() + ":1: not a strata check line (want \"strata-check 1 bytes=N "
                                                         "lines=N checksum=HEX\")");
  c.bytes = b, c.lines = l, c.checksum = k;
  return c;
}

/// Compares what a reader saw of `data` with its check file's record; a difference throws
/// strata::error(bad_input) that says which and by how much ("cut short" when it is smaller).
inline void verify_check(const std::filesystem::path& data, const file_check& want, const file_check& seen) {
  if (want == seen) return;
  std::string what = data.string() + ": does not match " + check_path(data).filename().string() + ": ";
  if (seen.bytes < want.bytes)  // lines are unknown when the size alone told (a reader checks it on opening)
    what += "cut short (" + std::to_string(seen.bytes) + " of " + std::to_string(want.bytes) + " bytes" +
            (seen.lines > 0 ? ", " + std::to_string(seen.lines) + " of " + std::to_string(want.lines) + " lines)" : std::string(")"));
  else if (seen.bytes != want.bytes || seen.lines != want.lines)
    what += std::to_string(seen.bytes) + " bytes in " + std::to_string(seen.lines) + " lines where " +
            std::to_string(want.bytes) + " in " + std::to_string(want.lines) + " were written";
  else
    what += "same size, different bytes (checksum differs): changed since it was written";
  throw strata::error(errc::bad_input, what + "; regenerate it");
}

/// Reads `data` whole in chunks and returns what a check file would record of it.
inline file_check compute_check(const std::filesystem::path& data) {
  std::ifstream in(data, std::ios::binary);
  if (!in) throw strata::error(std::error_code(errno ? errno : EIO, std::generic_category()), data.string() + ": cannot open");
  std::string buf(std::size_t{1} << 20, '\0');
  stream_checksum sum;
  file_check c;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    sum.update({buf.data(), got});
    for (std::size_t i = 0; i < got; ++i) c.lines += buf[i] == '\n';
  }
  if (in.bad()) throw strata::error(errc::bad_input, data.string() + ": read error");
  c.bytes = sum.bytes();
  c.checksum = sum.value();
  return c;
}

}  // namespace strata::ml::io
