// Traces to fit points (include/strata/cost/trace_fit.hpp): the probe point from the configuration
// line, time per iteration after the warm-up, the normalised objective, and bad input (malformed
// line, NaN, non-increasing iterations, too few points) as errors naming FILE:LINE.
#include <doctest/doctest.h>

#include "../paths.hpp"

#include <strata/core/error.hpp>
#include <strata/core/trace.hpp>
#include <strata/cost/system_model.hpp>
#include <strata/cost/trace_fit.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_cost_trace_fit {

namespace {
namespace cost = strata::cost;

struct temp_trace {
  std::filesystem::path path;
  temp_trace(const std::string& name, const std::string& text)
      : path(std::filesystem::temp_directory_path() / ("strata_test_cost_" + std::to_string(::getpid()) + "_" + name)) {
    std::ofstream(path) << text;
  }
  ~temp_trace() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

const std::string config_line =
    R"({"config": {"trainer": "lda", "consistency": "ssp", "staleness": 3, "workers": 4, "delay_us": 250, "tokens": 1000, "scale": 0.5}})";
std::string it_line(int i, const std::string& elapsed, const std::string& objective) {
  return R"({"iteration": )" + std::to_string(i) + R"(, "elapsed_s": )" + elapsed + R"(, "objective": )" + objective +
         R"(, "loglik": )" + objective + "}";
}

/// The message of the strata::error reading `text` as a run trace (and taking its timing) throws.
std::string error_of(const std::string& text, std::string* file = nullptr) {
  temp_trace t("bad.jsonl", text);
  if (file) *file = t.path.string();
  try {
    const auto r = cost::read_run_trace(t.path);
    (void)cost::timing_of(r);
  } catch (const strata::error& e) {
    CHECK(e.code() == strata::errc::bad_input);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("trace fit: configuration, time per iteration and normalised objective") {
  std::string text = config_line + "\n";
  for (int i = 0; i <= 4; ++i) text += it_line(i, std::to_string(0.5 + 0.25 * i + (i == 0 ? 0.0 : 0.5)), std::to_string(-2000.0 + 100 * i)) + "\n";
  temp_trace t("good.jsonl", text);
  const auto r = cost::read_run_trace(t.path, {.unbounded_staleness = 8, .cores = 2});
  CHECK(r.config.workers == 4);
  CHECK(r.config.scale == 0.5);
  CHECK(r.config.consistency == "ssp");
  CHECK(r.config.staleness == 3);
  CHECK(r.config.latency_s == doctest::Approx(250e-6));
  CHECK(r.config.cores == 2);
  CHECK(r.config.bounded);
  CHECK(r.maximise);  // lda
  CHECK(r.lines == std::vector<std::size_t>{2, 3, 4, 5, 6});
  // Iteration 0 → 1 includes a 0.5 s warm-up, left out: 0.25 s per iteration from iteration 1 on.
  const auto tp = cost::timing_of(r);
  CHECK(tp.seconds_per_iteration == doctest::Approx(0.25));
  CHECK(tp.source == t.path.string() + ":6");
  // The start-up point: the elapsed time at the warm-up iteration; timing from there on.
  CHECK(cost::startup_of(r, {.warmup = 2}).seconds_per_iteration == doctest::Approx(1.5));
  CHECK(cost::startup_of(r, {.warmup = 2}).source == t.path.string() + ":4");
  CHECK(cost::timing_of(r, {.warmup = 2}).seconds_per_iteration == doctest::Approx(0.25));
  CHECK_THROWS_WITH_AS((void)cost::startup_of(r, {.warmup = 4}), doctest::Contains(":6: no iteration record from iteration 4 on"),
                       strata::error);
  const auto pp = cost::progress_of(r);
  REQUIRE(pp.size() == 5);
  CHECK(pp[2].at.iteration == 2);
  CHECK(pp[2].value == doctest::Approx(1.8));  // −(−2000 + 200) / 1000 tokens
  CHECK(cost::time_to(r, 1.75).iteration == 3);
  CHECK(cost::time_to(r, 1.75).seconds == doctest::Approx(1.75));
  CHECK_FALSE(cost::time_to(r, 0.1).ok());
  // async and vap take the configured stand-in for their unbounded staleness.
  CHECK(cost::probe_from_config(strata::json_value::parse(R"({"workers": 2, "consistency": "async"})"), {.unbounded_staleness = 5})
            .staleness == 5);
  CHECK_FALSE(cost::probe_from_config(strata::json_value::parse(R"({"workers": 2, "consistency": "vap"})")).bounded);
}

TEST_CASE("trace fit: a dip that does not last is not progress (sustained values)") {
  // -loglik per token 12, 7 (a stale view's artefact), 11, 10, 9: the sustained values are 12, 11, 11, 10, 9.
  std::string text = config_line + "\n";
  const double v[] = {12, 7, 11, 10, 9};
  for (int i = 0; i < 5; ++i) text += it_line(i, std::to_string(0.1 * (i + 1)), std::to_string(-1000 * v[i])) + "\n";
  temp_trace t("dip.jsonl", text);
  const auto r = cost::read_run_trace(t.path);
  const auto pp = cost::progress_of(r);
  const double want[] = {12, 11, 11, 10, 9};
  for (int i = 0; i < 5; ++i) CHECK(pp[static_cast<std::size_t>(i)].value == doctest::Approx(want[i]));
  CHECK(cost::time_to(r, 10.5).iteration == 3);
  const auto raw = cost::read_run_trace(t.path, {.sustained = false});
  CHECK(cost::progress_of(raw)[1].value == doctest::Approx(7));
  CHECK(cost::time_to(raw, 10.5).iteration == 1);
}

TEST_CASE("trace fit: bad traces are errors naming the file and line") {
  std::string file;
  const std::string head = config_line + "\n" + it_line(0, "0", "-2000") + "\n";
  auto has = [&](const std::string& what, const std::string& part) {
    INFO(what);
    CHECK(what.find(file + ":" + part) != std::string::npos);
  };
  has(error_of(head + it_line(1, "null", "-1900") + "\n", &file), "3: \"elapsed_s\" is not a finite number");
  has(error_of(head + it_line(1, "1", "null") + "\n", &file), "3: \"objective\" is not a finite number");
  has(error_of(head + it_line(1, "1", "-1900") + "\n" + it_line(3, "2", "-1800") + "\n" + it_line(2, "3", "-1700") + "\n", &file),
      "5: iteration 2 follows iteration 3");
  has(error_of(head + it_line(1, "1", "-1900") + "\n" + it_line(1, "2", "-1800") + "\n", &file), "4: iteration 1 follows iteration 1");
  has(error_of(head + it_line(1, "2", "-1900") + "\n" + it_line(2, "1", "-1800") + "\n", &file), "4: \"elapsed_s\" decreases");
  has(error_of(head + "{\"iteration\": 1, \"elapsed_s\": [}\n", &file), "3:");
  has(error_of(head + it_line(1, "1", "-1900") + "\n", &file), "3: 2 iteration record(s); need two from iteration 1 on");
  has(error_of(R"({"config": {"consistency": "bsp"}})" "\n" + it_line(0, "0", "1") + "\n", &file), "1: the configuration has no \"workers\"");
  has(error_of(R"({"config": {"workers": 2, "consistency": "fast"}})" "\n" + it_line(0, "0", "1") + "\n", &file),
      "1: unknown consistency model 'fast'");
}

TEST_CASE("trace fit: too few runs for the system model names the files") {
  std::vector<std::unique_ptr<temp_trace>> files;
  std::vector<cost::timing_point> pts;
  for (int k = 0; k < 3; ++k) {
    std::string text = config_line + "\n";
    for (int i = 0; i <= 3; ++i) text += it_line(i, std::to_string(0.1 * (i + 1)), "-100") + "\n";
    files.push_back(std::make_unique<temp_trace>("run" + std::to_string(k) + ".jsonl", text));
    pts.push_back(cost::timing_of(cost::read_run_trace(files.back()->path)));
  }
  CHECK_THROWS_WITH_AS((void)cost::system_model<>::fit(pts), doctest::Contains("run2.jsonl:5"), strata::error);
}

// ---- traces written with --eval-every (issue 35) -------------------------------------------------
//
// Their objective and metric are null on the iterations not evaluated (README, "--eval-every"): a
// timing fit takes every line, a convergence fit the evaluated lines only.

TEST_CASE("trace fit: a committed --eval-every trace (benchmarks/results/essp/metrics) fits, timing from every line, progress from the evaluated ones") {
  const std::filesystem::path dir = std::filesystem::path(strata::test::source_dir()) / "benchmarks/results/essp/metrics";
  // MF: eval_every 4, 80 iterations; LDA: eval_every 2, 12 iterations (and a log-likelihood, maximised).
  for (const auto& [name, every, last] : {std::tuple{"inproc_none_mf_essp_s1_seed1.jsonl", 4u, 80u},
                                          std::tuple{"tcp_slow_lda_bsp_seed1.jsonl", 2u, 12u}}) {
    const auto file = dir / name;
    INFO(file.string());
    REQUIRE(std::filesystem::exists(file));
    const auto r = cost::read_run_trace(file);
    CHECK(r.eval_every == every);
    REQUIRE(r.iterations.size() == last + 1);
    CHECK(std::isnan(r.iterations[1].objective));  // as committed: null where not evaluated
    const auto tp = cost::timing_of(r);
    CHECK(tp.seconds_per_iteration ==
          doctest::Approx((r.iterations.back().elapsed_s - r.iterations[1].elapsed_s) / (last - 1)));
    CHECK(tp.source == file.string() + ":" + std::to_string(last + 2));
    const auto pp = cost::progress_of(r);
    REQUIRE(pp.size() == last / every + 1);
    for (std::size_t i = 0; i < pp.size(); ++i) {
      CHECK(pp[i].at.iteration == static_cast<double>(i * every));
      CHECK(std::isfinite(pp[i].value));
      CHECK(pp[i].source == file.string() + ":" + std::to_string(i * every + 2));
    }
    CHECK(pp.back().value < pp.front().value);  // it converges
    // The target reached at an evaluated iteration, with that iteration's elapsed time.
    const auto at = cost::time_to(r, pp[1].value);
    CHECK(at.iteration == static_cast<double>(every));
    CHECK(at.seconds == r.iterations[every].elapsed_s);
    // The metric (MF's test RMSE, LDA's log-likelihood) the same way.
    const auto m = cost::read_run_trace(file, {.quantity = cost::fit_quantity::metric});
    CHECK(cost::progress_of(m).size() == last / every + 1);
  }
}

TEST_CASE("trace fit: a synthetic --eval-every trace: null objectives between the evaluated iterations") {
  const std::string cfg =
      R"({"config": {"trainer": "mf", "consistency": "essp", "staleness": 2, "workers": 2, "size": 10, "eval_every": 3, "iterations": 7}})";
  auto line = [](int i, double elapsed, bool evaluated, double objective) {
    const std::string v = evaluated ? std::to_string(objective) : "null";
    return R"({"iteration": )" + std::to_string(i) + R"(, "elapsed_s": )" + std::to_string(elapsed) + R"(, "objective": )" + v +
           R"(, "rmse": )" + v + "}\n";
  };
  // Evaluated: 0, 3, 6 (multiples of 3) and 7 (the last).
  std::string text = cfg + "\n";
  for (int i = 0; i <= 7; ++i) text += line(i, 1.0 + 0.5 * i, i % 3 == 0 || i == 7, 100.0 - 10 * i);
  temp_trace t("eval_every.jsonl", text);
  const auto r = cost::read_run_trace(t.path);
  CHECK(r.iterations.size() == 8);
  CHECK(cost::timing_of(r).seconds_per_iteration == doctest::Approx(0.5));
  CHECK(cost::startup_of(r).seconds_per_iteration == doctest::Approx(1.5));
  const auto pp = cost::progress_of(r);
  REQUIRE(pp.size() == 4);
  const double its[] = {0, 3, 6, 7}, vals[] = {10, 7, 4, 3};  // objective per item (size 10)
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(pp[i].at.iteration == its[i]);
    CHECK(pp[i].value == doctest::Approx(vals[i]));
  }
  CHECK(pp[2].source == t.path.string() + ":8");
  CHECK(cost::time_to(r, 5).iteration == 6);
  CHECK(cost::time_to(r, 5).seconds == doctest::Approx(4.0));
  CHECK(cost::progress_of(cost::read_run_trace(t.path, {.quantity = cost::fit_quantity::metric})).size() == 4);

  std::string file;
  // A null where the run evaluates (iteration 6, a multiple of 3): a diverged run, refused.
  std::string diverged = cfg + "\n";
  for (int i = 0; i <= 7; ++i) diverged += line(i, 1.0 + 0.5 * i, i % 3 == 0 && i < 6, 100.0 - 10 * i);
  const std::string why = error_of(diverged, &file);
  CHECK(why.find(file + ":8: \"objective\" is not a finite number at an evaluated iteration (eval_every 3)") != std::string::npos);
  // Without eval_every every line must have it, as before.
  CHECK(error_of(config_line + "\n" + it_line(0, "0", "-2000") + "\n" + it_line(1, "1", "null") + "\n", &file)
            .find(file + ":3: \"objective\" is not a finite number") != std::string::npos);
}

TEST_CASE("trace fit: a trace with no objective on any line is refused for a convergence fit, naming the file") {
  // Every line null: iteration 0 is one the run evaluates, so reading refuses it.
  const std::string cfg = R"({"config": {"trainer": "mf", "workers": 2, "eval_every": 4, "iterations": 20}})";
  std::string all_null = cfg + "\n";
  for (int i = 0; i <= 3; ++i)
    all_null += R"({"iteration": )" + std::to_string(i) + R"(, "elapsed_s": )" + std::to_string(i + 1) + R"(, "objective": null, "rmse": null})" "\n";
  std::string file;
  CHECK(error_of(all_null, &file).find(file + ":2: \"objective\" is not a finite number") != std::string::npos);
  // A part of a run with no evaluated iteration in it (1..3 of eval_every 4): its timing fits, its
  // convergence does not.
  std::string part = cfg + "\n";
  for (int i = 1; i <= 3; ++i)
    part += R"({"iteration": )" + std::to_string(i) + R"(, "elapsed_s": )" + std::to_string(i + 1) + R"(, "objective": null, "rmse": null})" "\n";
  temp_trace t("no_objective.jsonl", part);
  const auto r = cost::read_run_trace(t.path);
  CHECK(cost::timing_of(r).seconds_per_iteration == doctest::Approx(1.0));
  const std::string no_objective = t.path.string() + ":4: no iteration record has \"objective\"",
                    no_metric = t.path.string() + ":4: no iteration record has the metric \"rmse\"";
  CHECK_THROWS_WITH_AS((void)cost::progress_of(r), doctest::Contains(no_objective.c_str()), strata::error);
  CHECK_THROWS_WITH_AS((void)cost::time_to(r, 1.0), doctest::Contains(no_objective.c_str()), strata::error);
  const auto m = cost::read_run_trace(t.path, {.quantity = cost::fit_quantity::metric});
  CHECK_THROWS_WITH_AS((void)cost::progress_of(m), doctest::Contains(no_metric.c_str()), strata::error);
}

}  // namespace test_cost_trace_fit
