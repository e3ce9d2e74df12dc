// What the trainers hand back besides their figures: the final models (ml/mf_model.hpp,
// ml/lda_model.hpp) with their text files, predictions and top words, per-worker times in the
// trace records, the shared partitioner, and starting MF from a saved model.
#include <doctest/doctest.h>

#include "../support/ml_data.hpp"
#include <strata/core/error.hpp>
#include <strata/ml/lda_model.hpp>
#include <strata/ml/mf_model.hpp>
#include <strata/ml/partition.hpp>
#include <trainers/lda_trainer.hpp>
#include <trainers/mf_elastic.hpp>
#include <trainers/mf_trainer.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <csignal>
#include <cstring>
#include <functional>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_models {

namespace ml = strata::ml;

namespace {

/// The synthetic ratings of tests/support/ml_data.hpp.
std::pair<ml::io::rating_set, ml::io::rating_set> ratings(std::uint64_t seed = 21) { return strata_test::synthetic_ratings(seed); }

ml::mf_trainer_options mf_opts(std::uint32_t iterations = 30) {
  ml::mf_trainer_options o;
  o.rank = 3;
  o.lr = 0.03;
  o.lambda = 1;
  o.iterations = iterations;
  o.clocks_per_epoch = 2;
  o.block = 4;
  o.keep_model = true;
  return o;
}

ml::lda_corpus corpus(std::uint64_t seed = 9) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint32_t>> docs(40);
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (int t = 0; t < 25; ++t) docs[d].push_back(static_cast<std::uint32_t>((d % 2 ? 0 : 15) + rng() % 15));
  return ml::lda_corpus::from_tokens(docs, 30);
}

/// The bad_input message of what `f` throws ("" when nothing is thrown).
template <class F>
std::string bad_input(F&& f) {
  try {
    f();
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::bad_input);
    return e.what();
  }
  return "";
}

/// A file under the temp folder, removed at the end of the test.
struct temp_file {
  std::filesystem::path path;
  explicit temp_file(const std::string& name, const std::string& text = {})
      : path(std::filesystem::temp_directory_path() / ("strata_test_models_" + std::to_string(::getpid()) + "_" + name)) {
    if (!text.empty()) std::ofstream(path) << text;
  }
  std::string read() const {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  ~temp_file() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

}  // namespace

TEST_CASE("balanced_partition: heaviest first, each to the lightest part, deterministic") {
  const std::vector<std::uint64_t> w = {5, 4, 3, 3, 3};
  // 5 -> p0; 4 -> p1; 3 (item 2) -> p1 (4 < 5); 3 (item 3) -> p0 (5 < 7); 3 (item 4) -> p1 (7 < 8).
  CHECK(ml::balanced_partition(w, 2) == std::vector<std::uint32_t>{0, 1, 1, 0, 1});
  CHECK(ml::partition_members(ml::balanced_partition(w, 2), 2) == std::vector<std::vector<std::uint32_t>>{{0, 3}, {1, 2, 4}});
  std::mt19937_64 rng(4);
  std::vector<std::uint64_t> many(500);
  for (auto& x : many) x = rng() % 1000;
  const auto owner = ml::balanced_partition(many, 7);
  CHECK(owner == ml::balanced_partition(many, 7));
  std::vector<std::uint64_t> load(7, 0);
  for (std::size_t i = 0; i < many.size(); ++i) load[owner[i]] += many[i];
  // Greedy LPT: no part exceeds the lightest by more than the largest single weight.
  CHECK(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()) <=
        *std::max_element(many.begin(), many.end()));
}

TEST_CASE("MF: the kept model gives the run's final RMSE, and save -> load gives the same model and RMSE") {
  const auto [train, test] = ratings();
  strata::system<strata::bsp> sys({.nodes = 2, .workers_per_node = 2});
  const auto run = ml::train_mf(sys, train, test, mf_opts());
  const auto& m = run.model;
  REQUIRE(m.rank == 3);
  CHECK(m.num_users == std::max(train.num_users, test.num_users));
  CHECK(m.num_items == std::max(train.num_items, test.num_items));
  CHECK(m.mean == static_cast<float>(train.mean()));
  CHECK(m.rmse(test.ratings) == doctest::Approx(run.final_rmse).epsilon(1e-9));
  CHECK(std::abs(m.rmse(test.ratings) - run.final_rmse) < 1e-6);
  CHECK(run.final_rmse < run.iterations.front().metric);  // it learned

  std::stringstream file;
  ml::write_mf_model(file, m);
  const auto back = ml::read_mf_model(file, "mem");
  CHECK(back == m);  // bit for bit
  CHECK(std::abs(back.rmse(test.ratings) - run.final_rmse) < 1e-6);

  // Starting from the loaded model with no iterations evaluates it: the same RMSE, exactly the same model back.
  auto o = mf_opts(0);
  o.start = &back;
  strata::system<strata::essp<strata::dynamic_bound>> again({.nodes = 1, .workers_per_node = 3, .staleness = 1});
  const auto eval = ml::train_mf(again, train, test, o);
  CHECK(std::abs(eval.final_rmse - run.final_rmse) < 1e-6);
  REQUIRE(eval.iterations.size() == 1);
  CHECK(std::abs(eval.iterations[0].metric - run.final_rmse) < 1e-6);
  CHECK(eval.model == m);
  CHECK(eval.sgd_updates == 0);
}

TEST_CASE("MF: training resumes from a saved model where the first run ended") {
  const auto [train, test] = ratings(5);
  strata::system<strata::bsp> s1({.nodes = 1, .workers_per_node = 2});
  const auto first = ml::train_mf(s1, train, test, mf_opts(10));
  temp_file f("resume.model");
  ml::write_mf_model(f.path, first.model);
  const auto loaded = ml::read_mf_model(f.path);
  auto o = mf_opts(10);
  o.start = &loaded;
  o.seed = 2;  // the start model, not the seed, decides the initial factors
  strata::system<strata::bsp> s2({.nodes = 1, .workers_per_node = 2});
  const auto second = ml::train_mf(s2, train, test, o);
  CHECK(std::abs(second.iterations.front().metric - first.final_rmse) < 1e-6);
  CHECK(second.final_rmse < first.iterations.front().metric);
  CHECK(second.model.mean == first.model.mean);
  // A start model of another rank is refused.
  auto bad = mf_opts(1);
  bad.rank = 4;
  bad.start = &loaded;
  strata::system<strata::bsp> s3({.nodes = 1, .workers_per_node = 1});
  CHECK(bad_input([&] { (void)ml::train_mf(s3, train, test, bad); }).find("rank 3") != std::string::npos);
}

TEST_CASE("MF elastic m: segments go on from the last model, m changes (widest first, then scaling in), the run stops at the target") {
  const auto [train, test] = ratings(5);
  auto o = mf_opts(40);
  o.keep_model = false;
  o.eval_every = 1;
  strata::system<strata::bsp> fixed_sys({.nodes = 1, .workers_per_node = 2});
  const auto fixed = ml::train_mf(fixed_sys, train, test, o);
  const double target = fixed.iterations.at(12).metric;  // reached by a fixed run of 2 workers
  REQUIRE(target < fixed.iterations.front().metric);
  std::vector<std::uint32_t> ran;
  const auto segment = [&](std::uint32_t m, const ml::mf_trainer_options& so) {
    ran.push_back(m);
    CHECK(so.keep_model);
    CHECK((so.first_iteration == 0) == (so.start == nullptr));
    strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = m});
    return ml::train_mf(sys, train, test, so);
  };
  strata::cost::elastic_policy policy;
  const auto r = ml::train_mf_elastic(o, target, {.workers = {1, 2, 4}, .every = 4, .count_switches = true}, policy, segment);
  REQUIRE(r.segments.size() >= 2);
  CHECK(ran.at(0) == 4);
  CHECK(ran.at(1) == 2);
  CHECK(r.reached);
  CHECK(r.iterations.back().metric <= target);  // it stops after the segment that reached it
  CHECK(r.iterations_run < o.iterations);
  REQUIRE(r.iterations.size() == r.iterations_run + 1);
  for (std::size_t it = 1; it < r.iterations.size(); ++it) {
    CHECK(r.iterations[it].iteration == it);
    CHECK(r.iterations[it].elapsed_s >= r.iterations[it - 1].elapsed_s);
  }
  const double rmse0 = r.iterations.front().metric;
  for (std::size_t k = 1; k < r.segments.size(); ++k) {
    INFO("segment " << k);
    CHECK(r.segments[k].first == r.segments[k - 1].last + 1);
    CHECK(r.segments[k].workers == ran.at(k));
    // The model carries: a segment's first iteration is near where the last one ended, not back at the start.
    const double before = r.iterations.at(r.segments[k - 1].last).metric, after = r.iterations.at(r.segments[k].first).metric;
    CHECK(after < rmse0 - 0.5 * (rmse0 - before));
  }
  CHECK(r.model.rmse(test.ratings) == doctest::Approx(r.final_rmse).epsilon(1e-6));
  // Bad input: no target, no true-model evaluation, a first iteration past the end.
  CHECK_THROWS_WITH_AS(ml::train_mf_elastic(o, 0.0, {.workers = {1, 2}}, policy, segment), doctest::Contains("target test RMSE"),
                       strata::error);
  auto stale = o;
  stale.eval_every = 0;
  CHECK_THROWS_WITH_AS(ml::train_mf_elastic(stale, target, {.workers = {1, 2}}, policy, segment), doctest::Contains("eval-every 1"),
                       strata::error);
  auto past = o;
  past.first_iteration = 40;
  strata::system<strata::bsp> s3({.nodes = 1, .workers_per_node = 1});
  CHECK(bad_input([&] { (void)ml::train_mf(s3, train, test, past); }).find("nothing is left of 40 iterations") != std::string::npos);
}

TEST_CASE("MF: sparse ids train on dense rows, the model, its file, --load and predictions keep the original ids") {
  // The synthetic ratings with sparse original ids: user u is u * 1000003 + 4000000000, item i is i * 977.
  const auto [dtrain, dtest] = ratings(13);
  auto text_of = [](const ml::io::rating_set& s) {
    std::string t;
    for (const auto& r : s.ratings)
      t += std::to_string(std::uint64_t{r.user} * 1000003 + 4000000000ULL) + " " + std::to_string(std::uint64_t{r.item} * 977) +
           " " + std::to_string(r.value) + "\n";
    return t;
  };
  std::istringstream tr(text_of(dtrain)), te(text_of(dtest));
  auto train = ml::io::read_ratings(tr, "train"), test = ml::io::read_ratings(te, "test");
  ml::io::share_ids(train, test);
  REQUIRE(train.remapped());
  CHECK(train.num_users <= 60);
  CHECK(train.num_items <= 50);
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
  const auto run = ml::train_mf(sys, train, test, mf_opts(20));
  const auto& m = run.model;
  CHECK(m.num_users == train.num_users);
  CHECK(m.user_ids == train.user_ids);
  CHECK(m.item_ids == train.item_ids);
  CHECK(std::abs(m.rmse(test.ratings) - run.final_rmse) < 1e-6);
  for (const auto& r : test.ratings)  // a prediction by original ids is the prediction of the rows
    CHECK(m.predict_ids(test.user_id(r.user), test.item_id(r.item)) == m.predict(r.user, r.item));
  CHECK(m.predict_ids(7, 7) == m.mean);  // unknown ids: all-zero rows

  // The file names the original ids and reads back to the same model.
  std::stringstream file;
  ml::write_mf_model(file, m);
  CHECK(file.str().find("\nuser " + std::to_string(train.user_id(0)) + " ") != std::string::npos);
  const auto back = ml::read_mf_model(file, "mem");
  CHECK(back == m);

  // --load against data in another dense numbering (the first user gone, so every later row
  // moves up one): rows are matched by original id, so evaluating gives the model's figures.
  const std::uint64_t gone = train.user_id(0);
  std::string t2, e2;
  for (const std::string& line : {text_of(dtrain), text_of(dtest)}) {
    std::istringstream in(line);
    std::string l, kept;
    while (std::getline(in, l))
      if (l.rfind(std::to_string(gone) + " ", 0) != 0) kept += l + "\n";
    (t2.empty() ? t2 : e2) = kept;
  }
  std::istringstream tr2(t2), te2(e2);
  auto train2 = ml::io::read_ratings(tr2, "train2"), test2 = ml::io::read_ratings(te2, "test2");
  ml::io::share_ids(train2, test2);
  REQUIRE(train2.user_id(0) != gone);
  double sq = 0;
  for (const auto& r : test2.ratings) {
    const double e = r.value - back.predict_ids(test2.user_id(r.user), test2.item_id(r.item));
    sq += e * e;
  }
  auto o = mf_opts(0);
  o.start = &back;
  strata::system<strata::bsp> again({.nodes = 1, .workers_per_node = 1});
  const auto eval = ml::train_mf(again, train2, test2, o);
  CHECK(std::abs(eval.final_rmse - std::sqrt(sq / test2.size())) < 1e-6);
  for (std::uint32_t u = 0; u < eval.model.num_users; ++u) {  // every row is the loaded model's row of that id
    const auto row = back.user_row(eval.model.user_id(u));
    REQUIRE(row < back.num_users);
    CHECK(std::equal(back.user(row).begin(), back.user(row).end(), eval.model.user(u).begin()));
  }
}

TEST_CASE("MF: no training ratings, or train and test in different id spaces, is an error (not a run)") {
  const auto [train, test] = ratings(3);
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 1});
  CHECK(bad_input([&] { (void)ml::train_mf(sys, ml::io::rating_set{}, test, mf_opts(1)); }).find("no training ratings") !=
        std::string::npos);
  std::istringstream a("5 5 1\n9 9 2\n"), b("9 5 3\n");
  auto tr = ml::io::read_ratings(a, "a"), te = ml::io::read_ratings(b, "b");
  CHECK(bad_input([&] { (void)ml::train_mf(sys, tr, te, mf_opts(1)); }).find("different id spaces") != std::string::npos);
}

TEST_CASE("MF: predictions are mean + user bias + item bias + the factors' dot product") {
  const auto [train, test] = ratings(8);
  strata::system<strata::bsp> sys({.nodes = 1, .workers_per_node = 2});
  const auto run = ml::train_mf(sys, train, test, mf_opts(8));
  const auto& m = run.model;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
  for (const auto& r : test.ratings) pairs.emplace_back(r.user, r.item);
  pairs.emplace_back(m.num_users + 5, 0);  // unseen user: mean + item bias
  pairs.emplace_back(0, m.num_items);      // unseen item: mean + user bias
  temp_file in("pairs.txt"), out("predictions.txt");
  {
    std::ofstream w(in.path);
    w << "# user item\n";
    for (auto [u, i] : pairs) w << u << ' ' << i << " 4.5\n";  // a ratings file as it is
  }
  const auto read = ml::read_pairs(in.path);
  CHECK(read == pairs);
  ml::write_predictions(out.path, m, read);
  std::istringstream lines(out.read());
  std::uint32_t u = 0, i = 0;
  float p = 0;
  std::size_t n = 0;
  while (lines >> u >> i >> p) {
    REQUIRE(n < pairs.size());
    CHECK(u == pairs[n].first);
    CHECK(i == pairs[n].second);
    double expect = m.mean;
    if (u < m.num_users) expect += m.user(u)[m.rank];
    if (i < m.num_items) expect += m.item(i)[m.rank];
    if (u < m.num_users && i < m.num_items)
      for (std::uint32_t f = 0; f < m.rank; ++f) expect += static_cast<double>(m.user(u)[f]) * m.item(i)[f];
    CHECK(p == doctest::Approx(expect).epsilon(1e-5));
    CHECK(p == m.predict(u, i));  // the file holds the float exactly
    ++n;
  }
  CHECK(n == pairs.size());
  // The RMSE from the predictions file is the run's final RMSE.
  double sq = 0;
  std::istringstream again(out.read());
  for (const auto& r : test.ratings) {
    again >> u >> i >> p;
    const double e = r.value - p;
    sq += e * e;
  }
  CHECK(std::abs(std::sqrt(sq / static_cast<double>(test.size())) - run.final_rmse) < 1e-6);
  temp_file bad("bad_pairs.txt", "1 2\n3\n");
  CHECK(bad_input([&] { (void)ml::read_pairs(bad.path); }).find(bad.path.string() + ":2:") == 0);
}

TEST_CASE("MF model files: a malformed file is an error naming the file and line") {
  const std::string head = "strata_mf_model 1 rank 2 users 1 items 1 mean 3.5\n";
  const std::string ok = head + "user 0 0.1 1 2\nitem 0 -0.2 3 4\n";
  {
    std::istringstream in("# comment\n\n" + ok);
    const auto m = ml::read_mf_model(in, "m");
    CHECK(m.predict(0, 0) == doctest::Approx(3.5 + 0.1 - 0.2 + 1 * 3 + 2 * 4));
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "m:1:"},
      {"strata_lda_model 1 topics 2\n", "m:1:"},
      {"strata_mf_model 2 rank 2 users 1 items 1 mean 3\n", "m:1:"},
      {"strata_mf_model 1 rank x users 1 items 1 mean 3\n", "m:1:"},
      {"strata_mf_model 1 rank 2 users 1 items 1 mean nan\n", "m:1:"},
      {head + "user 0 0.1 1\nitem 0 0 3 4\n", "m:2:"},          // too few numbers
      {head + "user 0 0.1 1 2 3\nitem 0 0 3 4\n", "m:2:"},      // too many
      {"strata_mf_model 1 rank 2 users 2 items 1 mean 3\nuser 5 0.1 1 2\nuser 5 0 1 2\nitem 0 0 3 4\n", "m:3:"},  // ids not increasing
      {head + "player 0 0.1 1 2\nitem 0 0 3 4\n", "m:2:"},     // wrong kind
      {head + "user 0 0.1 1 2\nitem 0 0 3 x\n", "m:3:"},        // bad number
      {head + "user 0 0.1 1 2\n", "m:3:"},                      // missing item
      {ok + "item 1 0 0 0\n", "m:4:"},                          // extra line
      {"strata_mf_model 1 rank 2 users 100000 items 1 mean 3\nuser 0 0 0 0\n", "m:1:"},  // promises too much
  };
  for (const auto& [text, where] : bad) {
    INFO(text);
    std::istringstream in(text);
    CHECK(bad_input([&] { (void)ml::read_mf_model(in, "m"); }).find(where) == 0);
  }
  {  // A UTF-8 BOM before the header (a file saved by a Windows editor) reads as the same model.
    std::istringstream plain(ok), marked("\xEF\xBB\xBF" + ok);
    const auto a = ml::read_mf_model(plain, "m"), b = ml::read_mf_model(marked, "m");
    CHECK(b.users == a.users);
    CHECK(b.items == a.items);
    CHECK(b.mean == a.mean);
    temp_file bom("bom.model", "\xEF\xBB\xBF" + ok);
    CHECK(ml::read_mf_model(bom.path).users == a.users);
  }
  temp_file f("bad.model", head + "user 0 0.1 1 2\nitem 0 0 3 x\n");
  CHECK(bad_input([&] { (void)ml::read_mf_model(f.path); }).find(f.path.string() + ":3:") == 0);
  CHECK_THROWS_AS((void)ml::read_mf_model("/nonexistent/model"), strata::error);
}

TEST_CASE("trace records keep every worker's elapsed time and the metric's name") {
  const auto [train, test] = ratings(3);
  std::vector<strata::iteration_record> seen;
  std::mutex mu;
  strata::system<strata::ssp<1>> sys({.nodes = 2, .workers_per_node = 2});
  const auto run = ml::train_mf(sys, train, test, mf_opts(6), [&](const strata::iteration_record& r) {
    std::lock_guard lk(mu);
    seen.push_back(r);
  });
  REQUIRE(run.iterations.size() == 7);
  for (const auto& r : run.iterations) {
    INFO("iteration " << r.iteration);
    CHECK(r.metric_name == "rmse");
    REQUIRE(r.worker_elapsed_s.size() == 4);
    CHECK(*std::max_element(r.worker_elapsed_s.begin(), r.worker_elapsed_s.end()) == r.elapsed_s);
    for (double t : r.worker_elapsed_s) CHECK(t > 0);
  }
  for (std::size_t i = 1; i < run.iterations.size(); ++i)
    for (std::size_t w = 0; w < 4; ++w) CHECK(run.iterations[i].worker_elapsed_s[w] >= run.iterations[i - 1].worker_elapsed_s[w]);
  REQUIRE(seen.size() == 7);  // the live callback sees this process's workers: all of them here
  for (const auto& r : seen) {
    CHECK(r.metric_name == "rmse");
    CHECK(r.worker_elapsed_s.size() == 4);
  }

  strata::system<strata::bsp> s2({.nodes = 1, .workers_per_node = 3});
  ml::lda_trainer_options lo;
  lo.topics = 3;
  lo.iterations = 3;
  const auto lda = ml::train_lda(s2, corpus(), lo);
  for (const auto& r : lda.iterations) {
    CHECK(r.metric_name == "loglik");
    CHECK(r.worker_elapsed_s.size() == 3);
  }
  CHECK(lda.model.words.empty());  // not asked for
}

TEST_CASE("LDA: the kept counts are the run's (column sums, tokens), save -> load is exact, top words are the largest counts") {
  const auto c = corpus();
  ml::lda_trainer_options lo;
  lo.topics = 4;
  lo.iterations = 8;
  lo.keep_model = true;
  strata::system<strata::essp<2>> sys({.nodes = 2, .workers_per_node = 2});
  const auto run = ml::train_lda(sys, c, lo);
  REQUIRE(run.invariants_ok);
  const auto& m = run.model;
  REQUIRE(m.words.size() == c.vocab_size);
  CHECK(m.topics == 4);
  CHECK(m.tokens() == static_cast<std::int64_t>(c.tokens()));
  // Σ_w n_wk per word equals the word's occurrences in the corpus.
  std::vector<std::int64_t> occurrences(c.vocab_size, 0);
  for (std::size_t d = 0; d < c.words.size(); ++d)
    for (std::size_t e = 0; e < c.words[d].size(); ++e) occurrences[c.words[d][e]] += c.counts[d][e];
  for (std::uint32_t w = 0; w < c.vocab_size; ++w) {
    std::int64_t s = 0;
    for (const auto& e : m.words[w]) {
      CHECK(e.count > 0);
      s += e.count;
    }
    CHECK(s == occurrences[w]);
  }
  // log p(w|z) ≥ the joint log-likelihood (the documents' part log p(z) is negative).
  CHECK(m.word_loglik() > run.final_loglik);

  std::stringstream file;
  ml::write_lda_model(file, m);
  const auto back = ml::read_lda_model(file, "mem");
  CHECK(back == m);
  CHECK(back.word_loglik() == m.word_loglik());

  const auto top = m.top_words(5);
  REQUIRE(top.size() == 4);
  for (std::uint32_t k = 0; k < 4; ++k) {
    INFO("topic " << k);
    std::size_t used = 0;  // a topic may hold fewer than 5 words on this small corpus
    for (std::uint32_t w = 0; w < c.vocab_size; ++w) used += m.count(w, k) > 0;
    REQUIRE(top[k].size() == std::min<std::size_t>(5, used));
    if (used == 0) continue;  // a topic the chain emptied (ESSP's timing decides; none of its counts to rank)
    std::int32_t best = 0;
    for (std::uint32_t w = 0; w < c.vocab_size; ++w) best = std::max(best, m.count(w, k));
    CHECK(m.count(top[k][0], k) == best);  // the first is an argmax
    for (std::size_t i = 1; i < top[k].size(); ++i) {
      const auto a = m.count(top[k][i - 1], k), b = m.count(top[k][i], k);
      CHECK((a > b || (a == b && top[k][i - 1] < top[k][i])));
    }
    for (std::uint32_t w = 0; w < c.vocab_size; ++w)  // nothing left out beats the last one
      if (std::find(top[k].begin(), top[k].end(), w) == top[k].end()) CHECK(m.count(w, k) <= m.count(top[k].back(), k));
  }
}

TEST_CASE("LDA model: top words on a small hand-made model, and malformed files name the line") {
  std::istringstream in(
      "strata_lda_model 1 topics 2 vocab 4 alpha 0.1 beta 0.01\n"
      "0 0:5 1:1\n"
      "1\n"
      "2 0:5\n"
      "# a comment\n"
      "3 0:2 1:7\n");
  const auto m = ml::read_lda_model(in, "m");
  CHECK(m.top_words(2) == std::vector<std::vector<std::uint32_t>>{{0, 2}, {3, 0}});  // ties: lower word first
  CHECK(m.top_words(9) == std::vector<std::vector<std::uint32_t>>{{0, 2, 3}, {3, 0}});
  CHECK(m.topic_totals() == std::vector<std::int64_t>{12, 8});
  const double expect = ml::lda_topic_loglik(std::vector<std::int64_t>{12, 8}, m.params()) +
                        2 * (ml::log_gamma(5.01) - ml::log_gamma(0.01)) + (ml::log_gamma(1.01) - ml::log_gamma(0.01)) +
                        (ml::log_gamma(2.01) - ml::log_gamma(0.01)) + (ml::log_gamma(7.01) - ml::log_gamma(0.01));
  CHECK(m.word_loglik() == doctest::Approx(expect).epsilon(1e-12));

  {  // A UTF-8 BOM before the header reads as the same model.
    std::ostringstream text;
    ml::write_lda_model(text, m);
    std::istringstream marked("\xEF\xBB\xBF" + text.str());
    const auto b = ml::read_lda_model(marked, "m");
    CHECK(b == m);
    CHECK(b.word_loglik() == m.word_loglik());
  }

  const std::string head = "strata_lda_model 1 topics 2 vocab 2 alpha 0.1 beta 0.01\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "m:1:"},
      {"strata_lda_model 1 topics 0 vocab 2 alpha 0.1 beta 0.01\n", "m:1:"},
      {"strata_lda_model 1 topics 2 vocab 2 alpha -1 beta 0.01\n", "m:1:"},
      {head + "0 0:1\n", "m:3:"},              // missing word 1
      {head + "0 0:1\n2 1:1\n", "m:3:"},       // wrong id
      {head + "0 2:1\n1\n", "m:2:"},           // topic out of range
      {head + "0 0:0\n1\n", "m:2:"},           // zero count
      {head + "0 0:-3\n1\n", "m:2:"},          // negative count
      {head + "0 1:1 0:1\n1\n", "m:2:"},       // out of order
      {head + "0 0:1 0:2\n1\n", "m:2:"},       // repeated
      {head + "0 0:x\n1\n", "m:2:"},           // not a count
      {head + "0 01\n1\n", "m:2:"},            // no colon
      {head + "0\n1\n2\n", "m:4:"},            // extra line
  };
  for (const auto& [text, where] : bad) {
    INFO(text);
    std::istringstream s(text);
    CHECK(bad_input([&] { (void)ml::read_lda_model(s, "m"); }).find(where) == 0);
  }
}

namespace {

/// What `save` throws in a child process whose files may not grow past 4 KiB (RLIMIT_FSIZE, as a
/// full disk would stop them): "" when it throws nothing, "CRASH" when the child dies.
template <class F>
std::string in_small_fs(F&& save) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG instead of killing
    const rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string what;
    try {
      save();
    } catch (const std::exception& e) {
      what = e.what();
    }
    (void)!::write(fds[1], what.data(), what.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string what;
  char buf[512];
  for (::ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) what.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? what : "CRASH";
}

/// The names in `dir`.
std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("--save on a full disk or into a folder it cannot write leaves the previous model whole and names the file and the reason") {
  const auto dir = std::filesystem::temp_directory_path() / ("strata_test_models_save_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto mf = dir / "mf.model", lda = dir / "lda.model";
  auto m = ml::mf_biased_model::zeros(8, 200, 100, 3.5f);  // ~20 KiB of text: past the 4 KiB limit
  for (std::size_t i = 0; i < m.users.size(); ++i) m.users[i] = 0.001f * static_cast<float>(i % 997);
  ml::lda_word_topic_model lm;
  lm.topics = 5;
  lm.vocab = 2000;
  lm.words.resize(lm.vocab, {{0, 3}, {4, 1}});
  const std::string before = "the previous model\n";
  std::ofstream(mf) << before;
  std::ofstream(lda) << before;
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };

  SUBCASE("the disk fills up (RLIMIT_FSIZE): EFBIG") {
    for (auto [file, save] : {std::pair<std::filesystem::path, std::function<void()>>{mf, [&] { ml::write_mf_model(mf, m); }},
                              {lda, [&] { ml::write_lda_model(lda, lm); }}}) {
      INFO(file);
      const auto what = in_small_fs(save);
      CHECK(what.find(file.string()) != std::string::npos);
      CHECK(what.find(std::strerror(EFBIG)) != std::string::npos);
      CHECK(what.find("malformed input") == std::string::npos);
      CHECK(read(file) == before);  // not cut short
    }
    CHECK(names_in(dir) == std::vector<std::string>{"lda.model", "mf.model"});  // no temporary file left
    ml::write_mf_model(mf, m);  // without the limit the same call writes the whole model
    CHECK(ml::read_mf_model(mf.string()).users == m.users);
  }
  SUBCASE("a device that is always full (/dev/full) is written in place, and its ENOSPC named") {
    try {
      ml::write_mf_model("/dev/full", m);
      FAIL("no error");
    } catch (const strata::error& e) {
      CHECK(std::string(e.what()).find("/dev/full") != std::string::npos);
      CHECK(std::string(e.what()).find(std::strerror(ENOSPC)) != std::string::npos);
    }
    CHECK(std::filesystem::is_character_file("/dev/full"));
  }
  SUBCASE("a folder that is a file (ENOTDIR), or read-only (EACCES, when not root)") {
    try {
      ml::write_lda_model(mf / "x.model", lm);
      FAIL("no error");
    } catch (const strata::error& e) {
      CHECK(std::string(e.what()).find((mf / "x.model").string()) != std::string::npos);
      CHECK(std::string(e.what()).find(std::strerror(ENOTDIR)) != std::string::npos);
      CHECK(std::string(e.what()).find("malformed input") == std::string::npos);
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    if (::access(dir.c_str(), W_OK) == 0) {
      MESSAGE("running as root: a read-only folder is writable, its case is not checked");
    } else {
      try {
        ml::write_mf_model(mf, m);
        FAIL("no error");
      } catch (const strata::error& e) {
        CHECK(std::string(e.what()).find(mf.string()) != std::string::npos);
        CHECK(std::string(e.what()).find(std::strerror(EACCES)) != std::string::npos);
      }
      CHECK(read(mf) == before);
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace test_ml_models
