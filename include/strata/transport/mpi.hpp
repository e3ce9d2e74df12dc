#pragma once
/// \file mpi: the transport between processes over MPI point-to-point messages (Open MPI, MPICH),
/// for clusters whose fast network only MPI drives (InfiniBand, shared memory between the ranks of
/// a node). The same programs run with it unchanged: `mpirun -n N program --transport mpi`. Rank
/// and world size are MPI's (mpi_world.hpp). Needs <mpi.h>: CMake target strata::mpi, Meson
/// feature mpi; both are optional, and the rest of strata builds without MPI.
///
/// Shape. Every MPI call of a run is made by one progress thread per process (MPI_THREAD_SERIALIZED),
/// not by the workers (MPI_THREAD_MULTIPLE): a worker's `send` encodes the frame on its own thread
/// (wire/frame.hpp, the frames of the tcp transport) and appends it to an outbox, never entering
/// MPI, so no worker waits on MPI's internal locks and the library needs no thread support beyond
/// SERIALIZED (Open MPI's multi-threaded mode slows every call, and some builds lack it). The
/// progress thread takes the outbox and posts MPI_Isends on a communicator of its own (MPI_Comm_dup
/// of MPI_COMM_WORLD, one tag): a frame of 16 KiB or more alone, smaller frames to one peer gathered
/// into one message of up to 256 KiB (per message MPI costs more than a copy of a small frame:
/// 1 KiB rows went 2.4x faster so). It completes sends with MPI_Testsome, and keeps their buffers
/// (up to 64 MiB) for the next frames to be encoded into, as a fresh megabyte costs 256 page faults.
/// It receives with MPI_Improbe + MPI_Mrecv (any source, any size), splits the message into its
/// frames by their headers, decodes and delivers on its own thread, as tcp's comm thread does.
/// MPI keeps messages between two ranks on one communicator and tag in order, so FIFO per pair of
/// endpoints holds. Messages between endpoints of this process never enter MPI. MPI has no
/// blocking wait that a sender could interrupt, so the thread polls: it spins (yielding) for
/// `spin` after its last piece of work, then sleeps in growing steps up to `max_sleep` (its timer
/// slack set to 1 us); a send wakes it at once.
///
/// Handshake. start() sends every peer a hello (protocol version, rank, world size, run signature,
/// host) and returns when every peer's has arrived and matches; a mismatch names the field, rank
/// and host (fatal_fn); none within connect_timeout is reported the same way.
///
/// Dead and hung peers. MPI's error handler on the transport's communicator is MPI_ERRORS_RETURN,
/// so a failed call is reported (rank, host, MPI's text) instead of aborting inside MPI. A peer
/// that exits or is killed is normally reported by the launcher itself (Open MPI's mpirun names
/// the rank, PID and node, then ends every rank); a peer that is alive but silent (hung, stopped,
/// cut off) is caught here: every peer gets a heartbeat after peer_timeout / 4 without traffic, and
/// a peer silent for peer_timeout is reported as lost, by rank and host.
///
/// Shutdown barrier: as tcp, stop() sends a bye after everything queued and keeps delivering until
/// every peer's bye has arrived (bounded by peer_timeout), so no process leaves while a peer still
/// waits for its answers. `abort(reason)` tells every peer at once that this run failed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cereal/types/string.hpp>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/transport/delayed.hpp>
#include <strata/transport/mpi_world.hpp>
#include <strata/transport/transport.hpp>
#include <strata/wire/frame.hpp>
#include <strata/wire/handshake.hpp>
#include <strata/wire/messages.hpp>

namespace strata {

/// What an mpi transport is constructed from (spelled `mpi::config`). Rank and size are MPI's.
struct mpi_settings {
  /// frames (header + payload) over this many bytes are refused, sending and receiving
  std::size_t max_frame = wire::default_max_frame;
  /// how long start() waits for every peer's hello
  std::chrono::milliseconds connect_timeout{30000};
  /// a peer silent this long is lost; also bounds each wait of the shutdown barrier
  std::chrono::milliseconds peer_timeout{10000};
  /// the progress thread polls (yielding) this long after its last piece of work before it sleeps.
  /// 100 us keeps a BSP round or a get as fast as 1 ms did on a quiet machine (25 us per get);
  /// on cores shared with busy processes a yield can cost a scheduler tick, so a slow one stops the
  /// spinning for a while (see progress(); 1 ms per get there, tcp's 70 us:
  /// benchmarks/results/mpi/REPORT.md): MPI runs want cores of their own, as on a cluster.
  std::chrono::microseconds spin{100};
  /// its longest sleep between polls (a message from a peer waits at most this long when idle; the
  /// sleeps grow from 10 us, so a long idle costs about 4,000 wake-ups a second)
  std::chrono::microseconds max_sleep{250};
  /// where diagnostics go, one line each; empty: stderr
  std::function<void(const std::string&)> log;
};

namespace detail {
/// The first frame to every peer (frame_kind::hello).
struct mpi_hello {
  std::uint32_t version = wire::protocol_version;
  node_id rank = 0;
  std::uint32_t world = 0;
  std::uint64_t signature_hash = 0;
  std::string signature;
  std::string host;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(version, rank, world, signature_hash, signature, host);
  }
};
}  // namespace detail

/// The MPI transport. One object per process at a time; its rank is MPI_COMM_WORLD's.
class mpi {
 public:
  using config = mpi_settings;
  using clock = std::chrono::steady_clock;

  mpi() : mpi(config{}) {}
  explicit mpi(config c) : cfg_(std::move(c)), world_(mpi_world()) {}
  mpi(const mpi&) = delete;
  mpi& operator=(const mpi&) = delete;
  ~mpi() { stop(); }

  node_id rank() const noexcept { return world_.rank; }
  std::uint32_t size() const noexcept { return world_.size; }

  void bind(endpoint e, deliver_fn d) {
    if (e.node != world_.rank)
      throw error(errc::bad_input, "mpi rank " + std::to_string(world_.rank) + ": cannot bind endpoint of node " + std::to_string(e.node));
    routes_[e.slot] = std::move(d);
  }
  void on_fatal(fatal_fn f) { fatal_ = std::move(f); }

  /// Checks the run's shape against the MPI world, starts the progress thread and returns once
  /// every peer's hello has arrived and matched, or after a fatal error (reported through
  /// fatal_fn). Throws strata::error when the shape does not fit the world or another mpi transport
  /// of this process is running.
  void start(const run_shape& shape) {
    if (started_) throw error(errc::bad_input, "mpi: start() called twice");
    if (shape.nodes != world_.size)
      throw error(errc::config_mismatch, "mpi rank " + std::to_string(world_.rank) + ": the run has " + std::to_string(shape.nodes) +
                                             " nodes but the MPI world has " + std::to_string(world_.size) +
                                             " processes (start it with mpirun -n " + std::to_string(shape.nodes) + ")");
    auto& st = detail::mpi_state();
    if (st.active.fetch_add(1) != 0) {
      st.active.fetch_sub(1);
      throw error(errc::bad_input, "mpi: another mpi transport of this process is running (one at a time: they share MPI)");
    }
    st.dirty = true;
    started_ = true;
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    if (rc != MPI_SUCCESS) {
      st.active.fetch_sub(1);
      started_ = false;
      throw error(errc::bad_input, "mpi: MPI_Comm_dup failed: " + detail::mpi_error_text(rc));
    }
    const auto n = world_.size;
    hosts_.assign(n, std::string());
    hosts_[world_.rank] = world_.host;
    last_rx_.assign(n, clock::now());
    last_tx_.assign(n, clock::now());
    hello_rx_.assign(n, false);
    bye_rx_.assign(n, false);
    detail::mpi_hello h{wire::protocol_version, world_.rank, n, wire::signature_hash(shape.signature), shape.signature, world_.host};
    signature_ = shape.signature;
    for (node_id p = 0; p < n; ++p)
      if (p != world_.rank) push(p, wire::encode_frame(wire::frame_kind::hello, endpoint{world_.rank, 0}, 0, h));
    thread_ = std::thread([this] { progress(); });
    std::unique_lock lk(mu_);
    const auto deadline = clock::now() + cfg_.connect_timeout;
    while (!failed_ && hellos_ + 1 < n) {
      if (cv_.wait_until(lk, deadline) == std::cv_status::timeout && !failed_ && hellos_ + 1 < n) {
        const std::string missing = missing_locked(hello_rx_);
        lk.unlock();
        fail(make_error_code(errc::timeout), "no hello within " + std::to_string(cfg_.connect_timeout.count()) +
                                                 " ms (connect_timeout) from " + missing);
        return;
      }
    }
  }

  /// Sends `m` from local endpoint `src` to `dst`; never waits for the network. Throws
  /// strata::error(frame_too_large) when its frame would exceed max_frame (the peers are told).
  void send(endpoint src, endpoint dst, wire::message&& m) {
    if (dst.node == world_.rank) {
      auto it = routes_.find(dst.slot);
      if (it == routes_.end()) throw error(errc::bad_input, "mpi: no endpoint bound for slot " + std::to_string(dst.slot));
      bytes_local_.fetch_add(detail::payload_size(m), std::memory_order_relaxed);
      it->second(src, std::move(m));
      return;
    }
    if (!started_ || dst.node >= world_.size)
      throw error(errc::bad_input, "mpi: no peer for node " + std::to_string(dst.node) + " (not started?)");
    std::vector<std::byte> f;
    {
      std::lock_guard lk(out_mu_);
      if (!spare_.empty()) {
        f = std::move(spare_.back());
        spare_.pop_back();
        spare_bytes_ -= f.capacity();
      }
    }
    f.clear();
    std::error_code ec;
    wire::encode_frame(f, wire::frame_kind::message, src, dst.slot, m, cfg_.max_frame, ec);
    if (ec) {
      const std::string what = "message to " + who(dst.node) + " over max_frame (" + std::to_string(cfg_.max_frame) + " bytes)";
      fail(ec, what);
      throw error(ec, "mpi rank " + std::to_string(world_.rank) + ": " + what);
    }
    push(dst.node, std::move(f));
  }

  /// Marks this process's run as failed: every peer gets an abort frame with `reason` and stops.
  void abort(const std::string& reason) {
    if (!started_) return;
    fail(make_error_code(errc::peer_lost), "its run failed: " + reason);
  }

  /// Sends a bye after everything queued, delivers until every peer's bye has arrived (each wait
  /// bounded by peer_timeout), then ends the progress thread. Idempotent.
  void stop() {
    if (!started_ || stopped_) return;
    stopped_ = true;
    bye_sent_.store(true, std::memory_order_release);
    for (node_id p = 0; p < world_.size; ++p)
      if (p != world_.rank) push(p, wire::encode_frame(wire::frame_kind::bye, endpoint{world_.rank, 0}, 0, wire::empty_body{}));
    bool clean = false;
    {
      std::unique_lock lk(mu_);
      clean = cv_.wait_for(lk, cfg_.peer_timeout, [&] { return failed_ || (byes_ + 1 >= world_.size && drained_); });
      clean = clean && !failed_;
      if (!clean && !failed_) {
        const std::string missing = missing_locked(bye_rx_);
        log_line("shutdown: no bye within " + std::to_string(cfg_.peer_timeout.count()) + " ms (peer_timeout) from " +
                 (missing.empty() ? std::string("nobody (sends still in flight)") : missing));
      }
      quit_ = true;
    }
    wake();
    if (thread_.joinable()) thread_.join();
    auto& st = detail::mpi_state();
    if (clean && st.active.load() == 1) st.dirty = false;
    st.active.fetch_sub(1);
  }

  bool is_local(node_id n) const noexcept { return n == world_.rank; }
  /// Frame bytes handed to MPI (headers, hellos, heartbeats and byes included).
  std::uint64_t bytes_sent() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  /// Payload bytes of messages between endpoints of this process (no MPI involved).
  std::uint64_t bytes_local() const noexcept { return bytes_local_.load(std::memory_order_relaxed); }
  const config& settings() const noexcept { return cfg_; }
  /// "rank r (host)" once its hello has arrived, else "rank r".
  std::string who(node_id r) const {
    std::lock_guard lk(mu_);
    return who_locked(r);
  }

 private:
  struct outgoing {
    node_id dst;
    std::vector<std::byte> bytes;
  };
  static constexpr int frame_tag = 0x5354;  // "ST"

  std::string who_locked(node_id r) const {
    if (r < hosts_.size() && !hosts_[r].empty()) return "rank " + std::to_string(r) + " (" + hosts_[r] + ")";
    return "rank " + std::to_string(r);
  }
  /// The peers whose flag in `got` is not set, as "rank 1 (host), rank 2 (host)" (under mu_).
  std::string missing_locked(const std::vector<bool>& got) const {
    std::string out;
    for (node_id p = 0; p < world_.size; ++p)
      if (p != world_.rank && !got[p]) out += (out.empty() ? "" : ", ") + who_locked(p);
    return out;
  }

  /// A sent frame's buffer back to the spare pool (for send() to encode into), up to spare_limit
  /// bytes: a fresh buffer costs a page fault per 4 KiB when first written (a 1 MiB frame: 256
  /// faults, milliseconds in a VM).
  void recycle(std::vector<std::byte>&& b) {
    std::lock_guard lk(out_mu_);
    if (spare_.size() < 64 && spare_bytes_ + b.capacity() <= spare_limit) {
      spare_bytes_ += b.capacity();
      spare_.push_back(std::move(b));
    } else {
      std::vector<std::byte>().swap(b);
    }
  }

  void push(node_id dst, std::vector<std::byte> f) {
    {
      std::lock_guard lk(out_mu_);
      outbox_.push_back(outgoing{dst, std::move(f)});
    }
    wake();
  }
  void wake() {
    if (sleeping_.load(std::memory_order_acquire)) {
      std::lock_guard lk(out_mu_);
      out_cv_.notify_one();
    }
  }
  void log_line(const std::string& s) const {
    const std::string line = "strata mpi[rank " + std::to_string(world_.rank) + "]: " + s;
    if (cfg_.log) cfg_.log(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
  }

  /// Reports a fatal error once: log, tell the peers (an abort frame each), call fatal_fn.
  void fail(std::error_code ec, const std::string& what) {
    {
      std::lock_guard lk(mu_);
      if (failed_) return;
      failed_ = true;
      cv_.notify_all();
    }
    log_line("fatal: " + what + " [" + ec.message() + "]");
    const auto ab = wire::encode_frame(wire::frame_kind::abort, endpoint{world_.rank, 0}, 0,
                                       wire::abort_notice::of(ec, what));
    for (node_id p = 0; p < world_.size; ++p)
      if (p != world_.rank) push(p, ab);
    if (fatal_) fatal_(ec, "mpi rank " + std::to_string(world_.rank) + ": " + what);
  }

  /// The progress thread: every MPI call of the run.
  void progress() {
#if defined(__linux__)
    // Its naps are tens of microseconds: without this, Linux's default timer slack (50 us) would
    // stretch each of them by that much.
    (void)::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
    std::vector<outgoing> batch;
    std::vector<std::vector<std::byte>> gathered(world_.size);  // small frames per peer, sent as one message
    std::vector<MPI_Request> reqs;
    std::vector<std::vector<std::byte>> inflight;
    std::vector<int> done_idx;
    std::vector<std::byte> rx;
    auto idle_since = clock::now();
    auto sleep = std::chrono::microseconds(10);
    bool idle = false, spinning = false;      // in an idle period; spinning in it (not backing off)
    unsigned backoff = 0, skip = 0, fast = 0;  // contended spins: see step 5
    auto next_check = clock::now();
    clock::time_point quit_deadline{};
    const auto hb_every = std::max(cfg_.peer_timeout / 4, std::chrono::milliseconds(1));
    bool fatal_seen = false;
    auto mpi_failed = [&](int rc, const std::string& what) {
      fail(make_error_code(errc::peer_lost), what + ": " + detail::mpi_error_text(rc));
      fatal_seen = true;
    };
    for (;;) {
      bool did = false;
      bool quitting = false;
      {
        std::lock_guard lk(out_mu_);
        batch.swap(outbox_);
      }
      {
        std::lock_guard lk(mu_);
        quitting = quit_;
        fatal_seen = fatal_seen || failed_;
      }
      // 1. post the sends (after a fatal error too: its abort frames must reach the peers). Small frames
      // to one peer travel together, in one MPI message of up to coalesce_bytes (in order: a large
      // frame first sends what is gathered for its peer); the receiver splits them by their headers.
      const auto now0 = clock::now();
      auto post = [&](node_id dst, std::vector<std::byte>&& bytes) {
        MPI_Request r;
        const int rc = MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, static_cast<int>(dst), frame_tag, comm_, &r);
        if (rc != MPI_SUCCESS) {
          if (!fatal_seen) mpi_failed(rc, "MPI_Isend to " + who(dst));
          return;
        }
        bytes_.fetch_add(bytes.size(), std::memory_order_relaxed);
        last_tx_[dst] = now0;
        reqs.push_back(r);
        inflight.push_back(std::move(bytes));
      };
      for (auto& o : batch) {
        did = true;
        auto& g = gathered[o.dst];
        if (!g.empty() && (o.bytes.size() >= coalesce_frame || g.size() + o.bytes.size() > coalesce_bytes)) post(o.dst, std::move(g));
        if (o.bytes.size() >= coalesce_frame) {
          post(o.dst, std::move(o.bytes));
        } else if (g.empty()) {
          g = std::move(o.bytes);
        } else {
          g.insert(g.end(), o.bytes.begin(), o.bytes.end());
          recycle(std::move(o.bytes));
        }
      }
      for (node_id p = 0; p < world_.size; ++p)
        if (!gathered[p].empty()) post(p, std::move(gathered[p]));
      batch.clear();
      // 2. complete sends; their buffers go back to the spare pool
      if (!reqs.empty()) {
        int outcount = 0;
        done_idx.resize(reqs.size());
        const int rc = MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &outcount, done_idx.data(), MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && !fatal_seen) mpi_failed(rc, "MPI_Testsome");
        if (outcount > 0 && outcount != MPI_UNDEFINED) {
          did = true;
          for (int k = 0; k < outcount; ++k) recycle(std::move(inflight[static_cast<std::size_t>(done_idx[static_cast<std::size_t>(k)])]));
          std::size_t w = 0;
          for (std::size_t i = 0; i < reqs.size(); ++i)
            if (reqs[i] != MPI_REQUEST_NULL) {
              if (w != i) {  // a vector moved onto itself ends up empty, freeing the buffer MPI still reads
                reqs[w] = reqs[i];
                inflight[w] = std::move(inflight[i]);
              }
              ++w;
            }
          reqs.resize(w);
          inflight.resize(w);
        }
      }
      // 3. receive what has arrived
      for (int k = 0; k < 64; ++k) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status status;
        int rc = MPI_Improbe(MPI_ANY_SOURCE, frame_tag, comm_, &flag, &msg, &status);
        if (rc != MPI_SUCCESS) {
          if (!fatal_seen) mpi_failed(rc, "MPI_Improbe");
          break;
        }
        if (!flag) break;
        did = true;
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        if (rx.size() < static_cast<std::size_t>(count)) rx.resize(static_cast<std::size_t>(count));  // grows only: no fill per message
        rc = MPI_Mrecv(rx.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        const auto from = static_cast<node_id>(status.MPI_SOURCE);
        if (rc != MPI_SUCCESS) {
          if (!fatal_seen) mpi_failed(rc, "MPI_Mrecv from " + who(from));
          break;
        }
        last_rx_[from] = clock::now();
        if (!fatal_seen) handle_message(from, std::span<const std::byte>(rx.data(), static_cast<std::size_t>(count)));
      }
      // 4. heartbeats and liveness, a few times a heartbeat interval
      const auto now = clock::now();
      if (now >= next_check) {
        next_check = now + hb_every / 4;
        bool started_all, fin;
        {
          std::lock_guard lk(mu_);
          started_all = hellos_ + 1 >= world_.size;
          fin = failed_;
        }
        for (node_id p = 0; p < world_.size && !fin && !quitting; ++p) {
          if (p == world_.rank) continue;
          if (now - last_tx_[p] >= hb_every && !bye_sent_.load(std::memory_order_acquire))  // nothing follows a bye
            push(p, wire::encode_frame(wire::frame_kind::heartbeat, endpoint{world_.rank, 0}, 0, wire::empty_body{}));
          if (started_all && !bye_rx_[p] && now - last_rx_[p] >= cfg_.peer_timeout) {
            fail(make_error_code(errc::peer_lost),
                 "lost " + who(p) + ": nothing received for " + std::to_string(cfg_.peer_timeout.count()) + " ms (peer_timeout)");
            break;
          }
        }
      }
      {
        std::lock_guard lk(mu_);
        const bool d = reqs.empty();
        if (d != drained_) {
          drained_ = d;
          cv_.notify_all();
        }
      }
      if (quitting) {  // the byes and what is queued go out; wait for them (bounded) unless the run failed
        if (quit_deadline == clock::time_point{}) quit_deadline = clock::now() + cfg_.peer_timeout;
        std::lock_guard lk(out_mu_);
        if (outbox_.empty() && (reqs.empty() || fatal_seen || clock::now() > quit_deadline)) break;
      }
      // 5. idle: spin, then sleep in growing steps; a send wakes the thread. A yield that comes
      // back after more than 1 ms means the core is shared with busy threads of other programs:
      // there each yield can cost a scheduler tick (4 ms) where a sleeping thread's wake-up
      // preempts at once (runtime/detail/thread_loop.hpp measured the same for the workers). So
      // after one the thread sleeps at once for its next `backoff` idle periods (256, doubling up
      // to 65536 at each further contended spin, halved after as many uncontended ones in a row).
      // Not 200 us, the workers' threshold: this run's own 1 MiB copies on 2 cores make yields
      // that long, and backing off then halved the 1 MiB throughput.
      if (did) {
        if (idle && spinning && backoff > 0 && ++fast >= backoff) {
          backoff /= 2;
          fast = 0;
        }
        idle = false;
        idle_since = clock::now();
        sleep = std::chrono::microseconds(10);
        continue;
      }
      if (!idle) {  // a new idle period
        idle = true;
        spinning = skip == 0;
        if (skip > 0) --skip;
      }
      if (spinning && clock::now() - idle_since < cfg_.spin) {
        const auto before = clock::now();
        std::this_thread::yield();
        if (clock::now() - before > std::chrono::microseconds(1000)) {
          backoff = std::clamp(backoff * 2, 256u, 65536u);
          skip = backoff;
          fast = 0;
          spinning = false;
        }
        continue;
      }
      std::unique_lock lk(out_mu_);
      sleeping_.store(true, std::memory_order_release);
      if (outbox_.empty()) out_cv_.wait_for(lk, sleep);
      sleeping_.store(false, std::memory_order_release);
      sleep = std::min(sleep * 2, std::chrono::duration_cast<std::chrono::microseconds>(cfg_.max_sleep));
    }
    // Sends that a peer never took (it failed or left) are abandoned; completed ones freed.
    // A clean end: every peer's bye (its last frame) is in and every send completed, so nothing is
    // left on the communicator and it can go. After a failure frames may still be in flight to or
    // from it: it is kept (a freed one's context could be reused by the next run's and match them).
    for (auto& r : reqs)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    bool all_byes = false;
    {
      std::lock_guard lk(mu_);
      all_byes = byes_ + 1 >= world_.size;
    }
    if (reqs.empty() && all_byes && !fatal_seen) MPI_Comm_free(&comm_);
  }

  /// One MPI message from rank `from`: one frame or several gathered ones, each handled in order.
  void handle_message(node_id from, std::span<const std::byte> buf) {
    std::size_t at = 0;
    while (at < buf.size()) {
      std::error_code bad;
      std::string why;
      const std::span<const std::byte> rest(buf.data() + at, buf.size() - at);
      const auto h = wire::decode_header(rest, cfg_.max_frame, bad, &why);
      const std::size_t len = wire::frame_header_size + static_cast<std::size_t>(h.length);
      if (!bad && len > rest.size()) {
        bad = make_error_code(errc::bad_frame);
        why = "frame of " + std::to_string(len) + " bytes in the " + std::to_string(rest.size()) + " left of an MPI message";
      }
      if (bad) {
        fail(bad, who(from) + " sent a frame that was refused (" + why + "); the run cannot finish without it");
        return;
      }
      if (!handle(from, rest.first(len))) return;
      at += len;
    }
  }

  /// One frame from rank `from`: a message for a local endpoint, a hello, heartbeat, bye or abort.
  /// False when it was refused (the run has failed).
  bool handle(node_id from, std::span<const std::byte> frame) {
    std::error_code bad;
    std::string why;
    const auto v = wire::split_frame(frame, cfg_.max_frame, bad, &why);
    if (!bad && v.header.src.node != from) {
      bad = make_error_code(errc::bad_frame);
      why = "frame claims source node " + std::to_string(v.header.src.node);
    }
    if (!bad) switch (v.header.kind) {
        case wire::frame_kind::message: {
          auto m = wire::decode_body<wire::message>(v.payload, bad, &why);
          if (bad) break;
          auto it = routes_.find(v.header.dst_slot);
          if (it == routes_.end()) {
            bad = make_error_code(errc::bad_frame);
            why = "no endpoint in slot " + std::to_string(v.header.dst_slot) + " here";
            break;
          }
          it->second(v.header.src, std::move(m));
          break;
        }
        case wire::frame_kind::hello: {
          auto h = wire::decode_body<detail::mpi_hello>(v.payload, bad, &why);
          if (bad) break;
          hello_from(from, h);
          break;
        }
        case wire::frame_kind::heartbeat: break;
        case wire::frame_kind::bye: {
          std::lock_guard lk(mu_);
          if (!bye_rx_[from]) {
            bye_rx_[from] = true;
            ++byes_;
            cv_.notify_all();
          }
          break;
        }
        case wire::frame_kind::abort: {
          auto a = wire::decode_body<wire::abort_notice>(v.payload, bad, &why);
          if (bad) break;
          fail(a.error(), who(from) + " stopped the run: " + a.reason);
          break;
        }
        default:
          bad = make_error_code(errc::bad_frame);
          why = "unexpected frame kind " + std::to_string(static_cast<int>(v.header.kind));
      }
    if (bad) fail(bad, who(from) + " sent a frame that was refused (" + why + "); the run cannot finish without it");
    return !bad;
  }

  void hello_from(node_id from, const detail::mpi_hello& h) {
    std::string problem;
    if (h.version != wire::protocol_version)
      problem = "protocol version differs: here " + std::to_string(wire::protocol_version) + ", peer " + std::to_string(h.version);
    else if (h.rank != from || h.world != world_.size)
      problem = "the peer says it is rank " + std::to_string(h.rank) + " of " + std::to_string(h.world) + ", MPI says rank " +
                std::to_string(from) + " of " + std::to_string(world_.size);
    else if (h.signature_hash != wire::signature_hash(signature_))
      problem = "another run: " + wire::signature_diff(signature_, h.signature);
    {
      std::lock_guard lk(mu_);
      hosts_[from] = h.host;
      if (problem.empty() && !hello_rx_[from]) {
        hello_rx_[from] = true;
        ++hellos_;
        last_rx_[from] = clock::now();
        cv_.notify_all();
      }
    }
    if (!problem.empty())
      fail(make_error_code(h.version != wire::protocol_version ? errc::protocol_mismatch : errc::config_mismatch),
           "handshake with " + who(from) + ": " + problem);
  }

  config cfg_;
  const mpi_world_info& world_;
  std::unordered_map<std::uint32_t, deliver_fn> routes_;
  fatal_fn fatal_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::string signature_;
  std::thread thread_;
  bool started_ = false, stopped_ = false;

  // the progress thread's view of the peers (its own, except hosts_ under mu_)
  std::vector<clock::time_point> last_rx_, last_tx_;

  mutable std::mutex mu_;  // run state: hellos, byes, failure, quit
  std::condition_variable cv_;
  std::vector<std::string> hosts_;
  std::vector<bool> hello_rx_, bye_rx_;
  std::uint32_t hellos_ = 0, byes_ = 0;
  bool failed_ = false, quit_ = false, drained_ = true;

  std::mutex out_mu_;  // outbox and spare buffers
  std::condition_variable out_cv_;
  std::vector<outgoing> outbox_;
  std::vector<std::vector<std::byte>> spare_;
  std::size_t spare_bytes_ = 0;
  static constexpr std::size_t spare_limit = std::size_t{64} << 20;
  static constexpr std::size_t coalesce_frame = std::size_t{16} << 10;  // frames under this travel gathered
  static constexpr std::size_t coalesce_bytes = std::size_t{256} << 10;  // up to this many bytes per message
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> bye_sent_{false};

  std::atomic<std::uint64_t> bytes_{0}, bytes_local_{0};
};

static_assert(transport<mpi>);

}  // namespace strata
