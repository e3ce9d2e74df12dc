// LDA checkpoints (apps/trainers/lda_trainer.hpp): a BSP run interrupted after a
// checkpoint and resumed ends with exactly the uninterrupted run's counts, topics and trace;
// under SSP/ESSP the count invariants hold exactly after a resume.
#include <doctest/doctest.h>

#include "../support/deadline.hpp"
#include "../support/scratch.hpp"
#include "../support/ml_data.hpp"
#include <trainers/lda_trainer.hpp>
#include <strata/strata.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_lda_resume {

namespace {

namespace fs = std::filesystem;
namespace ml = strata::ml;
using strata_test::within;

/// A fresh folder for one test (tmp/strata-lda-ckpt-<name>-<pid>), removed at its end.
struct scratch : strata_test::scratch {
  explicit scratch(const std::string& name) : strata_test::scratch("lda-ckpt-" + name) {}
};

ml::lda_trainer_options opts(std::uint32_t iterations) {
  ml::lda_trainer_options o;
  o.topics = 4;
  o.iterations = iterations;
  o.seed = 9;
  o.keep_model = true;
  o.keep_assignments = true;
  return o;
}

template <class C>
ml::lda_run run(const ml::lda_corpus& corpus, strata::system_config cfg, std::uint32_t iterations) {
  cfg.nodes = 2;
  cfg.workers_per_node = 2;
  cfg.staleness = 2;
  cfg.checkpoint.run_tag = "lda resume test";
  strata::system<C> sys(cfg);
  return ml::train_lda(sys, corpus, opts(iterations));
}

/// Σ_w n_wk from the kept model against the topics' own count; Σ_k n_k against the corpus.
void check_counts(const ml::lda_run& r, const ml::lda_corpus& corpus) {
  INFO(r.invariant_error);
  CHECK(r.invariants_ok);
  CHECK(r.model.tokens() == static_cast<std::int64_t>(corpus.tokens()));
  std::vector<std::int64_t> from_z(4, 0);
  REQUIRE(r.assignments.size() == corpus.words.size());
  for (std::size_t d = 0; d < corpus.words.size(); ++d) {
    std::uint64_t nd = 0;
    for (auto x : corpus.counts[d]) nd += x;
    REQUIRE(r.assignments[d].size() == nd);
    for (auto k : r.assignments[d]) ++from_z.at(k);
  }
  CHECK(r.model.topic_totals() == from_z);
}

}  // namespace

TEST_CASE("LDA checkpoint: a BSP run interrupted and resumed ends with exactly the uninterrupted run's counts and topics") {
  within(std::chrono::seconds(120), "lda bsp resume", [] {
    const auto corpus = strata_test::synthetic_corpus(4);
    const auto whole = run<strata::bsp>(corpus, {}, 10);
    REQUIRE(whole.invariants_ok);

    scratch s("bsp");
    strata::system_config with;
    with.checkpoint.dir = s.dir.string();
    with.checkpoint.every = 3;
    (void)run<strata::bsp>(corpus, with, 7);  // "interrupted" after sweep 7: checkpoints at clocks 3 and 6

    auto again = with;
    again.checkpoint.resume = s.dir.string();
    const auto resumed = run<strata::bsp>(corpus, again, 10);
    check_counts(resumed, corpus);
    // Exactly the same state: every word's counts, the totals, every token's topic, the final LL.
    CHECK(resumed.model.words.size() == whole.model.words.size());
    std::size_t differing_words = 0;
    for (std::size_t x = 0; x < whole.model.words.size() && x < resumed.model.words.size(); ++x) {
      const auto& a = whole.model.words[x];
      const auto& b = resumed.model.words[x];
      bool same = a.size() == b.size();
      for (std::size_t i = 0; same && i < a.size(); ++i) same = a[i].topic == b[i].topic && a[i].count == b[i].count;
      differing_words += same ? 0 : 1;
    }
    CHECK(differing_words == 0);
    CHECK(resumed.model.topic_totals() == whole.model.topic_totals());
    CHECK(resumed.assignments == whole.assignments);
    CHECK(resumed.final_loglik == whole.final_loglik);
    // The trace goes on from the checkpoint (clock 6: the state after sweep 5) with the same numbers.
    REQUIRE(resumed.iterations.size() == 6);
    CHECK(resumed.iterations.front().iteration == 5);
    CHECK(resumed.iterations.back().iteration == 10);
    for (const auto& r : resumed.iterations) {
      INFO("iteration " << r.iteration);
      CHECK(r.metric == doctest::Approx(whole.iterations.at(r.iteration).metric).epsilon(1e-12));
    }
    // Only the resumed sweeps were sampled.
    CHECK(resumed.tokens_sampled == 5 * corpus.tokens());

    // Nothing left to do: resuming a 5-sweep run from the checkpoint after sweep 5 is an error.
    auto done = with;
    done.checkpoint.resume = s.dir.string();
    done.checkpoint.dir.clear();
    done.checkpoint.every = 0;
    CHECK_THROWS_WITH_AS(run<strata::bsp>(corpus, done, 5), doctest::Contains("nothing is left"), strata::error);
  });
}

TEST_CASE_TEMPLATE("LDA checkpoint: after a resume under SSP/ESSP the count invariants hold exactly", C, strata::ssp<2>, strata::essp<2>) {
  within(std::chrono::seconds(120), "lda stale resume", [] {
    const auto corpus = strata_test::synthetic_corpus(6);
    scratch s("stale");
    strata::system_config with;
    with.checkpoint.dir = s.dir.string();
    with.checkpoint.every = 2;
    const auto first = run<C>(corpus, with, 6);  // checkpoints at clocks 2, 4 and 6 (after sweep 5)
    check_counts(first, corpus);

    auto again = with;
    again.checkpoint.resume = s.dir.string();
    const auto resumed = run<C>(corpus, again, 9);
    check_counts(resumed, corpus);
    REQUIRE(!resumed.iterations.empty());
    CHECK(resumed.iterations.front().iteration == 5);
    CHECK(resumed.iterations.back().iteration == 9);
    CHECK(resumed.tokens_sampled == 4 * corpus.tokens());
  });
}

}  // namespace test_ml_lda_resume
