// strata_gen: deterministic synthetic data sets at the size of the papers (Netflix-size MF,
// NYTimes-size LDA, a million-feature Lasso), written in the formats strata_mf, strata_lda and
// strata_lasso read, with the true model beside them. The generative processes, their defaults and
// the files are documented in apps/trainers/synthetic.hpp.
//
//   strata_gen mf --size netflix          (480,189 users x 17,770 items, 100M ratings: ~1.6 GiB)
//   strata_gen lda --size 10m --seed 7    (30,000 documents, ~10M tokens, K = 100)
//   strata_gen lasso --samples 5000 --features 50000 --nnz-per-row 200 --out /data/lasso-small
//   strata_gen mf --size tiny --out /tmp/mf && strata_mf --data /tmp/mf
//
// Output goes to --out, by default $HOME/.cache/strata/gen/<kind>-<size>-s<seed> (explicit sizes
// name the folder after their numbers, e.g. mf-u1000-i400-n20000-r16-s1). A folder that already
// holds the complete set for the same parameters (truth.json and every check file matching) is
// reported "up to date" and not regenerated, unless --force. The run ends with one line,
// "gen summary: kind=... name=... <counts and truth> seconds=... bytes=... peak_rss_mb=...".
//
// Exit status: 0 generated or up to date; 2 a flag refused, or a data set larger than the free disk
// or the available memory (refused before anything is written); 1 any other failure (e.g. the
// disk filling up while writing).
#include <CLI/CLI.hpp>

#include <strata/core/error.hpp>
#include <trainers/synthetic.hpp>

#include "common/cli.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace {
namespace gen = strata::ml::gen;
namespace fs = std::filesystem;

/// The flags every kind shares.
struct common_flags {
  std::string size;
  std::uint64_t seed = 1;
  std::string out;
  bool force = false, quiet = false;
};

/// Integer flags are read as text so that every bad value gets the same one-line message.
struct count_flag {
  const char* name;
  std::string text;
};

void add_common(CLI::App& sub, common_flags& c, const std::string& sizes) {
  sub.add_option("--size", c.size, "named size: " + sizes);
  sub.add_option("--seed", c.seed, "random seed: the same seed and flags give the same bytes")->capture_default_str();
  sub.add_option("--out", c.out, "output folder (default $HOME/.cache/strata/gen/<kind>-<size>-s<seed>)");
  sub.add_flag("--force", c.force, "regenerate even when the folder holds the complete set");
  sub.add_flag("--quiet", c.quiet, "no progress display");
}

void add_count(CLI::App& sub, count_flag& f, const std::string& help) { sub.add_option(f.name, f.text, help); }

/// The value of an integer flag that was given, at least 1 and at most `most`.
std::uint64_t parse_count(const count_flag& f, std::uint64_t most) {
  const char* s = f.text.c_str();
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (f.text.empty() || *s == '-' || *s == '+' || end == s || *end != '\0' || errno == ERANGE || v == 0 || v > most)
    throw std::invalid_argument(std::string(f.name) + ": must be a whole number from 1 to " + std::to_string(most) + ", got '" +
                                f.text + "'");
  return v;
}

/// Sets `target` from the flag when it was given; true when it was.
template <class T>
bool take(const count_flag& f, T& target) {
  if (f.text.empty()) return false;
  target = static_cast<T>(parse_count(f, std::numeric_limits<T>::max()));
  return true;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// A progress line on a terminal ("gen mf: 37%"), nothing otherwise.
gen::progress_fn progress_display(const std::string& kind, bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) return {};
  return [kind](std::uint64_t done, std::uint64_t total) {
    std::fprintf(stderr, "\rgen %s: %3.0f%%", kind.c_str(), 100.0 * static_cast<double>(done) / static_cast<double>(total));
    if (done >= total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

/// Up to date, or generate; then the summary line.
int finish(const std::string& kind, const common_flags& c, const std::string& name, const strata::json_value& params,
           const std::function<void(const fs::path&, const gen::progress_fn&)>& generate) {
  const fs::path dir = c.out.empty() ? gen::default_out_dir(kind, name, c.seed) : fs::path(c.out);
  auto truth = c.force ? std::nullopt : gen::cached_truth(dir, params);
  if (truth) {
    std::printf("gen: %s is up to date (truth.json and every check file match; --force regenerates)\n", dir.c_str());
  } else {
    generate(dir, progress_display(kind, c.quiet));
    truth = gen::cached_truth(dir, params);
    if (!truth) throw std::runtime_error(dir.string() + ": the files just written do not match their truth.json");
    std::printf("gen: wrote %s\n", dir.c_str());
  }
  std::printf("%s peak_rss_mb=%.1f\n", gen::summary_line(*truth).c_str(), strata::examples::peak_rss_mb());
  return 0;
}

struct mf_flags {
  count_flag users{"--users", {}}, items{"--items", {}}, ratings{"--ratings", {}}, rank{"--rank", {}};
  double noise = 0.8;
};

int run_mf(const CLI::App& sub, const common_flags& c, const mf_flags& f) {
  auto o = gen::mf_preset(c.size.empty() ? "netflix" : c.size);
  bool custom = take(f.users, o.users);
  custom = take(f.items, o.items) || custom;
  custom = take(f.ratings, o.ratings) || custom;
  custom = take(f.rank, o.rank) || custom;
  if (sub.count("--noise") > 0) o.noise = f.noise, custom = true;
  o.seed = c.seed;
  if (custom)
    o.name = "u" + std::to_string(o.users) + "-i" + std::to_string(o.items) + "-n" + std::to_string(o.ratings) + "-r" +
             std::to_string(o.rank) + (sub.count("--noise") > 0 ? "-e" + number(o.noise) : "");
  gen::check_mf_options(o);
  return finish("mf", c, o.name, gen::mf_params(o), [&](const fs::path& dir, const gen::progress_fn& p) { gen::generate_mf(o, dir, p); });
}

struct lda_flags {
  count_flag docs{"--docs", {}}, vocab{"--vocab", {}}, tokens{"--tokens", {}}, topics{"--topics", {}};
  double alpha = 0.1;
};

int run_lda(const CLI::App& sub, const common_flags& c, const lda_flags& f) {
  auto o = gen::lda_preset(c.size.empty() ? "nytimes" : c.size);
  bool custom = take(f.docs, o.docs);
  custom = take(f.vocab, o.vocab) || custom;
  custom = take(f.tokens, o.tokens) || custom;
  custom = take(f.topics, o.topics) || custom;
  if (sub.count("--alpha") > 0) o.alpha = f.alpha, custom = true;
  o.seed = c.seed;
  if (custom)
    o.name = "d" + std::to_string(o.docs) + "-v" + std::to_string(o.vocab) + "-t" + std::to_string(o.tokens) + "-k" +
             std::to_string(o.topics) + (sub.count("--alpha") > 0 ? "-a" + number(o.alpha) : "");
  gen::check_lda_options(o);
  return finish("lda", c, o.name, gen::lda_params(o), [&](const fs::path& dir, const gen::progress_fn& p) { gen::generate_lda(o, dir, p); });
}

struct lasso_flags {
  count_flag samples{"--samples", {}}, features{"--features", {}}, nnz{"--nnz-per-row", {}}, support{"--support", {}},
      group{"--group", {}};
  double sigma = 1.0;
};

int run_lasso(const CLI::App& sub, const common_flags& c, const lasso_flags& f) {
  auto o = gen::lasso_preset(c.size.empty() ? "1m" : c.size);
  bool custom = take(f.samples, o.samples);
  custom = take(f.features, o.features) || custom;
  custom = take(f.nnz, o.nnz_per_row) || custom;
  custom = take(f.support, o.support) || custom;
  custom = take(f.group, o.group) || custom;
  if (sub.count("--sigma") > 0) o.sigma = f.sigma, custom = true;
  o.seed = c.seed;
  if (custom)
    o.name = "n" + std::to_string(o.samples) + "-f" + std::to_string(o.features) + "-m" + std::to_string(o.nnz_per_row) + "-s" +
             std::to_string(o.support_size()) + "-g" + std::to_string(o.group) + "-e" + number(o.sigma);
  gen::check_lasso_options(o);
  return finish("lasso", c, o.name, gen::lasso_params(o),
                [&](const fs::path& dir, const gen::progress_fn& p) { gen::generate_lasso(o, dir, p); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("strata_gen: deterministic synthetic data sets (MF ratings, LDA bag of words, Lasso libsvm) with their true model");
  app.require_subcommand(1);
  common_flags c;
  mf_flags mf;
  lda_flags lda;
  lasso_flags lasso;
  auto* smf = app.add_subcommand("mf", "ratings: ratings.train.txt, ratings.test.txt, truth.factors.bin, truth.json");
  add_common(*smf, c, "netflix (default), 10m, tiny");
  add_count(*smf, mf.users, "users (explicit size)");
  add_count(*smf, mf.items, "items (explicit size)");
  add_count(*smf, mf.ratings, "ratings, train and test together (explicit size)");
  add_count(*smf, mf.rank, "rank of the true factors (default 32)");
  smf->add_option("--noise", mf.noise, "sigma of the rating noise")->check(strata::examples::non_negative)->capture_default_str();
  auto* slda = app.add_subcommand("lda", "bag of words: docword.<size>.txt, vocab.<size>.txt, truth.topics.bin, truth.json");
  add_common(*slda, c, "nytimes (default), 10m, tiny");
  add_count(*slda, lda.docs, "documents (explicit size)");
  add_count(*slda, lda.vocab, "vocabulary size (explicit size)");
  add_count(*slda, lda.tokens, "tokens on average (explicit size)");
  add_count(*slda, lda.topics, "true topics (default 100; tiny: 10)");
  slda->add_option("--alpha", lda.alpha, "symmetric Dirichlet prior of the documents' topic mixtures")
      ->check(strata::examples::positive)
      ->capture_default_str();
  auto* slasso = app.add_subcommand("lasso", "sparse regression: lasso.<size>.svm, truth.beta.txt, truth.json");
  add_common(*slasso, c, "1m (default), 100k, tiny");
  add_count(*slasso, lasso.samples, "rows (explicit size)");
  add_count(*slasso, lasso.features, "columns (explicit size)");
  add_count(*slasso, lasso.nnz, "non-zeros per row, rounded to whole groups (explicit size)");
  add_count(*slasso, lasso.support, "non-zeros of the true beta (default 1% of the features, at most 1000)");
  add_count(*slasso, lasso.group, "features per correlated group (default 10)");
  slasso->add_option("--sigma", lasso.sigma, "sigma of the target's noise")->check(strata::examples::non_negative)->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "strata_gen: %s\n", e.what());
    return 2;
  }
  try {
    if (smf->parsed()) return run_mf(*smf, c, mf);
    if (slda->parsed()) return run_lda(*slda, c, lda);
    return run_lasso(*slasso, c, lasso);
  } catch (const strata::error& e) {
    const bool refused = e.code() == strata::errc::bad_input || e.code() == strata::errc::refused;
    std::string what = e.what();  // a refusal is one sentence: without system_error's ": malformed input"
    const std::string tail = ": " + e.code().message();
    if (refused && what.size() > tail.size() && what.compare(what.size() - tail.size(), tail.size(), tail) == 0)
      what.resize(what.size() - tail.size());
    std::fprintf(stderr, "strata_gen: %s\n", what.c_str());
    return refused ? 2 : 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "strata_gen: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_gen: %s\n", e.what());
    return 1;
  }
}
