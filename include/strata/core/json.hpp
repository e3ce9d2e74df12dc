#pragma once
/// \file A small JSON value with a strict parser and a one-line writer: enough for strata's run
/// traces (core/trace.hpp) and configuration lines, and nothing more. Objects keep their members
/// in file order (duplicate keys are kept too; `find` returns the first). Numbers are doubles
/// (exact for integers up to 2^53); a non-finite number is written as `null`. Depends on the
/// standard library only.
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

/// A malformed JSON text, or a value of the wrong kind; `offset()` is the byte offset of the
/// problem in the parsed text (0 for kind errors).
class json_error : public std::runtime_error {
 public:
  json_error(const std::string& what, std::size_t offset = 0) : std::runtime_error(what), offset_(offset) {}
  std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

/// One JSON value: null, a boolean, a number, a string, an array or an object.
class json_value {
 public:
  enum class kind { null, boolean, number, string, array, object };
  using array_type = std::vector<json_value>;
  using object_type = std::vector<std::pair<std::string, json_value>>;

  json_value() noexcept = default;
  json_value(std::nullptr_t) noexcept {}
  json_value(bool b) noexcept : k_(kind::boolean), b_(b) {}
  template <class N>
    requires(std::is_arithmetic_v<N> && !std::is_same_v<N, bool>)
  json_value(N n) noexcept : k_(kind::number), n_(static_cast<double>(n)) {}
  json_value(std::string s) : k_(kind::string), s_(std::move(s)) {}
  json_value(std::string_view s) : k_(kind::string), s_(s) {}
  json_value(const char* s) : k_(kind::string), s_(s) {}

  /// An array (empty unless given its elements).
  static json_value array(array_type a = {}) {
    json_value v;
    v.k_ = kind::array;
    v.a_ = std::move(a);
    return v;
  }
  /// An object (empty unless given its members).
  static json_value object(object_type o = {}) {
    json_value v;
    v.k_ = kind::object;
    v.o_ = std::move(o);
    return v;
  }

  kind type() const noexcept { return k_; }
  bool is_null() const noexcept { return k_ == kind::null; }
  bool is_bool() const noexcept { return k_ == kind::boolean; }
  bool is_number() const noexcept { return k_ == kind::number; }
  bool is_string() const noexcept { return k_ == kind::string; }
  bool is_array() const noexcept { return k_ == kind::array; }
  bool is_object() const noexcept { return k_ == kind::object; }

  /// The value as that kind; json_error when it is another kind.
  bool as_bool() const { return expect(kind::boolean), b_; }
  double as_number() const { return expect(kind::number), n_; }
  const std::string& as_string() const { return expect(kind::string), s_; }
  const array_type& as_array() const { return expect(kind::array), a_; }
  const object_type& as_object() const { return expect(kind::object), o_; }
  array_type& as_array() { return expect(kind::array), a_; }
  object_type& as_object() { return expect(kind::object), o_; }

  /// The first member named `key` of an object; nullptr when there is none or this is not an object.
  const json_value* find(std::string_view key) const noexcept {
    if (k_ != kind::object) return nullptr;
    for (const auto& [k, v] : o_)
      if (k == key) return &v;
    return nullptr;
  }
  /// Sets member `key` of an object (replacing the first of that name, else appending); returns
  /// *this so that a configuration can be built in one expression.
  json_value& set(std::string key, json_value v) {
    auto& o = as_object();
    for (auto& [k, x] : o)
      if (k == key) {
        x = std::move(v);
        return *this;
      }
    o.emplace_back(std::move(key), std::move(v));
    return *this;
  }
  /// Appends an element to an array.
  json_value& push_back(json_value v) {
    as_array().push_back(std::move(v));
    return *this;
  }

  /// Equal kinds and equal contents (numbers compare as doubles; objects member by member, in order).
  friend bool operator==(const json_value& x, const json_value& y) noexcept {
    if (x.k_ != y.k_) return false;
    switch (x.k_) {
      case kind::null: return true;
      case kind::boolean: return x.b_ == y.b_;
      case kind::number: return x.n_ == y.n_;
      case kind::string: return x.s_ == y.s_;
      case kind::array: return x.a_ == y.a_;
      case kind::object: return x.o_ == y.o_;
    }
    return false;
  }

  /// One line of JSON, ", " between elements and ": " after keys. Numbers are written in the
  /// shortest form that reads back to the same double; non-finite numbers as null.
  std::string dump() const {
    std::string out;
    dump_to(out);
    return out;
  }
  void dump_to(std::string& out) const {
    switch (k_) {
      case kind::null: out += "null"; break;
      case kind::boolean: out += b_ ? "true" : "false"; break;
      case kind::number: write_number(out, n_); break;
      case kind::string: write_string(out, s_); break;
      case kind::array:
        out += '[';
        for (std::size_t i = 0; i < a_.size(); ++i) {
          if (i) out += ", ";
          a_[i].dump_to(out);
        }
        out += ']';
        break;
      case kind::object:
        out += '{';
        for (std::size_t i = 0; i < o_.size(); ++i) {
          if (i) out += ", ";
          write_string(out, o_[i].first);
          out += ": ";
          o_[i].second.dump_to(out);
        }
        out += '}';
        break;
    }
  }

  /// Parses one JSON value (surrounding whitespace allowed, nothing else). Throws json_error
  /// with the byte offset of the first problem.
  static json_value parse(std::string_view text) {
    parser p{text};
    p.skip_ws();
    json_value v = p.value(0);
    p.skip_ws();
    if (p.pos != text.size()) p.fail("unexpected text after the value");
    return v;
  }

  /// Writes a number as dump() does.
  static void write_number(std::string& out, double x) {
    if (!std::isfinite(x)) {
      out += "null";
      return;
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);
    out.append(buf, r.ptr);
  }
  /// Writes a quoted, escaped string as dump() does.
  static void write_string(std::string& out, std::string_view s) {
    out += '"';
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      switch (ch) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
          } else {
            out += ch;
          }
      }
    }
    out += '"';
  }

 private:
  static constexpr int max_depth = 64;  // nesting limit, so hostile input cannot exhaust the stack

  void expect(kind k) const {
    static constexpr const char* names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    if (k_ != k)
      throw json_error(std::string("JSON value is ") + names[static_cast<int>(k_)] + ", not " + names[static_cast<int>(k)]);
  }

  struct parser {
    std::string_view t;
    std::size_t pos = 0;

    [[noreturn]] void fail(const std::string& what) const {
      throw json_error(what + " at column " + std::to_string(pos + 1), pos);
    }
    void skip_ws() noexcept {
      while (pos < t.size() && (t[pos] == ' ' || t[pos] == '\t' || t[pos] == '\n' || t[pos] == '\r')) ++pos;
    }
    bool eat(char c) noexcept {
      if (pos < t.size() && t[pos] == c) return ++pos, true;
      return false;
    }
    void literal(std::string_view word) {
      if (t.substr(pos, word.size()) != word) fail("invalid literal (want true, false or null)");
      pos += word.size();
    }
    json_value value(int depth) {
      if (depth > max_depth) fail("nesting deeper than " + std::to_string(max_depth));
      if (pos >= t.size()) fail("unexpected end of text (want a value)");
      switch (t[pos]) {
        case '{': return object_value(depth);
        case '[': return array_value(depth);
        case '"': return json_value(string_value());
        case 't': literal("true"); return json_value(true);
        case 'f': literal("false"); return json_value(false);
        case 'n': literal("null"); return json_value();
        default:
          if (t[pos] == '-' || (t[pos] >= '0' && t[pos] <= '9')) return json_value(number_value());
          fail(std::string("unexpected character '") + t[pos] + "' (want a value)");
      }
    }
    json_value object_value(int depth) {
      ++pos;  // '{'
      json_value v = object();
      skip_ws();
      if (eat('}')) return v;
      for (;;) {
        skip_ws();
        if (pos >= t.size() || t[pos] != '"') fail("want a quoted key");
        std::string key = string_value();
        skip_ws();
        if (!eat(':')) fail("want ':' after a key");
        skip_ws();
        v.o_.emplace_back(std::move(key), value(depth + 1));
        skip_ws();
        if (eat('}')) return v;
        if (!eat(',')) fail("want ',' or '}' in an object");
      }
    }
    json_value array_value(int depth) {
      ++pos;  // '['
      json_value v = array();
      skip_ws();
      if (eat(']')) return v;
      for (;;) {
        skip_ws();
        v.a_.push_back(value(depth + 1));
        skip_ws();
        if (eat(']')) return v;
        if (!eat(',')) fail("want ',' or ']' in an array");
      }
    }
    unsigned hex4() {
      if (pos + 4 > t.size()) fail("short \\u escape");
      unsigned u = 0;
      for (int i = 0; i < 4; ++i) {
        const char c = t[pos++];
        u <<= 4;
        if (c >= '0' && c <= '9') u |= static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f') u |= static_cast<unsigned>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') u |= static_cast<unsigned>(c - 'A' + 10);
        else fail("bad hex digit in a \\u escape");
      }
      return u;
    }
    static void utf8(std::string& s, unsigned cp) {
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        s += static_cast<char>(0xF0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    std::string string_value() {
      ++pos;  // '"'
      std::string s;
      for (;;) {
        if (pos >= t.size()) fail("unterminated string");
        const char c = t[pos++];
        if (c == '"') return s;
        if (static_cast<unsigned char>(c) < 0x20) {
          --pos;
          fail("control character in a string");
        }
        if (c != '\\') {
          s += c;
          continue;
        }
        if (pos >= t.size()) fail("unterminated escape");
        switch (const char e = t[pos++]) {
          case '"': s += '"'; break;
          case '\\': s += '\\'; break;
          case '/': s += '/'; break;
          case 'b': s += '\b'; break;
          case 'f': s += '\f'; break;
          case 'n': s += '\n'; break;
          case 'r': s += '\r'; break;
          case 't': s += '\t'; break;
          case 'u': {
            unsigned cp = hex4();
            if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
              if (!(eat('\\') && eat('u'))) fail("lone high surrogate in a \\u escape");
              const unsigned lo = hex4();
              if (lo < 0xDC00 || lo >= 0xE000) fail("bad low surrogate in a \\u escape");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
              fail("lone low surrogate in a \\u escape");
            }
            utf8(s, cp);
            break;
          }
          default: --pos; fail(std::string("bad escape '\\") + e + "'");
        }
      }
    }
    double number_value() {
      // The JSON grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
      const std::size_t start = pos;
      auto digits = [&] {
        const std::size_t d0 = pos;
        while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') ++pos;
        return pos - d0;
      };
      eat('-');
      if (eat('0')) {
        if (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') fail("leading zero in a number");
      } else if (digits() == 0) {
        fail("want digits in a number");
      }
      if (eat('.') && digits() == 0) fail("want digits after '.' in a number");
      if (pos < t.size() && (t[pos] == 'e' || t[pos] == 'E')) {
        ++pos;
        if (!eat('+')) eat('-');
        if (digits() == 0) fail("want digits in an exponent");
      }
      double x = 0;
      const auto r = std::from_chars(t.data() + start, t.data() + pos, x);
      if (r.ec == std::errc::result_out_of_range) {
        pos = start;
        fail("number out of range");
      }
      if (r.ec != std::errc() || r.ptr != t.data() + pos) {
        pos = start;
        fail("bad number");
      }
      return x;
    }
  };

  kind k_ = kind::null;
  bool b_ = false;
  double n_ = 0;
  std::string s_;
  array_type a_;
  object_type o_;
};

}  // namespace strata
