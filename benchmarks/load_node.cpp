// load_node: one process of a load or soak run (benchmarks/load_test.sh, benchmarks/soak_test.sh).
//
// Every worker follows a seeded plan: at clock 0 it writes one cell of each row r with
// r % workers == its id (so the whole table exists after the first clock), then at every clock c
// it reads --gets rows of its own working set (--read-set rows) and adds --incs small integers
// (1..4, exact as floats) to --inc-rows rows drawn from (seed, worker, clock). After the run each
// process replays the whole plan for the rows its shard holds and compares every cell: no lost
// update means the table equals the sum of all increments exactly. It also writes a SHA-256 of its
// shard (row ids and bytes in ascending row order), so two runs of one plan can be compared.
//
// While it runs, a sampler thread records resident memory (VmRSS), clocks done and bytes sent
// every --sample-ms into DIR/rank<r>_from<c>.rss.csv (flushed line by line, so a killed run keeps
// its series); at the end DIR/rank<r>_from<c>.json holds throughput and the checks (c: the clock
// the run started at, > 0 after --resume). DIR/rank<r>.pid holds the process id (for the soak's kill).
//
// Injected delays: --delay / --jitter (µs per message) run the tcp transport inside
// strata::delayed<tcp>; --op-sleep-us adds a random sleep before every read and clock.
// --clock-ms paces the run (a clock takes at least that long), so a soak lasts a set time.
// Exit status: 0 ok, 1 run failed (message on stderr), 2 lost updates.
//
//   load_node --rows 100000 --width 1000 --workers 16 --clocks 2000 --out DIR    (under scripts/launch.sh)
#include <strata/runtime/cluster.hpp>
#include <strata/strata.hpp>
#include <strata/transport/tcp.hpp>
#include <strata/wire/sha256.hpp>

#include <CLI/CLI.hpp>

#include "../examples/common/cli.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using row_t = strata::dense_row<float>;
using steady = std::chrono::steady_clock;

struct options {
  std::uint64_t rows = 1000;
  std::uint32_t width = 100;
  std::uint32_t wpn = 2;
  std::int64_t clocks = 100;
  std::uint32_t incs = 64;      // per worker per clock
  std::uint32_t inc_rows = 8;   // distinct rows those increments go to
  std::uint32_t gets = 4;       // reads per worker per clock
  std::uint32_t read_set = 32;  // rows a worker reads from (its working set)
  std::uint64_t seed = 1;
  std::string model = "bsp";
  std::string transport = "tcp";
  std::uint32_t nodes = 1;  // inproc: in-process shards
  double delay_us = 0, jitter_us = 0;
  std::uint32_t op_sleep_us = 0;
  double clock_ms = 0;
  int sample_ms = 1000;
  std::uint64_t drop_every = 0;  // a test of the check itself: skip every N-th increment
  std::string out;
  std::string label = "load";
  strata::checkpoint_config checkpoint;
  strata::cluster_options cluster;
  // from --model
  strata::model_name parsed{"bsp", 0};  // from --model: essp2 is {essp, 2}
};

std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser: the same numbers on every platform
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct cell {
  strata::row_id row;
  strata::col_id col;
  float value;
};

/// The seeded increments: which cells worker w adds to at clock c, and by how much.
struct plan {
  const options& o;
  std::uint32_t workers;

  void incs(strata::worker_id w, std::int64_t c, std::vector<cell>& out) const {
    out.clear();
    if (c == 0)  // warm-up: every row gets one cell, so the table is whole after the first clock
      for (std::uint64_t r = w; r < o.rows; r += workers) out.push_back({r, static_cast<strata::col_id>(r % o.width), 1.0f});
    std::uint64_t s = mix(o.seed ^ mix((static_cast<std::uint64_t>(w) << 40) ^ static_cast<std::uint64_t>(c)));
    std::vector<strata::row_id> rows(o.inc_rows);
    for (auto& r : rows) r = (s = mix(s)) % o.rows;
    for (std::uint32_t j = 0; j < o.incs; ++j) {
      s = mix(s);
      out.push_back({rows[j % o.inc_rows], static_cast<strata::col_id>((s >> 8) % o.width), static_cast<float>(1 + (s & 3))});
    }
  }
  /// Row i of worker w's working set.
  strata::row_id read_row(strata::worker_id w, std::uint32_t i) const {
    return mix(o.seed * 31 + mix((static_cast<std::uint64_t>(w) << 32) | i)) % o.rows;
  }
};

long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

/// Samples resident memory, progress and bytes sent every `period` on a thread of its own.
class sampler {
 public:
  struct sample {
    double t;
    long rss_kb;
    long clocks;
    std::uint64_t bytes;
  };
  template <class Bytes>
  sampler(std::string csv, std::chrono::milliseconds period, const std::atomic<long>& clocks, Bytes bytes)
      : csv_(csv), t0_(steady::now()) {
    if (!csv.empty()) {
      file_.open(csv);
      if (!file_) throw std::runtime_error("cannot write " + csv);
      file_ << "t_s,rss_kb,worker_clocks,bytes_sent,unix_s\n" << std::flush;
    }
    thread_ = std::thread([this, period, &clocks, bytes] {
      std::unique_lock lk(mu_);
      do {
        take(clocks.load(std::memory_order_relaxed), bytes());
      } while (!cv_.wait_for(lk, period, [&] { return stop_; }));
      take(clocks.load(std::memory_order_relaxed), bytes());
    });
  }
  ~sampler() { stop(); }
  void stop() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<sample>& samples() const { return samples_; }  // after stop()

 private:
  void take(long clocks, std::uint64_t bytes) {
    const sample s{std::chrono::duration<double>(steady::now() - t0_).count(), rss_kb(), clocks, bytes};
    samples_.push_back(s);
    const double unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (file_)
      file_ << std::fixed << std::setprecision(3) << s.t << ',' << s.rss_kb << ',' << s.clocks << ',' << s.bytes << ',' << unix_s << '\n' << std::flush;
  }
  std::string csv_;
  std::ofstream file_;
  steady::time_point t0_;
  std::vector<sample> samples_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

std::string hex(const std::array<std::uint8_t, 32>& d) {
  std::ostringstream s;
  for (auto b : d) s << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(b);
  return s.str();
}

template <class Transport>
int run(const options& o, std::uint32_t nodes, typename Transport::config tc, strata::node_id rank) {
  const std::uint32_t P = nodes * o.wpn;
  const plan pl{o, P};
  strata::system_config cfg{.nodes = nodes, .workers_per_node = o.wpn, .staleness = o.parsed.staleness, .checkpoint = o.checkpoint};
  {
    std::ostringstream tag;  // a checkpoint of another plan is refused
    tag << "load rows=" << o.rows << " seed=" << o.seed << " incs=" << o.incs << " inc_rows=" << o.inc_rows << " clocks=" << o.clocks;
    cfg.checkpoint.run_tag = tag.str();
  }
  strata::basic_system<Transport> sys(cfg, strata::model_params::named(o.parsed.name, cfg), std::move(tc));
  auto t = sys.template add_table<row_t>(o.width);
  std::int64_t from = 0;
  if (const auto* r = sys.resumed()) {
    for (const auto& why : r->refused) std::cerr << "REFUSED " << why << std::endl;
    from = r->clock;
    std::cout << "RESUMED rank=" << rank << " clock=" << from << std::endl;
  }
  const std::string stem = o.out.empty() ? "" : o.out + "/rank" + std::to_string(rank) + "_from" + std::to_string(from);
  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    std::ofstream(o.out + "/rank" + std::to_string(rank) + ".pid") << ::getpid() << '\n';
  }

  std::atomic<long> clocks_done{0}, incs_done{0}, reads_done{0};
  std::atomic<double> sink{0};  // keeps the reads
  sampler smp(stem.empty() ? "" : stem + ".rss.csv", std::chrono::milliseconds(o.sample_ms), clocks_done,
              [&sys] { return sys.transport().bytes_sent(); });
  const auto t0 = steady::now();
  sys.run([&](strata::worker& w) -> strata::task<> {
    const auto self = w.id();
    std::vector<cell> cells;
    std::uint64_t sleep_state = mix(o.seed + 7 * self + 1);
    auto nap = [&] {
      if (o.op_sleep_us == 0) return;
      sleep_state = mix(sleep_state);
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_state % (o.op_sleep_us + 1)));
    };
    const auto c0 = w.current_clock();  // a resumed run starts at its checkpoint
    const auto start = steady::now();
    double seen = 0;
    for (auto c = c0; c < o.clocks; ++c) {
      for (std::uint32_t g = 0; g < o.gets; ++g) {
        nap();
        const auto idx = static_cast<std::uint32_t>((static_cast<std::uint64_t>(c) * o.gets + g) % o.read_set);
        const row_t& row = co_await w.get(t, pl.read_row(self, idx));
        seen += row.get(static_cast<strata::col_id>(idx % o.width));
      }
      reads_done.fetch_add(o.gets, std::memory_order_relaxed);
      pl.incs(self, c, cells);
      for (std::size_t j = 0; j < cells.size(); ++j)
        if (o.drop_every == 0 || (j + 1) % o.drop_every != 0) co_await w.inc(t, cells[j].row, cells[j].col, cells[j].value);
      incs_done.fetch_add(static_cast<long>(cells.size()), std::memory_order_relaxed);
      if (o.clock_ms > 0) std::this_thread::sleep_until(start + std::chrono::duration<double, std::milli>(o.clock_ms * static_cast<double>(c - c0 + 1)));
      nap();
      co_await w.clock();
      clocks_done.fetch_add(1, std::memory_order_relaxed);
    }
    sink.store(seen, std::memory_order_relaxed);
  });
  const double elapsed = std::chrono::duration<double>(steady::now() - t0).count();
  smp.stop();
  const std::uint64_t bytes = sys.transport().bytes_sent();
  long peak_kb = 0;
  for (const auto& s : smp.samples()) peak_kb = std::max(peak_kb, s.rss_kb);

  // No lost update: replay every worker's plan for the rows held here, compare every cell.
  std::vector<std::int64_t> index(o.rows, -1);
  std::vector<strata::row_id> local;
  for (std::uint64_t r = 0; r < o.rows; ++r)
    if (sys.transport().is_local(strata::owner_of(t.id, r, nodes))) {
      index[r] = static_cast<std::int64_t>(local.size());
      local.push_back(r);
    }
  std::vector<float> expected(local.size() * o.width, 0.0f);
  std::vector<cell> cells;
  double max_cell = 0;
  for (strata::worker_id w = 0; w < P; ++w)
    for (std::int64_t c = 0; c < o.clocks; ++c) {
      pl.incs(w, c, cells);
      for (const auto& x : cells)
        if (index[x.row] >= 0) {
          float& e = expected[static_cast<std::size_t>(index[x.row]) * o.width + x.col];
          e += x.value;
          max_cell = std::max(max_cell, static_cast<double>(e));
        }
    }
  std::uint64_t lost = 0, wrong_rows = 0;
  std::string first;
  strata::wire::detail::sha256 h;
  for (std::size_t i = 0; i < local.size(); ++i) {
    const row_t row = sys.row(t, local[i]);
    const auto got = row.span();
    bool bad = false;
    for (std::uint32_t k = 0; k < o.width; ++k)
      if (got[k] != expected[i * o.width + k]) {
        if (lost == 0)
          first = "row " + std::to_string(local[i]) + " column " + std::to_string(k) + " is " + std::to_string(got[k]) +
                  ", expected " + std::to_string(expected[i * o.width + k]);
        ++lost;
        bad = true;
      }
    wrong_rows += bad;
    h.update(&local[i], sizeof(strata::row_id));
    h.update(got.data(), got.size_bytes());
  }
  const std::string digest = hex(h.finish());
  const bool exact = max_cell < 16777216.0;  // 2^24: every sum of small integers is exact in float below it
  const long clocks_run = clocks_done.load();
  const double worker_clocks_per_s = static_cast<double>(clocks_run) / elapsed;
  const auto sys_stats = sys.total_stats();

  std::ostringstream js;
  js << std::setprecision(10) << "{\n  \"label\": \"" << o.label << "\", \"rank\": " << rank << ", \"nodes\": " << nodes
     << ", \"workers_per_node\": " << o.wpn << ",\n  \"model\": \"" << sys.model().describe() << "\", \"transport\": \"" << o.transport
     << (o.delay_us > 0 || o.jitter_us > 0 ? "+delayed" : "") << "\", \"delay_us\": " << o.delay_us << ", \"jitter_us\": " << o.jitter_us
     << ", \"op_sleep_us\": " << o.op_sleep_us << ", \"clock_ms\": " << o.clock_ms << ",\n  \"rows\": " << o.rows << ", \"width\": " << o.width
     << ", \"floats\": " << o.rows * o.width << ", \"clocks\": " << o.clocks << ", \"from_clock\": " << from << ", \"incs_per_clock\": " << o.incs
     << ", \"inc_rows\": " << o.inc_rows << ", \"gets_per_clock\": " << o.gets << ", \"read_set\": " << o.read_set << ", \"seed\": " << o.seed
     << ",\n  \"elapsed_s\": " << elapsed << ", \"local_worker_clocks\": " << clocks_run << ", \"clocks_per_s\": " << worker_clocks_per_s / o.wpn
     << ", \"incs\": " << incs_done.load() << ", \"incs_per_s\": " << static_cast<double>(incs_done.load()) / elapsed
     << ", \"reads\": " << reads_done.load() << ", \"bytes_sent\": " << bytes << ", \"bytes_per_s\": " << static_cast<double>(bytes) / elapsed
     << ", \"max_staleness\": " << (sys_stats.reads ? sys_stats.min_clock_staleness.stats().max() : 0)
     << ",\n  \"peak_rss_kb\": " << peak_kb << ", \"local_rows\": " << local.size() << ", \"cells_checked\": " << local.size() * o.width
     << ", \"lost_updates\": " << lost << ", \"wrong_rows\": " << wrong_rows << ", \"exact_in_float\": " << (exact ? "true" : "false")
     << ", \"shard_sha256\": \"" << digest << "\",\n  \"rss\": [";
  for (std::size_t i = 0; i < smp.samples().size(); ++i) {
    const auto& s = smp.samples()[i];
    js << (i ? ", " : "") << '[' << std::setprecision(4) << s.t << ", " << s.rss_kb << ", " << s.clocks << ", " << s.bytes << ']';
  }
  js << "]\n}\n";
  if (!stem.empty()) std::ofstream(stem + ".json") << js.str();

  std::cout << std::fixed << std::setprecision(2) << o.label << " summary: rank=" << rank << " model=" << sys.model().describe()
            << " nodes=" << nodes << " wpn=" << o.wpn << " floats=" << o.rows * o.width << " clocks=" << o.clocks << " from=" << from
            << " elapsed_s=" << elapsed << " clocks_per_s=" << worker_clocks_per_s / o.wpn
            << " incs_per_s=" << static_cast<double>(incs_done.load()) / elapsed << " MB_per_s=" << static_cast<double>(bytes) / elapsed / 1e6
            << " peak_rss_mb=" << static_cast<double>(peak_kb) / 1024 << " cells=" << local.size() * o.width << " lost_updates=" << lost
            << " digest=" << digest.substr(0, 16) << (lost != 0 ? " LOST" : exact ? " ok" : " INEXACT") << std::endl;
  if (lost != 0) {
    std::cerr << "LOST UPDATES (" << lost << " cells in " << wrong_rows << " rows): " << first << std::endl;
    return 2;
  }
  if (!exact) {
    std::cerr << "a cell reached " << max_cell << ", past 2^24: float sums are not exact, use fewer increments" << std::endl;
    return 2;
  }
  return 0;
}

template <class F>
int dispatch(const options& o, F&& f) {
  if (o.transport == "inproc") return f(std::type_identity<strata::inproc>{}, strata::inproc::config{}, o.nodes, strata::node_id{0});
  const auto cl = strata::make_cluster(o.cluster);
  if (o.delay_us <= 0 && o.jitter_us <= 0) return f(std::type_identity<strata::tcp>{}, strata::tcp::config(cl.tcp_config), cl.size, cl.rank);
  strata::delay_config d;
  d.latency = std::chrono::microseconds(static_cast<std::int64_t>(o.delay_us));
  d.jitter = std::chrono::microseconds(static_cast<std::int64_t>(o.jitter_us));
  d.seed = o.seed + 1000 * cl.rank + 17;  // each process draws its own delays
  using T = strata::delayed<strata::tcp>;
  return f(std::type_identity<T>{}, T::config{cl.tcp_config, d}, cl.size, cl.rank);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app("load_node: one process of a strata load or soak run (get / inc / clock with a known final table)");
  app.add_option("--rows", o.rows, "rows in the table")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--width", o.width, "floats per row")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--workers", o.wpn, "workers per process")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--clocks", o.clocks, "clocks per worker")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--incs", o.incs, "increments per worker per clock")->capture_default_str();
  app.add_option("--inc-rows", o.inc_rows, "distinct rows a clock's increments go to")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--gets", o.gets, "reads per worker per clock")->capture_default_str();
  app.add_option("--read-set", o.read_set, "rows each worker reads from")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--seed", o.seed, "plan seed")->capture_default_str();
  app.add_option("--model", o.model, "bsp | ssp2 | essp2 | async | vap (a model name, then its staleness)")->capture_default_str();
  app.add_option("--transport", o.transport, "tcp (under scripts/launch.sh) | inproc")->check(CLI::IsMember({"tcp", "inproc"}))->capture_default_str();
  app.add_option("--nodes", o.nodes, "inproc: in-process shards")->check(strata::examples::positive);
  app.add_option("--delay", o.delay_us, "injected latency per message, microseconds (tcp inside strata::delayed)");
  app.add_option("--jitter", o.jitter_us, "injected jitter per message, microseconds (uniform in [0, jitter])");
  app.add_option("--op-sleep-us", o.op_sleep_us, "random sleep in [0, N] microseconds before every read and clock");
  app.add_option("--clock-ms", o.clock_ms, "pace: a clock takes at least this long (a soak of a set duration)");
  app.add_option("--sample-ms", o.sample_ms, "resident-memory sampling period")->check(strata::examples::positive)->capture_default_str();
  app.add_option("--drop-every", o.drop_every, "skip every N-th increment (a test that the lost-update check fails)");
  app.add_option("--out", o.out, "folder for rank<r>_from<c>.json / .rss.csv and rank<r>.pid");
  app.add_option("--label", o.label, "name in the summary line and the JSON")->capture_default_str();
  strata::add_checkpoint_options(app, o.checkpoint);
  strata::add_cluster_options(app, o.cluster);
  CLI11_PARSE(app, argc, argv);
  try {
    o.parsed = strata::model_name::parse(o.model);
    if (o.inc_rows > o.rows) throw std::invalid_argument("--inc-rows " + std::to_string(o.inc_rows) + " is more than --rows");
    return dispatch(o, [&](auto type, auto tc, std::uint32_t nodes, strata::node_id rank) {
      return run<typename decltype(type)::type>(o, nodes, std::move(tc), rank);
    });
  } catch (const std::exception& e) {
    std::cerr << "ERROR: " << e.what() << std::endl;
    return 1;
  }
}
