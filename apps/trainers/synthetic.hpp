#pragma once
/// \file Deterministic synthetic data sets at the size of the papers strata implements (Netflix-size
/// MF, NYTimes-size LDA, a million-feature Lasso), for a machine that reaches no large public
/// corpus: the generators behind `strata_gen` (examples/gen.cpp), bodies in apps/src/synthetic.cpp.
///
/// Every generator is a documented generative process with a known truth, deterministic from
/// (options, seed) on one platform (std::mt19937_64 streams; the libstdc++ normal / gamma
/// distributions). Each part of a process draws from its own stream, seeded from the seed and a
/// constant of that part, so that changing one part's size leaves the others' draws alone: more
/// ratings keep the same factors, more users the same item factors, more documents the same topics.
///
/// Output is streamed: lines are built in a 4 MiB buffer with std::to_chars and written with
/// fwrite; no generator holds the data set (only the model: factors, topics, coefficients) and
/// none writes a byte twice except LDA's docword body (see `generate_lda`). Each data file is
/// written as `<file>.tmp`, renamed into place when complete, then given its check file
/// (`<file>.check`, include/strata/ml/io/file_check.hpp: bytes, lines, and the checksum of the
/// bytes as they were written). `truth.json` is written last (atomically): it records the
/// parameters (`params`), the counts, the truth's summary numbers and every file's check, so a
/// folder holding it with every file and check matching is a complete set (`cached_truth`).
///
/// Before writing anything a generator estimates the disk its files need and the memory it needs
/// (`estimate_*`) and refuses (strata::error, errc::refused) when either passes what the output
/// filesystem has free or /proc/meminfo's MemAvailable; options without meaning (zero sizes, NaN
/// or negative parameters, more ratings than users × items / 2) are refused by `check_*_options`
/// (errc::bad_input), each naming strata_gen's flag.
///
/// Power-law popularity (MF users and items, Lasso groups): the k-th most popular (k = 1, 2, ...)
/// has weight ∝ (k + k0)^(−a); which id holds rank k is a random permutation of the ids, so that
/// popularity is not the id order.
#include <strata/core/json.hpp>
#include <strata/ml/io/file_check.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::ml::gen {

// ---------------------------------------------------------------------------------------------
// What every generator shares.

/// One file a generator wrote (a name inside the output folder) and what its check file records.
struct written_file {
  std::string name;
  io::file_check check;
};

/// Where a generator wrote, what, and how long it took.
struct gen_outcome {
  std::filesystem::path dir;
  std::vector<written_file> files;  ///< every file with a check file (truth.json is not listed)
  std::uint64_t bytes = 0;          ///< their bytes together
  double seconds = 0;               ///< wall-clock time of the generation
};

/// Progress of a long generation: units done (ratings, tokens, rows) out of the total.
using progress_fn = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// What a generation needs before it starts.
struct resource_estimate {
  std::uint64_t disk_bytes = 0;    ///< the files at their largest together (LDA: body and final file at once)
  std::uint64_t memory_bytes = 0;  ///< the generator's working memory (model, tables, buffers)
  std::string disk_what;           ///< what the disk holds, e.g. "100000000 ratings at ~17 bytes a line"
  std::string memory_what;         ///< what the memory holds, e.g. "32-wide factors of 497959 users and items"
};

/// Free bytes of the filesystem `dir` would be on (its nearest existing ancestor's when it does
/// not exist yet); 2^64−1 when that cannot be read.
std::uint64_t free_disk(const std::filesystem::path& dir);
/// /proc/meminfo's MemAvailable in bytes; 2^64−1 when it cannot be read.
std::uint64_t available_memory();
/// Refuses (strata::error, errc::refused) an estimate past the free disk at `dir` or the
/// available memory, naming the size needed, what it is for, and what is available; `kind`
/// ("mf", "lda", "lasso") starts the message.
void check_resources(std::string_view kind, const std::filesystem::path& dir, const resource_estimate& need);

/// The folder strata_gen writes to by default: $HOME/.cache/strata/gen/<kind>-<name>-s<seed>
/// (./.cache/... without $HOME).
std::filesystem::path default_out_dir(std::string_view kind, std::string_view name, std::uint64_t seed);

/// The truth.json of `dir` when the folder holds a complete set generated with `params` (a
/// generator's `*_params(options)`): truth.json parses, its "params" equal `params`, and every
/// file it lists is there with its recorded size and a check file recording what truth.json
/// does. nullopt otherwise (no folder, a file missing, cut short or regenerated since).
std::optional<json_value> cached_truth(const std::filesystem::path& dir, const json_value& params);

/// strata_gen's closing line from a truth.json: "gen summary: kind=K name=N <the truth's
/// summary fields> seconds=S bytes=B".
std::string summary_line(const json_value& truth);

// ---------------------------------------------------------------------------------------------
// Matrix factorisation (ratings).

/// Settings of the MF generator (defaults: `netflix`). The process, for U users, I items, N
/// ratings and rank r:
///
/// - Truth: μ = `mean` (3.6); b_u ~ N(0, 0.3²); b_i ~ N(0, 0.4²); p_u, q_i ∈ ℝ^r with entries
///   ~ N(0, s²), s = sqrt(0.7 / sqrt(r)), so p_u·q_i has standard deviation 0.7 at every rank.
///   Users draw b_u then p_u in id order from one stream, items b_i then q_i from another.
/// - Popularity: users a = 0.7, k0 = 1 + U/2000; items a = 1.2, k0 = 1 + I/200 (k0 scales with
///   the ids, so every size has the same curve over the rank's fraction). Measured at the netflix
///   and 10m sizes: the 10% most active users hold 44% of the ratings, the median user has 0.55 of
///   the mean (Netflix: 96 / 209 = 0.46), 0.05% of the users reach the cap; the most rated item has
///   0.2% of the ratings (Netflix: 232,944 of 100M), the 10% most rated items 61%, the median item
///   0.32 of the mean (Netflix: ~0.1, a longer tail than this curve's).
/// - Ratings per user: each user gets 1 (when N ≥ U), and the remaining N − U are shared by
///   weight, N_u = (N − U)·w_u / Σw, capped at ⌊I/2⌋ − 1 (water-filling: the excess of capped
///   users goes to the uncapped ones by weight until none passes the cap), then rounded by
///   cumulative rounding (n_u = round(S_u) − round(S_{u−1}) over the running sums S), so that the
///   counts sum to exactly N and each is within 1 of its share. So no user rates more than half
///   the items.
/// - Items of a user: n_u distinct items drawn by item popularity (alias table; a repeat is drawn
///   again), written in increasing item order.
/// - Rating: clip(μ + b_u + b_i + p_u·q_i + ε, 1, 5), ε ~ N(0, σ²), σ = `noise` (0.8), written
///   with one decimal ("3.7"). The signal's spread is sqrt(0.3² + 0.4² + 0.7²) = 0.86; with the
///   noise the test ratings' standard deviation is 1.04 (Netflix: 1.09), and the noise floor
///   (below; clipping takes some noise off) is 0.73, so a good model's test RMSE lands near
///   Netflix's 0.85 (strata_mf --rank 32 --iterations 60 reaches 0.83 on the 10m set).
/// - Split: each rating goes to the test file with probability 0.1 (its own stream), else to train.
///
/// Files: `ratings.train.txt`, `ratings.test.txt` ("user item rating", 0-based ids, as
/// ml/io/ratings.hpp and LIBMF read), `truth.factors.bin` (little-endian: the 8 bytes
/// "STRGENMF", uint32 rank, users, items, then per user float32 b_u and p_u (r values), then per
/// item float32 b_i and q_i), `truth.json` (params, counts, `noise_floor_rmse`: the test file's
/// RMSE of the true model's clipped prediction clip(μ + b_u + b_i + p_u·q_i, 1, 5) against the
/// ratings as written; `test_rating_sd`: the RMSE of predicting the test mean).
struct mf_options {
  std::string name = "netflix";      ///< the size's name (the folder's and the summary's)
  std::uint32_t users = 480189;      ///< U (Netflix's users)
  std::uint32_t items = 17770;       ///< I (Netflix's movies)
  std::uint64_t ratings = 100000000; ///< N, train and test together
  std::uint32_t rank = 32;           ///< r of the truth
  double noise = 0.8;                ///< σ of ε
  std::uint64_t seed = 1;
  // The process's constants (documented above; not strata_gen flags).
  double mean = 3.6, user_bias_sd = 0.3, item_bias_sd = 0.4, interaction_sd = 0.7;
  double user_exponent = 0.7, item_exponent = 1.2;
  double test_fraction = 0.1;
};

/// The named sizes: `netflix` (480,189 × 17,770, 100M ratings), `10m` (48,019 × 17,770, 10M:
/// Netflix's items and ratings per user with a tenth of the users), `tiny` (2,000 × 500, 50,000).
/// Throws strata::error(bad_input) naming --size for another name.
mf_options mf_preset(std::string_view size);
/// Refuses (strata::error, bad_input) options without meaning, naming strata_gen's flag.
void check_mf_options(const mf_options& o);
/// The disk and memory `generate_mf` needs.
resource_estimate estimate_mf(const mf_options& o);
/// The options as truth.json's "params" (what `cached_truth` compares).
json_value mf_params(const mf_options& o);

/// What the MF generator wrote and measured.
struct mf_truth {
  gen_outcome out;
  std::uint64_t ratings_train = 0, ratings_test = 0;
  double noise_floor_rmse = 0;       ///< see mf_options
  double test_rating_sd = 0;         ///< standard deviation of the test ratings as written
  std::uint64_t max_user_ratings = 0, max_item_ratings = 0;
  std::uint64_t capped_users = 0;    ///< users whose share reached the cap ⌊I/2⌋
  double top_decile_user_share = 0;  ///< share of the ratings held by the 10% most active users
};

/// Generates the MF data set into `dir` (created; existing files of the same names replaced).
/// Throws strata::error: bad_input (check_mf_options), refused (check_resources), or the OS error
/// naming the file that could not be written.
mf_truth generate_mf(const mf_options& o, const std::filesystem::path& dir, const progress_fn& progress = {});

// ---------------------------------------------------------------------------------------------
// Latent Dirichlet allocation (bag of words).

/// Settings of the LDA generator (defaults: `nytimes`). The process, for D documents, V words, T
/// tokens and K topics:
///
/// - Base distribution: base_w ∝ 1 / rank_w^1.07 (`zipf_exponent`), the ranks a random
///   permutation of the word ids.
/// - Topics: φ_k ~ Dirichlet(β0 · base), β0 = 0.05·V (`concentration_per_word` × V), drawn as
///   normalised gamma variates, topic by topic from one stream. E[φ_k] = base, so the corpus's word
///   frequencies follow the Zipf curve (measured at the 10m size: log-log slope −1.07 over the top
///   100 and top 1,000 words). A word's Dirichlet parameter is ≥ 1 only for the top few hundred
///   words (about 390 of V = 100,000): those, the "stop words", carry much the same weight in every
///   topic (the top 10 words are the same in all), and the rest, over a third of the mass, is
///   topic-specific, so topics are distinct (total-variation distance between two topics 0.39 at
///   the 10m size).
/// - Document lengths: lognormal, L_d = max(1, round(exp(m + 0.6·g))), g ~ N(0, 1), m = ln(T/D)
///   − 0.6²/2 (mean T/D; a spread like NYTimes', where Poisson's would be far too narrow), so the
///   token count is T only on average.
/// - Document d: θ_d ~ Dirichlet(α) (symmetric, α = 0.1); each token z ~ θ_d (an alias table per
///   document), w ~ φ_z (an alias table per topic over the V words).
///
/// Files: `docword.<name>.txt` (UCI bag of words: lines D, W, NNZ, then "doc word count" with
/// 1-based ids, by document then word, as ml/io/bag_of_words.hpp reads), `vocab.<name>.txt`
/// ("w1", "w2", ...: line w names word w), `truth.topics.bin` (little-endian: "STRGENTP", uint32
/// K, V, then φ as K × V float32, row-major), `truth.json` (params, counts, and
/// `loglik_per_token`: Σ log Σ_k θ_dk φ_kw over the corpus's tokens / T, the true model's
/// per-token log-likelihood of the words given θ and φ; not the collapsed joint likelihood the
/// Gibbs samplers report). NNZ is known only at the end, so the body goes to a temporary file
/// first and the docword file is the header followed by a streamed copy of it.
struct lda_options {
  std::string name = "nytimes";
  std::uint32_t docs = 300000;        ///< D (NYTimes: 299,752)
  std::uint32_t vocab = 100000;       ///< V (NYTimes: 102,660)
  std::uint64_t tokens = 100000000;   ///< T, on average (NYTimes: 99.5M)
  std::uint32_t topics = 100;         ///< K of the truth
  double alpha = 0.1;                 ///< symmetric Dirichlet prior of θ_d
  std::uint64_t seed = 1;
  // The process's constants (documented above; not strata_gen flags).
  double zipf_exponent = 1.07, concentration_per_word = 0.05, length_sdlog = 0.6;
};

/// The named sizes: `nytimes` (300,000 documents, 100,000 words, ~100M tokens, K = 100), `10m`
/// (30,000 documents, the same vocabulary, ~10M tokens, K = 100), `tiny` (500 documents, 1,000
/// words, ~50,000 tokens, K = 10). Throws strata::error(bad_input) naming --size otherwise.
lda_options lda_preset(std::string_view size);
/// Refuses (strata::error, bad_input) options without meaning, naming strata_gen's flag.
void check_lda_options(const lda_options& o);
/// The disk and memory `generate_lda` needs.
resource_estimate estimate_lda(const lda_options& o);
/// The options as truth.json's "params".
json_value lda_params(const lda_options& o);

/// What the LDA generator wrote and measured.
struct lda_truth {
  gen_outcome out;
  std::uint64_t tokens = 0;          ///< the corpus's tokens (sum of the counts)
  std::uint64_t nnz = 0;             ///< its (doc, word) entries
  std::uint32_t words_used = 0;      ///< words that occur at least once
  std::uint64_t max_doc_length = 0;
  double loglik_per_token = 0;       ///< see lda_options
};

/// Generates the LDA data set into `dir`. Throws as generate_mf does.
lda_truth generate_lda(const lda_options& o, const std::filesystem::path& dir, const progress_fn& progress = {});

// ---------------------------------------------------------------------------------------------
// Lasso (sparse regression).

/// Settings of the Lasso generator (defaults: `1m`). The process, for n samples, F features, m
/// non-zeros per row and group size g:
///
/// - Groups: features in groups of g consecutive ids (the last may be shorter), G = ⌈F/g⌉
///   groups, power-law popularity with a = 0.5, k0 = 1 + G/100: a mild skew (the most popular
///   group is drawn ~10 times as often as the least, so every column has data).
/// - Row i: round(m/g) (at least 1) distinct groups drawn by popularity (alias table; repeats drawn
///   again); group γ's latent value z ~ N(0, 1), and every feature j of an active group gets
///   x_ij = z + 0.3·e_ij, e_ij ~ N(0, 1) (`feature_noise`): features of a group are correlated
///   (0.92), the hard case for coordinate descent and for a scheduler's dependency filter.
///   Rows are written with increasing indices, values with 6 significant digits.
/// - Truth: β has `support` non-zeros (0: 1% of F, at most 1,000, at least 1) on distinct
///   features drawn uniformly, values ±U(0.5, 1.5) with a random sign.
/// - Target: y_i = x_i·β + σ·ε_i, ε ~ N(0, 1), σ = `sigma` (1.0: fixed, since the signal's
///   spread is known only after the rows are drawn; truth.json records the measured
///   `signal_sd` = std(xβ) and `snr` = signal_sd / σ: 3.4 at the 100k size, where a row meets ~10
///   support features, but 0.3 at tiny, where it meets 0.2: `--sigma 0.1` makes tiny a clean
///   problem). y is written with 9 significant digits.
///
/// Files: `lasso.<name>.svm` (libsvm: "y idx:val ...", 1-based indices, as ml/io/libsvm.hpp
/// reads), `truth.beta.txt` ("index value" per non-zero of β, 1-based, increasing), `truth.json`.
struct lasso_options {
  std::string name = "1m";
  std::uint32_t samples = 100000;     ///< n
  std::uint32_t features = 1000000;   ///< F
  std::uint32_t nnz_per_row = 1000;   ///< m, rounded to whole groups
  std::uint32_t support = 0;          ///< non-zeros of β (0: 1% of F, at most 1,000, at least 1)
  std::uint32_t group = 10;           ///< g
  double sigma = 1.0;                 ///< σ of the target's noise
  std::uint64_t seed = 1;
  // The process's constants (documented above; not strata_gen flags).
  double group_exponent = 0.5, feature_noise = 0.3, beta_min = 0.5, beta_max = 1.5;
  /// The support size these options give (resolving 0).
  std::uint32_t support_size() const noexcept;
};

/// The named sizes: `1m` (100,000 samples × 1,000,000 features, 1,000 non-zeros per row: 100M;
/// support 1,000), `100k` (10,000 × 100,000, 1,000 per row: 10M; support 1,000), `tiny` (200 ×
/// 1,000, 20 per row; support 10). Throws strata::error(bad_input) naming --size otherwise.
lasso_options lasso_preset(std::string_view size);
/// Refuses (strata::error, bad_input) options without meaning, naming strata_gen's flag.
void check_lasso_options(const lasso_options& o);
/// The disk and memory `generate_lasso` needs.
resource_estimate estimate_lasso(const lasso_options& o);
/// The options as truth.json's "params".
json_value lasso_params(const lasso_options& o);

/// What the Lasso generator wrote and measured.
struct lasso_truth {
  gen_outcome out;
  std::uint64_t nnz = 0;             ///< stored values of the design
  std::uint32_t support = 0;         ///< non-zeros of β
  double signal_sd = 0;              ///< standard deviation of x·β over the rows
  std::vector<std::uint32_t> support_ids;  ///< 0-based features of β's non-zeros, increasing
  std::vector<double> beta;          ///< their values (parallel to support_ids)
};

/// Generates the Lasso data set into `dir`. Throws as generate_mf does.
lasso_truth generate_lasso(const lasso_options& o, const std::filesystem::path& dir, const progress_fn& progress = {});

}  // namespace strata::ml::gen
