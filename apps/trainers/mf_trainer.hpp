#pragma once
/// \file Data-parallel SGD matrix factorisation on the parameter server.
///
/// Model: r̂_ui = μ + b_u + b_i + u·v (μ the training mean). User rows [u, b_u] live in table W,
/// item rows [v, b_i] in table H, both dense_row<float>; `block` users (items) share one PS row
/// of width block·(rank+1), so an iteration reads a few hundred rows rather than ten thousand.
/// The PS holds each parameter minus its initial value, which every worker derives from a hash
/// of (seed, table, index), so no initialisation clock is needed and stale reads never see an
/// uninitialised factor.
///
/// Training ratings are partitioned across workers by user block (block mod P). One iteration
/// (= one clock) of worker p: read its W blocks and every H block its ratings touch (the
/// requests are issued together), run one SGD epoch over its ratings in a fresh random order on
/// local copies, then `inc_row` the differences and `clock()`. Per-step regularisation is λ/n_u
/// and λ/n_i with the global training counts, so one epoch over all workers is a gradient pass
/// on the SEEDS loss Σ(r − r̂)² + λ(Σ‖[u,b_u]‖² + Σ‖[v,b_i]‖²).
///
/// Per iteration each worker reports its partial training loss (residuals summed during the
/// pass, plus λ‖·‖² of the rows it owns) and its partial test squared error (its users' test
/// ratings against its local copies); the test RMSE of iteration i is exact for BSP and a
/// stale-view estimate otherwise. The final RMSE (`mf_run::final_rmse`) is exact: after the last
/// iteration every worker waits until every update is in (run_reducer::settle), re-reads the rows
/// its test ratings need, and the partial squared errors are summed through a small PS table, so
/// it is the same whether the workers share one process or live in several (tcp). The
/// per-iteration statistics are merged over all workers the same way (run_reducer).
///
/// Rotation mode (`rotation`, DSGD as in Gemulla et al. and STRADS' block rotation for MF): the
/// item blocks are also split into P groups (greedily, so that every (worker, group) cell carries
/// about the same ratings), and an epoch is P clocks (sub-epochs); in sub-epoch s worker p runs
/// SGD over exactly its ratings whose item is in group (p + s) mod P. No two workers touch the
/// same item row in a clock, so under BSP every read sees the row's last writer's update (the run
/// is a serial SGD order: exact DSGD), and each clock moves 1/P of the item table per worker
/// instead of every item row the worker's users rated. Under SSP/ESSP a read may be up to s clocks
/// stale, as the model allows.
///
/// User rows have one writer in both modes (users are partitioned by block), so a worker reads its
/// W blocks once per run and then keeps them: after each push it adds the pushed difference to
/// its mirror of the server's value, which is exactly what a re-read would return under BSP (the
/// server adds the same float difference once per clock), so resumed and uninterrupted runs
/// still end with identical tables.
///
/// A run can start from a saved model (`mf_trainer_options::start`, ml/mf_model.hpp) instead of
/// the hashed initialisation, and can hand its final model back (`run_options::keep_model`):
/// worker 0 reads every row once the updates are in.
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <strata/consistency/models.hpp>
#include <strata/core/huge_pages.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/mf.hpp>
#include <strata/ml/mf_model.hpp>
#include <strata/ml/partition.hpp>
#include <trainers/run_stats.hpp>
#include <strata/runtime/system.hpp>
#include <strata/table/dense_row.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <numeric>
#include <random>
#include <ranges>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace strata::ml {

/// Settings of the distributed MF trainer (besides iterations, seed, prefetch, keep_model: run_options).
struct mf_trainer_options : run_options {
  mf_trainer_options() { iterations = 80; }
  std::uint32_t rank = 16;         ///< factor width (plus one bias column per row)
  double lr = 0.01;                ///< η0 of the schedule η_t = η0 / (1 + decay·t)
  double decay = 0.05;             ///< learning-rate decay per iteration
  double lambda = 5;               ///< λ of the loss (per-step λ/n_u, λ/n_i)
  std::uint32_t clocks_per_epoch = 4;  ///< each clock runs SGD over this fraction of the worker's ratings
                                       ///< (data-parallel mode; rotation: P clocks per epoch)
  bool rotation = false;           ///< DSGD-style block rotation (see the file comment) instead of data-parallel SGD
  float init_scale = 0.1f;         ///< initial factors uniform in [−init_scale, init_scale] (biases 0)
  std::uint32_t block = 64;        ///< users / items per PS row. A row read, merged and sent costs a few µs
                                   ///< whatever its width, and a clock's slice touches a fixed share of the
                                   ///< item blocks, so wider rows send the same bytes in fewer rows: on
                                   ///< MovieLens (rank 16) 64 reached RMSE 0.90 15-25% sooner than 16 at 1, 2
                                   ///< and 4 workers and sooner than 32 or 128 (benchmarks/results/perf/REPORT.md)
  std::uint32_t work_repeat = 1;   ///< compute each iteration's SGD pass this many times (slows workers
                                   ///< down to emulate compute-dominated iterations; updates applied once)
  const mf_biased_model* start = nullptr;  ///< start from this model (its rank and mean; rows it lacks get the
                                           ///< hashed init) instead of the hashed init; not owned
};

/// The outcome of a run (iterations, seconds, stats, bytes_sent: run_outcome).
struct mf_run : run_outcome {
  double final_rmse = 0;          ///< exact test RMSE of the final tables
  std::uint64_t sgd_updates = 0;  ///< SGD steps done (all workers)
  /// (iteration, item block) pairs that more than one worker trained (counted among the workers of
  /// this process, exactly under BSP): 0 in rotation mode, many in data-parallel mode.
  std::uint64_t block_conflicts = 0;
  /// Seconds this process spent setting up its workers' state before the clock started (each
  /// worker's ratings grouped by item block, its local model copies and their initial values);
  /// like the data partition, not in `iterations`' elapsed times nor in `seconds`.
  double setup_seconds = 0;
  mf_biased_model model;          ///< the final model, with keep_model, in the process of worker 0 (else empty)
};

namespace detail {
inline std::uint64_t mf_mix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
/// `ids` (sorted original ids, empty: the identity) as a list of n ids, identity past its end.
inline std::vector<std::uint64_t> ids_or_identity_n(const std::vector<std::uint64_t>& ids, std::uint32_t n) {
  if (ids.empty() || ids.size() >= n) return ids;  // empty stays the identity
  std::vector<std::uint64_t> out = ids;
  for (std::uint64_t k = ids.size(); k < n; ++k) out.push_back(std::max(out.back() + 1, k));
  return out;
}
/// Initial value of column c of entity e in table t (0 for the bias column).
inline float mf_init(std::uint64_t seed, std::uint32_t table, std::uint64_t e, std::uint32_t c, std::uint32_t rank,
                     float scale) noexcept {
  if (c == rank) return 0.0f;
  const std::uint64_t h = mf_mix(seed ^ mf_mix((std::uint64_t{table} << 62) ^ (e * (rank + 1) + c)));
  return scale * (2.0f * static_cast<float>(static_cast<double>(h >> 11) * 0x1.0p-53) - 1.0f);
}
// The trainer's per-block loops over n floats, as plain functions. Written inline in the worker's
// coroutine, a loop's counter lives in the coroutine frame: GCC stores it to memory every step and
// does not vectorise the loop (it was 9% of a 2-worker MF run for the block reads alone).
/// A block read: local = old = init + server.
inline void mf_load_block(float* local, float* old, const float* init, const float* server, std::size_t n) noexcept {
  for (std::size_t k = 0; k < n; ++k) {
    const float x = init[k] + server[k];
    local[k] = x;
    old[k] = x;
  }
}
/// A block's change since it was read: delta = local − old; true when any value is non-zero.
/// "Non-zero" is tested on the bits without the sign (±0 are zero, NaN is not: as x != 0), an
/// integer OR the compiler vectorises; a float comparison per value it did not (a 272-value block:
/// 310 ns against 80 ns, -O3 -march=native on the development VM).
inline bool mf_block_delta(float* delta, const float* local, const float* old, std::size_t n) noexcept {
  std::uint32_t any = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const float x = local[k] - old[k];
    delta[k] = x;
    any |= std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
  }
  return any != 0;
}
/// A mirrored block after its change was sent: server += local − old, then local = old = init + server.
inline void mf_fold_mirror(float* server, float* local, float* old, const float* init, std::size_t n) noexcept {
  for (std::size_t k = 0; k < n; ++k) server[k] += local[k] - old[k];
  mf_load_block(local, old, init, server, n);
}
}  // namespace detail

/// What decides the segments of a segmented run (train_mf_segments): called before each
/// segment with the records so far (continuous iteration numbers and elapsed times) and the
/// iterations done; returns how many iterations the next segment runs (at least 1; it may change
/// the system's staleness bound first: basic_system::set_staleness). The run ends after o.iterations.
using segment_planner = std::function<std::uint32_t(const std::vector<iteration_stats>&, std::uint32_t)>;

/// Trains MF as a sequence of runs of `sys` (segments) that keep the tables and every worker's
/// state (its ratings' order, its random generator, the learning-rate schedule), so that the
/// segments together are one run of o.iterations iterations with the same updates; the records
/// are numbered and timed from the start of the first segment (the time between segments, and
/// re-planning, counts). `plan` chooses the segments; without it one segment runs everything
/// (that is train_mf). `on_iteration` (optional) is called once per completed iteration, from a
/// worker thread, with the continuous numbering.
inline mf_run train_mf_segments(system_base& sys, const io::rating_set& train, const io::rating_set& test, const mf_trainer_options& o,
                         const segment_planner& plan, std::function<void(const iteration_stats&)> on_iteration = {}) {
  const std::uint32_t P = sys.config().nodes * sys.config().workers_per_node;
  const std::uint32_t R = o.rank, W1 = R + 1, B = std::max<std::uint32_t>(1, o.block);
  if (o.start && o.start->rank != R)
    throw strata::error(errc::bad_input, "train_mf: the start model has rank " + std::to_string(o.start->rank) +
                                             ", the options say " + std::to_string(R));
  if (train.empty()) throw strata::error(errc::bad_input, "train_mf: no training ratings");
  if (!test.empty() && (train.user_ids != test.user_ids || train.item_ids != test.item_ids))
    throw strata::error(errc::bad_input,
                        "train_mf: the training and test ratings use different id spaces (put them in one with io::share_ids)");
  // Dense data (no remapping) sizes the tables by the largest index; remapped data by its id space.
  const bool ids = train.remapped();
  const std::uint32_t nu = std::max({train.num_users, test.num_users, o.start && !ids ? o.start->num_users : 0u});
  const std::uint32_t ni = std::max({train.num_items, test.num_items, o.start && !ids ? o.start->num_items : 0u});
  // The start model's row for each of the run's users and items (matched by original id; none: the model's size).
  std::vector<std::uint32_t> start_user, start_item;
  if (o.start) {
    start_user.resize(nu);
    start_item.resize(ni);
    for (std::uint32_t u = 0; u < nu; ++u) start_user[u] = o.start->user_row(u < train.num_users ? train.user_id(u) : u);
    for (std::uint32_t i = 0; i < ni; ++i) start_item[i] = o.start->item_row(i < train.num_items ? train.item_id(i) : i);
  }
  const std::uint32_t ub = (nu + B - 1) / B, ib = (ni + B - 1) / B;
  const auto Wt = sys.template add_table<dense_row<float>>(std::size_t{B} * W1);
  const auto Ht = sys.template add_table<dense_row<float>>(std::size_t{B} * W1);
  const float mu = o.start ? o.start->mean : static_cast<float>(train.mean());
  // Initial value of column c of user (table 0) or item (table 1) e: the start model's, else hashed.
  const auto init_of = [&o, R, &start_user, &start_item](std::uint32_t table, std::uint64_t e, std::uint32_t c) -> float {
    if (o.start) {
      // Block padding past the last user or item (e beyond the lists) has no start row.
      const auto& rows = table == 0 ? start_user : start_item;
      const std::uint32_t x = e < rows.size() ? rows[e] : ~0u;
      if (x < (table == 0 ? o.start->num_users : o.start->num_items)) return (table == 0 ? o.start->user(x) : o.start->item(x))[c];
    }
    return detail::mf_init(o.seed, table, e, c, R, o.init_scale);
  };

  std::vector<std::uint32_t> n_user(nu, 0), n_item(ni, 0);
  for (const auto& r : train.ratings) ++n_user[r.user], ++n_item[r.item];
  // Each user's and item's regularisation weight in an SGD step: lambda over its rating count.
  std::vector<float> reg_user(nu), reg_item(ni);
  for (std::uint32_t u = 0; u < nu; ++u) reg_user[u] = n_user[u] ? static_cast<float>(o.lambda) / static_cast<float>(n_user[u]) : 0.0f;
  for (std::uint32_t i = 0; i < ni; ++i) reg_item[i] = n_item[i] ? static_cast<float>(o.lambda) / static_cast<float>(n_item[i]) : 0.0f;

  // Partition by user block, balanced by ratings (balanced_partition).
  std::vector<std::uint64_t> per_block(ub, 0);
  for (const auto& r : train.ratings) ++per_block[r.user / B];
  const std::vector<std::uint32_t> owner = balanced_partition(per_block, P);
  std::vector<std::vector<io::rating>> part(P), test_part(P);
  for (const auto& r : train.ratings) part[owner[r.user / B]].push_back(r);
  for (const auto& r : test.ratings) test_part[owner[r.user / B]].push_back(r);
  // Rotation: the group of each item block, so that every (worker, group) cell has about the same
  // ratings (blocks by decreasing ratings, each to the group whose heaviest cell grows least).
  std::vector<std::uint32_t> igroup(ib, 0);
  if (o.rotation && P > 1) {
    std::vector<std::uint64_t> cell(std::size_t{ib} * P, 0), total(ib, 0), load(std::size_t{P} * P, 0);
    for (const auto& r : train.ratings) ++cell[std::size_t{r.item / B} * P + owner[r.user / B]], ++total[r.item / B];
    std::vector<std::uint32_t> by_weight(ib);
    std::iota(by_weight.begin(), by_weight.end(), 0u);
    std::stable_sort(by_weight.begin(), by_weight.end(), [&](auto a, auto b) { return total[a] > total[b]; });
    for (std::uint32_t b : by_weight) {
      std::uint32_t best = 0;
      std::uint64_t best_max = ~std::uint64_t{0}, best_sum = ~std::uint64_t{0};
      for (std::uint32_t g = 0; g < P; ++g) {
        std::uint64_t mx = 0, sum = 0;
        for (std::uint32_t q = 0; q < P; ++q) {
          mx = std::max(mx, load[std::size_t{q} * P + g] + cell[std::size_t{b} * P + q]);
          sum += load[std::size_t{q} * P + g];
        }
        if (mx < best_max || (mx == best_max && sum < best_sum)) best = g, best_max = mx, best_sum = sum;
      }
      igroup[b] = best;
      for (std::uint32_t q = 0; q < P; ++q) load[std::size_t{q} * P + best] += cell[std::size_t{b} * P + q];
    }
  }
  const std::uint32_t K = o.rotation ? P : std::max<std::uint32_t>(1, o.clocks_per_epoch);  // clocks per epoch
  // Who trained each item block last: (iteration << 32) | (worker + 1), for block_conflicts.
  std::vector<std::atomic<std::uint64_t>> holder(ib);
  std::atomic<std::uint64_t> conflicts{0};
  const auto claim = [&holder, &conflicts](std::uint32_t b, std::uint32_t it, worker_id p) {
    const std::uint64_t mine = (std::uint64_t{it} << 32) | (std::uint64_t{p} + 1);
    std::uint64_t cur = holder[b].load(std::memory_order_relaxed);
    while ((cur >> 32) < it && !holder[b].compare_exchange_weak(cur, mine, std::memory_order_relaxed)) {
    }
    if ((cur >> 32) == it && cur != mine) conflicts.fetch_add(1, std::memory_order_relaxed);
  };

  const auto rmse = [](double sq, double n) { return n > 0 ? std::sqrt(sq / n) : 0.0; };
  mf_biased_model model;  // with keep_model: filled by worker 0 at the end

  // Worker 0, once every update is in: reads every row into `model`.
  auto gather_model = [&](worker& w) -> task<> {
    model = mf_biased_model::zeros(R, nu, ni, mu);
    if (ids) {  // the data's original ids (none: dense data, row = id)
      model.user_ids = detail::ids_or_identity_n(train.user_ids, nu);
      model.item_ids = detail::ids_or_identity_n(train.item_ids, ni);
    }
    for (std::uint32_t t = 0; t < 2; ++t) {
      const auto table = t == 0 ? Wt : Ht;
      const std::uint32_t blocks = t == 0 ? ub : ib, n = t == 0 ? nu : ni;
      std::vector<float>& rows = t == 0 ? model.users : model.items;
      if (o.prefetch)
        prefetch(w, table, std::views::iota(0u, blocks));
      for (std::uint32_t b = 0; b < blocks; ++b) {
        const auto& row = co_await w.get(table, b);
        const auto s = row.span();
        for (std::uint32_t j = 0; j < B && b * B + j < n; ++j)
          for (std::uint32_t c = 0; c < W1; ++c) {
            const std::uint64_t e = std::uint64_t{b} * B + j;
            rows[e * W1 + c] = init_of(t, e, c) + s[j * W1 + c];
          }
      }
    }
  };

  // A worker's state, kept from one segment to the next.
  const std::size_t bw = std::size_t{B} * W1;
  struct worker_state {
    std::vector<std::uint32_t> ublocks, iblocks;  // blocks this worker reads
    // The local copies by block (only the blocks read are filled), all in one block of memory (see
    // core/huge_pages.hpp): on MovieLens-small the seven arrays fit one 2 MiB page, where one
    // allocation each took seven. A fresh huge page costs from 0.1 to about 5 ms on the development
    // VM (REPORT.md); the state is made before the clock starts (train_mf_segments), so that cost
    // is set-up time (mf_run::setup_seconds), not the first clock's.
    std::vector<float, huge_page_allocator<float>> slab;
    std::span<float> Wl, Wo, Hl, Ho, Winit, Hinit;
    std::span<float> Ws;  // the server's value of this worker's W blocks (its mirror)
    std::vector<std::size_t> slice_end;               // end of each clock's slice of `order` (K entries)
    std::vector<char> loaded, train_block;
    std::vector<io::rating, huge_page_allocator<io::rating>> data;  // its ratings, grouped by item block
    std::vector<std::pair<std::size_t, std::size_t>> groups;  // [begin, end) of each item block in data
    std::vector<std::uint32_t> order;                          // this epoch's visiting order (indices into data)
    std::vector<std::pair<std::size_t, std::uint32_t>> runs;   // where each item block's run starts in `order`
    std::vector<std::uint32_t> want;                           // item blocks of the current clock's slice
    std::mt19937_64 rng;
    std::uint64_t updates = 0;
    bool started = false;  // its worker has run (a checkpoint to resume from is loaded at the first start)
    /// What a checkpoint keeps (worker::on_checkpoint): the generator, the ratings' order, the
    /// blocks' order and the epoch's visiting order; the rest is rebuilt or read from the tables.
    std::string save() const {
      std::ostringstream out(std::ios::binary);
      {
        cereal::PortableBinaryOutputArchive ar(out);
        std::ostringstream r;
        r << rng;
        ar(r.str(), updates, groups, order);
        ar(static_cast<std::uint64_t>(data.size()));
        for (const auto& x : data) ar(x.user, x.item, x.value);
      }
      return out.str();
    }
    void restore(const std::string& bytes, worker_id p) {
      try {
        std::istringstream in(bytes, std::ios::binary);
        cereal::PortableBinaryInputArchive ar(in);
        std::string r;
        std::uint64_t n = 0;
        ar(r, updates, groups, order, n);
        if (n != data.size())
          throw strata::error(errc::bad_input, "it holds " + std::to_string(n) + " ratings, this worker has " + std::to_string(data.size()));
        for (auto& x : data) ar(x.user, x.item, x.value);
        std::istringstream rs(r);
        rs >> rng;
        if (!rs) throw strata::error(errc::bad_input, "its random generator state does not parse");
      } catch (const std::exception& e) {
        throw strata::error(errc::bad_input, "train_mf: worker " + std::to_string(p) + "'s checkpointed state does not load: " + e.what());
      }
    }
  };
  std::vector<std::unique_ptr<worker_state>> states(P);
  auto make_state = [&](worker_id p) {
    auto st = std::make_unique<worker_state>();
    const auto& mine = part[p];
    const auto& my_test = test_part[p];
    // Blocks this worker reads: its user blocks, and the item blocks of its train and test ratings.
    {
      std::vector<char> uu(ub, 0), ii(ib, 0);
      for (const auto* set : {&mine, &my_test})
        for (const auto& r : *set) uu[r.user / B] = 1, ii[r.item / B] = 1;
      for (std::uint32_t b = 0; b < ub; ++b)
        if (uu[b]) st->ublocks.push_back(b);
      for (std::uint32_t b = 0; b < ib; ++b)
        if (ii[b]) st->iblocks.push_back(b);
    }
    {
      const std::size_t wn = std::size_t{ub} * bw, hn = std::size_t{ib} * bw;
      const auto w_arrays = {&st->Wl, &st->Wo, &st->Winit, &st->Ws};
      const auto h_arrays = {&st->Hl, &st->Ho, &st->Hinit};
      st->slab.assign(w_arrays.size() * wn + h_arrays.size() * hn, 0.0f);
      float* at = st->slab.data();
      for (auto* a : w_arrays) *a = {at, wn}, at += wn;
      for (auto* a : h_arrays) *a = {at, hn}, at += hn;
    }
    for (std::uint32_t b : st->ublocks)
      for (std::uint32_t j = 0; j < B; ++j)
        for (std::uint32_t c = 0; c < W1; ++c)
          st->Winit[b * bw + j * W1 + c] = init_of(0, std::uint64_t{b} * B + j, c);
    for (std::uint32_t b : st->iblocks)
      for (std::uint32_t j = 0; j < B; ++j)
        for (std::uint32_t c = 0; c < W1; ++c)
          st->Hinit[b * bw + j * W1 + c] = init_of(1, std::uint64_t{b} * B + j, c);
    st->loaded.assign(ib, 0);
    st->train_block.assign(ib, 0);
    // Its ratings grouped by item block, each block's in their original order (a counting sort).
    std::vector<std::size_t> at(std::size_t{ib} + 1, 0);
    for (const auto& r : mine) ++at[r.item / B + 1];
    for (std::uint32_t b = 0; b < ib; ++b) {
      if (at[b + 1] > 0) st->groups.emplace_back(at[b], at[b] + at[b + 1]), st->train_block[b] = 1;
      at[b + 1] += at[b];
    }
    st->data.resize(mine.size());
    for (const auto& r : mine) st->data[at[r.item / B]++] = r;
    st->order.assign(st->data.size(), 0);  // its pages touched now, in the set-up
    st->order.clear();
    if (o.rotation) {  // sub-epoch s: the ratings of group (p + s) mod P
      std::vector<std::size_t> in_group(P, 0);
      for (const auto& r : st->data) ++in_group[igroup[r.item / B]];
      std::size_t n = 0;
      for (std::uint32_t s = 0; s < K; ++s) st->slice_end.push_back(n += in_group[(p + s) % P]);
    } else {
      for (std::uint32_t s = 0; s < K; ++s) st->slice_end.push_back(st->data.size() * (s + 1) / K);
    }
    st->rng.seed(detail::mf_mix(o.seed * 7919 + p));
    return st;
  };

  // The segment being run: its first iteration (continuous numbering), its length, whether it is
  // the last, and its recorder and reducer (recorder slot j is iteration seg_first − 1 + j; slot
  // 0 is the initial state in the first segment and unused after it).
  std::uint32_t seg_first = 1, seg_count = 0;
  bool seg_last = true;
  run_recorder* recp = nullptr;
  run_reducer* redp = nullptr;

  auto program = [&](worker& w) -> task<> {
    run_recorder& rec = *recp;
    run_reducer& red = *redp;
    rec.start_once();
    const worker_id p = w.id();
    worker_state& st = *states[p];  // made before the run (below)
    if (!std::exchange(st.started, true))
      if (const auto* saved = w.resumed_state()) st.restore(*saved, p);
    w.on_checkpoint([&st] { return st.save(); });
    const auto& my_test = test_part[p];
    auto &ublocks = st.ublocks, &iblocks = st.iblocks;
    auto &Wl = st.Wl, &Wo = st.Wo, &Ws = st.Ws, &Hl = st.Hl, &Ho = st.Ho, &Winit = st.Winit, &Hinit = st.Hinit;
    auto &loaded = st.loaded, &train_block = st.train_block;
    auto& data = st.data;
    auto& groups = st.groups;
    auto& order = st.order;
    auto& rng = st.rng;
    auto& my_updates = st.updates;
    // Block b holds users (items) b*B .. b*B+B-1 one after another, so user u's row starts at u*W1.
    auto urow = [&](std::uint32_t u) { return Wl.data() + std::size_t{u} * W1; };
    auto irow = [&](std::uint32_t i) { return Hl.data() + std::size_t{i} * W1; };
    auto predict = [&](const io::rating& r) {
      const float* u = urow(r.user);
      const float* v = irow(r.item);
      return mu + u[R] + v[R] + mf_dot(u, v, R);
    };
    auto test_sq = [&] {
      double s = 0;
      for (const auto& r : my_test) {
        const double e = r.value - predict(r);
        s += e * e;
      }
      return s;
    };
    // The training objective of the model in Wl / Hl: squared error over this worker's ratings plus
    // lambda times the squared norms of its user blocks and the item blocks it owns (b % P == p).
    auto train_objective = [&] {
      double sq = 0, reg = 0;
      for (const auto& r : data) {
        const double e = r.value - predict(r);
        sq += e * e;
      }
      for (std::uint32_t b : ublocks) reg += mf_sq_norm(std::span<const float>(Wl.data() + b * bw, bw));
      for (std::uint32_t b : iblocks)
        if (b % P == p) reg += mf_sq_norm(std::span<const float>(Hl.data() + b * bw, bw));
      return sq + o.lambda * reg;
    };
    // Reads: this worker's W blocks once per run (it is their only writer); at the start of an
    // iteration, one batched request for the H blocks of its test-only items and of the clock's
    // slice that are not fresh enough; each H block is taken from the cache just before the pass
    // first needs it (after a yield, so rows pushed meanwhile are taken in): the pass visits
    // ratings grouped by item block.
    bool w_read = false;
    auto read_w = [&]() -> task<> {
      if (w_read) co_return;
      if (o.prefetch)
        prefetch(w, Wt, ublocks);
      for (std::uint32_t b : ublocks) {
        const auto& row = co_await w.get(Wt, b);
        const auto s = row.span();
        std::copy_n(s.data(), bw, Ws.data() + b * bw);
        detail::mf_load_block(Wl.data() + b * bw, Wo.data() + b * bw, Winit.data() + b * bw, s.data(), bw);
      }
      w_read = true;
    };
    auto fill_h = [&](std::uint32_t b, const dense_row<float>& row) {
      detail::mf_load_block(Hl.data() + b * bw, Ho.data() + b * bw, Hinit.data() + b * bw, row.span().data(), bw);
      loaded[b] = 1;
    };
    auto load_h = [&](std::uint32_t b) -> task<> { fill_h(b, co_await w.get(Ht, b)); };
    // The item blocks of a clock's slice [lo, hi) of `order`: one request for those not fresh
    // enough (under BSP all, after every barrier; under SSP the stale ones; under ESSP none: pushes
    // keep them fresh) instead of one request and reply per block as the pass reaches it.
    // The run that holds position lo of `order` (runs start in increasing order).
    auto run_at = [&](std::size_t lo) {
      auto at = std::upper_bound(st.runs.begin(), st.runs.end(), std::pair<std::size_t, std::uint32_t>{lo, ~0u});
      return at == st.runs.begin() ? at : std::prev(at);
    };
    auto slice_blocks = [&](std::size_t lo, std::size_t hi, std::vector<std::uint32_t>& out) {
      for (auto at = run_at(lo); at != st.runs.end() && at->first < hi; ++at) out.push_back(at->second);
    };
    auto read_start = [&](std::size_t lo, std::size_t hi) -> task<> {
      std::fill(loaded.begin(), loaded.end(), 0);
      if (o.prefetch) {  // the test-only blocks and the slice's, as one batch
        auto& want = st.want;
        want.clear();
        for (std::uint32_t b : iblocks)
          if (!train_block[b]) want.push_back(b);
        slice_blocks(lo, hi, want);
        prefetch(w, Ht, want);
      }
      co_await read_w();
      for (std::uint32_t b : iblocks)
        if (!train_block[b]) co_await load_h(b);
    };
    // The model for evaluation (a snapshot, or the final RMSE): this worker's W blocks (kept) and
    // every H block of its items, as the server holds them now.
    auto read_model = [&]() -> task<> {
      if (o.prefetch)
        prefetch(w, Ht, iblocks);
      co_await read_w();
      for (std::uint32_t b : iblocks) co_await load_h(b);
    };

    // Iteration 0: the initial model (no reads needed: it is the hashed or the start model).
    if (seg_first == 1) {
      std::copy(Winit.begin(), Winit.end(), Wl.begin());
      std::copy(Hinit.begin(), Hinit.end(), Hl.begin());
      const auto t0 = std::chrono::steady_clock::now();
      rec.add_values(p, 0, o.eval_every ? train_objective() : 0.0, test_sq(), static_cast<double>(my_test.size()));
      rec.charge_eval(p, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      rec.end_iteration(w, 0);
    }

    volatile float sink = 0;
    for (std::uint32_t j = 1; j <= seg_count; ++j) {
      const std::uint32_t it = seg_first - 1 + j;  // the iteration, numbered over the whole run
      const std::uint32_t epoch = (it - 1) / K, slice = (it - 1) % K;
      if (slice == 0) {  // new epoch: random block order, random order inside each block (rotation: by sub-epoch)
        std::shuffle(groups.begin(), groups.end(), rng);
        order.clear();
        st.runs.clear();
        for (std::uint32_t s = 0; s < (o.rotation ? K : 1); ++s)
          for (auto [g0, g1] : groups) {
            if (o.rotation && igroup[data[g0].item / B] != (p + s) % P) continue;
            std::shuffle(data.begin() + static_cast<std::ptrdiff_t>(g0), data.begin() + static_cast<std::ptrdiff_t>(g1), rng);
            st.runs.emplace_back(order.size(), data[g0].item / B);
            const std::size_t at = order.size();  // (a push_back loop here kept its counter in the coroutine frame)
            order.resize(at + (g1 - g0));
            std::iota(order.begin() + static_cast<std::ptrdiff_t>(at), order.end(), static_cast<std::uint32_t>(g0));
          }
      }
      if (st.runs.empty())  // a run resumed mid-epoch: its order came from the checkpoint
        for (std::size_t x = 0; x < order.size(); ++x) {
          const std::uint32_t b = data[order[x]].item / B;
          if (st.runs.empty() || st.runs.back().second != b) st.runs.emplace_back(x, b);
        }
      const std::size_t lo = slice == 0 ? 0 : st.slice_end[slice - 1], hi = st.slice_end[slice];
      co_await read_start(lo, hi);
      const float eta = static_cast<float>(o.lr / (1 + o.decay * epoch));
      // The SGD steps over order[x, end), all of one item block, loaded: a plain function, kept out
      // of line, so that the hot loop's variables live in registers, not the coroutine frame.
      auto steps = [&](std::size_t x, std::size_t end, double& sq_out) __attribute__((noinline)) {
        double acc = 0;
        for (; x < end; ++x) {
          const io::rating& r = data[order[x]];
          float* u = urow(r.user);
          float* v = irow(r.item);
          for (std::uint32_t rep = 1; rep < o.work_repeat; ++rep) sink = sink + mf_dot(u, v, R) * 1e-30f;
          const float lu = reg_user[r.user], li = reg_item[r.item];
          const float e = mf_sgd_step(u, v, R, r.value, eta, lu, li, mu + u[R] + v[R]);
          u[R] += eta * (e - lu * u[R]);
          v[R] += eta * (e - li * v[R]);
          acc += static_cast<double>(e) * e;
        }
        sq_out += acc;
      };
      // The slice run by run (one item block each): a block is loaded before its first run.
      double sq = 0;
      for (auto run = run_at(lo); run != st.runs.end() && run->first < hi; ++run) {
        const std::uint32_t b = run->second;
        if (!loaded[b]) {
          claim(b, it, p);
          co_await w.yield();
          fill_h(b, co_await w.get(Ht, b));  // not load_h: a coroutine frame per block is an allocation
        }
        const std::size_t end = std::next(run) == st.runs.end() ? order.size() : std::next(run)->first;
        steps(std::max(run->first, lo), std::min(end, hi), sq);
      }
      my_updates += hi - lo;
      // Evaluation (excluded from the timing): this worker's view now, or (eval_every) the true
      // model after the clock, or nothing this iteration.
      const bool snapshot = o.snapshot_due(it, seg_first - 1 + seg_count);
      if (o.eval_every > 0) {
        if (!snapshot) rec.add_values(p, j, std::nan(""), std::nan(""), static_cast<double>(my_test.size()));
      } else {
        const auto t0 = std::chrono::steady_clock::now();
        double reg = 0;
        for (std::uint32_t b : ublocks)
          reg += mf_sq_norm(std::span<const float>(Wl.data() + b * bw, bw));
        for (std::uint32_t b : iblocks)
          if (b % P == p && loaded[b]) reg += mf_sq_norm(std::span<const float>(Hl.data() + b * bw, bw));
        rec.add_values(p, j, sq + o.lambda * reg, test_sq(), static_cast<double>(my_test.size()));
        rec.charge_eval(p, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      // Push the differences.
      auto push = [&](auto table, std::span<const float> now, std::span<const float> old,
                      const std::vector<std::uint32_t>& blocks) -> task<> {
        for (std::uint32_t b : blocks) {
          dense_row<float> d = w.delta_row(table);  // a recycled row: no allocation per block and clock
          if (detail::mf_block_delta(d.mutable_span().data(), now.data() + b * bw, old.data() + b * bw, bw))
            co_await w.inc_row(table, b, std::move(d));
        }
      };
      co_await push(Wt, Wl, Wo, ublocks);
      for (std::uint32_t b : ublocks)  // the server now holds Ws + (Wl − Wo): keep its value, as a re-read would
        detail::mf_fold_mirror(Ws.data() + b * bw, Wl.data() + b * bw, Wo.data() + b * bw, Winit.data() + b * bw, bw);
      std::vector<std::uint32_t> read_blocks;
      for (std::uint32_t b : iblocks)
        if (loaded[b]) read_blocks.push_back(b);
      co_await push(Ht, Hl, Ho, read_blocks);
      rec.end_iteration(w, j);
      co_await w.clock();
      if (snapshot) {  // the true model: every worker's increments through this iteration, nothing later
        const auto t0 = std::chrono::steady_clock::now();
        auto mark = co_await snapshot_begin(w);
        co_await read_model();
        rec.add_values(p, j, train_objective(), test_sq(), static_cast<double>(my_test.size()));
        co_await snapshot_end(w, mark);
        rec.charge_eval(p, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }

    if (!seg_last) {  // the next segment goes on from here: only the trace is gathered
      co_await red.publish(w, rec, std::span<const double>());
      if (red.collects(w)) co_await red.collect(w, rmse, "rmse");
      co_return;
    }
    // Final RMSE: once every update is in, re-read the rows of this worker's test ratings.
    co_await red.settle(w);
    co_await read_model();
    const double fin[3] = {test_sq(), static_cast<double>(my_test.size()), static_cast<double>(my_updates)};
    if (o.keep_model && p == 0) co_await gather_model(w);
    co_await red.publish(w, rec, fin);
    if (red.collects(w)) co_await red.collect(w, rmse, "rmse");
  };

  mf_run out;
  std::vector<iteration_stats> trace;
  // A run resumed from a checkpoint (system_config::checkpoint.resume) starts after its clock; one
  // resumed at its last iteration trains no more and only evaluates and gathers the model.
  const auto start = sys.start_clock();
  if (start > 0 && (plan || start > static_cast<clock_type>(o.iterations)))
    throw strata::error(errc::bad_input, plan ? "train_mf: resuming from a checkpoint runs one segment (no adaptive plan)"
                                              : "train_mf: the checkpoint is at iteration " + std::to_string(start) +
                                                    ", nothing is left of " + std::to_string(o.iterations) + " iterations");
  std::uint32_t done = static_cast<std::uint32_t>(start);
  std::optional<run_recorder::clock::time_point> first_start;  // the first segment's start
  {  // This process's workers' state, before the clock starts: set-up, like the partition above.
    // Made here, the memory it takes (about 1.6 MiB per worker on MovieLens-small, mostly fresh
    // pages, whose first touch costs from 0.1 to several ms each on a VM) is not paid inside
    // the first clocks, where its cost varied from run to run and with the number of workers.
    const auto t0 = std::chrono::steady_clock::now();
    const run_reducer where(sys, 0, 0);
    for (worker_id p = where.first_local(); p < where.first_local() + where.local_workers(); ++p) states[p] = make_state(p);
    out.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  do {
    std::uint32_t n = o.iterations - done;
    if (plan && done < o.iterations) {
      n = plan(trace, done);
      if (n == 0 || n > o.iterations - done)
        throw strata::error(errc::bad_input, "train_mf: the segment planner asked for " + std::to_string(n) + " iterations with " +
                                                 std::to_string(o.iterations - done) + " left");
    }
    seg_first = done + 1;
    seg_count = n;
    seg_last = done + n == o.iterations;
    run_reducer red(sys, n, 3);  // final sums: test squared error, test ratings, SGD updates
    const std::uint32_t base = done;
    const bool first_segment = done == 0;
    std::optional<run_recorder> recorder;
    // Seconds from the first segment's start to this one's (0 in the first segment); on a worker
    // thread after start_once, or after the run.
    auto offset = [&] { return first_start ? std::chrono::duration<double>(recorder->start_time() - *first_start).count() : 0.0; };
    auto renumber = [&, base](iteration_stats& r) {
      const double off = offset();
      r.iteration += base;
      r.elapsed_s += off;
      for (auto& e : r.worker_elapsed_s) e += off;
    };
    std::function<void(const iteration_stats&)> cb;
    if (on_iteration)
      cb = [&, first_segment](const iteration_stats& r) {
        if (r.iteration == 0 && !first_segment) return;
        iteration_stats c = r;
        renumber(c);
        on_iteration(c);
      };
    recorder.emplace(red.local_workers(), n, [&sys] { return sys.bytes_sent(); }, std::move(cb), red.first_local());
    run_recorder& rec = *recorder;
    rec.set_metric(rmse, "rmse");
    recp = &rec;
    redp = &red;
    mf_run seg;
    const auto& f = run_program(sys, rec, red, program, seg, seg_last ? 3 : 0, "train_mf");
    for (auto& r : seg.iterations) {
      if (r.iteration == 0 && !first_segment) continue;
      renumber(r);
      trace.push_back(std::move(r));
    }
    if (!first_start) first_start = rec.start_time();
    out.stats.merge(seg.stats);
    done += n;
    if (seg_last) {
      out.final_rmse = rmse(f[0], f[1]);
      out.sgd_updates = static_cast<std::uint64_t>(f[2] + 0.5);
      out.block_conflicts = conflicts.load();
    }
  } while (done < o.iterations);
  out.iterations = std::move(trace);
  out.seconds = std::chrono::duration<double>(run_recorder::clock::now() - *first_start).count();
  out.bytes_sent = out.iterations.empty() ? sys.bytes_sent() : out.iterations.back().bytes_sent;
  out.model = std::move(model);
  return out;
}

/// Trains MF on `train` with the parameter-server system `sys` (tables are added here; run once).
/// `on_iteration` (optional) is called once per completed iteration, from a worker thread.
inline mf_run train_mf(system_base& sys, const io::rating_set& train, const io::rating_set& test,
                const mf_trainer_options& o, std::function<void(const iteration_stats&)> on_iteration = {}) {
  return train_mf_segments(sys, train, test, o, segment_planner(), std::move(on_iteration));
}

/// A plain single-threaded SGD loop over the same model and data (no parameter server): the
/// baseline for the per-thread throughput ratio. Returns SGD updates per second.
inline double mf_baseline_updates_per_s(const io::rating_set& train, const mf_trainer_options& o, std::uint32_t epochs) {
  const std::uint32_t R = o.rank, W1 = R + 1;
  std::vector<float> U(std::size_t{train.num_users} * W1), V(std::size_t{train.num_items} * W1);
  for (std::size_t i = 0; i < U.size(); ++i) U[i] = detail::mf_init(o.seed, 0, i / W1, static_cast<std::uint32_t>(i % W1), R, o.init_scale);
  for (std::size_t i = 0; i < V.size(); ++i) V[i] = detail::mf_init(o.seed, 1, i / W1, static_cast<std::uint32_t>(i % W1), R, o.init_scale);
  std::vector<std::uint32_t> n_user(train.num_users, 0), n_item(train.num_items, 0);
  for (const auto& r : train.ratings) ++n_user[r.user], ++n_item[r.item];
  const float mu = static_cast<float>(train.mean()), lam = static_cast<float>(o.lambda);
  std::vector<float> reg_user(train.num_users), reg_item(train.num_items);  // as the trainer: lambda / count, once
  for (std::size_t u = 0; u < reg_user.size(); ++u) reg_user[u] = n_user[u] ? lam / static_cast<float>(n_user[u]) : 0.0f;
  for (std::size_t i = 0; i < reg_item.size(); ++i) reg_item[i] = n_item[i] ? lam / static_cast<float>(n_item[i]) : 0.0f;
  std::vector<std::uint32_t> order(train.size());
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(o.seed);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t ep = 0; ep < epochs; ++ep) {
    std::shuffle(order.begin(), order.end(), rng);
    const float eta = static_cast<float>(o.lr / (1 + o.decay * ep));
    for (std::uint32_t idx : order) {
      const auto& r = train.ratings[idx];
      float* u = U.data() + std::size_t{r.user} * W1;
      float* v = V.data() + std::size_t{r.item} * W1;
      const float lu = reg_user[r.user], li = reg_item[r.item];
      const float e = mf_sgd_step(u, v, R, r.value, eta, lu, li, mu + u[R] + v[R]);
      u[R] += eta * (e - lu * u[R]);
      v[R] += eta * (e - li * v[R]);
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(train.size()) * epochs / std::max(s, 1e-9);
}

}  // namespace strata::ml
