#pragma once
// Small synthetic data for the trainer tests (tests/ml/): a noisy low-rank rating matrix.
#include <strata/ml/io/ratings.hpp>
#include <trainers/lda_trainer.hpp>
#include <trainers/mf_trainer.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace strata_test {

/// A noisy rank-3 rating matrix (60 users × 50 items, 40% observed) with user/item offsets,
/// split 90/10 at random.
inline std::pair<strata::ml::io::rating_set, strata::ml::io::rating_set> synthetic_ratings(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::uniform_real_distribution<float> u01(0, 1);
  const int U = 60, I = 50, R = 3;
  std::vector<float> A(U * R), B(I * R), bu(U), bi(I);
  for (auto& x : A) x = g(rng) * 0.6f;
  for (auto& x : B) x = g(rng) * 0.6f;
  for (auto& x : bu) x = g(rng) * 0.3f;
  for (auto& x : bi) x = g(rng) * 0.3f;
  strata::ml::io::rating_set train, test;
  for (int u = 0; u < U; ++u)
    for (int i = 0; i < I; ++i) {
      if (u01(rng) > 0.4f) continue;
      float v = 3.5f + bu[u] + bi[i] + g(rng) * 0.2f;
      for (int f = 0; f < R; ++f) v += A[u * R + f] * B[i * R + f];
      auto& s = u01(rng) < 0.1f ? test : train;
      s.ratings.push_back({static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(i), v});
      s.num_users = std::max<std::uint32_t>(s.num_users, u + 1);
      s.num_items = std::max<std::uint32_t>(s.num_items, i + 1);
    }
  return {train, test};
}

/// The SGD settings the trainer tests use on synthetic_ratings: rank 3, λ 1, 2 clocks per epoch.
inline strata::ml::mf_trainer_options small_mf_options(std::uint32_t iterations = 60) {
  strata::ml::mf_trainer_options o;
  o.rank = 3;
  o.lr = 0.03;
  o.decay = 0.05;
  o.lambda = 1;
  o.iterations = iterations;
  o.clocks_per_epoch = 2;
  o.block = 4;
  return o;
}

/// Two planted topics over 40 words; 60 documents of 30 tokens (the LDA trainer tests' corpus).
inline strata::ml::lda_corpus synthetic_corpus(std::uint64_t seed = 3) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint32_t>> docs(60);
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (int t = 0; t < 30; ++t) {
      const bool first = (rng() % 10) < (d % 2 ? 8u : 2u);
      docs[d].push_back(static_cast<std::uint32_t>((first ? 0 : 20) + rng() % 20));
    }
  return strata::ml::lda_corpus::from_tokens(docs, 40);
}

}  // namespace strata_test
