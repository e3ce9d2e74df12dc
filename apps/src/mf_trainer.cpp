// The MF trainer's bodies (apps/trainers/mf_trainer.hpp declares them), compiled once into
// strata_apps instead of in every program and test that trains MF.
#include <strata/core/clock.hpp>
#include <trainers/mf_elastic.hpp>
#include <trainers/mf_trainer.hpp>

#include <strata/ml/io/ratings.hpp>
#include <strata/ml/mf.hpp>
#include <strata/runtime/system.hpp>
#include <trainers/detail/mf_training.hpp>
#include <trainers/detail/mf_worker.hpp>
#include <trainers/mf_options.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

namespace detail {
/// A run resumed from a checkpoint (system_config::checkpoint.resume) starts after its clock; one
/// resumed at its last iteration trains no more and only evaluates and gathers the model. Throws
/// when the resume cannot be honoured.
inline void mf_check_resume(clock_type start, bool planned, std::uint32_t iterations) {
  if (start > 0 && (planned || start > static_cast<clock_type>(iterations)))
    throw strata::error(errc::bad_input, planned ? "train_mf: resuming from a checkpoint runs one segment (no adaptive plan)"
                                                 : "train_mf: the checkpoint is at iteration " + std::to_string(start) +
                                                       ", nothing is left of " + std::to_string(iterations) + " iterations");
}

/// How many iterations the next segment runs: what `plan` says (checked), else all that are left.
inline std::uint32_t mf_segment_length(const segment_planner& plan, const std::vector<iteration_stats>& trace, std::uint32_t done,
                                       std::uint32_t iterations) {
  std::uint32_t n = iterations - done;
  if (plan && done < iterations) {
    n = plan(trace, done);
    if (n == 0 || n > iterations - done)
      throw strata::error(errc::bad_input, "train_mf: the segment planner asked for " + std::to_string(n) + " iterations with " +
                                               std::to_string(iterations - done) + " left");
  }
  return n;
}

/// What the segments of a run have done so far.
struct mf_segments_progress {
  std::uint32_t done = 0;                                      // iterations done
  std::vector<iteration_stats> trace;                          // their records, numbered over the run
  std::optional<run_recorder::clock::time_point> first_start;  // the first segment's start
  mf_run out;
};

/// Runs the next `n` iterations of `t` as one run of its system: the records are renumbered and
/// re-timed from the first segment's start, and the last segment's final sums fill the outcome.
inline void mf_run_segment(mf_training& t, mf_segments_progress& pr, std::uint32_t n,
                           const std::function<void(const iteration_stats&)>& on_iteration) {
  t.seg_first = pr.done + 1;
  t.seg_count = n;
  t.seg_last = pr.done + n == t.o.iterations;
  run_reducer red(t.sys, n, 3);  // final sums: test squared error, test ratings, SGD updates
  const std::uint32_t base = pr.done;
  const bool first_segment = pr.done == 0;
  std::optional<run_recorder> recorder;
  // Seconds from the first segment's start to this one's (0 in the first segment); on a worker
  // thread after start_once, or after the run.
  auto offset = [&] {
    return pr.first_start ? std::chrono::duration<double>(recorder->start_time() - *pr.first_start).count() : 0.0;
  };
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
  recorder.emplace(red.local_workers(), n, [&sys = t.sys] { return sys.bytes_sent(); }, std::move(cb), red.first_local());
  run_recorder& rec = *recorder;
  rec.set_metric(mf_training::rmse, "rmse");
  t.recp = &rec;
  t.redp = &red;
  mf_run seg;
  const auto program = [&t](worker& w) { return mf_worker_program(t, w); };
  const auto& f = run_program(t.sys, rec, red, program, seg, t.seg_last ? 3 : 0, "train_mf");
  for (auto& r : seg.iterations) {
    if (r.iteration == 0 && !first_segment) continue;
    renumber(r);
    pr.trace.push_back(std::move(r));
  }
  if (!pr.first_start) pr.first_start = rec.start_time();
  pr.out.stats.merge(seg.stats);
  pr.done += n;
  if (t.seg_last) {
    pr.out.final_rmse = mf_training::rmse(f[0], f[1]);
    pr.out.sgd_updates = static_cast<std::uint64_t>(f[2] + 0.5);
    pr.out.block_conflicts = t.conflicts.load();
  }
}
}  // namespace detail

/// Trains MF as a sequence of runs of `sys` (segments) that keep the tables and every worker's
/// state (its ratings' order, its random generator, the learning-rate schedule), so that the
/// segments together are one run of o.iterations iterations with the same updates; the records
/// are numbered and timed from the start of the first segment (the time between segments, and
/// re-planning, counts). `plan` chooses the segments; without it one segment runs everything
/// (that is train_mf). `on_iteration` (optional) is called once per completed iteration, from a
/// worker thread, with the continuous numbering.
mf_run train_mf_segments(system_base& sys, const io::rating_set& train, const io::rating_set& test, const mf_trainer_options& o,
                                const segment_planner& plan, std::function<void(const iteration_stats&)> on_iteration) {
  detail::mf_training t(sys, train, test, o);
  const auto start = sys.start_clock();
  detail::mf_check_resume(start, static_cast<bool>(plan), o.iterations);
  if (o.first_iteration > 0 && (start > 0 || o.first_iteration >= o.iterations))
    throw strata::error(errc::bad_input, start > 0 ? "train_mf: a run resumed from a checkpoint cannot also start at a given iteration"
                                                   : "train_mf: the run starts after iteration " + std::to_string(o.first_iteration) +
                                                         ", nothing is left of " + std::to_string(o.iterations) + " iterations");
  detail::mf_segments_progress pr;
  pr.done = start > 0 ? static_cast<std::uint32_t>(start) : o.first_iteration;
  pr.out.setup_seconds = t.make_local_states();
  do {
    detail::mf_run_segment(t, pr, detail::mf_segment_length(plan, pr.trace, pr.done, o.iterations), on_iteration);
  } while (pr.done < o.iterations);
  mf_run out = std::move(pr.out);
  out.iterations = std::move(pr.trace);
  out.seconds = std::chrono::duration<double>(run_recorder::clock::now() - *pr.first_start).count();
  out.bytes_sent = out.iterations.empty() ? sys.bytes_sent() : out.iterations.back().bytes_sent;
  out.model = std::move(t.model);
  return out;
}

/// Trains MF on `train` with the parameter-server system `sys` (tables are added here; run once).
/// `on_iteration` (optional) is called once per completed iteration, from a worker thread.
mf_run train_mf(system_base& sys, const io::rating_set& train, const io::rating_set& test, const mf_trainer_options& o,
                std::function<void(const iteration_stats&)> on_iteration) {
  return train_mf_segments(sys, train, test, o, segment_planner(), std::move(on_iteration));
}

/// A plain single-threaded SGD loop over the same model and data (no parameter server): the
/// baseline for the per-thread throughput ratio. Returns SGD updates per second.
double mf_baseline_updates_per_s(const io::rating_set& train, const mf_trainer_options& o, std::uint32_t epochs) {
  const std::uint32_t R = o.rank, W1 = R + 1;
  std::vector<float> U(std::size_t{train.num_users} * W1), V(std::size_t{train.num_items} * W1);
  for (std::size_t i = 0; i < U.size(); ++i) U[i] = detail::mf_init(o.seed, 0, i / W1, static_cast<std::uint32_t>(i % W1), R, o.init_scale);
  for (std::size_t i = 0; i < V.size(); ++i) V[i] = detail::mf_init(o.seed, 1, i / W1, static_cast<std::uint32_t>(i % W1), R, o.init_scale);
  const float mu = static_cast<float>(train.mean());
  const auto reg = mf_regularise(train.ratings, train.num_users, train.num_items, o.lambda, o.weighted_lambda);  // as the trainer
  const float* reg_user = reg.step_user.data();
  const float* reg_item = reg.step_item.data();
  std::vector<std::uint32_t> order(train.size());
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(o.seed);
  const auto t0 = strata::run_clock::now();
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
  const double s = std::chrono::duration<double>(strata::run_clock::now() - t0).count();
  return static_cast<double>(train.size()) * epochs / std::max(s, 1e-9);
}

}  // namespace strata::ml

namespace strata::ml {

mf_elastic_run train_mf_elastic(const mf_trainer_options& o, double target_rmse, const elastic_options& eo, cost::elastic_policy& policy,
                                const mf_segment_runner& run, std::function<void(const iteration_stats&)> on_iteration) {
  if (!(target_rmse > 0) || !std::isfinite(target_rmse)) throw strata::error(errc::bad_input, "mf elastic: the target test RMSE must be finite and > 0");
  if (o.eval_every != 1)
    throw strata::error(errc::bad_input, "mf elastic: the policy follows the true model's test RMSE every iteration: eval-every 1");
  if (o.rotation) throw strata::error(errc::bad_input, "mf elastic: rotation's epoch is one clock per worker: data-parallel SGD only");
  mf_biased_model model;
  std::uint64_t updates = 0;
  auto segment = [&](std::uint32_t m, std::uint32_t done, std::uint32_t count) {
    mf_trainer_options so = o;
    so.first_iteration = done;
    so.iterations = done + count;
    so.keep_model = true;
    if (done > 0) so.start = &model;
    elastic_step<mf_run> step;
    step.run = run(m, so);
    for (auto& r : step.run.iterations) r.iteration -= done;  // from the segment's start (run_elastic numbers them over the run)
    step.iterations = count;
    for (const auto& r : step.run.iterations)
      if (r.iteration > 0 && r.metric <= target_rmse) step.reached = true;
    updates += step.run.sgd_updates;
    model = std::move(step.run.model);
    return step;
  };
  auto target_of = [target_rmse](const std::vector<iteration_stats>&) { return target_rmse; };
  auto tr = run_elastic<mf_run>("mf elastic", eo, o.iterations, policy, true, target_of, segment, on_iteration);
  auto out = elastic_result<mf_elastic_run>(std::move(tr));
  out.sgd_updates = updates;
  out.model = std::move(model);
  return out;
}

}  // namespace strata::ml
