#pragma once
/// \file Encoding user-defined values for app messages and collectives: cereal's binary archive,
/// and a stable key per C++ type so a receiver can tell message types apart.
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

namespace strata::wire {

namespace detail {
template <class T>
constexpr std::string_view raw_type_name() noexcept {
  // GCC and Clang spell T inside the function's name: "... [with T = ns::type; ...]" / "[T = ns::type]".
  // The same in every process built from the same program.
  std::string_view f = __PRETTY_FUNCTION__;
  const auto at = f.find("T = ");
  if (at == std::string_view::npos) return f;
  f.remove_prefix(at + 4);
  return f.substr(0, f.find_first_of(";]"));
}
constexpr std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}
}  // namespace detail

/// The name a message type goes by: `T::message_name` when T declares one (a stable name shared by
/// programs built separately), else the compiler's spelling of T.
template <class T>
constexpr std::string_view type_name() noexcept {
  if constexpr (requires { T::message_name; }) return std::string_view(T::message_name);
  else return detail::raw_type_name<T>();
}
/// The 64-bit key of a message type on the wire.
template <class T>
constexpr std::uint64_t type_key() noexcept {
  return detail::fnv1a(type_name<T>());
}

/// Appends the cereal binary encoding of `v` to `out`.
template <class T>
void encode_value(const T& v, std::vector<std::byte>& out) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(v);
  }
  const std::string s = std::move(os).str();
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}
/// Decodes `v` from exactly `in` (trailing bytes are an error); throws on malformed input.
template <class T>
void decode_value(std::span<const std::byte> in, T& v) {
  std::istringstream is(std::string(reinterpret_cast<const char*>(in.data()), in.size()), std::ios::binary);
  {
    cereal::BinaryInputArchive ar(is);
    ar(v);
  }
  if (is.peek() != std::char_traits<char>::eof()) throw std::runtime_error("trailing bytes after the value");
}

}  // namespace strata::wire
