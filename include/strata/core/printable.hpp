#pragma once
/// \file printable(): text from a file or from the network made safe to print in a message.
#include <cstddef>
#include <string>
#include <string_view>

namespace strata {

/// Text safe to print in an error message: every byte that is not printable ASCII (control bytes,
/// NUL, DEL, bytes >= 0x80) and the backslash become "\xNN", so a message neither stops at a NUL nor
/// drives the terminal. At most `max_len` bytes of `text` are shown, then "...".
inline std::string printable(std::string_view text, std::size_t max_len = std::string_view::npos) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string s;
  const bool cut = text.size() > max_len;
  if (cut) text = text.substr(0, max_len);
  s.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      s.push_back(ch);
    } else {
      s.append("\\x").push_back(hex[c >> 4]);
      s.push_back(hex[c & 15]);
    }
  }
  if (cut) s.append("...");
  return s;
}

}  // namespace strata
