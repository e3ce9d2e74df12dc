// The CoCoA+ trainer's bodies (apps/trainers/cocoa_trainer.hpp declares them and describes the
// algorithm), compiled once into strata_apps.
#include <trainers/cocoa_trainer.hpp>

#include <strata/core/clock.hpp>
#include <strata/core/error.hpp>
#include <strata/ml/cocoa.hpp>
#include <strata/runtime/system.hpp>
#include <strata/runtime/worker.hpp>
#include <strata/runtime/worker_stats.hpp>
#include <strata/table/dense_row.hpp>
#include <trainers/run_stats.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace strata::ml {

void check_cocoa_options(const cocoa_trainer_options& o) {
  check_cocoa_objective(o.objective);
  auto bad = [](const std::string& what) { throw error(errc::bad_input, "cocoa: " + what); };
  if (!(o.local_passes > 0) || !std::isfinite(o.local_passes)) bad("local passes must be finite and > 0, got " + std::to_string(o.local_passes));
  if (!(o.sigma >= 0) || !std::isfinite(o.sigma)) bad("sigma must be finite and >= 0 (0: the default), got " + std::to_string(o.sigma));
  if (!(o.tolerance >= 0) || !std::isfinite(o.tolerance)) bad("the tolerance must be finite and >= 0, got " + std::to_string(o.tolerance));
  if (o.tolerance > 0 && o.eval_every == 0) bad("a tolerance needs the true model's gap: eval-every must be > 0");
  if (o.block == 0) bad("block must be > 0");
  if (o.iterations == 0) bad("iterations must be > 0");
  if ((o.start_alpha == nullptr) != (o.start_v == nullptr)) bad("a start state needs both alpha and v");
}

cocoa_data cocoa_prepare(const io::libsvm_data& raw, const cocoa_objective& o, const cocoa_preparation& prep, const std::string& name) {
  const auto label = [&](std::size_t i) { return prep.binarize ? (raw.labels[i] > 0 ? 1.0 : -1.0) : raw.labels[i]; };
  cocoa_data out;
  out.d = raw.num_features + (prep.bias != 0 ? 1u : 0u);
  // Standardising: every column centred and scaled to variance 1 (dense from here), the target centred (squared loss).
  std::vector<double> mean(raw.num_features, 0.0), scale(raw.num_features, 1.0);
  double ymean = 0;
  if (prep.standardize) {
    const double nr = static_cast<double>(std::max<std::size_t>(1, raw.num_rows()));
    std::vector<double> sq(raw.num_features, 0.0);
    for (std::size_t i = 0; i < raw.num_rows(); ++i) {
      const auto ri = raw.row_indices(i);
      const auto rv = raw.row_values(i);
      for (std::size_t k = 0; k < ri.size(); ++k) mean[ri[k]] += rv[k], sq[ri[k]] += rv[k] * rv[k];
      ymean += label(i);
    }
    for (std::uint32_t j = 0; j < raw.num_features; ++j) {
      mean[j] /= nr;
      const double var = sq[j] / nr - mean[j] * mean[j];
      scale[j] = var > 0 ? 1.0 / std::sqrt(var) : 0.0;
    }
    ymean = o.loss == cocoa_loss::squared ? ymean / nr : 0.0;
  }
  std::vector<double> dense;
  std::vector<std::uint32_t> c;
  std::vector<double> v;
  for (std::size_t i = 0; i < raw.num_rows(); ++i) {
    const double y = label(i);
    if (o.loss == cocoa_loss::hinge && y != 1.0 && y != -1.0)
      throw error(errc::bad_input, name + ": example " + std::to_string(i + 1) + " has label " + std::to_string(y) +
                                       "; the hinge loss needs labels +1 and -1");
    const auto ri = raw.row_indices(i);
    const auto rv = raw.row_values(i);
    if (prep.standardize) {
      dense.assign(mean.begin(), mean.end());
      for (double& x : dense) x = -x;
      for (std::size_t k = 0; k < ri.size(); ++k) dense[ri[k]] += rv[k];
      c.resize(dense.size());
      std::iota(c.begin(), c.end(), 0u);
      v.resize(dense.size());
      for (std::size_t j = 0; j < dense.size(); ++j) v[j] = dense[j] * scale[j];
    } else {
      c.assign(ri.begin(), ri.end());
      v.assign(rv.begin(), rv.end());
    }
    if (prep.normalize_rows) {
      double s = 0;
      for (double x : v) s += x * x;
      if (s > 0)
        for (double& x : v) x /= std::sqrt(s);
    }
    if (prep.bias != 0) c.push_back(raw.num_features), v.push_back(prep.bias);
    out.add(c, v, y - ymean);
  }
  return out;
}

namespace {

using clock_t_ = strata::run_clock;
double since(clock_t_::time_point t0) { return std::chrono::duration<double>(clock_t_::now() - t0).count(); }

/// What every worker of a run shares: the problem, the partition, the table, each local
/// worker's state (built before the clock starts).
struct cocoa_training {
  system_base& sys;
  const cocoa_data& data;
  const cocoa_trainer_options& o;
  std::uint32_t K = 1;  // workers
  std::uint32_t rows = 1, width = 1;  // rows of v, coordinates per row
  double sigma = 1, gamma = 1;
  table_handle<dense_row<double>> V;
  std::vector<std::unique_ptr<cocoa_local>> local;  // by global worker id (only this process's are made)
  std::vector<std::vector<std::uint32_t>> ids;       // by worker: its examples' indices in `data`
  std::vector<double> alpha_out, v_out;               // keep_state
  run_recorder* recp = nullptr;
  run_reducer* redp = nullptr;
  std::vector<double> model;                 // worker 0's final w (keep_model)

  cocoa_training(system_base& s, const cocoa_data& d, const cocoa_trainer_options& opt) : sys(s), data(d), o(opt) {
    const auto& c = sys.config();
    K = c.nodes * c.workers_per_node;
    width = std::max<std::uint32_t>(1, std::min(o.block, data.d));  // a narrow problem: one row of its width
    rows = static_cast<std::uint32_t>((std::uint64_t{data.d} + width - 1) / width);
    rows = std::max(rows, 1u);
    sigma = o.sigma > 0 ? o.sigma : (o.averaging ? 1.0 : static_cast<double>(K));
    gamma = o.averaging ? 1.0 / K : 1.0;
    V = sys.template add_table<dense_row<double>>(width);
  }

  /// Worker p's examples: a shuffle of 0..n-1 with the seed, split into K even parts.
  double make_local_states() {
    const auto t0 = clock_t_::now();
    const std::size_t n = data.size();
    std::vector<std::uint32_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0u);
    std::mt19937_64 rng(o.seed ^ 0xc0c0a5eedULL);
    std::shuffle(perm.begin(), perm.end(), rng);
    local.resize(K);
    ids.resize(K);
    const auto& c = sys.config();
    if (o.start_alpha && (o.start_alpha->size() != n || o.start_v->size() != data.d))
      throw error(errc::bad_input, "cocoa: the start state has " + std::to_string(o.start_alpha->size()) + " alphas and " +
                                       std::to_string(o.start_v->size()) + " coordinates of v for " + std::to_string(n) + " examples and " +
                                       std::to_string(data.d) + " features");
    if (o.keep_state) alpha_out.assign(n, 0.0);
    for (node_id nd = 0; nd < c.nodes; ++nd) {
      if (!sys.is_local(nd)) continue;
      for (std::uint32_t i = 0; i < c.workers_per_node; ++i) {
        const std::uint32_t p = nd * c.workers_per_node + i;
        cocoa_data part;
        part.d = data.d;
        const std::size_t lo = n * p / K, hi = n * (p + 1) / K;
        std::vector<std::uint32_t> mine(perm.begin() + static_cast<std::ptrdiff_t>(lo), perm.begin() + static_cast<std::ptrdiff_t>(hi));
        std::sort(mine.begin(), mine.end());  // the file's order inside a part: its rows stream
        for (std::uint32_t e : mine) {
          const auto b = data.offsets[e], en = data.offsets[e + 1];
          part.add(std::span(data.cols.data() + b, en - b), std::span(data.vals.data() + b, en - b), data.y[e]);
        }
        local[p] = std::make_unique<cocoa_local>(std::move(part), o.seed * 0x9e3779b97f4a7c15ULL + p + 1);
        if (o.start_alpha)
          for (std::size_t k = 0; k < mine.size(); ++k) local[p]->alpha[k] = (*o.start_alpha)[mine[k]];
        ids[p] = std::move(mine);
      }
    }
    return since(t0);
  }
};

/// One worker's program.
class cocoa_worker {
 public:
  cocoa_worker(cocoa_training& t, worker& w)
      : t_(t), o_(t.o), w_(w), rec_(*t.recp), red_(*t.redp), p_(w.id()), st_(*t.local[p_]), v_(t.data.d, 0.0), wv_(t.data.d, 0.0) {}

  task<> run() {
    rec_.start_once();
    record_initial();
    std::uint32_t j = 1;
    for (; j <= o_.iterations; ++j) {
      const bool stop = co_await round(j);
      if (stop) break;
    }
    co_await finish();
  }

 private:
  cocoa_training& t_;
  const cocoa_trainer_options& o_;
  worker& w_;
  run_recorder& rec_;
  run_reducer& red_;
  const worker_id p_;
  cocoa_local& st_;
  std::vector<double> v_, wv_;  // v as read, w = soft(v, κ)
  std::uint64_t steps_ = 0;

  std::uint64_t n() const { return t_.data.size(); }
  std::uint64_t H() const { return static_cast<std::uint64_t>(std::ceil(o_.local_passes * static_cast<double>(st_.data.size()))); }

  task<> read_v() {
    if (o_.prefetch) {
      std::vector<row_id> all(t_.rows);
      std::iota(all.begin(), all.end(), row_id{0});
      prefetch(w_, t_.V, all);
    }
    for (std::uint32_t r = 0; r < t_.rows; ++r) {
      const auto& row = co_await w_.get(t_.V, r);
      const auto s = row.span();
      const std::size_t lo = std::size_t{r} * t_.width, hi = std::min<std::size_t>(v_.size(), lo + t_.width);
      std::copy_n(s.data(), hi - lo, v_.data() + lo);
    }
    if (o_.start_v)  // the table holds the change since the start state
      for (std::size_t j = 0; j < v_.size(); ++j) v_[j] += (*o_.start_v)[j];
    cocoa_primal_of(v_, o_.objective.kappa(), wv_);
  }
  /// This worker's (P, D) parts for the model w: its examples' terms, plus the regulariser's for worker 0.
  std::pair<double, double> parts(std::span<const double> w) const {
    auto [p, d] = st_.partial_objectives(o_.objective.loss, w, n());
    if (p_ == 0) {
      const auto reg = cocoa_regulariser(o_.objective, w);
      p += reg.primal, d -= reg.dual;
    }
    return {p, d};
  }
  void record_initial() {
    const auto t0 = clock_t_::now();
    std::fill(wv_.begin(), wv_.end(), 0.0);
    if (o_.start_v) cocoa_primal_of(*o_.start_v, o_.objective.kappa(), wv_);
    const auto [p, d] = parts(wv_);
    rec_.add_values(p_, 0, p, p, -d);
    rec_.charge_eval(p_, since(t0));
    rec_.end_iteration(w_, 0);
  }
  task<> push() {
    for (std::uint32_t r = 0; r < t_.rows; ++r) {
      const std::size_t lo = std::size_t{r} * t_.width, hi = std::min<std::size_t>(st_.dv.size(), lo + t_.width);
      bool any = false;
      for (std::size_t j = lo; j < hi && !any; ++j) any = st_.dv[j] != 0;
      if (!any) continue;
      dense_row<double> d = w_.delta_row(t_.V);
      auto m = d.mutable_span();
      std::copy(st_.dv.begin() + static_cast<std::ptrdiff_t>(lo), st_.dv.begin() + static_cast<std::ptrdiff_t>(hi), m.begin());
      co_await w_.inc_row(t_.V, r, std::move(d));
    }
  }
  /// The worker's own view after its round (eval_every = 0): v as read plus its own push.
  void record_view(std::uint32_t j) {
    const auto t0 = clock_t_::now();
    std::vector<double> vv(v_);
    for (std::size_t k = 0; k < vv.size(); ++k) vv[k] += st_.dv[k];
    std::vector<double> ww(vv.size());
    cocoa_primal_of(vv, o_.objective.kappa(), ww);
    const auto [p, d] = parts(ww);
    rec_.add_values(p_, j, p, p, -d);
    rec_.charge_eval(p_, since(t0));
  }
  /// The true model after round j; returns true when its gap meets the tolerance (the same answer
  /// on every worker: the parts are all-reduced in worker order).
  task<bool> evaluate_snapshot(std::uint32_t j) {
    auto mark = co_await snapshot_begin(w_);
    const auto t0 = clock_t_::now();  // the evaluation's own time, from the meeting on (see snapshot_begin)
    co_await read_v();
    const std::pair<double, double> pd = parts(wv_);  // (no structured binding across co_await: GCC 12)
    rec_.add_values(p_, j, pd.first, pd.first, -pd.second);
    std::vector<double> mine(2);  // (no braced list across co_await either: GCC 12 rejects its array)
    mine[0] = pd.first, mine[1] = pd.second;
    const auto total = co_await w_.all_reduce(std::move(mine), strata::sum{});
    co_await snapshot_end(w_, mark);
    rec_.charge_eval(p_, since(t0));
    co_return o_.tolerance > 0 && total[0] - total[1] <= o_.tolerance * std::abs(total[0]);
  }
  task<bool> round(std::uint32_t j) {
    co_await read_v();
    st_.solve(o_.objective, wv_, t_.sigma, H(), n());
    st_.commit(t_.gamma);
    steps_ += H();
    const bool snapshot = o_.snapshot_due(j, o_.iterations);
    if (o_.eval_every == 0) record_view(j);
    else if (!snapshot) rec_.add_values(p_, j, std::nan(""), std::nan(""), std::nan(""));
    co_await push();
    rec_.end_iteration(w_, j);
    co_await w_.clock();
    if (!snapshot) co_return false;
    const bool stop = co_await evaluate_snapshot(j);
    co_return stop;
  }
  task<> finish() {
    co_await red_.settle(w_);
    co_await read_v();
    const std::pair<double, double> pd = parts(wv_);
    if (o_.keep_model && p_ == 0) t_.model = wv_;
    if (o_.keep_state) {  // every worker of the run is in this process (checked before the run)
      for (std::size_t k = 0; k < st_.alpha.size(); ++k) t_.alpha_out[t_.ids[p_][k]] = st_.alpha[k];
      if (p_ == 0) t_.v_out = v_;
    }
    std::vector<double> fin(3);
    fin[0] = pd.first, fin[1] = pd.second, fin[2] = static_cast<double>(steps_);
    co_await red_.publish(w_, rec_, fin);
    if (red_.collects(w_)) co_await red_.collect(w_, {}, "gap");
  }
};

task<> cocoa_program(cocoa_training& t, worker& w) {
  cocoa_worker program(t, w);
  co_await program.run();
}

}  // namespace

cocoa_run train_cocoa(system_base& sys, const cocoa_data& data, const cocoa_trainer_options& o,
                      std::function<void(const iteration_stats&)> on_iteration) {
  check_cocoa_options(o);
  if (data.size() == 0) throw error(errc::bad_input, "cocoa: no examples");
  cocoa_training t(sys, data, o);
  if (o.keep_state)
    for (node_id nd = 0; nd < sys.config().nodes; ++nd)
      if (!sys.is_local(nd)) throw error(errc::bad_input, "cocoa: keep_state needs every worker in this process (inproc or sim)");
  cocoa_run out;
  out.setup_seconds = t.make_local_states();
  run_reducer red(sys, o.iterations, 3);
  auto rec = make_recorder(sys, red, o.iterations, std::move(on_iteration));
  rec.set_metric_name("gap");
  t.recp = &rec;
  t.redp = &red;
  const auto program = [&t](worker& w) { return cocoa_program(t, w); };
  const auto& f = run_program(sys, rec, red, program, out, 3, "train_cocoa");
  out.primal = f[0];
  out.dual = f[1];
  out.steps = static_cast<std::uint64_t>(f[2] + 0.5);
  // A run the tolerance stopped: its records end at that round (every process stopped there; the
  // round is known from the records, whose elapsed time is 0 past it).
  out.rounds = o.iterations;
  for (std::uint32_t it = 1; it < out.iterations.size(); ++it)
    if (!std::isnan(out.iterations[it].metric) && o.tolerance > 0 &&
        out.iterations[it].metric <= o.tolerance * std::abs(out.iterations[it].objective)) {
      out.rounds = it;
      out.converged = true;
      break;
    }
  if (out.iterations.size() > out.rounds + 1) out.iterations.resize(out.rounds + 1);
  out.bytes_sent = out.iterations.empty() ? sys.bytes_sent() : out.iterations.back().bytes_sent;
  out.w = std::move(t.model);
  out.alpha = std::move(t.alpha_out);
  out.v = std::move(t.v_out);
  return out;
}

cocoa_elastic_run train_cocoa_elastic(const cocoa_data& data, const cocoa_trainer_options& o, const cocoa_elastic_options& eo,
                                      cost::elastic_policy& policy, const cocoa_segment_runner& run,
                                      std::function<void(const iteration_stats&)> on_iteration) {
  check_cocoa_options(o);
  if (o.tolerance <= 0 || o.eval_every != 1)
    throw error(errc::bad_input, "cocoa elastic: the policy follows the true gap every round toward a target: eval-every 1 and a tolerance > 0");
  std::vector<double> alpha(data.size(), 0.0), v(data.d, 0.0);
  std::uint64_t steps = 0;
  auto segment = [&](std::uint32_t m, std::uint32_t done, std::uint32_t count) {
    cocoa_trainer_options so = o;
    so.iterations = count;
    so.keep_state = true;
    if (done > 0) so.start_alpha = &alpha, so.start_v = &v;
    elastic_step<cocoa_run> step;
    step.run = run(m, so);
    step.iterations = step.run.rounds;
    step.reached = step.run.converged;
    steps += step.run.steps;
    alpha = std::move(step.run.alpha);
    v = std::move(step.run.v);
    return step;
  };
  auto target_of = [&](const std::vector<iteration_stats>& trace) { return o.tolerance * std::abs(trace.back().objective); };
  auto tr = run_elastic<cocoa_run>("cocoa elastic", eo, o.iterations, policy, false, target_of, segment, on_iteration);
  auto out = elastic_result<cocoa_elastic_run>(std::move(tr));
  out.rounds = out.iterations_run;
  out.converged = out.reached;
  out.steps = steps;
  return out;
}

}  // namespace strata::ml
