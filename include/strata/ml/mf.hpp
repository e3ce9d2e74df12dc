#pragma once
/// \file SGD matrix factorisation kernels: the per-rating SGD step on raw factor rows (so a
/// distributed trainer can apply it to rows it got from a parameter server), the loss and RMSE
/// from SEEDS.md evaluated through row accessors, a learning-rate schedule, and a sequential
/// reference trainer that serves as test oracle and benchmark baseline.
#include <strata/core/error.hpp>
#include <strata/ml/io/ratings.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace strata::ml {

/// Dot product of two factor rows of equal width.
inline float mf_dot(const float* u, const float* v, std::size_t rank) noexcept {
  float s = 0;
  for (std::size_t f = 0; f < rank; ++f) s += u[f] * v[f];
  return s;
}

/// Dot product of two factor rows (the shorter width is used).
inline float mf_dot(std::span<const float> u, std::span<const float> v) noexcept {
  return mf_dot(u.data(), v.data(), std::min(u.size(), v.size()));
}

/// One SGD step on one observed rating r ≈ offset + u·v, in place on raw rows of width `rank`:
///   e = r − offset − u·v;  u += η(e·v − λ_u·u);  v += η(e·u_old − λ_v·v).
/// It descends ½[e² + λ_u‖u‖² + λ_v‖v‖²]; the factor 2 of the squared loss is folded into η.
/// Both rows are updated from the old values of the other (a simultaneous step). Returns e, the
/// residual before the step, so callers can accumulate the training error for free.
inline float mf_sgd_step(float* u, float* v, std::size_t rank, float r, float eta, float lambda_u, float lambda_v,
                         float offset = 0) noexcept {
  const float e = r - offset - mf_dot(u, v, rank);
  for (std::size_t f = 0; f < rank; ++f) {
    const float uf = u[f], vf = v[f];
    u[f] = uf + eta * (e * vf - lambda_u * uf);
    v[f] = vf + eta * (e * uf - lambda_v * vf);
  }
  return e;
}

/// mf_sgd_step on spans of equal width (the shorter width is used).
inline float mf_sgd_step(std::span<float> u, std::span<float> v, float r, float eta, float lambda_u, float lambda_v,
                         float offset = 0) noexcept {
  return mf_sgd_step(u.data(), v.data(), std::min(u.size(), v.size()), r, eta, lambda_u, lambda_v, offset);
}

/// mf_sgd_step with one regularisation weight for both rows.
inline float mf_sgd_step(std::span<float> u, std::span<float> v, float r, float eta, float lambda) noexcept {
  return mf_sgd_step(u, v, r, eta, lambda, lambda);
}

/// Learning-rate schedule η_t = η0 / (1 + decay·t), t counted in epochs (clocks) from 0.
struct inverse_decay_schedule {
  double eta0 = 0.01;  ///< rate at t = 0
  double decay = 0;    ///< 0 gives a constant rate
  /// The rate for epoch t.
  float operator()(std::uint64_t t) const noexcept { return static_cast<float>(eta0 / (1 + decay * static_cast<double>(t))); }
};

/// Squared norm of one factor row (for the regulariser; workers sum it over the rows they own).
inline double mf_sq_norm(std::span<const float> row) noexcept {
  double s = 0;
  for (float x : row) s += static_cast<double>(x) * x;
  return s;
}

/// Each user's and item's regularisation in one SGD step, and each one's weight in the loss
/// Σ_Ω (r − r̂)² + λ Σ_u c_u ‖u‖² + λ Σ_i c_i ‖v_i‖². Plain (`weighted` false): c = 1, λ weighs the
/// whole loss, so a step on one of user u's n_u ratings takes λ / n_u. Weighted-λ (ALS-WR's form,
/// and what a per-rating step of λ means in LIBMF and most SGD codes): c = n, so every step takes λ
/// and users and items with many ratings are held back in proportion; on data where counts span
/// orders of magnitude (Netflix's shape) it generalises better. Users or items without ratings
/// take no step and weigh 1 (plain) or 0 (weighted) in the loss.
struct mf_regularisation {
  std::vector<float> step_user, step_item;      ///< per-step λ of each user and item
  std::vector<float> weight_user, weight_item;  ///< c of each in the loss
};
inline mf_regularisation mf_regularise(std::span<const io::rating> ratings, std::uint32_t num_users, std::uint32_t num_items,
                                       double lambda, bool weighted) {
  std::vector<std::uint32_t> n_user(num_users, 0), n_item(num_items, 0);
  for (const auto& r : ratings) ++n_user[r.user], ++n_item[r.item];
  mf_regularisation g;
  const auto fill = [&](const std::vector<std::uint32_t>& n, std::vector<float>& step, std::vector<float>& weight) {
    step.resize(n.size());
    weight.resize(n.size());
    for (std::size_t k = 0; k < n.size(); ++k) {
      const float c = static_cast<float>(n[k]);
      step[k] = n[k] == 0 ? 0.0f : weighted ? static_cast<float>(lambda) : static_cast<float>(lambda) / c;
      weight[k] = weighted ? c : 1.0f;
    }
  };
  fill(n_user, g.step_user, g.weight_user);
  fill(n_item, g.step_item, g.weight_item);
  return g;
}

/// Σ (r − offset − u_i·v_j)² over `ratings`; user_row(i) / item_row(j) return the factor rows
/// (anything convertible to std::span<const float>). A partial sum a worker can report.
template <class UserRow, class ItemRow>
double mf_squared_error(std::span<const io::rating> ratings, UserRow&& user_row, ItemRow&& item_row, float offset = 0) {
  double s = 0;
  for (const auto& r : ratings) {
    const std::span<const float> u = user_row(r.user);
    const std::span<const float> v = item_row(r.item);
    const double e = static_cast<double>(r.value) - offset - mf_dot(u, v);
    s += e * e;
  }
  return s;
}

/// Root mean squared error over `ratings` (0 for an empty set).
template <class UserRow, class ItemRow>
double mf_rmse(std::span<const io::rating> ratings, UserRow&& user_row, ItemRow&& item_row, float offset = 0) {
  if (ratings.empty()) return 0;
  return std::sqrt(mf_squared_error(ratings, user_row, item_row, offset) / static_cast<double>(ratings.size()));
}

/// The loss of SEEDS.md, Σ_Ω (r − offset − u_i·v_j)² + λ(Σ_i ‖u_i‖² + Σ_j ‖v_j‖²), over users
/// 0..num_users-1 and items 0..num_items-1 (offset = 0 gives the formula exactly).
template <class UserRow, class ItemRow>
double mf_loss(std::span<const io::rating> ratings, UserRow&& user_row, ItemRow&& item_row, std::uint32_t num_users,
               std::uint32_t num_items, double lambda, float offset = 0) {
  double reg = 0;
  for (std::uint32_t i = 0; i < num_users; ++i) reg += mf_sq_norm(user_row(i));
  for (std::uint32_t j = 0; j < num_items; ++j) reg += mf_sq_norm(item_row(j));
  return mf_squared_error(ratings, user_row, item_row, offset) + lambda * reg;
}

/// Settings of the reference trainer.
struct mf_options {
  // Defaults tuned on MovieLens small (fetch_data.sh split): test RMSE ≈ 0.927 against 1.060
  // for the global mean. λ is large because it weighs the whole loss, not each rating.
  std::uint32_t rank = 10;                   ///< factor width
  double lambda = 10;                        ///< λ of the loss (see mf_reference for the per-step scaling)
  inverse_decay_schedule eta{0.01, 0};       ///< learning rate per epoch
  std::uint32_t epochs = 20;                 ///< passes over the training ratings
  std::uint64_t seed = 1;                    ///< seeds the initial factors and the visiting order
  float init_scale = 0.1f;                   ///< initial factors are uniform in [−init_scale, init_scale]
  bool center = true;                        ///< predict mean + u·v (else u·v, the plain SEEDS model)
  bool shuffle = true;                       ///< visit ratings in a fresh random order each epoch
};

/// Factor matrices U (num_users × rank) and V (num_items × rank), row-major, plus an offset.
struct mf_model {
  std::uint32_t rank = 0;          ///< factor width
  std::uint32_t num_users = 0;     ///< rows of U
  std::uint32_t num_items = 0;     ///< rows of V
  float offset = 0;                ///< added to every prediction (the training mean when centred)
  std::vector<float> user_factors; ///< U, row-major
  std::vector<float> item_factors; ///< V, row-major

  /// User i's factor row.
  std::span<float> user(std::uint32_t i) noexcept { return {user_factors.data() + std::size_t{i} * rank, rank}; }
  /// User i's factor row (read-only).
  std::span<const float> user(std::uint32_t i) const noexcept { return {user_factors.data() + std::size_t{i} * rank, rank}; }
  /// Item j's factor row.
  std::span<float> item(std::uint32_t j) noexcept { return {item_factors.data() + std::size_t{j} * rank, rank}; }
  /// Item j's factor row (read-only).
  std::span<const float> item(std::uint32_t j) const noexcept { return {item_factors.data() + std::size_t{j} * rank, rank}; }
  /// Predicted rating; ids beyond the model (unseen in training) get just the offset.
  float predict(std::uint32_t i, std::uint32_t j) const noexcept {
    if (i >= num_users || j >= num_items) return offset;
    return offset + mf_dot(user(i), item(j));
  }
  /// RMSE of the model on a rating set (unseen ids predicted as the offset).
  double rmse(std::span<const io::rating> ratings) const noexcept {
    if (ratings.empty()) return 0;
    double s = 0;
    for (const auto& r : ratings) {
      const double e = static_cast<double>(r.value) - predict(r.user, r.item);
      s += e * e;
    }
    return std::sqrt(s / static_cast<double>(ratings.size()));
  }
  /// The SEEDS loss of the model on a rating set (ids must be within the model).
  double loss(std::span<const io::rating> ratings, double lambda) const {
    return mf_loss(ratings, [this](std::uint32_t i) { return user(i); }, [this](std::uint32_t j) { return item(j); },
                   num_users, num_items, lambda, offset);
  }
};

/// What the reference trainer returns.
struct mf_result {
  mf_model model;                  ///< the trained factors
  std::vector<double> loss;        ///< SEEDS loss on the training set: [0] at init, [e] after epoch e
  std::vector<double> train_rmse;  ///< training RMSE, same indexing
};

/// Sequential SGD matrix factorisation: plain loops over the training ratings, `epochs` times,
/// with η from the schedule at each epoch. The per-step regularisation is λ/n_i for user i and
/// λ/m_j for item j (n_i, m_j = their numbers of training ratings), so that one epoch's steps
/// add up to a gradient step on exactly the SEEDS loss rather than over-penalising heavy users.
/// Throws strata::error(bad_input) for rank 0.
inline mf_result mf_reference(const io::rating_set& train, const mf_options& opt) {
  if (opt.rank == 0) throw strata::error(errc::bad_input, "mf_reference: rank must be > 0");
  mf_result res;
  mf_model& m = res.model;
  m.rank = opt.rank;
  m.num_users = train.num_users;
  m.num_items = train.num_items;
  m.offset = opt.center ? static_cast<float>(train.mean()) : 0.0f;

  std::mt19937_64 rng(opt.seed);
  std::uniform_real_distribution<float> init(-opt.init_scale, opt.init_scale);
  m.user_factors.resize(std::size_t{m.num_users} * m.rank);
  m.item_factors.resize(std::size_t{m.num_items} * m.rank);
  for (auto& x : m.user_factors) x = init(rng);
  for (auto& x : m.item_factors) x = init(rng);

  std::vector<std::uint32_t> n_user(m.num_users, 0), n_item(m.num_items, 0);
  for (const auto& r : train.ratings) {
    if (r.user >= m.num_users || r.item >= m.num_items)
      throw strata::error(errc::bad_input, "mf_reference: rating id beyond num_users/num_items");
    ++n_user[r.user];
    ++n_item[r.item];
  }
  auto record = [&] {
    res.loss.push_back(m.loss(train.ratings, opt.lambda));
    res.train_rmse.push_back(m.rmse(train.ratings));
  };
  record();

  std::vector<std::uint32_t> order(train.size());
  std::iota(order.begin(), order.end(), 0u);
  const auto lambda = static_cast<float>(opt.lambda);
  for (std::uint32_t epoch = 0; epoch < opt.epochs; ++epoch) {
    if (opt.shuffle) std::shuffle(order.begin(), order.end(), rng);
    const float eta = opt.eta(epoch);
    for (std::uint32_t idx : order) {
      const io::rating& r = train.ratings[idx];
      mf_sgd_step(m.user(r.user), m.item(r.item), r.value, eta, lambda / static_cast<float>(n_user[r.user]),
                  lambda / static_cast<float>(n_item[r.item]), m.offset);
    }
    record();
  }
  return res;
}

}  // namespace strata::ml
