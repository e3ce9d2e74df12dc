// The run trace (include/strata/core/trace.hpp) and its JSON subset (core/json.hpp): write→read
// round trips, the committed benchmark traces, and errors that name the file and line.
#include <doctest/doctest.h>

#include "../paths.hpp"

#include <strata/core/json.hpp>
#include <strata/core/trace.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_ml_trace {

namespace {

strata::iteration_record sample_record(std::uint32_t it) {
  strata::iteration_record r;
  r.iteration = it;
  r.elapsed_s = 0.1 * it + 1.0 / 3.0;
  r.objective = -3341368.8881234567 + it;
  r.metric = 0.91234567890123 / (it + 1);
  r.metric_name = "rmse";
  r.staleness = {{-1, 10}, {0, 800}, {1, 120}, {7, 1}};
  r.writer_staleness = {{-3, 4}, {-1, 20}, {0, 900}, {2, 30}};
  r.wait_s = 1e-7 * it;
  r.bytes_sent = (std::uint64_t{1} << 40) + 12345 + it;  // beyond 2^32, exact below 2^53
  r.worker_elapsed_s = {0.25 + it, 1.0 / 7.0, 2.5e-3};
  return r;
}

strata::json_value sample_config() {
  auto c = strata::json_value::object();
  c.set("trainer", "mf").set("consistency", "essp").set("staleness", 2).set("lr", 0.01).set("quote", "a \"b\"\n\\c")
      .set("on", true).set("none", nullptr).set("list", strata::json_value::array().push_back(1).push_back("x"));
  return c;
}

/// A file under the temp folder, removed at the end of the test.
struct temp_file {
  std::filesystem::path path;
  explicit temp_file(const std::string& name, const std::string& text = {})
      : path(std::filesystem::temp_directory_path() / ("strata_test_trace_" + std::to_string(::getpid()) + "_" + name)) {
    if (!text.empty()) std::ofstream(path) << text;
  }
  ~temp_file() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

/// The trace_error that reading `text` as a trace throws (its line; -1 when none is thrown).
long error_line(const std::string& text, std::string* what = nullptr) {
  std::istringstream in(text);
  try {
    strata::trace_reader r(in, "t.jsonl");
    (void)r.read_all();
  } catch (const strata::trace_error& e) {
    if (what) *what = e.what();
    CHECK(e.file() == "t.jsonl");
    return static_cast<long>(e.line());
  }
  return -1;
}

}  // namespace

TEST_CASE("json: parse and dump round trip, escapes, unicode, nesting") {
  const std::string text = R"({"a": [1, -2.5, 3e2, true, false, null], "s": "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {"x": {}}, "e": []})";
  const auto v = strata::json_value::parse(text);
  REQUIRE(v.is_object());
  CHECK(v.find("a")->as_array().size() == 6);
  CHECK(v.find("a")->as_array()[2].as_number() == 300);
  CHECK(v.find("a")->as_array()[5].is_null());
  CHECK(v.find("s")->as_string() == "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("o")->find("x")->as_object().empty());
  CHECK(v.find("missing") == nullptr);
  CHECK(strata::json_value::parse(v.dump()) == v);
  // Doubles come back bit for bit.
  for (double x : {0.1, 1.0 / 3.0, -1e-300, 1.7976931348623157e308, 5e-324, 123456789012345.0}) {
    const auto back = strata::json_value::parse(strata::json_value(x).dump()).as_number();
    CHECK(back == x);
  }
  CHECK(strata::json_value(std::numeric_limits<double>::quiet_NaN()).dump() == "null");
  CHECK(strata::json_value(12).dump() == "12");
  CHECK_THROWS_AS(v.as_number(), strata::json_error);
}

TEST_CASE("json: malformed texts are errors at the right offset") {
  const std::vector<std::pair<std::string, std::size_t>> bad = {
      {"", 0},         {"{", 1},          {"[1,]", 3},      {"01", 1},        {"\"abc", 4},     {"tru", 0},
      {"1 2", 2},      {"{\"a\" 1}", 5},  {"{1: 2}", 1},    {"-", 1},         {"1.", 2},        {"1e", 2},
      {"\"\\x\"", 2},  {"\"a\nb\"", 2},   {"[1 2]", 3},     {"nul", 0},       {"1e999", 0},     {"\"\\ud800\"", 7}};
  for (const auto& [text, offset] : bad) {
    INFO("text: " << text);
    try {
      (void)strata::json_value::parse(text);
      FAIL("no error");
    } catch (const strata::json_error& e) {
      CHECK(e.offset() == offset);
    }
  }
  CHECK_THROWS_AS(strata::json_value::parse(std::string(100, '[') + std::string(100, ']')), strata::json_error);
  CHECK_NOTHROW(strata::json_value::parse(std::string(60, '[') + std::string(60, ']')));
}

TEST_CASE("trace: write then read gives back the same records and configuration") {
  std::vector<strata::iteration_record> rs;
  for (std::uint32_t it = 0; it < 5; ++it) rs.push_back(sample_record(it));
  rs[0].staleness.clear();
  rs[0].worker_elapsed_s.clear();
  std::ostringstream out;
  {
    strata::trace_writer w(out, sample_config());
    w.write(rs);
  }
  std::istringstream in(out.str());
  strata::trace_reader r(in, "mem");
  CHECK(r.config() == sample_config());
  const auto back = r.read_all();
  REQUIRE(back.size() == rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    INFO("iteration " << i);
    CHECK(back[i] == rs[i]);
  }
  // Through a file, with the free functions.
  temp_file f("roundtrip.jsonl");
  strata::write_trace(f.path, {sample_config(), rs});
  const auto t = strata::read_trace(f.path);
  CHECK(t.config == sample_config());
  CHECK(t.iterations == rs);
  // The staleness summary is there for readers that want it ready-made.
  const auto line = strata::to_json(rs[1]);
  CHECK(line.find("staleness")->find("mean")->as_number() == doctest::Approx(rs[1].staleness_mean()));
  CHECK(line.find("staleness")->find("max")->as_number() == 7);
  CHECK(line.find("rmse")->as_number() == rs[1].metric);
}

TEST_CASE("trace: a file is replaced whole by close(), and a writer dropped without it leaves the old file") {
  temp_file f("atomic.jsonl", "OLD\n");
  auto text = [&] {
    std::ifstream in(f.path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto leftovers = [&] {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(f.path.parent_path()))
      n += e.path().filename().string().rfind(f.path.filename().string() + ".tmp-", 0) == 0;
    return n;
  };
  {
    strata::trace_writer w(f.path, sample_config());
    w.write(sample_record(1));
    CHECK(text() == "OLD\n");  // nothing in place until close()
  }
  CHECK(text() == "OLD\n");
  CHECK(leftovers() == 0);
  {
    strata::trace_writer w(f.path, sample_config());
    w.write(sample_record(1));
    w.close();
  }
  const auto t = strata::read_trace(f.path);
  CHECK(t.config == sample_config());
  CHECK(t.iterations == std::vector<strata::iteration_record>{sample_record(1)});
  CHECK(leftovers() == 0);
  // A folder that cannot hold the file: trace_error naming it and the system's reason, at once.
  try {
    strata::trace_writer w("/proc/strata_no_such_dir/t.jsonl", sample_config());
    FAIL("no error");
  } catch (const strata::trace_error& e) {
    CHECK(e.file() == "/proc/strata_no_such_dir/t.jsonl");
    CHECK(std::string(e.what()).find("No such file or directory") != std::string::npos);
  }
}

TEST_CASE("trace: a file starting with a UTF-8 BOM reads as the same trace") {
  std::ostringstream out;
  strata::trace_writer(out, sample_config()).write(sample_record(2));
  std::istringstream plain(out.str()), marked("\xEF\xBB\xBF" + out.str());
  strata::trace_reader a(plain, "mem"), b(marked, "mem");
  CHECK(b.config() == a.config());
  CHECK(b.read_all() == a.read_all());
  // Only at the start of the file: a BOM before a later line is an error naming that line.
  std::string what;
  CHECK(error_line(out.str() + "\xEF\xBB\xBF" + strata::to_json(sample_record(3)).dump() + "\n", &what) == 3);
}

TEST_CASE("trace: non-finite values are written as null and read back as NaN, and an unnamed metric is 'metric'") {
  strata::iteration_record r = sample_record(1);
  r.metric = std::numeric_limits<double>::infinity();
  r.objective = std::numeric_limits<double>::quiet_NaN();
  r.metric_name.clear();
  std::ostringstream out;
  strata::trace_writer(out, strata::json_value::object()).write(r);
  CHECK(out.str().find("\"metric\": null") != std::string::npos);
  std::istringstream in(out.str());
  strata::trace_reader rd(in, "mem");
  const auto back = rd.next();
  REQUIRE(back);
  CHECK(std::isnan(back->metric));
  CHECK(std::isnan(back->objective));
  CHECK(back->metric_name == "metric");
  CHECK(!rd.next());
}

TEST_CASE("trace: the committed benchmark traces read back, consistent with their configuration") {
  // benchmarks/essp_experiment.sh: the true model evaluated every eval_every iterations and at the
  // last (null in between), per-worker times and both staleness histograms.
  const std::filesystem::path dir = std::filesystem::path(strata::test::source_dir()) / "benchmarks/results/essp/metrics";
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".jsonl") continue;
    ++files;
    INFO(e.path().string());
    const auto t = strata::read_trace(e.path());
    const std::string trainer = t.config.find("trainer")->as_string();
    REQUIRE((trainer == "mf" || trainer == "lda"));
    const auto n = static_cast<std::size_t>(t.config.find("iterations")->as_number());
    const auto* ev = t.config.find("eval_every");
    REQUIRE(ev != nullptr);
    const auto k = static_cast<std::size_t>(ev->as_number());
    REQUIRE(t.iterations.size() == n + 1);
    std::uint64_t reads = 0, pairs = 0;
    for (std::size_t i = 0; i < t.iterations.size(); ++i) {
      const auto& r = t.iterations[i];
      CHECK(r.iteration == i);
      CHECK(r.metric_name == (trainer == "mf" ? "rmse" : "loglik"));
      const bool evaluated = i == 0 || i == n || (k > 0 && i % k == 0) || k == 0;
      CHECK(std::isfinite(r.metric) == evaluated);
      CHECK(r.elapsed_s >= (i ? t.iterations[i - 1].elapsed_s : 0.0));
      CHECK(!r.worker_elapsed_s.empty());
      if (trainer == "lda" && evaluated) CHECK(r.objective == r.metric);
      reads += r.reads();
      for (auto [v, c] : r.writer_staleness) pairs += c;
    }
    CHECK(reads > 0);
    CHECK(pairs == reads * (t.iterations.back().worker_elapsed_s.size() - 1));  // one per read and other worker
    if (trainer == "lda") CHECK(t.iterations.back().metric > t.iterations.front().metric);
    if (trainer == "mf") CHECK(t.iterations.back().metric < t.iterations.front().metric);
    // The reader's view survives a rewrite in today's format (compared as text: NaN != NaN).
    std::ostringstream out, out2;
    strata::trace_writer(out, t.config).write(t.iterations);
    std::istringstream in(out.str());
    strata::trace_reader again(in, "rewrite");
    CHECK(again.config() == t.config);
    strata::trace_writer(out2, again.config()).write(again.read_all());
    CHECK(out2.str() == out.str());
  }
  CHECK(files >= 10);
}

TEST_CASE("trace: an old-format line (no per-worker times, 10 digits) reads") {
  const std::string text =
      "{\"config\": {\"trainer\": \"lda\"}}\n"
      "{\"iteration\": 3, \"elapsed_s\": 0.737514097, \"objective\": -2919883.041, \"loglik\": -2919883.041, "
      "\"staleness\": {\"mean\": 0.4, \"max\": 2, \"hist\": {\"-1\": 10, \"0\": 800, \"2\": 1}}, \"wait_s\": 0.7981343471, "
      "\"bytes_sent\": 21715180}\n\n";
  std::istringstream in(text);
  strata::trace_reader r(in, "old");
  const auto rs = r.read_all();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].iteration == 3);
  CHECK(rs[0].metric_name == "loglik");
  CHECK(rs[0].metric == -2919883.041);
  CHECK(rs[0].staleness == std::map<std::int64_t, std::uint64_t>{{-1, 10}, {0, 800}, {2, 1}});
  CHECK(rs[0].bytes_sent == 21715180);
  CHECK(rs[0].worker_elapsed_s.empty());
}

TEST_CASE("trace: a malformed line is an error naming the file and its line") {
  const std::string head = "{\"config\": {}}\n";
  const std::string good = "{\"iteration\": 0, \"elapsed_s\": 0, \"objective\": 1, \"rmse\": 1}\n";
  std::string what;
  CHECK(error_line(head + good + good) == -1);
  CHECK(error_line(head + good + "{\"iteration\": 1, \"elapsed_s\": 0.5,\n", &what) == 3);
  CHECK(what.find("t.jsonl:3:") == 0);
  CHECK(error_line(head + "\n" + good + "\n{\"iteration\": \"one\"}\n", &what) == 5);  // blank lines count
  CHECK(what.find("iteration") != std::string::npos);
  CHECK(error_line(head + "{\"elapsed_s\": 1}\n", &what) == 2);
  CHECK(what.find("missing \"iteration\"") != std::string::npos);
  CHECK(error_line(head + "{\"iteration\": 1, \"staleness\": {\"hist\": {\"x\": 1}}}\n") == 2);
  CHECK(error_line(head + "{\"iteration\": 1, \"staleness\": {\"hist\": {\"1\": -1}}}\n") == 2);
  CHECK(error_line(head + "{\"iteration\": 1, \"bytes_sent\": 1.5}\n") == 2);
  CHECK(error_line(head + "{\"iteration\": -1}\n") == 2);
  CHECK(error_line(head + "{\"iteration\": 1, \"worker_elapsed_s\": [1, \"x\"]}\n") == 2);
  CHECK(error_line(head + "[1]\n") == 2);
  CHECK(error_line("{\"iteration\": 0}\n", &what) == 1);  // no configuration line
  CHECK(what.find("config") != std::string::npos);
  CHECK(error_line("", &what) == 0);
  // A file that does not exist: line 0, the file named.
  try {
    (void)strata::read_trace("/nonexistent/strata.jsonl");
    FAIL("no error");
  } catch (const strata::trace_error& e) {
    CHECK(e.file() == "/nonexistent/strata.jsonl");
    CHECK(e.line() == 0);
  }
  // And through a real file, the path in the message.
  temp_file f("bad.jsonl", head + good + "{oops}\n");
  try {
    (void)strata::read_trace(f.path);
    FAIL("no error");
  } catch (const strata::trace_error& e) {
    CHECK(std::string(e.what()).find(f.path.string() + ":3:") == 0);
  }
}

}  // namespace test_ml_trace
