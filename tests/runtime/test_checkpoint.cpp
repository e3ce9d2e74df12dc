// Checkpoints and resume: the file format refuses what it must (corrupt, other version, other run),
// a checkpoint holds exactly the updates of the clocks below it under every model, and a BSP run
// interrupted and resumed ends with exactly the tables of an uninterrupted run.
#include <doctest/doctest.h>

#include <strata/strata.hpp>
#include <strata/runtime/checkpoint.hpp>

#include "../support/deadline.hpp"
#include "../support/scratch.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <unistd.h>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// Everything below is in a namespace of its own: strata_tests is a unity build, so the test
// files share translation units (tests/CMakeLists.txt).
namespace test_runtime_checkpoint {

namespace {

using strata_test::within;
using drow = strata::dense_row<double>;
namespace fs = std::filesystem;
namespace ckpt = strata::ckpt;

/// A fresh folder for one test (tmp/strata-ckpt-<name>-<pid>), removed at its end.
struct scratch : strata_test::scratch {
  explicit scratch(const std::string& name) : strata_test::scratch("ckpt-" + name) {}
};

constexpr strata::row_id rows = 12;

/// A deterministic BSP program whose increments depend on what it reads and on a per-worker random
/// generator (state the worker checkpoints): integer-valued, so every sum is exact in any order.
strata::task<> program(strata::worker& w, strata::table_handle<drow> t, strata::clock_type until) {
  std::mt19937_64 rng(1234 + w.id());
  if (const auto* s = w.resumed_state()) {
    std::istringstream in(*s);
    in >> rng;
    REQUIRE(in);
  }
  w.on_checkpoint([&rng] {
    std::ostringstream out;
    out << rng;
    return out.str();
  });
  for (auto c = w.current_clock(); c < until; ++c) {
    for (strata::row_id r = 0; r < rows; ++r) {
      const double v = (co_await w.get(t, r)).get(0);
      co_await w.inc(t, r, 0, static_cast<double>(static_cast<long long>(v) % 5 + static_cast<long long>(rng() % 7) + w.id()));
      co_await w.inc(t, r, 1, 1.0);
    }
    co_await w.clock();
  }
}

struct outcome {
  std::vector<drow> rows;
  std::optional<ckpt::resume_point> resumed;
  strata::worker_stats stats;
};

/// Runs `program` on 2 nodes x 2 workers (inproc) and returns every row.
outcome run_bsp(strata::system_config cfg, strata::clock_type until) {
  strata::system<strata::bsp> sys(cfg);
  auto t = sys.add_table<drow>(2);
  sys.run([&](strata::worker& w) { return program(w, t, until); });
  outcome out;
  for (strata::row_id r = 0; r < rows; ++r) out.rows.push_back(sys.row(t, r));
  if (sys.resumed()) out.resumed = *sys.resumed();
  out.stats = sys.total_stats();
  return out;
}

void check_same(const std::vector<drow>& a, const std::vector<drow>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t r = 0; r < a.size(); ++r)
    for (std::size_t c = 0; c < 2; ++c) {
      INFO("row " << r << " column " << c);
      CHECK(a[r].get(c) == b[r].get(c));  // exact: integer-valued sums
    }
}

void flip_byte(const fs::path& p, std::size_t at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x20));
}

}  // namespace

TEST_CASE("checkpoint file: round trip, and refused when corrupt, of another version or of another run") {
  scratch s("format");
  const auto sig = ckpt::signature_digest("run A");
  const std::string text = "worker state";
  const auto body = std::as_bytes(std::span(text.data(), text.size()));
  const auto p = ckpt::worker_file(s.dir, 10, 3);
  ckpt::write_atomic(p, ckpt::seal(ckpt::kind::worker, 3, 10, sig, body));
  for (const auto& e : fs::directory_iterator(p.parent_path())) CHECK(e.path() == p);  // no temporary file left
  const auto back = ckpt::unseal(p, ckpt::kind::worker, 3, 10, sig);
  CHECK(std::string(reinterpret_cast<const char*>(back.data()), back.size()) == text);

  auto refused = [&](const ckpt::digest& want, const char* needle) {
    try {
      (void)ckpt::unseal(p, ckpt::kind::worker, 3, 10, want);
      FAIL("accepted a checkpoint it must refuse");
    } catch (const strata::error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(p.string()) != std::string::npos);
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
  };
  refused(ckpt::signature_digest("run B"), "another run");
  CHECK_THROWS_WITH_AS(ckpt::unseal(p, ckpt::kind::worker, 4, 10, sig), doctest::Contains("expected kind 2 id 4"), strata::error);

  // Another format version, with a valid checksum (as a newer build would write it).
  auto bytes = ckpt::read_all(p);
  bytes[8] = std::byte{2};
  REQUIRE(bytes.size() > 32);
  bytes.erase(bytes.end() - 32, bytes.end());  // the checksum (erase: resize's growth path trips GCC 12's -Wstringop-overflow at -O1)
  const auto sum = ckpt::sha256_of(bytes);
  for (auto b : sum) bytes.push_back(std::byte{b});
  ckpt::write_atomic(p, bytes);
  refused(sig, "format version 2");

  // A flipped byte anywhere: the checksum.
  ckpt::write_atomic(p, ckpt::seal(ckpt::kind::worker, 3, 10, sig, body));
  flip_byte(p, 70);
  refused(sig, "checksum");
}

TEST_CASE("checkpoint: a BSP run interrupted and resumed ends with exactly the uninterrupted run's tables") {
  within(std::chrono::seconds(120), "bsp resume", [] {
    scratch s("bsp");
    const strata::system_config base{.nodes = 2, .workers_per_node = 2};
    const auto whole = run_bsp(base, 20).rows;

    auto with = base;
    with.checkpoint.dir = s.dir.string();
    with.checkpoint.every = 5;
    with.checkpoint.run_tag = "test program";
    (void)run_bsp(with, 13);  // "interrupted" after clock 13: checkpoints at 5 and 10
    CHECK(ckpt::read_manifest(s.dir) == std::vector<strata::clock_type>{5, 10});

    auto resume = with;
    resume.checkpoint.resume = s.dir.string();
    const auto resumed = run_bsp(resume, 20);
    REQUIRE(resumed.resumed);
    CHECK(resumed.resumed->clock == 10);
    CHECK(resumed.resumed->refused.empty());
    check_same(resumed.rows, whole);
    // The restored rows hold every worker's updates through clock 9: under BSP every read of the
    // resumed run has per-writer staleness exactly 0, as in an uninterrupted run.
    REQUIRE(resumed.stats.writer_staleness.count() > 0);
    CHECK(resumed.stats.writer_staleness.stats().min() == 0);
    CHECK(resumed.stats.writer_staleness.stats().max() == 0);
    // The resumed run wrote on: 15 and 20 are complete now, and only the newest 2 (the default
    // checkpoint.keep) are kept: the manifest lists them, the older folders are gone.
    CHECK(ckpt::read_manifest(s.dir) == std::vector<strata::clock_type>{15, 20});
    CHECK(!fs::exists(ckpt::clock_dir(s.dir, 5)));
    CHECK(!fs::exists(ckpt::clock_dir(s.dir, 10)));
    CHECK(fs::exists(ckpt::shard_file(s.dir, 15, 1)));
    CHECK(fs::exists(ckpt::worker_file(s.dir, 15, 3)));

    // Resumed at the last checkpoint, the final clock: nothing is left to run, the tables are the
    // uninterrupted run's.
    const auto at_end = run_bsp(resume, 20);
    REQUIRE(at_end.resumed);
    CHECK(at_end.resumed->clock == 20);
    check_same(at_end.rows, whole);
  });
}

TEST_CASE("checkpoint: a corrupt newest checkpoint is refused and the previous one used, another run's is refused") {
  within(std::chrono::seconds(120), "bsp resume after corruption", [] {
    scratch s("corrupt");
    const strata::system_config base{.nodes = 2, .workers_per_node = 2};
    const auto whole = run_bsp(base, 16).rows;
    auto with = base;
    with.checkpoint.dir = s.dir.string();
    with.checkpoint.every = 4;
    with.checkpoint.run_tag = "test program";
    (void)run_bsp(with, 9);  // checkpoints 4 and 8
    flip_byte(ckpt::shard_file(s.dir, 8, 1), 100);

    auto resume = with;
    resume.checkpoint.dir = (s.dir / "after").string();
    resume.checkpoint.resume = s.dir.string();
    const auto resumed = run_bsp(resume, 16);
    REQUIRE(resumed.resumed);
    CHECK(resumed.resumed->clock == 4);
    REQUIRE(resumed.resumed->refused.size() == 1);
    CHECK(resumed.resumed->refused[0].find("shard-1.ckpt") != std::string::npos);
    CHECK(resumed.resumed->refused[0].find("checksum") != std::string::npos);
    check_same(resumed.rows, whole);

    auto other = resume;
    other.checkpoint.run_tag = "another program";
    CHECK_THROWS_WITH_AS(run_bsp(other, 16), doctest::Contains("no complete checkpoint of this run"), strata::error);
  });
}

TEST_CASE("checkpoint: under every model a checkpoint holds exactly the updates of the clocks below it") {
  // Each worker adds 1 to every row at every clock, with random delays and a straggler, so the
  // fast workers' later clocks reach the shards first: a checkpoint at m must hold workers * m.
  auto one = [](auto model_tag, const char* name) {
    using Model = typename decltype(model_tag)::type;
    INFO(std::string(name));
    scratch s(name);
    strata::system_config cfg{.nodes = 2, .workers_per_node = 2, .staleness = 3, .value_bound = 4.0};
    cfg.checkpoint.dir = s.dir.string();
    cfg.checkpoint.every = 3;
    cfg.checkpoint.keep = 0;  // every checkpoint stays
    strata::delayed<strata::inproc>::config dc;
    dc.delay.latency = std::chrono::microseconds(50);
    dc.delay.jitter = std::chrono::microseconds(600);
    dc.delay.seed = 7;
    strata::system<Model, strata::delayed<strata::inproc>> sys(cfg, dc);
    auto t = sys.template add_table<drow>(1);
    constexpr strata::clock_type clocks = 13;
    sys.run([&](strata::worker& w) -> strata::task<> {
      for (strata::clock_type c = 0; c < clocks; ++c) {
        if (w.id() == 0) std::this_thread::sleep_for(std::chrono::microseconds(700));  // the straggler
        for (strata::row_id r = 0; r < 6; ++r) {
          (void)co_await w.get(t, r);
          co_await w.inc(t, r, 0, 1.0);
        }
        co_await w.clock();
      }
    });
    const auto sig = ckpt::signature_digest(sys.signature() + ";tag=");
    CHECK(ckpt::read_manifest(s.dir) == std::vector<strata::clock_type>{3, 6, 9, 12});
    for (strata::clock_type m : {3, 6, 9, 12})
      for (strata::node_id n = 0; n < 2; ++n) {
        std::vector<std::unique_ptr<strata::server_table_base>> tabs;
        tabs.push_back(std::make_unique<strata::server_table<drow>>(1));
        const auto f = ckpt::shard_file(s.dir, m, n);
        ckpt::decode_tables(ckpt::unseal(f, ckpt::kind::shard, n, m, sig), tabs, f.string());
        auto& tab = static_cast<strata::server_table<drow>&>(*tabs[0]);
        for (auto r : tab.row_ids()) {
          INFO("clock " << m << " shard " << n << " row " << r);
          CHECK(tab.row(r).get(0) == 4.0 * static_cast<double>(m));
        }
        CHECK(!tab.row_ids().empty());
      }
  };
  within(std::chrono::seconds(120), "checkpoint content", [&] {
    one(std::type_identity<strata::bsp>{}, "bsp");
    one(std::type_identity<strata::ssp<3>>{}, "ssp");
    one(std::type_identity<strata::essp<3>>{}, "essp");
    one(std::type_identity<strata::vap<4.0>>{}, "vap");
    one(std::type_identity<strata::async>{}, "async");
  });
}

TEST_CASE("checkpoint: keep K deletes all but the newest K, and a folder in use or holding another run's checkpoints is refused") {
  within(std::chrono::seconds(120), "checkpoint folder", [] {
    scratch s("folder");
    strata::system_config cfg{.nodes = 2, .workers_per_node = 1};
    cfg.checkpoint.dir = s.dir.string();
    cfg.checkpoint.every = 1;
    cfg.checkpoint.keep = 3;
    cfg.checkpoint.run_tag = "first";
    (void)run_bsp(cfg, 7);
    CHECK(ckpt::read_manifest(s.dir) == std::vector<strata::clock_type>{5, 6, 7});
    std::vector<std::string> clocks;
    for (const auto& e : fs::directory_iterator(s.dir))
      if (e.path().filename().string().rfind("clock-", 0) == 0) clocks.push_back(e.path().filename().string());
    std::sort(clocks.begin(), clocks.end());
    CHECK(clocks == std::vector<std::string>{"clock-5", "clock-6", "clock-7"});

    {  // a second system writing the same folder while the first holds it
      strata::system<strata::bsp> holder(cfg);
      auto t = holder.add_table<drow>(2);
      holder.run([&](strata::worker& w) { return program(w, t, 1); });  // holds its lock while it lives
      try {
        (void)run_bsp(cfg, 3);
        FAIL("the second run was not refused");
      } catch (const strata::error& e) {
        const std::string what = e.what();
        CHECK(what.find("checkpoint folder " + s.dir.string() + " is in use by another run") != std::string::npos);
        CHECK(what.find("process " + std::to_string(::getpid())) != std::string::npos);
      }
    }
    (void)run_bsp(cfg, 2);  // the holder is gone: the folder is free again (same run: accepted)

    auto other = cfg;
    other.checkpoint.run_tag = "second";
    CHECK_THROWS_WITH_AS(run_bsp(other, 2), doctest::Contains("holds checkpoints of another run"), strata::error);
    CHECK(ckpt::read_manifest(s.dir) == std::vector<strata::clock_type>{5, 6, 7});  // untouched
  });
}

TEST_CASE("checkpoint: keep K never removes a clock folder at or after the checkpoint just completed") {
  // A run that starts again (not resumed) in a folder whose manifest lists an earlier run's later
  // checkpoints: completing its checkpoint 1 must not remove clock-1 or clock-2, which its workers
  // may still be writing (a worker's rename of clock-2/worker-1.ckpt once failed that way).
  scratch s("keep-order");
  ckpt::write_manifest(s.dir, {5, 6, 7});
  for (int c : {1, 2, 5, 6, 7}) fs::create_directories(s.dir / ("clock-" + std::to_string(c)));
  const auto has = [&](int c) { return fs::exists(s.dir / ("clock-" + std::to_string(c))); };
  ckpt::add_to_manifest(s.dir, 1, 3);
  CHECK(ckpt::read_manifest(s.dir) == std::vector<strata::clock_type>{5, 6, 7});
  CHECK(has(1));
  CHECK(has(2));
  ckpt::add_to_manifest(s.dir, 2, 3);  // every writer has passed clock 1 now
  CHECK(!has(1));
  CHECK(has(2));
  CHECK(has(5));
  ckpt::add_to_manifest(s.dir, 8, 3);  // the usual case: the oldest kept checkpoint bounds it
  CHECK(ckpt::read_manifest(s.dir) == std::vector<strata::clock_type>{6, 7, 8});
  CHECK(!has(2));
  CHECK(!has(5));
  CHECK(has(6));
  CHECK(has(7));
}

}  // namespace test_runtime_checkpoint
