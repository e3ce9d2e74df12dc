// The synthetic data generators (apps/trainers/synthetic.hpp documents the processes), compiled
// once into strata_apps: the streaming writer, the shared pieces (streams, power-law popularity,
// resource checks, truth.json), then MF, LDA and Lasso.
#include <trainers/synthetic.hpp>

#include <strata/core/atomic_file.hpp>
#include <strata/core/error.hpp>
#include <strata/ml/alias_table.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <unordered_set>
#include <utility>

namespace strata::ml::gen {
namespace {

namespace fs = std::filesystem;
using rng_t = std::mt19937_64;

// ---------------------------------------------------------------------------------------------
// Streams and draws.

/// The parts' stream constants: each part of a process draws from stream(seed, part).
enum part : std::uint64_t {
  mf_user_order = 0x6d662d7573657231, mf_item_order, mf_user_factors, mf_item_factors, mf_item_draws, mf_noise, mf_split,
  lda_word_order = 0x6c64612d776f7264, lda_topics, lda_lengths, lda_theta, lda_tokens,
  lasso_group_order = 0x6c6173736f2d6772, lasso_support, lasso_groups, lasso_values, lasso_noise,
};

/// splitmix64's finaliser: nearby seeds give unrelated engine seeds.
std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

rng_t stream(std::uint64_t seed, part p) { return rng_t(mix64(seed ^ static_cast<std::uint64_t>(p))); }

/// A uniform integer in [0, n) (Lemire's multiply-shift; the bias, n / 2^64, is nil here).
std::uint64_t below(rng_t& g, std::uint64_t n) noexcept {
  __extension__ using u128 = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<u128>(g()) * n) >> 64);
}

/// A uniform double in [0, 1).
double unit(rng_t& g) noexcept { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

/// A random permutation of 0..n-1 (Fisher-Yates).
std::vector<std::uint32_t> permutation(std::uint32_t n, rng_t& g) {
  std::vector<std::uint32_t> p(n);
  for (std::uint32_t i = 0; i < n; ++i) p[i] = i;
  for (std::uint32_t i = n; i > 1; --i) std::swap(p[i - 1], p[below(g, i)]);
  return p;
}

/// Power-law weights by rank: rank k (0-based) has (k + 1 + k0)^(−a).
std::vector<double> power_law(std::uint32_t n, double a, double k0) {
  std::vector<double> w(n);
  for (std::uint32_t k = 0; k < n; ++k) w[k] = std::pow(static_cast<double>(k) + 1 + k0, -a);
  return w;
}

/// The same weights by id: id order[k] holds rank k's weight.
std::vector<double> by_id(const std::vector<double>& by_rank, const std::vector<std::uint32_t>& order) {
  std::vector<double> w(by_rank.size());
  for (std::size_t k = 0; k < by_rank.size(); ++k) w[order[k]] = by_rank[k];
  return w;
}

/// `count` distinct outcomes of `table` (count ≤ half its size, so rejection stays cheap), in
/// increasing order; `stamp` (one entry per outcome) marks the ones taken with `mark`.
void draw_distinct(const alias_table& table, std::uint64_t count, rng_t& g, std::vector<std::uint32_t>& stamp,
                   std::uint32_t mark, std::vector<std::uint32_t>& out) {
  out.clear();
  while (out.size() < count) {
    const std::uint32_t x = table(g);
    if (stamp[x] == mark) continue;
    stamp[x] = mark;
    out.push_back(x);
  }
  std::sort(out.begin(), out.end());
}

// ---------------------------------------------------------------------------------------------
// The streaming writer.

[[noreturn]] void os_error(const fs::path& p, const std::string& what, int err = errno) {
  throw strata::error(std::error_code(err != 0 ? err : EIO, std::generic_category()), p.string() + ": " + what);
}

/// One output file: bytes are built in a 4 MiB buffer and written with fwrite to `<path>.tmp`,
/// counting lines and the checksum as they go; `commit` renames it into place and writes its check
/// file. A file neither committed nor kept is removed when the writer goes.
class out_file {
 public:
  explicit out_file(fs::path path, std::size_t capacity = std::size_t{4} << 20)
      : path_(std::move(path)), tmp_(path_.string() + ".tmp"), buf_(std::make_unique_for_overwrite<char[]>(capacity)), cap_(capacity) {
    errno = 0;
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) os_error(tmp_, "cannot create");
  }
  out_file(const out_file&) = delete;
  out_file& operator=(const out_file&) = delete;
  ~out_file() {
    if (f_) std::fclose(f_);
    std::error_code ec;
    if (!committed_) fs::remove(tmp_, ec);
  }

  /// Where the next `n` bytes (n ≤ the capacity) go; pass the end of what was written to `done`.
  char* room(std::size_t n) {
    if (cap_ - used_ < n) flush();
    return buf_.get() + used_;
  }
  void done(char* end) noexcept { used_ = static_cast<std::size_t>(end - buf_.get()); }
  /// Ends a line at `end` (room for the '\n' included in the room asked for).
  void end_line(char* end) noexcept {
    *end++ = '\n';
    done(end);
    ++lines_;
  }
  /// Appends bytes holding `newlines` '\n's.
  void append(const char* p, std::size_t n, std::uint64_t newlines) {
    lines_ += newlines;
    if (n == 0) return;
    if (cap_ - used_ < n) flush();
    if (n >= cap_) return raw_write(p, n);
    std::memcpy(buf_.get() + used_, p, n);
    used_ += n;
  }
  /// Appends binary bytes (their '\n' bytes counted, as compute_check counts them).
  void append_binary(const char* p, std::size_t n) {
    append(p, n, static_cast<std::uint64_t>(std::count(p, p + n, '\n')));
  }
  std::uint64_t lines() const noexcept { return lines_; }

  /// Flushes and closes the temporary file, which stays (until this writer goes) for reading back.
  /// No fsync: a file the system lost in a crash no longer matches its check file (nor truth.json,
  /// which is written last and synced), so the set is regenerated rather than trusted.
  const fs::path& close() {
    flush();
    errno = 0;
    if (std::fflush(f_) != 0) os_error(tmp_, "cannot write");
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) os_error(tmp_, "cannot write");
    return tmp_;
  }
  /// Closes, renames into place (removing a previous check file first), writes the check file.
  written_file commit() {
    close();
    const io::file_check c{sum_.bytes(), lines_, sum_.value()};
    std::error_code ec;
    fs::remove(io::check_path(path_), ec);
    fs::rename(tmp_, path_, ec);
    if (ec) throw strata::error(ec, path_.string() + ": cannot rename " + tmp_.filename().string() + " into place");
    committed_ = true;
    io::write_check(path_, c);
    return {path_.filename().string(), c};
  }

 private:
  void flush() {
    raw_write(buf_.get(), used_);
    used_ = 0;
  }
  void raw_write(const char* p, std::size_t n) {
    if (n == 0) return;
    sum_.update({p, n});
    errno = 0;
    if (std::fwrite(p, 1, n, f_) != n) os_error(tmp_, "cannot write");
  }
  fs::path path_, tmp_;
  std::unique_ptr<char[]> buf_;
  std::size_t cap_ = 0, used_ = 0;
  std::FILE* f_ = nullptr;
  io::stream_checksum sum_;
  std::uint64_t lines_ = 0;
  bool committed_ = false;
};

char* put_uint(char* p, std::uint64_t v) noexcept { return std::to_chars(p, p + 20, v).ptr; }
/// A number with `digits` significant digits, as printf's %g (at most 24 characters).
char* put_general(char* p, double v, int digits) noexcept {
  return std::to_chars(p, p + 24, v, std::chars_format::general, digits).ptr;
}
char* put_le32(char* p, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xff);
  return p;
}

/// A binary truth file's header: the 8-byte magic and its uint32 sizes.
void binary_header(out_file& f, const char (&magic)[9], std::initializer_list<std::uint32_t> sizes) {
  std::string h(magic, 8);  // a string, not a fixed array: GCC's -O3 cannot bound the list's length
  for (const std::uint32_t v : sizes) {
    char le[4];
    put_le32(le, v);
    h.append(le, 4);
  }
  f.append_binary(h.data(), h.size());
}

/// Float32 values, little-endian.
void binary_floats(out_file& f, const float* v, std::size_t n) {
  char chunk[4096];
  std::size_t used = 0;
  for (std::size_t i = 0; i < n; ++i) {
    put_le32(chunk + used, std::bit_cast<std::uint32_t>(v[i]));
    used += 4;
    if (used == sizeof chunk) f.append_binary(chunk, used), used = 0;
  }
  f.append_binary(chunk, used);
}

// ---------------------------------------------------------------------------------------------
// Resources, folders, truth.json.

std::string human(long double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) bytes /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0Lf %s" : "%.1Lf %s", bytes, units[u]);
  return buf;
}

/// Digits of the decimal form of v.
std::uint64_t digits(std::uint64_t v) noexcept {
  std::uint64_t d = 1;
  while (v >= 10) v /= 10, ++d;
  return d;
}

/// Saturating arithmetic for estimates (sizes past 2^64 are refused, not wrapped).
std::uint64_t mul(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}
std::uint64_t add(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

/// Refuses a parameter: "--flag: what".
[[noreturn]] void bad_flag(const std::string& flag, const std::string& what) {
  throw strata::error(errc::bad_input, flag + ": " + what);
}
void need_finite(const std::string& flag, double v, bool positive) {
  if (!std::isfinite(v) || v < 0 || (positive && v == 0))
    bad_flag(flag, std::string("must be a finite number ") + (positive ? "> 0" : ">= 0") + ", got " + std::to_string(v));
}
void need_positive(const std::string& flag, std::uint64_t v) {
  if (v == 0) bad_flag(flag, "must be at least 1");
}

/// A new or existing output folder; its truth.json goes first, so that a set being replaced is
/// never taken for complete.
void prepare_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw strata::error(ec, dir.string() + ": cannot create the output folder");
  fs::remove(dir / "truth.json", ec);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

json_value files_json(const gen_outcome& out) {
  auto a = json_value::array();
  for (const auto& f : out.files) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.check.checksum));
    a.push_back(json_value::object().set("name", f.name).set("bytes", f.check.bytes).set("lines", f.check.lines).set("checksum", hex));
  }
  return a;
}

/// Writes truth.json (atomically, last) from the parts every kind has.
void write_truth(gen_outcome& out, std::string_view kind, const std::string& name, json_value params, json_value summary,
                 json_value truth, std::chrono::steady_clock::time_point t0) {
  for (const auto& f : out.files) out.bytes += f.check.bytes;
  out.seconds = seconds_since(t0);
  auto doc = json_value::object()
                 .set("kind", std::string(kind))
                 .set("name", name)
                 .set("params", std::move(params))
                 .set("summary", std::move(summary))
                 .set("truth", std::move(truth))
                 .set("files", files_json(out))
                 .set("bytes", out.bytes)
                 .set("seconds", out.seconds);
  strata::write_file_atomic(out.dir / "truth.json", doc.dump() + "\n");
}

/// A seed as truth.json keeps it: decimal text (a JSON number is exact only to 2^53).
json_value seed_json(std::uint64_t seed) { return std::to_string(seed); }

/// Calls `progress` about every 2^20 units, and once with done = total at the end.
struct progress_tick {
  const progress_fn& fn;
  std::uint64_t total, next = 0;
  bool ended = false;
  void operator()(std::uint64_t done) {
    if (!fn || ended || (done < next && done < total)) return;
    next = done + (std::uint64_t{1} << 20);
    ended = done >= total;
    fn(std::min(done, total), total);
  }
  void end() { (*this)(total); }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Shared public functions.

std::uint64_t free_disk(const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) p = dir;
  while (!p.empty() && !fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
  const auto s = fs::space(p.empty() ? fs::path(".") : p, ec);
  return ec ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(s.available);
}

std::uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return mul(kb, 1024);
  }
  return std::numeric_limits<std::uint64_t>::max();
}

void check_resources(std::string_view kind, const fs::path& dir, const resource_estimate& need) {
  const std::uint64_t disk = free_disk(dir);
  if (need.disk_bytes > disk)
    throw strata::error(errc::refused, std::string(kind) + ": the files would need about " + human(need.disk_bytes) + " of disk (" +
                                           need.disk_what + "), more than the " + human(disk) + " free at " + dir.string() +
                                           "; choose a smaller size or another --out");
  const std::uint64_t mem = available_memory();
  if (need.memory_bytes > mem)
    throw strata::error(errc::refused, std::string(kind) + ": the generator would need about " + human(need.memory_bytes) +
                                           " of memory (" + need.memory_what + "), more than the " + human(mem) +
                                           " available (MemAvailable); choose a smaller size");
}

fs::path default_out_dir(std::string_view kind, std::string_view name, std::uint64_t seed) {
  const char* home = std::getenv("HOME");
  const fs::path base = home && *home ? fs::path(home) : fs::path(".");
  return base / ".cache" / "strata" / "gen" / (std::string(kind) + "-" + std::string(name) + "-s" + std::to_string(seed));
}

std::optional<json_value> cached_truth(const fs::path& dir, const json_value& params) {
  std::ifstream in(dir / "truth.json", std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    json_value truth = json_value::parse(text.str());
    const json_value* p = truth.find("params");
    const json_value* files = truth.find("files");
    if (!p || !(*p == params) || !files || !truth.find("summary")) return std::nullopt;
    for (const auto& f : files->as_array()) {
      const fs::path file = dir / f.find("name")->as_string();
      std::error_code ec;
      const auto size = fs::file_size(file, ec);
      const auto check = io::read_check(file);
      const io::file_check want{static_cast<std::uint64_t>(f.find("bytes")->as_number()),
                                static_cast<std::uint64_t>(f.find("lines")->as_number()),
                                std::strtoull(f.find("checksum")->as_string().c_str(), nullptr, 16)};
      if (ec || size != want.bytes || !check || !(*check == want)) return std::nullopt;
    }
    return truth;
  } catch (const std::exception&) {  // a damaged truth.json or check file: not a complete set
    return std::nullopt;
  }
}

std::string summary_line(const json_value& truth) {
  std::string line = "gen summary: kind=" + truth.find("kind")->as_string() + " name=" + truth.find("name")->as_string();
  for (const auto& [key, v] : truth.find("summary")->as_object()) {
    line += " " + key + "=";
    if (v.is_number()) {
      const double x = v.as_number();
      char buf[64];
      if (x == std::floor(x) && std::fabs(x) < 0x1.0p53) std::snprintf(buf, sizeof buf, "%.0f", x);
      else std::snprintf(buf, sizeof buf, "%.6g", x);
      line += buf;
    } else {
      line += v.is_string() ? v.as_string() : v.dump();
    }
  }
  char tail[96];
  std::snprintf(tail, sizeof tail, " seconds=%.3f bytes=%.0f", truth.find("seconds")->as_number(), truth.find("bytes")->as_number());
  return line + tail;
}

// ---------------------------------------------------------------------------------------------
// Matrix factorisation.

namespace {

/// The true model: rows of [bias, factors] (rank + 1 floats) per user and per item.
struct mf_model {
  std::uint32_t width = 0;
  std::vector<float> users, items;
};

void draw_rows(std::vector<float>& rows, std::uint32_t n, std::uint32_t rank, double bias_sd, double sd, rng_t g) {
  std::normal_distribution<double> nd(0.0, 1.0);
  rows.resize(static_cast<std::size_t>(n) * (rank + 1));
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    rows[at++] = static_cast<float>(bias_sd * nd(g));
    for (std::uint32_t k = 0; k < rank; ++k) rows[at++] = static_cast<float>(sd * nd(g));
  }
}

mf_model draw_mf_model(const mf_options& o) {
  mf_model m;
  m.width = o.rank + 1;
  const double sd = std::sqrt(o.interaction_sd / std::sqrt(static_cast<double>(o.rank)));
  draw_rows(m.users, o.users, o.rank, o.user_bias_sd, sd, stream(o.seed, mf_user_factors));
  draw_rows(m.items, o.items, o.rank, o.item_bias_sd, sd, stream(o.seed, mf_item_factors));
  return m;
}

/// Ratings per rank: `base` each, and `rest` shared by the (decreasing) weights, capped at `cap`
/// (water-filling: the capped ranks are a prefix), rounded cumulatively to sum to exactly rest.
std::vector<std::uint32_t> counts_by_rank(const std::vector<double>& w, std::uint32_t base, std::uint64_t rest,
                                          std::uint32_t cap) {
  const std::size_t n = w.size();
  std::vector<long double> tail(n + 1, 0);  // tail[k] = Σ_{j ≥ k} w_j
  for (std::size_t k = n; k-- > 0;) tail[k] = tail[k + 1] + w[k];
  long double left = static_cast<long double>(rest);
  std::size_t capped = 0;
  while (capped < n && left * w[capped] > static_cast<long double>(cap) * tail[capped]) left -= cap, ++capped;
  std::vector<std::uint32_t> c(n);
  long double running = 0;
  std::uint64_t before = 0;
  for (std::size_t k = 0; k < n; ++k) {
    running += k < capped ? static_cast<long double>(cap) : left * w[k] / tail[capped];
    const std::uint64_t upto = k + 1 == n ? rest : std::min<std::uint64_t>(rest, static_cast<std::uint64_t>(std::llround(running)));
    const std::uint64_t mine = upto > before ? upto - before : 0;
    if (mine > cap) throw strata::error(errc::bad_input, "mf: rounding the ratings per user passed the cap (internal error)");
    c[k] = base + static_cast<std::uint32_t>(mine);
    before = std::max(before, upto);
  }
  return c;
}

/// Ratings per user id (see mf_options), with the statistics truth.json records.
struct user_counts {
  std::vector<std::uint32_t> n;
  std::uint32_t cap = 0;
  std::uint64_t capped = 0, max = 0;
  double top_decile = 0;
};

user_counts mf_user_counts(const mf_options& o) {
  user_counts uc;
  uc.cap = o.items / 2;
  const std::uint32_t base = o.ratings >= o.users ? 1 : 0;
  const auto w = power_law(o.users, o.user_exponent, 1.0 + o.users / 2000.0);
  const auto by_rank = counts_by_rank(w, base, o.ratings - std::uint64_t{base} * o.users, uc.cap - base);
  rng_t g = stream(o.seed, mf_user_order);
  const auto order = permutation(o.users, g);
  uc.n.resize(o.users);
  for (std::size_t k = 0; k < by_rank.size(); ++k) uc.n[order[k]] = by_rank[k];
  auto sorted = by_rank;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  std::uint64_t top = 0;
  const std::size_t decile = std::max<std::size_t>(1, (sorted.size() + 9) / 10);
  for (std::size_t k = 0; k < decile; ++k) top += sorted[k];
  uc.top_decile = static_cast<double>(top) / static_cast<double>(o.ratings);
  uc.max = sorted.front();
  uc.capped = static_cast<std::uint64_t>(std::count(sorted.begin(), sorted.end(), uc.cap));
  return uc;
}

/// Writes the ratings of each user's items, splitting train and test, and keeps the sums the
/// truth needs.
struct mf_writer {
  const mf_options& o;
  const mf_model& m;
  out_file& train;
  out_file& test;
  rng_t noise = stream(o.seed, mf_noise), split = stream(o.seed, mf_split);
  std::normal_distribution<double> nd{0.0, 1.0};
  std::uint64_t n_train = 0, n_test = 0;
  double floor_sq = 0, test_sum = 0, test_sq = 0;

  void rating(std::uint32_t u, std::uint32_t i) {
    const float* p = &m.users[static_cast<std::size_t>(u) * m.width];
    const float* q = &m.items[static_cast<std::size_t>(i) * m.width];
    double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    std::uint32_t k = 1;
    for (; k + 4 <= m.width; k += 4)
      d0 += double(p[k]) * q[k], d1 += double(p[k + 1]) * q[k + 1], d2 += double(p[k + 2]) * q[k + 2], d3 += double(p[k + 3]) * q[k + 3];
    for (; k < m.width; ++k) d0 += double(p[k]) * q[k];
    const double pred = o.mean + p[0] + q[0] + ((d0 + d1) + (d2 + d3));
    const double noisy = pred + o.noise * nd(noise);
    const long tenths = std::lround(std::clamp(noisy, 1.0, 5.0) * 10);
    const bool to_test = unit(split) < o.test_fraction;
    out_file& f = to_test ? test : train;
    char* at = f.room(48);
    at = put_uint(at, u);
    *at++ = ' ';
    at = put_uint(at, i);
    *at++ = ' ';
    at = put_uint(at, static_cast<std::uint64_t>(tenths / 10));
    *at++ = '.';
    *at++ = static_cast<char>('0' + tenths % 10);
    f.end_line(at);
    if (!to_test) return void(++n_train);
    ++n_test;
    const double r = static_cast<double>(tenths) / 10, e = std::clamp(pred, 1.0, 5.0) - r;
    floor_sq += e * e, test_sum += r, test_sq += r * r;
  }
};

/// Every user's distinct items by popularity, in user order; returns the ratings per item.
std::vector<std::uint64_t> write_mf_ratings(const mf_options& o, const user_counts& uc, mf_writer& w, const progress_fn& progress) {
  rng_t order_rng = stream(o.seed, mf_item_order);
  const auto order = permutation(o.items, order_rng);
  const alias_table items(by_id(power_law(o.items, o.item_exponent, 1.0 + o.items / 200.0), order));
  rng_t draws = stream(o.seed, mf_item_draws);
  std::vector<std::uint32_t> stamp(o.items, 0), chosen;
  std::vector<std::uint64_t> per_item(o.items, 0);
  progress_tick tick{progress, o.ratings};
  std::uint64_t done = 0;
  for (std::uint32_t u = 0; u < o.users; ++u) {
    draw_distinct(items, uc.n[u], draws, stamp, u + 1, chosen);
    for (const std::uint32_t i : chosen) w.rating(u, i), ++per_item[i];
    done += chosen.size();
    tick(done);
  }
  return per_item;
}

written_file write_factors(const mf_options& o, const mf_model& m, const fs::path& dir) {
  out_file f(dir / "truth.factors.bin");
  binary_header(f, "STRGENMF", {o.rank, o.users, o.items});
  binary_floats(f, m.users.data(), m.users.size());
  binary_floats(f, m.items.data(), m.items.size());
  return f.commit();
}

json_value mf_summary(const mf_options& o, const mf_truth& t) {
  return json_value::object()
      .set("users", o.users)
      .set("items", o.items)
      .set("rank", o.rank)
      .set("ratings_train", t.ratings_train)
      .set("ratings_test", t.ratings_test)
      .set("noise_floor_rmse", t.noise_floor_rmse)
      .set("test_rating_sd", t.test_rating_sd)
      .set("max_user_ratings", t.max_user_ratings)
      .set("max_item_ratings", t.max_item_ratings)
      .set("capped_users", t.capped_users)
      .set("top_decile_user_share", t.top_decile_user_share);
}

}  // namespace

mf_options mf_preset(std::string_view size) {
  mf_options o;
  o.name = std::string(size);
  if (size == "netflix") return o;
  if (size == "10m") return o.users = 48019, o.ratings = 10000000, o;
  if (size == "tiny") return o.users = 2000, o.items = 500, o.ratings = 50000, o;
  bad_flag("--size", "unknown size '" + std::string(size) + "' for mf (want netflix, 10m or tiny)");
}

void check_mf_options(const mf_options& o) {
  need_positive("--users", o.users);
  if (o.users == std::numeric_limits<std::uint32_t>::max()) bad_flag("--users", "must be below 4294967295");
  if (o.items < 2) bad_flag("--items", "must be at least 2 (no user rates more than half the items)");
  need_positive("--ratings", o.ratings);
  const std::uint64_t most = mul(o.users, o.items / 2);
  if (o.ratings > most)
    bad_flag("--ratings", std::to_string(o.ratings) + " is more than users x items / 2 = " + std::to_string(most) +
                              " (no user rates more than half the items)");
  need_positive("--rank", o.rank);
  need_finite("--noise", o.noise, false);
  need_finite("mean", o.mean, false);
  for (const double v : {o.user_bias_sd, o.item_bias_sd, o.interaction_sd, o.user_exponent, o.item_exponent}) need_finite("mf constant", v, false);
  if (!(o.test_fraction >= 0 && o.test_fraction <= 1)) bad_flag("test fraction", "must be in [0, 1]");
}

resource_estimate estimate_mf(const mf_options& o) {
  resource_estimate e;
  const std::uint64_t line = digits(o.users - 1) + digits(o.items - 1) + 6;
  const std::uint64_t factors = mul(add(o.users, o.items), mul(o.rank + std::uint64_t{1}, 4));
  e.disk_bytes = add(add(mul(o.ratings, line), factors), 4096);
  e.disk_what = std::to_string(o.ratings) + " ratings at ~" + std::to_string(line) + " bytes a line, and the true factors";
  e.memory_bytes = add(add(factors, add(mul(o.users, 40), mul(o.items, 72))), std::uint64_t{16} << 20);
  e.memory_what = "the rank-" + std::to_string(o.rank) + " factors of " + std::to_string(o.users) + " users and " +
                  std::to_string(o.items) + " items, and the popularity tables";
  return e;
}

json_value mf_params(const mf_options& o) {
  return json_value::object()
      .set("version", 1)
      .set("name", o.name)
      .set("users", o.users)
      .set("items", o.items)
      .set("ratings", o.ratings)
      .set("rank", o.rank)
      .set("noise", o.noise)
      .set("seed", seed_json(o.seed))
      .set("mean", o.mean)
      .set("user_bias_sd", o.user_bias_sd)
      .set("item_bias_sd", o.item_bias_sd)
      .set("interaction_sd", o.interaction_sd)
      .set("user_exponent", o.user_exponent)
      .set("item_exponent", o.item_exponent)
      .set("test_fraction", o.test_fraction);
}

mf_truth generate_mf(const mf_options& o, const fs::path& dir, const progress_fn& progress) {
  check_mf_options(o);
  check_resources("mf", dir, estimate_mf(o));
  const auto t0 = std::chrono::steady_clock::now();
  prepare_dir(dir);
  mf_truth t;
  t.out.dir = dir;
  const mf_model m = draw_mf_model(o);
  const user_counts uc = mf_user_counts(o);
  {
    out_file train(dir / "ratings.train.txt"), test(dir / "ratings.test.txt");
    mf_writer w{o, m, train, test};
    const auto per_item = write_mf_ratings(o, uc, w, progress);
    t.out.files.push_back(train.commit());
    t.out.files.push_back(test.commit());
    t.ratings_train = w.n_train, t.ratings_test = w.n_test;
    const double nt = static_cast<double>(std::max<std::uint64_t>(w.n_test, 1));
    t.noise_floor_rmse = std::sqrt(w.floor_sq / nt);
    t.test_rating_sd = std::sqrt(std::max(0.0, w.test_sq / nt - (w.test_sum / nt) * (w.test_sum / nt)));
    t.max_item_ratings = *std::max_element(per_item.begin(), per_item.end());
  }
  t.max_user_ratings = uc.max, t.capped_users = uc.capped, t.top_decile_user_share = uc.top_decile;
  t.out.files.push_back(write_factors(o, m, dir));
  auto truth = json_value::object()
                   .set("mean", o.mean)
                   .set("factor_sd", std::sqrt(o.interaction_sd / std::sqrt(static_cast<double>(o.rank))))
                   .set("user_popularity", json_value::object().set("exponent", o.user_exponent).set("k0", 1.0 + o.users / 2000.0))
                   .set("item_popularity", json_value::object().set("exponent", o.item_exponent).set("k0", 1.0 + o.items / 200.0))
                   .set("ratings_per_user_cap", uc.cap);
  write_truth(t.out, "mf", o.name, mf_params(o), mf_summary(o, t), std::move(truth), t0);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Latent Dirichlet allocation.

namespace {

/// The true topics: φ by rows and by columns, and one alias table per topic over the words.
struct lda_model {
  std::uint32_t topics = 0, vocab = 0;
  std::vector<float> phi;           ///< K × V
  std::vector<float> phi_t;         ///< V × K (the mixture Σ_k θ_k φ_kw reads one word's column)
  std::vector<alias_entry> tables;  ///< K × V
};

/// One topic's row from unnormalised gamma draws `x` (all zero: all mass on `fallback`).
void set_topic(lda_model& m, std::uint32_t k, std::vector<double>& x, std::uint32_t fallback,
               const std::vector<std::uint32_t>& ids, std::vector<std::uint32_t>& scratch) {
  double total = 0;
  for (const double v : x) total += v;
  if (!(total > 0) || !std::isfinite(total)) std::fill(x.begin(), x.end(), 0.0), x[fallback] = 1, total = 1;
  const std::size_t V = m.vocab, K = m.topics;
  for (std::size_t w = 0; w < V; ++w) {
    const float f = static_cast<float>(x[w] / total);
    m.phi[k * V + w] = f;
    m.phi_t[w * K + k] = f;
  }
  build_alias(x, ids, std::span<alias_entry>(m.tables).subspan(k * V, V), scratch);
}

lda_model draw_topics(const lda_options& o) {
  lda_model m;
  m.topics = o.topics, m.vocab = o.vocab;
  const std::size_t cells = static_cast<std::size_t>(o.topics) * o.vocab;
  m.phi.resize(cells), m.phi_t.resize(cells), m.tables.resize(cells);
  rng_t order_rng = stream(o.seed, lda_word_order);
  const auto order = permutation(o.vocab, order_rng);
  const auto base = by_id(power_law(o.vocab, o.zipf_exponent, 0.0), order);
  double base_total = 0;
  for (const double b : base) base_total += b;
  const double beta0 = o.concentration_per_word * o.vocab;
  std::vector<std::gamma_distribution<double>::param_type> shape(o.vocab);
  for (std::uint32_t w = 0; w < o.vocab; ++w) shape[w] = std::gamma_distribution<double>::param_type(beta0 * base[w] / base_total, 1.0);
  std::vector<std::uint32_t> ids(o.vocab), scratch;
  for (std::uint32_t w = 0; w < o.vocab; ++w) ids[w] = w;
  rng_t g = stream(o.seed, lda_topics);
  std::gamma_distribution<double> gamma;
  std::vector<double> x(o.vocab);
  for (std::uint32_t k = 0; k < o.topics; ++k) {
    for (std::uint32_t w = 0; w < o.vocab; ++w) x[w] = gamma(g, shape[w]);
    set_topic(m, k, x, order[0], ids, scratch);
  }
  return m;
}

/// Draws the documents one at a time and writes their "doc word count" lines.
struct lda_docs {
  const lda_options& o;
  const lda_model& m;
  rng_t lengths = stream(o.seed, lda_lengths), theta_rng = stream(o.seed, lda_theta), tokens = stream(o.seed, lda_tokens);
  std::normal_distribution<double> nd{0.0, 1.0};
  std::gamma_distribution<double> gamma{o.alpha, 1.0};
  double log_mean = std::log(static_cast<double>(o.tokens) / o.docs) - o.length_sdlog * o.length_sdlog / 2;
  alias_table theta_table{};
  std::vector<double> theta = std::vector<double>(o.topics);
  std::vector<float> theta_f = std::vector<float>(o.topics);
  std::vector<std::uint32_t> words{};
  std::vector<char> used = std::vector<char>(o.vocab, 0);
  std::uint64_t n_tokens = 0, nnz = 0, longest = 0;
  double loglik = 0;

  /// log Σ_k θ_k φ_kw.
  double log_mix(std::uint32_t w) const {
    const float* col = &m.phi_t[static_cast<std::size_t>(w) * m.topics];
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    std::uint32_t k = 0;
    for (; k + 4 <= m.topics; k += 4)
      s0 += theta_f[k] * col[k], s1 += theta_f[k + 1] * col[k + 1], s2 += theta_f[k + 2] * col[k + 2], s3 += theta_f[k + 3] * col[k + 3];
    for (; k < m.topics; ++k) s0 += theta_f[k] * col[k];
    return std::log(std::max((s0 + s1) + (s2 + s3), 1e-300));
  }

  void draw() {
    const double len = std::exp(log_mean + o.length_sdlog * nd(lengths));
    const std::uint64_t n = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(std::min(len, 1e18))));
    double total = 0;
    for (auto& t : theta) t = gamma(theta_rng), total += t;
    if (!(total > 0)) theta.assign(theta.size(), 0.0), theta[below(theta_rng, theta.size())] = 1, total = 1;
    for (std::size_t k = 0; k < theta.size(); ++k) theta_f[k] = static_cast<float>(theta[k] / total);
    theta_table.build(theta);
    words.resize(n);
    const std::span<const alias_entry> tables(m.tables);
    for (auto& w : words) {
      const std::size_t z = theta_table(tokens);
      w = alias_draw(tables.subspan(z * m.vocab, m.vocab), tokens());
    }
    std::sort(words.begin(), words.end());
    n_tokens += n, longest = std::max(longest, n);
  }

  void write(std::uint32_t d, out_file& body) {
    for (std::size_t a = 0; a < words.size();) {
      std::size_t b = a + 1;
      while (b < words.size() && words[b] == words[a]) ++b;
      const std::uint32_t w = words[a];
      char* at = body.room(64);
      at = put_uint(at, std::uint64_t{d} + 1);
      *at++ = ' ';
      at = put_uint(at, std::uint64_t{w} + 1);
      *at++ = ' ';
      at = put_uint(at, b - a);
      body.end_line(at);
      loglik += static_cast<double>(b - a) * log_mix(w);
      used[w] = 1, ++nnz, a = b;
    }
  }
};

/// The docword file: the header, then the body streamed from its temporary file.
written_file assemble_docword(const fs::path& path, out_file& body, const lda_options& o, std::uint64_t nnz) {
  const fs::path& tmp = body.close();
  out_file f(path);
  for (const std::uint64_t v : {std::uint64_t{o.docs}, std::uint64_t{o.vocab}, nnz}) {
    char* at = f.room(24);
    f.end_line(put_uint(at, v));
  }
  errno = 0;
  std::FILE* in = std::fopen(tmp.c_str(), "rb");
  if (!in) os_error(tmp, "cannot reopen");
  std::vector<char> chunk(std::size_t{4} << 20);
  std::size_t got = 0;
  while ((got = std::fread(chunk.data(), 1, chunk.size(), in)) > 0) f.append(chunk.data(), got, 0);
  const bool bad = std::ferror(in) != 0;
  std::fclose(in);
  if (bad) os_error(tmp, "cannot read back");
  f.append(nullptr, 0, body.lines());
  return f.commit();
}

written_file write_vocab(const fs::path& path, std::uint32_t vocab) {
  out_file f(path);
  for (std::uint64_t w = 1; w <= vocab; ++w) {
    char* at = f.room(24);
    *at++ = 'w';
    f.end_line(put_uint(at, w));
  }
  return f.commit();
}

written_file write_topics(const fs::path& dir, const lda_model& m) {
  out_file f(dir / "truth.topics.bin");
  binary_header(f, "STRGENTP", {m.topics, m.vocab});
  binary_floats(f, m.phi.data(), m.phi.size());
  return f.commit();
}

json_value lda_summary(const lda_options& o, const lda_truth& t) {
  return json_value::object()
      .set("docs", o.docs)
      .set("vocab", o.vocab)
      .set("topics", o.topics)
      .set("tokens", t.tokens)
      .set("nnz", t.nnz)
      .set("words_used", t.words_used)
      .set("max_doc_length", t.max_doc_length)
      .set("loglik_per_token", t.loglik_per_token);
}

}  // namespace

lda_options lda_preset(std::string_view size) {
  lda_options o;
  o.name = std::string(size);
  if (size == "nytimes") return o;
  if (size == "10m") return o.docs = 30000, o.tokens = 10000000, o;
  if (size == "tiny") return o.docs = 500, o.vocab = 1000, o.tokens = 50000, o.topics = 10, o;
  bad_flag("--size", "unknown size '" + std::string(size) + "' for lda (want nytimes, 10m or tiny)");
}

void check_lda_options(const lda_options& o) {
  need_positive("--docs", o.docs);
  need_positive("--vocab", o.vocab);
  need_positive("--tokens", o.tokens);
  need_positive("--topics", o.topics);
  need_finite("--alpha", o.alpha, true);
  need_finite("zipf exponent", o.zipf_exponent, false);
  need_finite("concentration per word", o.concentration_per_word, true);
  need_finite("length sdlog", o.length_sdlog, false);
}

resource_estimate estimate_lda(const lda_options& o) {
  resource_estimate e;
  const std::uint64_t most_tokens = add(o.tokens + o.tokens / 20, o.docs);  // T on average: 5% to spare, and 1 a document
  const std::uint64_t nnz = std::min(most_tokens, mul(o.docs, o.vocab));
  const std::uint64_t line = digits(o.docs) + digits(o.vocab) + 5;
  const std::uint64_t cells = mul(o.topics, o.vocab);
  e.disk_bytes = add(add(mul(mul(nnz, line), 2), mul(o.vocab, digits(o.vocab) + 2)), add(mul(cells, 4), 4096));
  e.disk_what = "up to " + std::to_string(nnz) + " docword lines at ~" + std::to_string(line) +
                " bytes, twice while the body is copied behind the header, the vocabulary and the true topics";
  const double longest = static_cast<double>(o.tokens) / o.docs * std::exp(6 * o.length_sdlog) + 1;
  const std::uint64_t doc = longest > 1e18 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(longest) * 4;
  e.memory_bytes = add(add(mul(cells, 24), mul(o.vocab, 56)), add(add(doc, mul(o.topics, 40)), std::uint64_t{24} << 20));
  e.memory_what = std::to_string(o.topics) + " topics over " + std::to_string(o.vocab) +
                  " words (24 bytes a cell: alias tables and phi both ways) and the longest document's tokens";
  return e;
}

json_value lda_params(const lda_options& o) {
  return json_value::object()
      .set("version", 1)
      .set("name", o.name)
      .set("docs", o.docs)
      .set("vocab", o.vocab)
      .set("tokens", o.tokens)
      .set("topics", o.topics)
      .set("alpha", o.alpha)
      .set("seed", seed_json(o.seed))
      .set("zipf_exponent", o.zipf_exponent)
      .set("concentration_per_word", o.concentration_per_word)
      .set("length_sdlog", o.length_sdlog);
}

lda_truth generate_lda(const lda_options& o, const fs::path& dir, const progress_fn& progress) {
  check_lda_options(o);
  check_resources("lda", dir, estimate_lda(o));
  const auto t0 = std::chrono::steady_clock::now();
  prepare_dir(dir);
  lda_truth t;
  t.out.dir = dir;
  const lda_model m = draw_topics(o);
  const fs::path docword = dir / ("docword." + o.name + ".txt");
  {
    out_file body(docword.string() + ".body");
    lda_docs docs{o, m};
    progress_tick tick{progress, o.tokens};
    for (std::uint32_t d = 0; d < o.docs; ++d) {
      docs.draw();
      docs.write(d, body);
      tick(docs.n_tokens);
    }
    tick.end();  // T is the tokens on average: the corpus may hold fewer
    t.out.files.push_back(assemble_docword(docword, body, o, docs.nnz));
    t.tokens = docs.n_tokens, t.nnz = docs.nnz, t.max_doc_length = docs.longest;
    t.words_used = static_cast<std::uint32_t>(std::count(docs.used.begin(), docs.used.end(), 1));
    t.loglik_per_token = docs.loglik / static_cast<double>(docs.n_tokens);
  }
  t.out.files.push_back(write_vocab(dir / ("vocab." + o.name + ".txt"), o.vocab));
  t.out.files.push_back(write_topics(dir, m));
  const double beta0 = o.concentration_per_word * o.vocab;
  auto truth = json_value::object()
                   .set("beta0", beta0)
                   .set("mean_doc_length", static_cast<double>(t.tokens) / o.docs)
                   .set("loglik_per_token", t.loglik_per_token);
  write_truth(t.out, "lda", o.name, lda_params(o), lda_summary(o, t), std::move(truth), t0);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Lasso.

namespace {

/// The true coefficients: the support (increasing), its values, and β over every feature.
struct lasso_beta {
  std::vector<std::uint32_t> ids;
  std::vector<double> values;
  std::vector<double> dense;
};

/// `s` distinct features uniformly (Floyd's algorithm), values ±U(beta_min, beta_max).
lasso_beta draw_beta(const lasso_options& o) {
  lasso_beta b;
  const std::uint32_t s = o.support_size();
  rng_t g = stream(o.seed, lasso_support);
  std::unordered_set<std::uint32_t> chosen;
  chosen.reserve(2 * static_cast<std::size_t>(s));
  for (std::uint64_t j = o.features - s; j < o.features; ++j) {
    const auto t = static_cast<std::uint32_t>(below(g, j + 1));
    if (!chosen.insert(t).second) chosen.insert(static_cast<std::uint32_t>(j));
  }
  b.ids.assign(chosen.begin(), chosen.end());
  std::sort(b.ids.begin(), b.ids.end());
  b.dense.assign(o.features, 0.0);
  for (const std::uint32_t j : b.ids) {
    const double sign = (g() & 1) ? 1.0 : -1.0;
    b.values.push_back(sign * (o.beta_min + (o.beta_max - o.beta_min) * unit(g)));
    b.dense[j] = b.values.back();
  }
  return b;
}

std::uint32_t groups_of(const lasso_options& o) { return static_cast<std::uint32_t>((std::uint64_t{o.features} + o.group - 1) / o.group); }
std::uint32_t groups_per_row(const lasso_options& o) {
  return std::max<std::uint32_t>(1, static_cast<std::uint32_t>(std::llround(static_cast<double>(o.nnz_per_row) / o.group)));
}

/// Draws the rows one at a time and writes "y idx:val ...".
struct lasso_rows {
  const lasso_options& o;
  const lasso_beta& beta;
  std::uint32_t groups = groups_of(o), per_row = groups_per_row(o);
  alias_table popularity{};
  rng_t group_rng = stream(o.seed, lasso_groups), value_rng = stream(o.seed, lasso_values), noise_rng = stream(o.seed, lasso_noise);
  std::normal_distribution<double> nd{0.0, 1.0}, noise{0.0, 1.0};
  std::vector<std::uint32_t> stamp = std::vector<std::uint32_t>(groups, 0), chosen{};
  std::vector<char> line = std::vector<char>(static_cast<std::size_t>(per_row) * o.group * 40 + 64);
  std::uint64_t nnz = 0;
  double xb_sum = 0, xb_sq = 0;

  void build_popularity() {
    rng_t g = stream(o.seed, lasso_group_order);
    const auto order = permutation(groups, g);
    popularity.build(by_id(power_law(groups, o.group_exponent, 1.0 + groups / 100.0), order));
  }

  void row(std::uint32_t i, out_file& f) {
    draw_distinct(popularity, per_row, group_rng, stamp, i + 1, chosen);
    char* at = line.data();
    double xb = 0;
    for (const std::uint32_t grp : chosen) {
      const double z = nd(value_rng);
      const std::uint64_t first = std::uint64_t{grp} * o.group, last = std::min<std::uint64_t>(first + o.group, o.features);
      for (std::uint64_t j = first; j < last; ++j) {
        const double x = z + o.feature_noise * nd(value_rng);
        xb += x * beta.dense[j];
        *at++ = ' ';
        at = put_uint(at, j + 1);
        *at++ = ':';
        at = put_general(at, x, 6);
      }
      nnz += last - first;
    }
    const double y = xb + o.sigma * noise(noise_rng);
    xb_sum += xb, xb_sq += xb * xb;
    f.done(put_general(f.room(32), y, 9));
    f.append(line.data(), static_cast<std::size_t>(at - line.data()), 0);
    f.end_line(f.room(1));
  }
};

written_file write_beta(const fs::path& dir, const lasso_beta& b) {
  out_file f(dir / "truth.beta.txt");
  for (std::size_t k = 0; k < b.ids.size(); ++k) {
    char* at = f.room(64);
    at = put_uint(at, std::uint64_t{b.ids[k]} + 1);
    *at++ = ' ';
    f.end_line(std::to_chars(at, at + 32, b.values[k]).ptr);  // shortest round-trip form
  }
  return f.commit();
}

json_value lasso_summary(const lasso_options& o, const lasso_truth& t) {
  return json_value::object()
      .set("samples", o.samples)
      .set("features", o.features)
      .set("nnz", t.nnz)
      .set("support", t.support)
      .set("sigma", o.sigma)
      .set("signal_sd", t.signal_sd)
      .set("snr", o.sigma > 0 ? t.signal_sd / o.sigma : std::numeric_limits<double>::infinity());
}

}  // namespace

std::uint32_t lasso_options::support_size() const noexcept {
  if (support > 0) return support;
  return std::clamp<std::uint32_t>(features / 100, 1, 1000);
}

lasso_options lasso_preset(std::string_view size) {
  lasso_options o;
  o.name = std::string(size);
  if (size == "1m") return o;
  if (size == "100k") return o.samples = 10000, o.features = 100000, o;
  if (size == "tiny") return o.samples = 200, o.features = 1000, o.nnz_per_row = 20, o;
  bad_flag("--size", "unknown size '" + std::string(size) + "' for lasso (want 1m, 100k or tiny)");
}

void check_lasso_options(const lasso_options& o) {
  need_positive("--samples", o.samples);
  if (o.samples == std::numeric_limits<std::uint32_t>::max()) bad_flag("--samples", "must be below 4294967295");
  need_positive("--features", o.features);
  need_positive("--nnz-per-row", o.nnz_per_row);
  need_positive("--group", o.group);
  if (o.group > o.features) bad_flag("--group", std::to_string(o.group) + " is more than --features " + std::to_string(o.features));
  const std::uint32_t g = groups_of(o), per_row = groups_per_row(o);
  if (per_row > std::max<std::uint32_t>(1, g / 2))
    bad_flag("--nnz-per-row", std::to_string(o.nnz_per_row) + " makes " + std::to_string(per_row) + " groups of --group " +
                                  std::to_string(o.group) + " a row, more than half of the " + std::to_string(g) +
                                  " groups of --features " + std::to_string(o.features) + " (a row's groups are distinct)");
  if (o.support > o.features) bad_flag("--support", std::to_string(o.support) + " is more than --features " + std::to_string(o.features));
  need_finite("--sigma", o.sigma, false);
  need_finite("--feature-noise", o.feature_noise, false);
  need_finite("group exponent", o.group_exponent, false);
  if (!(o.beta_min >= 0 && o.beta_max >= o.beta_min && std::isfinite(o.beta_max))) bad_flag("beta range", "must be 0 <= min <= max");
}

resource_estimate estimate_lasso(const lasso_options& o) {
  resource_estimate e;
  const std::uint64_t per_row = mul(groups_per_row(o), o.group);
  const std::uint64_t entry = digits(o.features) + 14;  // " idx:" and up to 12 characters of %.6g
  e.disk_bytes = add(mul(o.samples, add(mul(per_row, entry), 18)), add(mul(o.support_size(), digits(o.features) + 26), 4096));
  e.disk_what = std::to_string(o.samples) + " rows of ~" + std::to_string(per_row) + " values at ~" + std::to_string(entry) + " bytes each";
  e.memory_bytes = add(add(mul(o.features, 8), mul(groups_of(o), 48)), add(add(mul(per_row, 40), mul(o.support_size(), 64)), std::uint64_t{16} << 20));
  e.memory_what = "the coefficients of " + std::to_string(o.features) + " features, the popularity of " +
                  std::to_string(groups_of(o)) + " groups and a row's text";
  return e;
}

json_value lasso_params(const lasso_options& o) {
  return json_value::object()
      .set("version", 1)
      .set("name", o.name)
      .set("samples", o.samples)
      .set("features", o.features)
      .set("nnz_per_row", o.nnz_per_row)
      .set("support", o.support_size())
      .set("group", o.group)
      .set("sigma", o.sigma)
      .set("seed", seed_json(o.seed))
      .set("group_exponent", o.group_exponent)
      .set("feature_noise", o.feature_noise)
      .set("beta_min", o.beta_min)
      .set("beta_max", o.beta_max);
}

lasso_truth generate_lasso(const lasso_options& o, const fs::path& dir, const progress_fn& progress) {
  check_lasso_options(o);
  check_resources("lasso", dir, estimate_lasso(o));
  const auto t0 = std::chrono::steady_clock::now();
  prepare_dir(dir);
  lasso_truth t;
  t.out.dir = dir;
  lasso_beta beta = draw_beta(o);
  {
    out_file f(dir / ("lasso." + o.name + ".svm"));
    lasso_rows rows{o, beta};
    rows.build_popularity();
    progress_tick tick{progress, o.samples};
    for (std::uint32_t i = 0; i < o.samples; ++i) rows.row(i, f), tick(std::uint64_t{i} + 1);
    t.out.files.push_back(f.commit());
    t.nnz = rows.nnz;
    const double n = o.samples, mean = rows.xb_sum / n;
    t.signal_sd = std::sqrt(std::max(0.0, rows.xb_sq / n - mean * mean));
  }
  t.out.files.push_back(write_beta(dir, beta));
  t.support = static_cast<std::uint32_t>(beta.ids.size());
  t.support_ids = std::move(beta.ids);
  t.beta = std::move(beta.values);
  auto truth = json_value::object()
                   .set("groups", groups_of(o))
                   .set("groups_per_row", groups_per_row(o))
                   .set("group_k0", 1.0 + groups_of(o) / 100.0)
                   .set("signal_sd", t.signal_sd);
  write_truth(t.out, "lasso", o.name, lasso_params(o), lasso_summary(o, t), std::move(truth), t0);
  return t;
}

}  // namespace strata::ml::gen
