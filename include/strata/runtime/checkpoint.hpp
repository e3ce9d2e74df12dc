#pragma once
/// \file Checkpoint files: a shard's tables or a worker's own state at a clock every worker has
/// passed, sealed with a format version, the run's signature and a SHA-256 checksum, written
/// atomically (temporary file, fsync, rename, fsync of the folder); the manifest that lists the
/// checkpoints complete across every shard; and the search for the newest one to resume from.
///
/// Layout of a checkpoint folder `dir`:
///
///     dir/manifest                      "strata-checkpoints 1" then one "complete <clock>" per line
///     dir/clock-<m>/shard-<n>.ckpt      shard n's tables, exactly the updates of clocks < m
///     dir/clock-<m>/worker-<w>.ckpt     worker w's state after its clock m (a program's hook)
///
/// A file: magic "STRATACK", format version (u32), kind (u8: 1 shard, 2 worker), id (u32),
/// clock (i64), the run signature's SHA-256 (32 bytes), body length (u64), body, then the SHA-256
/// of everything before it. Integers are in the machine's byte order (like the wire).
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <strata/core/atomic_file.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>
#include <strata/core/ids.hpp>
#include <strata/table/server_table.hpp>
#include <strata/wire/sha256.hpp>
#include <strata/runtime/checkpoint_types.hpp>

namespace strata::ckpt {

inline constexpr std::uint32_t format_version = 1;
inline constexpr std::string_view magic = "STRATACK";
enum class kind : std::uint8_t { shard = 1, worker = 2 };

inline digest sha256_of(std::span<const std::byte> bytes) noexcept {
  wire::detail::sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.finish();
}
/// The digest a checkpoint carries for a run: the system's signature (model, shape, tables) and
/// the program's own tag (data, hyper-parameters), so that a checkpoint of another run is refused.
inline digest signature_digest(std::string_view signature) noexcept {
  return sha256_of(std::as_bytes(std::span(signature.data(), signature.size())));
}

inline std::filesystem::path clock_dir(const std::filesystem::path& dir, clock_type m) {
  return dir / ("clock-" + std::to_string(m));
}
inline std::filesystem::path shard_file(const std::filesystem::path& dir, clock_type m, node_id n) {
  return clock_dir(dir, m) / ("shard-" + std::to_string(n) + ".ckpt");
}
inline std::filesystem::path worker_file(const std::filesystem::path& dir, clock_type m, worker_id w) {
  return clock_dir(dir, m) / ("worker-" + std::to_string(w) + ".ckpt");
}
inline std::filesystem::path manifest_file(const std::filesystem::path& dir) { return dir / "manifest"; }

namespace detail {
inline error io_error(const std::filesystem::path& p, const char* what) { return file_error(p, std::string(what) + " checkpoint file"); }
}  // namespace detail

/// Writes `bytes` to `p` so that a reader sees either the old file or the whole new one
/// (core/atomic_file.hpp: temporary file, fsync, rename, fsync of the folder). Creates the folder.
inline void write_atomic(const std::filesystem::path& p, std::span<const std::byte> bytes) {
  std::filesystem::create_directories(p.parent_path());
  write_file_atomic(p, bytes);
}

inline std::vector<std::byte> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw detail::io_error(p, "open");
  std::vector<std::byte> out;
  in.seekg(0, std::ios::end);
  out.resize(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  if (!in) throw detail::io_error(p, "read");
  return out;
}

/// A checkpoint file's bytes: header, `body`, checksum.
inline std::vector<std::byte> seal(kind k, std::uint32_t id, clock_type m, const digest& sig, std::span<const std::byte> body) {
  std::vector<std::byte> out;
  // Room for everything at once (the header is under 64 bytes): one allocation, and no growth path
  // for GCC 12's -O3 -Warray-bounds to misjudge.
  out.reserve(64 + sig.size() + body.size() + 32);
  byte_writer w(out);
  w.put_bytes(magic.data(), magic.size());
  w.put(format_version);
  w.put(static_cast<std::uint8_t>(k));
  w.put(id);
  w.put(m);
  w.put_bytes(sig.data(), sig.size());
  w.put(static_cast<std::uint64_t>(body.size()));
  w.put_bytes(body.data(), body.size());
  const auto sum = sha256_of(out);
  w.put_bytes(sum.data(), sum.size());
  return out;
}

/// The body of the checkpoint file at `p`, after checking (in this order) that it is whole (its
/// checksum), of this format version, of this run (signature), and the kind, id and clock the
/// caller expects. Throws strata::error(bad_input) naming the file and what is wrong.
inline std::vector<std::byte> unseal(const std::filesystem::path& p, kind k, std::uint32_t id, clock_type m, const digest& sig) {
  const auto bytes = read_all(p);
  auto bad = [&](const std::string& why) { return error(errc::bad_input, "checkpoint " + p.string() + " refused: " + why); };
  constexpr std::size_t header = 8 + 4 + 1 + 4 + 8 + 32 + 8;
  if (bytes.size() < header + 32) throw bad("truncated (" + std::to_string(bytes.size()) + " bytes)");
  const std::span<const std::byte> all(bytes);
  const auto sum = sha256_of(all.first(all.size() - 32));
  if (!std::equal(sum.begin(), sum.end(), reinterpret_cast<const std::uint8_t*>(all.data() + all.size() - 32)))
    throw bad("checksum mismatch (the file is corrupt or was cut short)");
  byte_reader r(all.first(all.size() - 32));
  char mg[8];
  r.get_bytes(mg, sizeof mg);
  if (std::string_view(mg, 8) != magic) throw bad("not a strata checkpoint");
  const auto version = r.get<std::uint32_t>();
  if (version != format_version)
    throw bad("format version " + std::to_string(version) + ", this build reads version " + std::to_string(format_version));
  const auto kd = r.get<std::uint8_t>();
  const auto fid = r.get<std::uint32_t>();
  const auto fm = r.get<clock_type>();
  digest fsig;
  r.get_bytes(fsig.data(), fsig.size());
  if (fsig != sig) throw bad("written by another run (its signature differs: other model, shape, tables, data or parameters)");
  if (kd != static_cast<std::uint8_t>(k) || fid != id || fm != m)
    throw bad("holds kind " + std::to_string(kd) + " id " + std::to_string(fid) + " clock " + std::to_string(fm) +
              ", expected kind " + std::to_string(static_cast<int>(k)) + " id " + std::to_string(id) + " clock " + std::to_string(m));
  const auto n = r.get<std::uint64_t>();
  if (n != r.remaining()) throw bad("body length " + std::to_string(n) + " does not match the file");
  std::vector<std::byte> body(n);
  r.get_bytes(body.data(), n);
  return body;
}

// ---- manifest -------------------------------------------------------------------------------

/// The clocks the manifest of `dir` lists as complete, ascending (none when there is no manifest).
inline std::vector<clock_type> read_manifest(const std::filesystem::path& dir) {
  std::vector<clock_type> out;
  const auto p = manifest_file(dir);
  if (!std::filesystem::exists(p)) return out;
  std::ifstream in(p);
  std::string line;
  if (!std::getline(in, line) || line != "strata-checkpoints 1")
    throw error(errc::bad_input, "checkpoint manifest " + p.string() + ": first line is not 'strata-checkpoints 1'");
  for (std::size_t no = 2; std::getline(in, line); ++no) {
    std::istringstream ls(line);
    std::string word;
    clock_type m = 0;
    if (!(ls >> word >> m) || word != "complete" || m <= 0)
      throw error(errc::bad_input, "checkpoint manifest " + p.string() + ":" + std::to_string(no) + ": expected 'complete <clock>'");
    out.push_back(m);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Writes the manifest of `dir` listing `clocks` (ascending) as complete, atomically.
inline void write_manifest(const std::filesystem::path& dir, const std::vector<clock_type>& clocks) {
  std::string text = "strata-checkpoints 1\n";
  for (auto c : clocks) text += "complete " + std::to_string(c) + "\n";
  write_atomic(manifest_file(dir), std::as_bytes(std::span(text.data(), text.size())));
}

/// Records checkpoint `m` as complete (rewrites the manifest atomically). With `keep` > 0 only the
/// newest `keep` complete checkpoints stay: the manifest lists them, and then every clock-<c>
/// folder older than the oldest of them and older than `m` (complete or not: every shard and every
/// worker has passed it) is removed. Never one at `m` or later: a run that starts again in a folder
/// holding an earlier run's later checkpoints (clock-5..7, the new run at clock 1) is still writing
/// those, and removing them made a worker's rename fail.
inline void add_to_manifest(const std::filesystem::path& dir, clock_type m, std::size_t keep = 0) {
  auto clocks = read_manifest(dir);
  clocks.push_back(m);
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  if (keep > 0 && clocks.size() > keep) clocks.erase(clocks.begin(), clocks.end() - static_cast<std::ptrdiff_t>(keep));
  write_manifest(dir, clocks);
  if (keep == 0) return;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = e.path().filename().string();
    clock_type c = 0;
    if (name.rfind("clock-", 0) != 0 || !(std::istringstream(name.substr(6)) >> c) || c >= std::min(clocks.front(), m)) continue;
    std::filesystem::remove_all(e.path(), ec);  // a folder that will not go is left: it is never resumed from
  }
}

// ---- one run per folder -----------------------------------------------------------------------

/// The lock file of node n's shard in a checkpoint folder (one per node: the processes of a TCP
/// run may share the folder, each with its own node).
inline std::filesystem::path lock_file(const std::filesystem::path& dir, node_id n) {
  return dir / ("lock-node-" + std::to_string(n));
}

/// Node n's claim on a checkpoint folder, held while the object lives (flock on its lock file,
/// which holds the owner's pid): a second run writing the same folder is refused in one sentence
/// naming the folder and the holder's pid, instead of both overwriting each other's files.
class folder_lock {
 public:
  folder_lock(const std::filesystem::path& dir, node_id n) : path_(lock_file(dir, n)) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) throw file_error(path_, "open the checkpoint lock file");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char pid[32] = {};
      const auto got = ::pread(fd_, pid, sizeof pid - 1, 0);
      ::close(fd_);
      if (err != EWOULDBLOCK) throw file_error(path_, "lock", err);
      std::string holder(pid, got > 0 ? static_cast<std::size_t>(got) : 0);
      holder.erase(std::find_if(holder.begin(), holder.end(), [](char ch) { return ch < '0' || ch > '9'; }), holder.end());
      throw error(std::make_error_code(std::errc::device_or_resource_busy), "checkpoint folder " + dir.string() +
                                       " is in use by another run (process " + (holder.empty() ? "?" : holder) + " holds " +
                                       path_.filename().string() + "): give each run its own --checkpoint-dir");
    }
    const std::string me = std::to_string(::getpid());
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<::ssize_t>(me.size())) {
      const int err = errno;
      ::close(fd_);
      throw file_error(path_, "write", err);
    }
  }
  folder_lock(const folder_lock&) = delete;
  folder_lock& operator=(const folder_lock&) = delete;
  ~folder_lock() { ::close(fd_); }  // releases the lock; the file stays (removing it would race a new holder)

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

/// Refuses a checkpoint folder whose newest complete checkpoint is of another run (its shard-0 file
/// carries another signature): writing there would mix two runs' checkpoints in one manifest.
/// A folder without checkpoints, or whose newest one cannot be read, is accepted.
inline void check_folder_run(const std::filesystem::path& dir, const digest& sig) {
  const auto clocks = read_manifest(dir);
  if (clocks.empty()) return;
  std::ifstream in(shard_file(dir, clocks.back(), 0), std::ios::binary);
  char head[8 + 4 + 1 + 4 + 8 + 32];
  if (!in.read(head, sizeof head) || std::string_view(head, 8) != magic) return;
  if (std::memcmp(head + 8 + 4 + 1 + 4 + 8, sig.data(), sig.size()) == 0) return;
  throw error(errc::config_mismatch, "checkpoint folder " + dir.string() + " holds checkpoints of another run (other model, shape, tables, "
                               "data or parameters): give this run its own --checkpoint-dir, or remove the folder");
}

// ---- tables ---------------------------------------------------------------------------------

/// A shard's tables as a checkpoint body: table count, then per table its width, row count and
/// rows (id, encoded row) in ascending id order.
inline std::vector<std::byte> encode_tables(const std::vector<std::unique_ptr<server_table_base>>& tables) {
  std::vector<std::byte> out;
  byte_writer w(out);
  w.put(static_cast<std::uint32_t>(tables.size()));
  for (auto& t : tables) {
    auto ids = t->row_ids();
    std::sort(ids.begin(), ids.end());
    w.put(static_cast<std::uint64_t>(t->width()));
    w.put(static_cast<std::uint64_t>(ids.size()));
    for (auto r : ids) {
      w.put(r);
      t->encode(r, w);
    }
  }
  return out;
}

/// Adds the rows of a checkpoint body to `tables` (empty tables: the result is the checkpoint's).
/// `what` names the file in errors.
inline void decode_tables(std::span<const std::byte> body, std::vector<std::unique_ptr<server_table_base>>& tables,
                          const std::string& what) {
  byte_reader in(body);
  try {
    const auto n = in.get<std::uint32_t>();
    if (n != tables.size())
      throw error(errc::bad_input, "holds " + std::to_string(n) + " tables, the system has " + std::to_string(tables.size()));
    for (auto& t : tables) {
      const auto width = in.get<std::uint64_t>();
      if (width != t->width())
        throw error(errc::bad_input, "a table of width " + std::to_string(width) + " where the system's is " + std::to_string(t->width()));
      const auto rows = in.get<std::uint64_t>();
      for (std::uint64_t i = 0; i < rows; ++i) {
        const auto r = in.get<row_id>();
        t->apply(r, in, 0, 0, true);
      }
    }
    if (!in.done()) throw error(errc::bad_input, "trailing bytes");
  } catch (const error& e) {
    throw error(errc::bad_input, "checkpoint " + what + " does not decode: " + e.what());
  }
}

// ---- resuming -------------------------------------------------------------------------------

/// Where a resumed run starts: the newest checkpoint that the manifest lists as complete and whose
/// every file (each shard's, each worker's) is whole and of this run; `refused` says why each newer
/// one was passed over.

inline resume_point find_resume(const std::filesystem::path& dir, std::uint32_t nodes, std::uint32_t workers, const digest& sig) {
  resume_point rp;
  if (!std::filesystem::is_directory(dir))
    throw error(errc::bad_input, "resume: " + dir.string() + " is not a checkpoint folder");
  const auto clocks = read_manifest(dir);
  for (auto it = clocks.rbegin(); it != clocks.rend(); ++it) {
    try {
      for (node_id n = 0; n < nodes; ++n) (void)unseal(shard_file(dir, *it, n), kind::shard, n, *it, sig);
      for (worker_id w = 0; w < workers; ++w) (void)unseal(worker_file(dir, *it, w), kind::worker, w, *it, sig);
      rp.clock = *it;
      return rp;
    } catch (const error& e) {
      rp.refused.push_back("clock " + std::to_string(*it) + ": " + e.what());
    }
  }
  std::string why = clocks.empty() ? " (its manifest lists none)" : "";
  for (auto& r : rp.refused) why += "\n  " + r;
  throw error(errc::bad_input, "resume: no complete checkpoint of this run in " + dir.string() + why);
}

}  // namespace strata::ckpt
