//! @file checkpoint.hpp  Checkpoints that lose nothing: named binary sections, written atomically, SHA-256 checked.
//!
//! A checkpoint file is, integers little-endian:
//!
//!     "TUTTICKP"  u32 format version (1)  u32 section count
//!     per section: u32 name length, name, u64 byte length, bytes
//!     the 32-byte SHA-256 of everything before it
//!
//! `checkpoint_writer::commit` writes `<path>.tmp.<pid>`, fsyncs it, renames it over `<path>` and
//! fsyncs the directory, so a crash at any moment leaves the previous file or the new one, never a
//! mix. `checkpoint_reader::open` refuses a truncated, corrupt, foreign or future file with one
//! sentence saying which, so a run resumes from the newest checkpoint that is whole
//! (`latest_checkpoint`) rather than from garbage.
//!
//! Needs libcrypto (OpenSSL's EVP API): link tutti::net or OpenSSL::Crypto.
#pragma once
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/wire.hpp"
#include "tutti/trainer/checkpoint_name.hpp"

namespace tutti::trainer {

namespace detail {

inline constexpr std::string_view checkpoint_magic = "TUTTICKP";
inline constexpr std::uint32_t checkpoint_format_version = 1;
inline constexpr std::size_t checkpoint_digest_bytes = 32;

inline std::string errno_text(int e) { return std::generic_category().message(e); }

//! SHA-256 through OpenSSL's EVP interface (the low-level SHA256_* calls are deprecated in 3.0).
class sha256 {
 public:
  sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
      throw error("checkpoint: OpenSSL could not start a SHA-256 digest");
  }
  void update(std::span<const std::byte> bytes) {
    if (!bytes.empty() && EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1)
      throw error("checkpoint: OpenSSL's SHA-256 update failed");
  }
  [[nodiscard]] std::array<std::byte, checkpoint_digest_bytes> finish() {
    std::array<std::byte, checkpoint_digest_bytes> out{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), reinterpret_cast<unsigned char*>(out.data()), &length) != 1 ||
        length != out.size())
      throw error("checkpoint: OpenSSL's SHA-256 finish failed");
    return out;
  }

 private:
  struct free_ctx {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, free_ctx> ctx_;
};

//! The file's integers are little-endian (core/wire.hpp writes and reads them).
using header_writer = wire::writer<std::endian::little>;
using header_reader = wire::reader<std::endian::little>;

//! Writes everything it is given to a file descriptor and into the digest; a few large writes
//! rather than one per field, and no copy of a large section.
class checkpoint_sink {
 public:
  checkpoint_sink(int fd, std::string what) : fd_(fd), what_(std::move(what)) {}

  void put(std::span<const std::byte> bytes) {
    digest_.update(bytes);
    if (pending_.size() + bytes.size() <= buffer_bytes) {
      pending_.insert(pending_.end(), bytes.begin(), bytes.end());
      return;
    }
    flush();
    if (bytes.size() <= buffer_bytes)
      pending_.insert(pending_.end(), bytes.begin(), bytes.end());
    else
      write_all(bytes);
  }
  void put(const std::vector<std::byte>& bytes) { put(std::span<const std::byte>(bytes)); }

  //! Writes the digest of everything put so far, then flushes.
  void finish() {
    const auto d = digest_.finish();
    pending_.insert(pending_.end(), d.begin(), d.end());
    flush();
  }

 private:
  static constexpr std::size_t buffer_bytes = std::size_t{1} << 20;

  void flush() {
    write_all(pending_);
    pending_.clear();
  }
  void write_all(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
      const ::ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        throw error(what_ + ": write failed: " + errno_text(errno));
      }
      bytes = bytes.subspan(static_cast<std::size_t>(n));
    }
  }

  int fd_;
  std::string what_;
  sha256 digest_;
  std::vector<std::byte> pending_;
};

//! The temporary file of one commit: closed, and removed unless it was renamed into place.
class temporary_file {
 public:
  explicit temporary_file(std::string path) : path_(std::move(path)) {}
  temporary_file(const temporary_file&) = delete;
  temporary_file& operator=(const temporary_file&) = delete;
  ~temporary_file() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
  }
  int fd_ = -1;
  bool renamed_ = false;
  std::string path_;
};

}  // namespace detail

//! Collects named sections, then writes them in one atomic commit.
class checkpoint_writer {
 public:
  //! Copies `bytes`; names are unique and non-empty.
  void add(std::string name, std::span<const std::byte> bytes) {
    if (name.empty()) throw invalid_argument("checkpoint_writer::add(name, bytes) requires a non-empty name");
    if (!names_.insert(name).second)
      throw invalid_argument("checkpoint_writer::add(\"" + name + "\", bytes): a section of that name was already added");
    sections_.emplace_back(std::move(name), std::vector<std::byte>(bytes.begin(), bytes.end()));
  }
  void add(std::string name, const std::string& bytes) {
    add(std::move(name), std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  }

  //! Writes the sections to `path` atomically: the file at `path` is the previous one until the
  //! rename, the new one, whole and on disk, after it. Throws tutti::error naming the path and the
  //! system's reason (a missing directory, a full disk), leaving any previous file as it was.
  void commit(const std::filesystem::path& path) const {
    const std::string target = path.string();
    const std::string what = "checkpoint " + target;
    detail::temporary_file tmp(target + ".tmp." + std::to_string(::getpid()));
    tmp.fd_ = ::open(tmp.path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tmp.fd_ < 0) throw error(what + ": cannot create " + tmp.path_ + ": " + detail::errno_text(errno));

    detail::checkpoint_sink sink(tmp.fd_, what + ": " + tmp.path_);
    detail::header_writer header;
    header.raw(detail::checkpoint_magic).put(detail::checkpoint_format_version);
    header.put(static_cast<std::uint32_t>(sections_.size()));
    sink.put(header.view());
    for (const auto& [name, bytes] : sections_) {
      header.clear();
      header.prefixed(name).put(static_cast<std::uint64_t>(bytes.size()));
      sink.put(header.view());
      sink.put(bytes);
    }
    sink.finish();

    if (::fsync(tmp.fd_) != 0) throw error(what + ": fsync of " + tmp.path_ + " failed: " + detail::errno_text(errno));
    const int fd = std::exchange(tmp.fd_, -1);
    if (::close(fd) != 0) throw error(what + ": close of " + tmp.path_ + " failed: " + detail::errno_text(errno));
    if (::rename(tmp.path_.c_str(), target.c_str()) != 0)
      throw error(what + ": cannot rename " + tmp.path_ + " over it: " + detail::errno_text(errno));
    tmp.renamed_ = true;

    // The rename is durable only once the directory entry is: without this a power cut could
    // bring back the old file (or none) after commit returned.
    const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const int dir = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) throw error(what + ": written, but cannot open its directory to fsync it: " + detail::errno_text(errno));
    const int rc = ::fsync(dir);
    const int e = errno;
    ::close(dir);
    if (rc != 0) throw error(what + ": written, but fsync of its directory failed: " + detail::errno_text(e));
  }

 private:
  std::vector<std::pair<std::string, std::vector<std::byte>>> sections_;
  std::set<std::string> names_;
};

//! A checkpoint read whole and verified: every section's bytes, by name.
class checkpoint_reader {
 public:
  //! Reads and checks `path`. Throws tutti::invalid_argument with one sentence when the file is not
  //! a whole checkpoint of this format: "checkpoint <path>: truncated (ends at byte 812 of a section
  //! announcing 4096)", "...: checksum mismatch (corrupt)", "...: not a tutti checkpoint",
  //! "...: format version 7, this build reads 1"; tutti::error when it cannot be read at all.
  [[nodiscard]] static checkpoint_reader open(const std::filesystem::path& path) { return from_bytes(read_file(path), path); }

  //! The same checks over bytes already in memory; `path` only names them in messages.
  [[nodiscard]] static checkpoint_reader from_bytes(std::vector<std::byte> bytes, const std::filesystem::path& path) {
    checkpoint_reader r;
    r.path_ = path;
    r.bytes_ = std::move(bytes);
    r.parse();
    return r;
  }

  [[nodiscard]] bool has(std::string_view name) const { return sections_.find(name) != sections_.end(); }

  //! The bytes of section `name`, valid while this reader lives; a missing name is refused naming it.
  [[nodiscard]] std::span<const std::byte> section(std::string_view name) const {
    const auto it = sections_.find(name);
    if (it == sections_.end()) {
      std::string have;
      for (const auto& n : order_) have += (have.empty() ? "" : ", ") + n;
      throw invalid_argument("checkpoint " + path_.string() + " has no section '" + std::string(name) +
                             "' (it has: " + (have.empty() ? "none" : have) + ")");
    }
    return it->second;
  }

  //! Section names in the order they were written.
  [[nodiscard]] std::vector<std::string> names() const { return order_; }

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  checkpoint_reader() = default;

  static std::vector<std::byte> read_file(const std::filesystem::path& path) {
    const std::string what = "checkpoint " + path.string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw error(what + ": cannot open: " + detail::errno_text(errno));
    std::vector<std::byte> bytes;
    struct ::stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(static_cast<std::size_t>(st.st_size));
    std::byte chunk[1 << 16];
    for (;;) {
      const ::ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        const int e = errno;
        ::close(fd);
        throw error(what + ": read failed: " + detail::errno_text(e));
      }
      bytes.insert(bytes.end(), chunk, chunk + n);
    }
    ::close(fd);
    return bytes;
  }

  [[noreturn]] void refuse(const std::string& why) const {
    throw invalid_argument("checkpoint " + path_.string() + ": " + why);
  }

  //! Structure first (so a short file says where it ends), then the digest over all of it. The
  //! wire reader bounds every read; its refusals are worded here as the documented sentences.
  void parse() {
    const std::size_t size = bytes_.size();
    const auto& magic = detail::checkpoint_magic;
    if (size > 0 && std::memcmp(bytes_.data(), magic.data(), std::min(size, magic.size())) != 0)
      refuse("not a tutti checkpoint");

    detail::header_reader in(bytes_, "checkpoint");
    std::vector<std::pair<std::string, std::span<const std::byte>>> found;
    std::size_t body = 0;
    try {
      (void)in.bytes(magic.size(), "the 8-byte magic");
      const auto version = in.get<std::uint32_t>("the format version");
      if (version != detail::checkpoint_format_version)
        refuse("format version " + std::to_string(version) + ", this build reads " +
               std::to_string(detail::checkpoint_format_version));
      const auto count = in.get<std::uint32_t>("the section count");
      for (std::uint32_t i = 0; i < count; ++i) {
        const auto name_length = in.get<std::uint32_t>("a section's name length");
        const auto name = in.bytes(name_length, "a section name announcing " + std::to_string(name_length) + " bytes");
        const auto length = in.get<std::uint64_t>("a section's byte length");
        const auto data = in.bytes(length, "a section announcing " + std::to_string(length));
        found.emplace_back(std::string(reinterpret_cast<const char*>(name.data()), name.size()), data);
      }
      body = in.offset();
      (void)in.bytes(detail::checkpoint_digest_bytes, "the 32-byte checksum");
    } catch (const wire::malformed& e) {  // every read above is a fixed size or a length: only short_input
      if (size == 0) refuse("truncated (empty file)");
      refuse("truncated (ends at byte " + std::to_string(e.left()) + " of " + e.field() + ")");
    }
    if (!in.at_end())
      refuse(std::to_string(in.left()) + " byte(s) after the checksum, where the file should end (corrupt)");
    detail::sha256 digest;
    digest.update(std::span<const std::byte>(bytes_.data(), body));
    const auto expected = digest.finish();
    if (std::memcmp(expected.data(), bytes_.data() + body, expected.size()) != 0) refuse("checksum mismatch (corrupt)");

    for (auto& [name, data] : found) {
      if (!sections_.emplace(name, data).second) refuse("section '" + name + "' appears twice (corrupt)");
      order_.push_back(std::move(name));
    }
  }

  std::filesystem::path path_;
  std::vector<std::byte> bytes_;  // the spans below point into it; a move keeps its buffer
  std::map<std::string, std::span<const std::byte>, std::less<>> sections_;
  std::vector<std::string> order_;
};

//! Checkpoints are files `ckpt-<batches, 12 digits>` in a directory (checkpoint_name.hpp); the newest
//! that opens cleanly wins.
struct checkpoint_choice {
  std::filesystem::path path;
  std::size_t batches = 0;
  std::vector<std::string> refused;  //!< one message per newer file that failed to open
};

//! The newest checkpoint in `dir` that opens cleanly, with the reasons each newer one was refused;
//! nullopt when `dir` is missing or holds no checkpoint file. Leftover `.tmp.<pid>` files of
//! interrupted commits are not checkpoints and are ignored. When there are checkpoint files but
//! none opens, it throws tutti::invalid_argument listing them rather than answer "none": training
//! silently from scratch over a directory of damaged checkpoints would lose the run.
[[nodiscard]] inline std::optional<checkpoint_choice> latest_checkpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  checkpoint_choice choice;
  for (const auto& [batches, path] : detail::list_checkpoints(dir)) {
    try {
      (void)checkpoint_reader::open(path);
      choice.path = path;
      choice.batches = batches;
      return choice;
    } catch (const error& e) {
      choice.refused.emplace_back(e.what());
    }
  }
  if (choice.refused.empty()) return std::nullopt;
  std::string all;
  for (const auto& why : choice.refused) all += "; " + why;
  throw invalid_argument("checkpoint directory " + dir.string() + ": none of its " +
                         std::to_string(choice.refused.size()) + " checkpoints opens cleanly" + all);
}

//! Keeps the newest `keep` valid checkpoints of `dir` and deletes every checkpoint file older than
//! the oldest of them, valid or not. Damaged files newer than it stay, for a person to look at.
inline void prune_checkpoints(const std::filesystem::path& dir, std::size_t keep) {
  if (keep == 0) throw invalid_argument("prune_checkpoints(dir, 0) would delete every checkpoint; keep at least 1");
  std::size_t valid = 0;
  for (const auto& [batches, path] : detail::list_checkpoints(dir)) {
    if (valid < keep) {
      try {
        (void)checkpoint_reader::open(path);
        ++valid;
      } catch (const error&) {
      }
      continue;
    }
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (ec) throw error("prune_checkpoints: cannot delete " + path.string() + ": " + ec.message());
  }
}

}  // namespace tutti::trainer
