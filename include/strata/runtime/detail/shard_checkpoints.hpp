#pragma once
/// \file server_shard's checkpoints (runtime/server.hpp, runtime/checkpoint.hpp): writing its tables at
/// checkpoint clocks, shard 0's count of the shards that wrote each one, restoring from one.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/error.hpp>
#include <strata/runtime/checkpoint.hpp>
#include <strata/runtime/server.hpp>
#include <strata/wire/messages.hpp>

namespace strata {

inline void server_shard::handle(endpoint, wire::checkpoint_done& d) {
  if (me_ != 0 || ckpt_every_ == 0) throw error(errc::bad_frame, "checkpoint notice sent to a shard that does not record checkpoints");
  if (d.node >= wm_.nodes) throw error(errc::bad_frame, "checkpoint notice from unknown node " + std::to_string(d.node));
  checkpoint_written(d.clock);
}

inline void server_shard::enable_checkpoints(std::filesystem::path dir, clock_type every, ckpt::digest sig, std::uint32_t keep) {
  if (every <= 0) throw error(errc::bad_input, "checkpoint interval must be >= 1 clock");
  ckpt_dir_ = std::move(dir);
  ckpt_every_ = every;
  ckpt_keep_ = keep;
  ckpt_sig_ = sig;
  if (!mp_.exact && shadow_.empty())
    for (auto& t : tables_) shadow_.push_back(t->make_empty());
}

inline void server_shard::restore(clock_type m, std::span<const std::byte> body, const std::string& what) {
  ckpt::decode_tables(body, tables_, what);
  if (!shadow_.empty()) ckpt::decode_tables(body, shadow_, what);
  std::fill(clock_.begin(), clock_.end(), m);
  std::fill(newest_.begin(), newest_.end(), m - 1);  // the rows hold every worker's updates through m - 1
  min_ = m;
  ckpt_last_ = m;
}

inline void server_shard::write_checkpoints(std::vector<changed_row>& changed) {
  auto& tabs = shadow_.empty() ? tables_ : shadow_;
  std::vector<row_id> rows;
  for (clock_type m = (ckpt_last_ / ckpt_every_ + 1) * ckpt_every_; m <= min_; m += ckpt_every_) {
    for (table_id t = 0; t < tabs.size(); ++t) {
      rows.clear();
      tabs[t]->fold(m, rows);
      if (shadow_.empty())
        for (auto r : rows) changed.push_back({t, r, many_writers});
    }
    const auto body = ckpt::encode_tables(tabs);
    ckpt::write_atomic(ckpt::shard_file(ckpt_dir_, m, me_), ckpt::seal(ckpt::kind::shard, me_, m, ckpt_sig_, body));
    ckpt_last_ = m;
    if (me_ == 0) checkpoint_written(m);
    else send_(wm_.shard(0), wire::checkpoint_done{me_, m});
  }
  if (!shadow_.empty()) {  // keep the held updates few: fold what every worker has passed
    for (auto& t : shadow_) {
      rows.clear();
      t->fold(min_, rows);
    }
  }
}

inline void server_shard::checkpoint_written(clock_type m) {
  if (++ckpt_count_[m] < wm_.nodes) return;
  ckpt_count_.erase(m);
  ckpt::add_to_manifest(ckpt_dir_, m, ckpt_keep_);
}

}  // namespace strata
