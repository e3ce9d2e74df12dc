#pragma once
/// \file What an example trainer reports about a run: the configuration line of its trace
/// (`--metrics FILE`, written by strata::trace_writer: the format is documented in
/// include/strata/core/trace.hpp and README), the one-line progress display, and the summary line.
#include <strata/core/trace.hpp>
#include <trainers/run_stats.hpp>

#include "common/dispatch.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace strata::examples {

/// printf into a std::string.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  const int n = std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return n < 0 ? std::string() : std::string(buf, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
}

/// The first fields of a trace's configuration line, the same for every trainer: the trainer's
/// name, the consistency model and its bounds, the system's shape, transport, injected delays,
/// seed and iterations. The trainer appends its own settings with `set`.
inline json_value run_config(const system_options& so, const std::string& trainer, std::uint32_t iterations) {
  json_value c = json_value::object();
  c.set("trainer", trainer)
      .set("consistency", so.consistency)
      .set("staleness", so.staleness)
      .set("value_bound", so.value_bound)
      .set("workers", so.workers * so.nodes)
      .set("nodes", so.nodes)
      .set("transport", so.transport_label())
      .set("delay_us", so.delay_us)
      .set("straggler", so.straggler)
      .set("straggler_factor", so.straggler_factor)
      .set("seed", so.seed)
      .set("iterations", iterations);
  return c;
}

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

/// The trainers' progress callback: "<trainer> <model> iter i/N  <time>  <metric>  staleness min-clock
/// mean max, per-writer mean [min, max] ...
/// wait ...", the metric shown by `metric_text`. Over several processes the live line shows this
/// process's workers only (the trace and the summary are merged over every worker).
inline std::function<void(const iteration_record&)> progress_printer(progress_line& line, const system_options& so,
                                                                     std::string trainer, std::uint32_t iterations,
                                                                     std::function<std::string(double)> metric_text) {
  const char* view = so.nodes > 1 && so.is_distributed() ? " (rank 0's workers)" : "";
  return [&line, label = so.model_label(), trainer = std::move(trainer), iterations, text = std::move(metric_text),
          view](const iteration_record& it) {
    const auto& ws = it.writer_staleness;
    line.show(fmt("%s %-12s iter %3u/%u  %7.2fs  %s  staleness min-clock %.2f max %lld, per-writer %.2f [%lld, %lld]  wait %.2fs%s",
                  trainer.c_str(), label.c_str(), it.iteration, iterations, it.elapsed_s, text(it.metric).c_str(),
                  it.staleness_mean(), static_cast<long long>(it.staleness_max()), it.writer_staleness_mean(),
                  static_cast<long long>(ws.empty() ? 0 : ws.begin()->first),
                  static_cast<long long>(ws.empty() ? 0 : ws.rbegin()->first), it.wait_s, view));
  };
}

/// The summary of a run, one line of key=value fields. Rank 0 prints "<trainer> summary:
/// model=... workers=P iterations=N" and every field; another rank (tcp) prints "<trainer> rank r
/// done: workers a..b," and only the fields added with `every_rank`. Every rank ends the line with
/// its own peak_rss_mb.
class summary {
 public:
  summary(std::string trainer, const system_options& so, std::uint32_t iterations)
      : trainer_(std::move(trainer)), so_(so), iterations_(iterations) {}

  summary& add(std::string key, std::string value, bool every_rank = false) {
    fields_.push_back({std::move(key), std::move(value), every_rank});
    return *this;
  }
  /// The fields every trainer reports about the run itself: mean and largest min-clock staleness,
  /// mean, smallest and largest per-writer staleness,
  /// blocking time and transport bytes, over every worker and iteration.
  summary& add_run(const ml::run_outcome& r) {
    std::int64_t smax = 0;
    double wait = 0;
    for (const auto& it : r.iterations) smax = std::max(smax, it.staleness_max()), wait += it.wait_s;
    add("staleness_mean", fmt("%.3f", mean_staleness(r.iterations)));
    add("staleness_max", std::to_string(smax));
    std::map<std::int64_t, std::uint64_t> ws;
    for (const auto& it : r.iterations)
      for (auto [v, c] : it.writer_staleness) ws[v] += c;
    double sum = 0;
    std::uint64_t n = 0;
    for (auto [v, c] : ws) sum += static_cast<double>(v) * static_cast<double>(c), n += c;
    add("writer_staleness_mean", fmt("%.3f", n ? sum / static_cast<double>(n) : 0.0));
    add("writer_staleness_min", std::to_string(ws.empty() ? 0 : ws.begin()->first));
    add("writer_staleness_max", std::to_string(ws.empty() ? 0 : ws.rbegin()->first));
    add("wait_s", fmt("%.2f", wait));
    if (so_.cache_rows > 0) {  // this process's workers (all of them inproc)
      add("cache_rows", std::to_string(so_.cache_rows));
      add("cache_peak_rows", std::to_string(r.stats.cache_peak_rows));
      add("evictions", std::to_string(r.stats.evictions));
    }
    return add("bytes_sent", std::to_string(r.bytes_sent));
  }
  /// Prints the line on stdout.
  void print() const {
    const bool lead = so_.rank() == 0;
    std::string line = lead ? fmt("%s summary: model=%s workers=%u iterations=%u", trainer_.c_str(), so_.model_label().c_str(),
                                  so_.workers * so_.nodes, iterations_)
                            : fmt("%s rank %u done: workers %u..%u,", trainer_.c_str(), so_.rank(), so_.rank() * so_.workers,
                                  (so_.rank() + 1) * so_.workers - 1);
    for (const auto& f : fields_)
      if (lead || f.every_rank) line += ' ' + f.key + '=' + f.value;
    line += fmt(" peak_rss_mb=%.0f", peak_rss_mb());  // every rank: each process holds its own share
    std::printf("%s\n", line.c_str());
  }

 private:
  struct field {
    std::string key, value;
    bool every_rank;
  };
  std::string trainer_;
  const system_options& so_;
  std::uint32_t iterations_;
  std::vector<field> fields_;
};

}  // namespace strata::examples
