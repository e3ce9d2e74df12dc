#pragma once
/// \file The messages workers and server shards exchange, with cereal serialization for the wire.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <strata/core/ids.hpp>

namespace strata {

namespace wire {

/// Bumped whenever a message layout changes; peers with another version are refused.
inline constexpr std::uint32_t protocol_version = 6;  // 2: app, gather, gathered, run_start; 3: rows carry writer clocks, checkpoint_done; 4: a row request names several rows; 5: writer clocks say which writers have finished; 6: with a secret the signature travels in the auth frame and every later frame carries a GMAC tag

namespace detail {
/// A bool on the wire as one byte, 0 or 1; any other value is a malformed frame (reading it
/// straight into a bool would be undefined behaviour).
template <class Ar>
void flag(Ar& ar, bool& b) {
  std::uint8_t v = b ? 1 : 0;
  ar(v);
  if constexpr (Ar::is_loading::value) {
    if (v > 1) throw std::runtime_error("flag byte " + std::to_string(v) + " is neither 0 nor 1");
    b = v == 1;
  }
}
}  // namespace detail

/// Per-writer clocks on the wire, compactly: each as its difference from a base clock (`rows::reflects`),
/// zigzag-encoded plus one in LEB128 varints (one byte per writer while the difference is within
/// ±63), after a u16 byte count; the varint 0 is `finished_clock` (a finished writer, one byte). An
/// empty vector (every writer at the base) is the two bytes of the count.
namespace detail {
template <class Ar>
void save_clocks(Ar& ar, const std::vector<clock_type>& v, clock_type base) {
  std::vector<std::uint8_t> buf;
  if (!std::all_of(v.begin(), v.end(), [&](clock_type c) { return c == base; })) {
    buf.reserve(v.size() + 2);
    for (clock_type c : v) {
      const auto d = static_cast<std::uint64_t>(c) - static_cast<std::uint64_t>(base);
      std::uint64_t z = (d << 1) ^ (0 - (d >> 63));  // zigzag of the signed difference
      if (c == finished_clock) z = 0;
      else if (++z == 0) throw std::runtime_error("writer clock " + std::to_string(c) + " too far from " + std::to_string(base));
      do {
        std::uint8_t b = z & 0x7f;
        z >>= 7;
        buf.push_back(z ? (b | 0x80) : b);
      } while (z);
    }
  }
  if (buf.size() > 0xffff) throw std::runtime_error("too many writer clocks for one message");
  ar(static_cast<std::uint16_t>(buf.size()));
  ar(cereal::binary_data(buf.data(), buf.size()));
}
template <class Ar>
void load_clocks(Ar& ar, std::vector<clock_type>& v, clock_type base) {
  std::uint16_t n = 0;
  ar(n);
  std::vector<std::uint8_t> buf(n);
  ar(cereal::binary_data(buf.data(), n));
  v.clear();
  std::size_t i = 0;
  while (i < buf.size()) {
    std::uint64_t z = 0;
    for (int shift = 0;; shift += 7) {
      if (i >= buf.size() || shift > 63) throw std::runtime_error("malformed writer clock varint");
      const std::uint8_t b = buf[i++];
      z |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (z == 0) {
      v.push_back(finished_clock);
      continue;
    }
    --z;
    const std::uint64_t d = (z >> 1) ^ (0 - (z & 1));
    v.push_back(static_cast<clock_type>(static_cast<std::uint64_t>(base) + d));
  }
}
}  // namespace detail

/// Raw bytes that cereal writes as one contiguous block.
struct blob {
  std::vector<std::byte> bytes;
  template <class Ar>
  void save(Ar& ar) const {
    ar(static_cast<std::uint64_t>(bytes.size()));
    ar(cereal::binary_data(bytes.data(), bytes.size()));
  }
  template <class Ar>
  void load(Ar& ar) {
    std::uint64_t n = 0;
    ar(n);
    bytes.resize(n);  // bounded by the frame size limit checked before parsing
    ar(cereal::binary_data(bytes.data(), n));
  }
};

/// Worker -> shard: the worker's aggregated increments for rows on that shard, and its clock.
/// One per destination shard per flush. Payload: `count` times (table u32, row u64, encoded row).
struct flush {
  worker_id from = 0;
  std::uint64_t seq = 0;          ///< per (worker, shard), starts at 1
  clock_type tag = 0;             ///< clock the increments were made at
  clock_type new_clock = 0;       ///< the worker's clock after this flush
  bool done = false;              ///< the worker has finished: it will send no more
  std::uint32_t count = 0;
  blob payload;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(from, seq, tag, new_clock);
    detail::flag(ar, done);
    ar(count, payload);
  }
};

/// The most rows one `row_request` may name (a larger batch travels as several requests).
inline constexpr std::uint32_t max_request_rows = 1u << 16;

/// Worker -> shard: send me these rows of `table` once they reflect every update through `need`.
/// One row for a `get`, several for a batched `prefetch`; the shard answers the rows it can serve
/// together in as few `rows` messages as it can. On the wire: from, table, need, subscribe, then a
/// u32 row count (1 to `max_request_rows`) and the row ids.
struct row_request {
  worker_id from = 0;
  table_id table = 0;
  std::vector<row_id> rows;
  clock_type need = 0;
  bool subscribe = false;         ///< register for pushes (ESSP, VAP, async)
  template <class Ar>
  void save(Ar& ar) const {
    ar(from, table, need);
    std::uint8_t s = subscribe ? 1 : 0;
    ar(s, static_cast<std::uint32_t>(rows.size()));
    ar(cereal::binary_data(rows.data(), rows.size() * sizeof(row_id)));
  }
  template <class Ar>
  void load(Ar& ar) {
    ar(from, table, need);
    detail::flag(ar, subscribe);
    std::uint32_t n = 0;
    ar(n);
    if (n == 0 || n > max_request_rows)
      throw std::runtime_error("row request names " + std::to_string(n) + " rows (1 to " + std::to_string(max_request_rows) + " allowed)");
    rows.resize(n);
    ar(cereal::binary_data(rows.data(), std::size_t{n} * sizeof(row_id)));
  }
};

/// Shard -> worker: rows (a reply or a push) and the acknowledgement of the worker's flushes.
/// Every row in it reflects all updates through `reflects` and holds the worker's flushes up to
/// `acked_seq` and none after. Payload: `count` times (table u32, row u64, encoded row).
/// `writers[q]`: the newest clock tag of worker q's flushes the shard had applied when it encoded
/// these rows (so every row here holds q's updates through that clock), or `finished_clock` once q
/// has finished and every row here holds all its updates; empty when every writer is at `reflects`
/// (always so under exact snapshots while every worker runs). On the wire as differences from
/// `reflects`.
struct rows {
  node_id shard = 0;
  clock_type reflects = no_clock;
  std::uint64_t acked_seq = 0;
  bool push = false;              ///< sent at a clock advance: `reflects` holds for all subscribed rows
  std::uint32_t count = 0;
  std::vector<clock_type> writers;
  blob payload;
  template <class Ar>
  void save(Ar& ar) const {
    ar(shard, reflects, acked_seq);
    std::uint8_t p = push ? 1 : 0;
    ar(p, count);
    detail::save_clocks(ar, writers, reflects);
    ar(payload);
  }
  template <class Ar>
  void load(Ar& ar) {
    ar(shard, reflects, acked_seq);
    detail::flag(ar, push);
    ar(count);
    detail::load_clocks(ar, writers, reflects);
    ar(payload);
  }
};

/// Between workers and the coordinator: one user-defined message, cereal-encoded. `type` names the
/// C++ type (runtime/messaging.hpp), so a receiver can keep messages of several types apart.
struct app {
  std::uint64_t type = 0;
  blob payload;
  template <class Ar>
  void serialize(Ar& ar) { ar(type, payload); }
};

/// Worker -> shard 0: this worker's contribution to collective number `round` (a barrier carries
/// nothing; an all-gather the cereal-encoded value).
struct gather {
  worker_id from = 0;
  std::uint64_t round = 0;
  blob payload;
  template <class Ar>
  void serialize(Ar& ar) { ar(from, round, payload); }
};

/// Shard 0 -> every worker: every worker's contribution to collective `round`, in worker-id order.
struct gathered {
  std::uint64_t round = 0;
  std::vector<blob> parts;
  template <class Ar>
  void serialize(Ar& ar) { ar(round, parts); }
};

/// Between shards, for runs after the first of a system: node `node` is reset and ready for run
/// number `run` (to shard 0); every node is (from shard 0 to every shard).
struct run_start {
  node_id node = 0;
  std::uint64_t run = 0;
  template <class Ar>
  void serialize(Ar& ar) { ar(node, run); }
};

/// Shard -> shard 0: this node's shard has written its checkpoint at `clock` (shard 0 records the
/// checkpoint as complete in the manifest once every shard has).
struct checkpoint_done {
  node_id node = 0;
  clock_type clock = 0;
  template <class Ar>
  void serialize(Ar& ar) { ar(node, clock); }
};

/// Any message of the protocol.
using message = std::variant<flush, row_request, rows, app, gather, gathered, run_start, checkpoint_done>;

}  // namespace wire
}  // namespace strata
