#pragma once
/// \file The trace of a run: one record per iteration, and its JSON Lines file (the trainers'
/// `--metrics FILE`), with a writer and a reader so that any tool (a cost model, a plot) can read
/// any run's trace. Depends on core/json.hpp and core/atomic_file.hpp: a trace file appears whole
/// (written beside the target, renamed over it by `trace_writer::close()`) or not at all.
///
/// Format, one JSON object per line:
///
///     {"config": {"trainer": "mf", "consistency": "essp", "staleness": 2, ...}}
///     {"iteration": 0, "elapsed_s": 0.01, "objective": 0, "rmse": 1.07, "staleness": {"mean": 0,
///      "max": 0, "hist": {}}, "wait_s": 0, "bytes_sent": 0, "worker_elapsed_s": [0.01, 0.009]}
///     {"iteration": 1, ...}
///
/// - line 1: the run's configuration, any JSON object (the trainers write the consistency model,
///   the system's shape and the trainer's settings);
/// - then one object per iteration, iteration 0 being the initial state:
///   `iteration`; `elapsed_s`: seconds from the start until the slowest worker finished it
///   (evaluation excluded); `objective`: the trainer's objective; one more number, the metric,
///   named by the trainer (`rmse` for MF, `loglik` for LDA); `staleness`: `hist` maps an observed
///   staleness (c − 1) − t to the number of reads of the iteration that saw it (`mean` and `max`
///   are derived from it, for readers that want them ready-made), t being the clock through which
///   the row held every worker's updates (a minimum over writers); `writer_staleness`: the same
///   form (plus `min`) for the per-writer figure, one count per read and other worker q:
///   (c − 1) − newest clock of q's updates the row held (negative when it held q's updates from the
///   reader's clock or later; absent in older traces, read back as empty); `wait_s`: seconds the workers
///   were blocked in it, summed over workers; `bytes_sent`: transport bytes sent since the start
///   (all processes); `worker_elapsed_s`: each worker's own elapsed_s, by worker id (absent in
///   traces written before it existed: read back as empty).
///
/// Numbers are written in the shortest form that reads back to the same double, so a trace
/// reads back equal to what was written; a non-finite number (a diverged run) is written `null`
/// and read back as NaN. Blank lines are skipped. The reader takes the metric to be the first
/// member, in line order, that is not one of the fields above and holds a number (or null);
/// other unknown members are ignored, so later versions may add fields.
#include <strata/core/atomic_file.hpp>
#include <strata/core/json.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace strata {

/// One iteration of a run, merged over all workers.
struct iteration_record {
  std::uint32_t iteration = 0;  ///< 0 = the initial state, i = after iteration (clock) i
  double elapsed_s = 0;         ///< seconds from the start until the slowest worker ended this iteration
                                ///< (evaluation time excluded)
  double objective = 0;         ///< the trainer's objective (MF: training loss, LDA: joint log-likelihood)
  double metric = 0;            ///< the named metric (MF: test RMSE, LDA: joint log-likelihood)
  std::string metric_name;      ///< its name in the trace ("rmse", "loglik"; "metric" when empty)
  std::map<std::int64_t, std::uint64_t> staleness;  ///< min-clock staleness (c-1)-t of this iteration's reads -> count
  std::map<std::int64_t, std::uint64_t> writer_staleness;  ///< per read and other writer: (c-1)-newest clock held -> count
  double wait_s = 0;            ///< seconds workers spent blocked in this iteration (summed over workers)
  std::uint64_t bytes_sent = 0; ///< transport bytes sent since the start, at the end of the iteration
  std::vector<double> worker_elapsed_s;  ///< each worker's elapsed_s, by worker id (elapsed_s is their maximum)

  /// Number of reads recorded in the staleness histogram.
  std::uint64_t reads() const noexcept {
    std::uint64_t n = 0;
    for (auto [v, c] : staleness) n += c;
    return n;
  }
  /// Mean observed staleness (0 when there were no reads).
  double staleness_mean() const noexcept {
    double s = 0;
    std::uint64_t n = 0;
    for (auto [v, c] : staleness) s += static_cast<double>(v) * static_cast<double>(c), n += c;
    return n ? s / static_cast<double>(n) : 0.0;
  }
  /// Largest observed staleness (0 when there were no reads).
  std::int64_t staleness_max() const noexcept { return staleness.empty() ? 0 : staleness.rbegin()->first; }

  /// Mean per-writer staleness (0 when none was recorded).
  double writer_staleness_mean() const noexcept {
    double s = 0;
    std::uint64_t n = 0;
    for (auto [v, c] : writer_staleness) s += static_cast<double>(v) * static_cast<double>(c), n += c;
    return n ? s / static_cast<double>(n) : 0.0;
  }

  bool operator==(const iteration_record&) const = default;
};

/// Mean observed staleness over a set of iterations (weighted by reads).
inline double mean_staleness(const std::vector<iteration_record>& its) {
  double s = 0;
  std::uint64_t n = 0;
  for (const auto& it : its)
    for (auto [v, c] : it.staleness) s += static_cast<double>(v) * static_cast<double>(c), n += c;
  return n ? s / static_cast<double>(n) : 0.0;
}

/// A trace file that cannot be opened or has a malformed line: "FILE:LINE: what" (line 0 when
/// the whole file is at fault).
class trace_error : public std::runtime_error {
 public:
  trace_error(const std::string& file, std::size_t line, const std::string& what)
      : std::runtime_error(file + ":" + std::to_string(line) + ": " + what), file_(file), line_(line) {}
  const std::string& file() const noexcept { return file_; }
  std::size_t line() const noexcept { return line_; }

 private:
  std::string file_;
  std::size_t line_;
};

/// The JSON object of one record (one line of the trace, without the newline).
inline json_value to_json(const iteration_record& r) {
  json_value hist = json_value::object();
  for (auto [v, c] : r.staleness) hist.set(std::to_string(v), c);
  json_value st = json_value::object();
  st.set("mean", r.staleness_mean()).set("max", r.staleness_max()).set("hist", std::move(hist));
  json_value whist = json_value::object();
  for (auto [v, c] : r.writer_staleness) whist.set(std::to_string(v), c);
  json_value wst = json_value::object();
  wst.set("mean", r.writer_staleness_mean())
      .set("min", r.writer_staleness.empty() ? std::int64_t{0} : r.writer_staleness.begin()->first)
      .set("max", r.writer_staleness.empty() ? std::int64_t{0} : r.writer_staleness.rbegin()->first)
      .set("hist", std::move(whist));
  json_value workers = json_value::array();
  for (double t : r.worker_elapsed_s) workers.push_back(t);
  json_value o = json_value::object();
  o.set("iteration", r.iteration)
      .set("elapsed_s", r.elapsed_s)
      .set("objective", r.objective)
      .set(r.metric_name.empty() ? std::string("metric") : r.metric_name, r.metric)
      .set("staleness", std::move(st))
      .set("writer_staleness", std::move(wst))
      .set("wait_s", r.wait_s)
      .set("bytes_sent", r.bytes_sent)
      .set("worker_elapsed_s", std::move(workers));
  return o;
}

namespace detail {
inline double trace_number(const json_value& v, const char* field) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) throw json_error(std::string("\"") + field + "\" is not a number");
  return v.as_number();
}
/// A non-negative integer below `max` (exact in a double).
inline std::uint64_t trace_count(const json_value& v, const char* field, double max) {
  const double x = v.is_number() ? v.as_number() : -1.0;
  if (!(x >= 0 && x <= max && x == static_cast<double>(static_cast<std::uint64_t>(x))))
    throw json_error(std::string("\"") + field + "\" is not a non-negative integer");
  return static_cast<std::uint64_t>(x);
}
}  // namespace detail

/// A record from its JSON object (see the file comment); json_error when a field has the wrong
/// kind or "iteration" is missing.
inline iteration_record record_from_json(const json_value& o) {
  if (!o.is_object()) throw json_error("an iteration line must be a JSON object");
  iteration_record r;
  bool has_iteration = false;
  for (const auto& [key, v] : o.as_object()) {
    if (key == "iteration") {
      r.iteration = static_cast<std::uint32_t>(detail::trace_count(v, "iteration", std::numeric_limits<std::uint32_t>::max()));
      has_iteration = true;
    } else if (key == "elapsed_s") {
      r.elapsed_s = detail::trace_number(v, "elapsed_s");
    } else if (key == "objective") {
      r.objective = detail::trace_number(v, "objective");
    } else if (key == "wait_s") {
      r.wait_s = detail::trace_number(v, "wait_s");
    } else if (key == "bytes_sent") {
      r.bytes_sent = detail::trace_count(v, "bytes_sent", 0x1p53);
    } else if (key == "staleness" || key == "writer_staleness") {
      if (!v.is_object()) throw json_error("\"" + key + "\" is not an object");
      auto& into = key == "staleness" ? r.staleness : r.writer_staleness;
      if (const json_value* h = v.find("hist")) {
        if (!h->is_object()) throw json_error("\"" + key + "\".\"hist\" is not an object");
        for (const auto& [s, c] : h->as_object()) {
          std::int64_t k = 0;
          const auto res = std::from_chars(s.data(), s.data() + s.size(), k);
          if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size())
            throw json_error(key + " key \"" + s + "\" is not an integer");
          into[k] += detail::trace_count(c, "staleness count", 0x1p53);
        }
      }
    } else if (key == "worker_elapsed_s") {
      if (!v.is_array()) throw json_error("\"worker_elapsed_s\" is not an array");
      for (const auto& t : v.as_array()) r.worker_elapsed_s.push_back(detail::trace_number(t, "worker_elapsed_s"));
    } else if (r.metric_name.empty() && (v.is_number() || v.is_null())) {
      r.metric_name = key;
      r.metric = detail::trace_number(v, key.c_str());
    }
  }
  if (!has_iteration) throw json_error("missing \"iteration\"");
  return r;
}

/// Writes a trace: the configuration line when constructed, then one line per `write`. A
/// default-constructed writer (or one given an empty path) writes nothing, so callers need no
/// "if metrics were asked for" around every write. A file is written atomically
/// (core/atomic_file.hpp): the lines go to `FILE.tmp-<pid>` (watchable while the run goes on) and
/// `close()` renames it over FILE; a writer destroyed without `close()` (a failed run) removes it
/// and leaves FILE as it was.
class trace_writer {
 public:
  trace_writer() = default;
  /// Writes to `file`; an empty path writes nothing. Throws trace_error naming the file and the
  /// system's reason when it cannot be created (so a bad --metrics fails before the run).
  /// `config` should be a JSON object.
  trace_writer(const std::filesystem::path& file, const json_value& config) {
    if (file.empty()) return;
    name_ = file.string();
    guarded([&] { file_ = std::make_unique<atomic_file>(file); });
    write_config(config);
  }
  /// Writes to a stream the caller keeps alive.
  trace_writer(std::ostream& out, const json_value& config, std::string name = "<stream>")
      : out_(&out), name_(std::move(name)) {
    write_config(config);
  }

  bool is_open() const noexcept { return out_ != nullptr || file_ != nullptr; }
  /// Appends one iteration line (flushed, so a trace can be watched while the run goes on).
  void write(const iteration_record& r) { put(to_json(r).dump() + '\n', 0); }
  /// Appends one iteration line with members of the trainer's own after the standard ones (e.g.
  /// Lasso's "nnz"); readers ignore members they do not know.
  void write(const iteration_record& r, const json_value::object_type& extra) {
    if (!is_open()) return;
    json_value o = to_json(r);
    for (const auto& [k, v] : extra) o.set(k, v);
    put(o.dump() + '\n', 0);
  }
  /// Appends every record.
  void write(const std::vector<iteration_record>& rs) {
    for (const auto& r : rs) write(r);
  }
  /// Puts a file in place (fsync, rename; see the class comment); nothing for a stream or an
  /// unopened writer. Throws trace_error naming the file when that fails. Later writes do nothing.
  void close() {
    if (!file_) return;
    auto f = std::move(file_);
    guarded([&] { f->commit(); });
  }

 private:
  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (const std::system_error& e) {
      throw trace_error(name_, 0, e.what());
    }
  }
  void put(const std::string& text, std::size_t line) {
    if (file_) return guarded([&] { file_->write(text); });
    if (!out_) return;
    *out_ << text;
    out_->flush();
    if (!*out_) throw trace_error(name_, line, "write failed");
  }
  void write_config(const json_value& config) {
    json_value head = json_value::object();
    head.set("config", config);
    put(head.dump() + '\n', 1);
  }
  std::unique_ptr<atomic_file> file_;
  std::ostream* out_ = nullptr;
  std::string name_;
};

/// Reads a trace line by line. The constructor reads the configuration line; `next()` returns
/// the following records. Every problem throws trace_error naming the file and line.
class trace_reader {
 public:
  explicit trace_reader(const std::filesystem::path& file) : name_(file.string()) {
    auto f = std::make_unique<std::ifstream>(file, std::ios::binary);
    if (!*f) throw trace_error(name_, 0, "cannot open the trace file");
    owned_ = std::move(f);
    in_ = owned_.get();
    read_config();
  }
  /// Reads from a stream the caller keeps alive; `name` labels errors.
  trace_reader(std::istream& in, std::string name) : in_(&in), name_(std::move(name)) { read_config(); }

  /// The configuration object of line 1.
  const json_value& config() const noexcept { return config_; }
  /// The next record; nullopt at the end of the file.
  std::optional<iteration_record> next() {
    std::string line;
    while (next_line(line)) {
      try {
        return record_from_json(json_value::parse(line));
      } catch (const json_error& e) {
        throw trace_error(name_, line_, e.what());
      }
    }
    return std::nullopt;
  }
  /// Every remaining record.
  std::vector<iteration_record> read_all() {
    std::vector<iteration_record> out;
    while (auto r = next()) out.push_back(std::move(*r));
    return out;
  }
  /// The number of the line last read (1-based).
  std::size_t line_number() const noexcept { return line_; }

 private:
  /// The next non-blank line; false at the end. A UTF-8 byte order mark opening the file is
  /// skipped (editors on Windows write one); anywhere else it is a JSON error.
  bool next_line(std::string& line) {
    while (std::getline(*in_, line)) {
      ++line_;
      if (line_ == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") != std::string::npos) return true;
    }
    if (in_->bad()) throw trace_error(name_, line_, "read error");
    return false;
  }
  void read_config() {
    std::string line;
    if (!next_line(line)) throw trace_error(name_, line_, "empty trace (want a {\"config\": {...}} line first)");
    try {
      json_value head = json_value::parse(line);
      const json_value* c = head.find("config");
      if (!c) throw json_error("the first line must be {\"config\": {...}}");
      config_ = *c;
    } catch (const json_error& e) {
      throw trace_error(name_, line_, e.what());
    }
  }

  std::unique_ptr<std::istream> owned_;
  std::istream* in_ = nullptr;
  std::string name_;
  std::size_t line_ = 0;
  json_value config_;
};

/// A whole trace in memory.
struct trace {
  json_value config;                       ///< line 1
  std::vector<iteration_record> iterations;  ///< the rest, in file order
};

/// Reads a whole trace file; throws trace_error ("FILE:LINE: what") on any problem.
inline trace read_trace(const std::filesystem::path& file) {
  trace_reader r(file);
  trace t;
  t.iterations = r.read_all();
  t.config = r.config();
  return t;
}

/// Writes a whole trace file atomically; throws trace_error when it cannot be written.
inline void write_trace(const std::filesystem::path& file, const trace& t) {
  trace_writer w(file, t.config);
  w.write(t.iterations);
  w.close();
}

}  // namespace strata
