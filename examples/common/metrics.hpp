#pragma once
/// \file The examples' --metrics FILE writer (JSON Lines) and their one-line progress display.
///
/// Metrics format, one JSON object per line:
///   line 1:  {"config": {"trainer": "mf", "consistency": "essp", "staleness": 2, ...}}
///   then one per iteration (iteration 0 = the initial state):
///   {"iteration": 3, "elapsed_s": 1.25, "objective": 81234.5, "rmse": 0.912,
///    "staleness": {"mean": 0.4, "max": 2, "hist": {"-1": 10, "0": 800, "1": 120}},
///    "wait_s": 0.31, "bytes_sent": 123456}
/// ("loglik" instead of "rmse" for LDA, where "objective" is the log-likelihood itself).
/// elapsed_s: seconds since the start until the slowest worker finished the iteration, evaluation
/// time excluded; wait_s: seconds workers were blocked in this iteration, summed over workers;
/// bytes_sent: transport bytes since the start.
#include <strata/ml/trainers/run_stats.hpp>

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace strata::examples {

/// A flat JSON object built field by field (numbers, strings, raw JSON).
class json_object {
 public:
  json_object& num(const std::string& k, double v) {
    std::ostringstream s;
    s << std::setprecision(10) << v;
    return raw(k, s.str());
  }
  json_object& str(const std::string& k, const std::string& v) {
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return raw(k, q + "\"");
  }
  json_object& raw(const std::string& k, const std::string& v) {
    f_.emplace_back(k, v);
    return *this;
  }
  std::string dump() const {
    std::string s = "{";
    for (std::size_t i = 0; i < f_.size(); ++i) s += (i ? ", \"" : "\"") + f_[i].first + "\": " + f_[i].second;
    return s + "}";
  }

 private:
  std::vector<std::pair<std::string, std::string>> f_;
};

/// Writes the metrics file: the config line, then one line per iteration.
class metrics_writer {
 public:
  metrics_writer(const std::string& path, const json_object& config, std::string metric_name)
      : metric_(std::move(metric_name)) {
    if (path.empty()) return;
    out_.open(path);
    if (!out_) throw std::runtime_error("cannot write metrics file " + path);
    out_ << "{\"config\": " << config.dump() << "}\n";
  }
  void write(const strata::ml::iteration_stats& it) {
    if (!out_.is_open()) return;
    std::string hist = "{";
    bool first = true;
    for (auto [v, c] : it.staleness) {
      hist += (first ? "\"" : ", \"") + std::to_string(v) + "\": " + std::to_string(c);
      first = false;
    }
    hist += "}";
    json_object st;
    st.num("mean", it.staleness_mean()).num("max", static_cast<double>(it.staleness_max())).raw("hist", hist);
    json_object o;
    o.num("iteration", it.iteration)
        .num("elapsed_s", it.elapsed_s)
        .num("objective", it.objective)
        .num(metric_, it.metric)
        .raw("staleness", st.dump())
        .num("wait_s", it.wait_s)
        .num("bytes_sent", static_cast<double>(it.bytes_sent));
    out_ << o.dump() << "\n";
  }

 private:
  std::string metric_;
  std::ofstream out_;
};

/// Progress: one line rewritten in place on a terminal (stderr), plain lines otherwise.
class progress_line {
 public:
  explicit progress_line(bool quiet = false) : quiet_(quiet), tty_(::isatty(2) != 0) {}
  void show(const std::string& line) {
    if (quiet_) return;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      shown_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }
  /// Ends the in-place line (call before printing the summary).
  void done() {
    if (shown_) std::fprintf(stderr, "\n");
    shown_ = false;
  }

 private:
  bool quiet_, tty_, shown_ = false;
};

}  // namespace strata::examples
