#pragma once
/// \file The pieces of train_mf_segments (trainers/mf_trainer.hpp, whose file comment describes the
/// algorithm): the per-block kernels, a worker's state kept across segments (mf_worker_state), what
/// every worker shares (mf_training: sizes, partition, tables, initial values, built before the
/// clock starts), one worker's program in one segment (mf_worker), and one segment's run.
#include <strata/core/clock.hpp>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <strata/core/huge_pages.hpp>
#include <strata/ml/io/ratings.hpp>
#include <strata/ml/mf.hpp>
#include <strata/ml/mf_model.hpp>
#include <strata/ml/partition.hpp>
#include <strata/runtime/system.hpp>
#include <strata/table/dense_row.hpp>
#include <trainers/mf_options.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <ranges>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml::detail {

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

/// A worker's state, kept from one segment to the next.
struct mf_worker_state {
  std::vector<std::uint32_t> ublocks, iblocks;  // blocks this worker reads (increasing)
  // The W copies hold only this worker's user blocks: local user l is row l, in block slot l / B
  // (global block ublocks[l / B]); its ratings and test ratings carry local user ids, so that a
  // worker's memory grows with its share of the users, not with all of them (strata_gen's 10m
  // data took 40 MB per worker when every worker held every user's row). The H copies are indexed
  // by global item block (only the blocks read are filled); the items' initial values are shared
  // (mf_training::Hinit). The six arrays of its own are one block of memory (see
  // core/huge_pages.hpp): on MovieLens-small they fit one 2 MiB page, where one allocation each
  // took six. A fresh huge page costs from 0.1 to about 5 ms on the development
  // VM (REPORT.md); the state is made before the clock starts (train_mf_segments), so that cost
  // is set-up time (mf_run::setup_seconds), not the first clock's.
  std::vector<float, huge_page_allocator<float>> slab;
  std::span<float> Wl, Wo, Hl, Ho, Winit;
  std::span<const float> Hinit;  // mf_training::Hinit
  std::span<float> Ws;  // the server's value of this worker's W blocks (its mirror)
  std::vector<std::size_t> slice_end;               // end of each clock's slice of `order` (K entries)
  std::vector<char> loaded, train_block;
  std::vector<io::rating, huge_page_allocator<io::rating>> data;  // its ratings (local users), grouped by item block
  std::vector<io::rating> test;                              // its test ratings (local users)
  std::vector<float> reg_user;                               // each local user's per-step λ
  std::uint32_t B = 1;                                       // users per block
  std::vector<std::pair<std::size_t, std::size_t>> groups;  // [begin, end) of each item block in data
  std::vector<std::uint32_t> order;                          // this epoch's visiting order (indices into data)
  std::vector<std::pair<std::size_t, std::uint32_t>> runs;   // where each item block's run starts in `order`
  std::vector<std::uint32_t> want;                           // item blocks of the current clock's slice
  std::mt19937_64 rng;
  std::uint64_t updates = 0;
  bool started = false;  // its worker has run (a checkpoint to resume from is loaded at the first start)
  /// Local id of global user u (~0u: u is not in this worker's blocks).
  std::uint32_t local_user(std::uint32_t u) const {
    const auto at = std::lower_bound(ublocks.begin(), ublocks.end(), u / B);
    return at == ublocks.end() || *at != u / B ? ~0u : static_cast<std::uint32_t>(at - ublocks.begin()) * B + u % B;
  }
  std::uint32_t global_user(std::uint32_t l) const { return ublocks[l / B] * B + l % B; }
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
      for (const auto& x : data) ar(global_user(x.user), x.item, x.value);  // global ids, as the data has them
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
      for (auto& x : data) {
        ar(x.user, x.item, x.value);
        const std::uint32_t l = local_user(x.user);
        if (l == ~0u) throw strata::error(errc::bad_input, "it holds a rating of user " + std::to_string(x.user) + ", not one of this worker's");
        x.user = l;
      }
      std::istringstream rs(r);
      rs >> rng;
      if (!rs) throw strata::error(errc::bad_input, "its random generator state does not parse");
    } catch (const std::exception& e) {
      throw strata::error(errc::bad_input, "train_mf: worker " + std::to_string(p) + "'s checkpointed state does not load: " + e.what());
    }
  }
};

/// What every worker of a train_mf_segments run shares, set up before the clock starts: the sizes,
/// the start model's rows, the regularisation weights, the partition by user block, the rotation's
/// item groups, the tables, every local worker's state, and the segment being run.
struct mf_training {
  system_base& sys;
  const io::rating_set& train;
  const io::rating_set& test;
  const mf_trainer_options& o;
  const std::uint32_t P, R, W1, B;
  const std::size_t bw;  // floats per PS row (B users or items of W1 columns)
  bool ids = false;      // the data's ids are remapped (else dense: row = id)
  std::uint32_t nu = 0, ni = 0, ub = 0, ib = 0;
  // The start model's row for each of the run's users and items (matched by original id; none: the model's size).
  std::vector<std::uint32_t> start_user, start_item;
  table_handle<dense_row<float>> Wt, Ht;
  float mu = 0;
  mf_regularisation reg;                  // each user's and item's per-step λ and its weight in the loss
  std::vector<std::uint32_t> owner;       // the worker of each user block
  std::vector<std::vector<io::rating>> test_part;  // each worker's test ratings (its training ratings are
                                                  // grouped straight from `train` into its state: no copy between)
  std::vector<std::uint32_t> igroup;      // rotation: the group of each item block
  std::uint32_t K = 1;                    // clocks per epoch
  // Who trained each item block last: (iteration << 32) | (worker + 1), for block_conflicts.
  std::vector<std::atomic<std::uint64_t>> holder;
  std::atomic<std::uint64_t> conflicts{0};
  mf_biased_model model;  // with keep_model: filled by worker 0 at the end
  std::vector<std::unique_ptr<mf_worker_state>> states;
  std::vector<float, huge_page_allocator<float>> Hinit;  // every item block's initial values, shared by the local workers
  std::vector<float> item_share;  // average_items: 1 / (workers that rate item i); empty: off
  // The segment being run: its first iteration (continuous numbering), its length, whether it is
  // the last, and its recorder and reducer (recorder slot j is iteration seg_first − 1 + j; slot
  // 0 is the initial state in the first segment and unused after it).
  std::uint32_t seg_first = 1, seg_count = 0;
  bool seg_last = true;
  run_recorder* recp = nullptr;
  run_reducer* redp = nullptr;

  mf_training(system_base& s, const io::rating_set& tr, const io::rating_set& te, const mf_trainer_options& opt)
      : sys(s), train(tr), test(te), o(opt), P(s.config().nodes * s.config().workers_per_node), R(opt.rank), W1(R + 1),
        B(std::max<std::uint32_t>(1, opt.block)), bw(std::size_t{B} * W1) {
    check_inputs();
    size_model();
    Wt = sys.template add_table<dense_row<float>>(bw);
    Ht = sys.template add_table<dense_row<float>>(bw);
    mu = o.start ? o.start->mean : static_cast<float>(train.mean());
    weigh_regularisation();
    partition_users();
    igroup.assign(ib, 0);
    if (o.rotation && P > 1) group_items();
    if (o.average_items && !o.rotation && P > 1) share_items();
    K = o.rotation ? P : std::max<std::uint32_t>(1, o.clocks_per_epoch);
    holder = std::vector<std::atomic<std::uint64_t>>(ib);
    states.resize(P);
  }

  void check_inputs() const {
    if (o.start && o.start->rank != R)
      throw strata::error(errc::bad_input, "train_mf: the start model has rank " + std::to_string(o.start->rank) +
                                               ", the options say " + std::to_string(R));
    if (train.empty()) throw strata::error(errc::bad_input, "train_mf: no training ratings");
    if (!test.empty() && (train.user_ids != test.user_ids || train.item_ids != test.item_ids))
      throw strata::error(errc::bad_input,
                          "train_mf: the training and test ratings use different id spaces (put them in one with io::share_ids)");
  }
  /// Dense data (no remapping) sizes the tables by the largest index; remapped data by its id space.
  void size_model() {
    ids = train.remapped();
    nu = std::max({train.num_users, test.num_users, o.start && !ids ? o.start->num_users : 0u});
    ni = std::max({train.num_items, test.num_items, o.start && !ids ? o.start->num_items : 0u});
    if (o.start) {
      start_user.resize(nu);
      start_item.resize(ni);
      for (std::uint32_t u = 0; u < nu; ++u) start_user[u] = o.start->user_row(u < train.num_users ? train.user_id(u) : u);
      for (std::uint32_t i = 0; i < ni; ++i) start_item[i] = o.start->item_row(i < train.num_items ? train.item_id(i) : i);
    }
    ub = (nu + B - 1) / B;
    ib = (ni + B - 1) / B;
  }
  /// Each user's and item's regularisation in an SGD step and in the loss (ml::mf_regularise).
  void weigh_regularisation() { reg = mf_regularise(train.ratings, nu, ni, o.lambda, o.weighted_lambda); }
  /// Partition by user block, balanced by ratings (balanced_partition).
  void partition_users() {
    std::vector<std::uint64_t> per_block(ub, 0);
    for (const auto& r : train.ratings) ++per_block[r.user / B];
    owner = balanced_partition(per_block, P);
    test_part.resize(P);
    for (const auto& r : test.ratings) test_part[owner[r.user / B]].push_back(r);
  }
  /// average_items: each item's 1 / (number of workers with ratings of it); 1 for unrated items.
  void share_items() {
    std::vector<std::uint64_t> pairs;  // item * P + worker, one per rating, then distinct
    pairs.reserve(train.ratings.size());
    for (const auto& r : train.ratings) pairs.push_back(std::uint64_t{r.item} * P + owner[r.user / B]);
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    std::vector<std::uint32_t> raters(ni, 0);
    for (auto x : pairs) ++raters[x / P];
    item_share.assign(std::size_t{ib} * B, 1.0f);
    for (std::uint32_t i = 0; i < ni; ++i)
      if (raters[i] > 1) item_share[i] = 1.0f / static_cast<float>(raters[i]);
  }
  /// Rotation: the group of each item block, so that every (worker, group) cell has about the same
  /// ratings (blocks by decreasing ratings, each to the group whose heaviest cell grows least).
  void group_items() {
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

  /// Initial value of column c of user (table 0) or item (table 1) e: the start model's, else hashed.
  float init_of(std::uint32_t table, std::uint64_t e, std::uint32_t c) const {
    if (o.start) {
      // Block padding past the last user or item (e beyond the lists) has no start row.
      const auto& rows = table == 0 ? start_user : start_item;
      const std::uint32_t x = e < rows.size() ? rows[e] : ~0u;
      if (x < (table == 0 ? o.start->num_users : o.start->num_items)) return (table == 0 ? o.start->user(x) : o.start->item(x))[c];
    }
    return mf_init(o.seed, table, e, c, R, o.init_scale);
  }
  /// Notes that worker p trains item block b in iteration it (block_conflicts).
  void claim(std::uint32_t b, std::uint32_t it, worker_id p) {
    const std::uint64_t mine = (std::uint64_t{it} << 32) | (std::uint64_t{p} + 1);
    std::uint64_t cur = holder[b].load(std::memory_order_relaxed);
    while ((cur >> 32) < it && !holder[b].compare_exchange_weak(cur, mine, std::memory_order_relaxed)) {
    }
    if ((cur >> 32) == it && cur != mine) conflicts.fetch_add(1, std::memory_order_relaxed);
  }
  static double rmse(double sq, double n) { return n > 0 ? std::sqrt(sq / n) : 0.0; }

  /// Worker 0, once every update is in: reads every row into `model`.
  task<> gather_model(worker& w) {
    model = mf_biased_model::zeros(R, nu, ni, mu);
    if (ids) {  // the data's original ids (none: dense data, row = id)
      model.user_ids = ids_or_identity_n(train.user_ids, nu);
      model.item_ids = ids_or_identity_n(train.item_ids, ni);
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
  }

  /// This process's workers' state, before the clock starts: set-up, like the partition. Made
  /// here, the memory it takes (mostly fresh pages,
  /// whose first touch costs from 0.1 to several ms each on a VM) is not paid inside the first
  /// clocks, where its cost varied from run to run and with the number of workers. Returns the
  /// seconds it took (mf_run::setup_seconds).
  double make_local_states() {
    const auto t0 = strata::run_clock::now();
    const run_reducer where(sys, 0, 0);
    Hinit.assign(std::size_t{ib} * bw, 0.0f);
    for (std::uint32_t b = 0; b < ib; ++b)
      for (std::uint32_t j = 0; j < B; ++j)
        for (std::uint32_t c = 0; c < W1; ++c) Hinit[b * bw + j * W1 + c] = init_of(1, std::uint64_t{b} * B + j, c);
    const worker_id first = where.first_local(), n = where.local_workers();
    // Each local worker's training ratings (indices into `train`), in one pass: a pass per worker
    // cost 1,024 passes over 9M ratings in a simulated run of 1,024 workers.
    std::vector<std::vector<std::uint32_t>> mine(n);
    for (std::uint32_t x = 0; x < train.ratings.size(); ++x)
      if (const std::uint32_t q = owner[train.ratings[x].user / B]; q >= first && q < first + n) mine[q - first].push_back(x);
    for (worker_id p = first; p < first + n; ++p) states[p] = make_state(p, std::exchange(mine[p - first], {}));
    return std::chrono::duration<double>(strata::run_clock::now() - t0).count();
  }
  /// Worker p's state; `mine`: its training ratings (indices into `train`, increasing).
  std::unique_ptr<mf_worker_state> make_state(worker_id p, const std::vector<std::uint32_t>& mine) const {
    auto st = std::make_unique<mf_worker_state>();
    find_blocks(*st, p, mine);
    st->B = B;
    allocate(*st);
    fill_initial(*st);
    group_ratings(*st, mine);
    localise(*st, p);
    cut_slices(*st, p);
    st->rng.seed(mf_mix(o.seed * 7919 + p));
    return st;
  }
  /// Blocks worker p reads: its user blocks, and the item blocks of its train and test ratings.
  void find_blocks(mf_worker_state& st, worker_id p, const std::vector<std::uint32_t>& mine) const {
    std::vector<char> uu(ub, 0), ii(ib, 0);
    for (std::uint32_t x : mine) uu[train.ratings[x].user / B] = 1, ii[train.ratings[x].item / B] = 1;
    for (const auto& r : test_part[p]) uu[r.user / B] = 1, ii[r.item / B] = 1;
    for (std::uint32_t b = 0; b < ub; ++b)
      if (uu[b]) st.ublocks.push_back(b);
    for (std::uint32_t b = 0; b < ib; ++b)
      if (ii[b]) st.iblocks.push_back(b);
  }
  /// The local copies, all in one slab (mf_worker_state).
  void allocate(mf_worker_state& st) const {
    const std::size_t wn = st.ublocks.size() * bw, hn = std::size_t{ib} * bw;
    const auto w_arrays = {&st.Wl, &st.Wo, &st.Winit, &st.Ws};
    const auto h_arrays = {&st.Hl, &st.Ho};
    st.slab.assign(w_arrays.size() * wn + h_arrays.size() * hn, 0.0f);
    float* at = st.slab.data();
    for (auto* a : w_arrays) *a = {at, wn}, at += wn;
    for (auto* a : h_arrays) *a = {at, hn}, at += hn;
    st.Hinit = {Hinit.data(), hn};  // read only: shared (make_local_states fills it first)
    st.loaded.assign(ib, 0);
    st.train_block.assign(ib, 0);
  }
  /// The initial values of the worker's user blocks (the item blocks': make_local_states, shared).
  void fill_initial(mf_worker_state& st) const {
    for (std::size_t s = 0; s < st.ublocks.size(); ++s)
      for (std::uint32_t j = 0; j < B; ++j)
        for (std::uint32_t c = 0; c < W1; ++c)
          st.Winit[s * bw + j * W1 + c] = init_of(0, std::uint64_t{st.ublocks[s]} * B + j, c);
  }
  /// The worker's ratings (`mine`) grouped by item block, each block's in their original order (a counting sort).
  void group_ratings(mf_worker_state& st, const std::vector<std::uint32_t>& mine) const {
    std::vector<std::size_t> at(std::size_t{ib} + 1, 0);
    for (std::uint32_t x : mine) ++at[train.ratings[x].item / B + 1];
    for (std::uint32_t b = 0; b < ib; ++b) {
      if (at[b + 1] > 0) st.groups.emplace_back(at[b], at[b] + at[b + 1]), st.train_block[b] = 1;
      at[b + 1] += at[b];
    }
    st.data.resize(at[ib]);
    for (std::uint32_t x : mine) st.data[at[train.ratings[x].item / B]++] = train.ratings[x];
    if (o.user_order)
      for (auto [g0, g1] : st.groups) {  // a file written user by user is in order already: no sort
        const auto first = st.data.begin() + static_cast<std::ptrdiff_t>(g0), last = st.data.begin() + static_cast<std::ptrdiff_t>(g1);
        const auto by_user = [](const io::rating& a, const io::rating& b) { return a.user < b.user; };
        if (!std::is_sorted(first, last, by_user)) std::stable_sort(first, last, by_user);
      }
    st.order.assign(st.data.size(), 0);  // its pages touched now, in the set-up
    st.order.clear();
  }
  /// Local user ids in worker p's ratings and test ratings, and its users' λ by local id (block
  /// padding past the last user: 0, never used). Order by user is kept: local ids increase with global ones.
  void localise(mf_worker_state& st, worker_id p) const {
    for (auto& r : st.data) r.user = st.local_user(r.user);
    st.test = test_part[p];
    for (auto& r : st.test) r.user = st.local_user(r.user);
    st.reg_user.assign(st.ublocks.size() * B, 0.0f);
    for (std::size_t l = 0; l < st.reg_user.size(); ++l)
      if (const std::uint32_t u = st.global_user(static_cast<std::uint32_t>(l)); u < nu) st.reg_user[l] = reg.step_user[u];
  }
  /// Where each clock's slice of an epoch ends.
  void cut_slices(mf_worker_state& st, worker_id p) const {
    if (o.rotation) {  // sub-epoch s: the ratings of group (p + s) mod P
      std::vector<std::size_t> in_group(P, 0);
      for (const auto& r : st.data) ++in_group[igroup[r.item / B]];
      std::size_t n = 0;
      for (std::uint32_t s = 0; s < K; ++s) st.slice_end.push_back(n += in_group[(p + s) % P]);
    } else {
      for (std::uint32_t s = 0; s < K; ++s) st.slice_end.push_back(st.data.size() * (s + 1) / K);
    }
  }
};

}  // namespace strata::ml::detail
