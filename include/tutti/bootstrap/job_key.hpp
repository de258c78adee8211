//! @file job_key.hpp  The job's secret: who may join the job's store. Never printed, zeroed when dropped.
//!
//! Read from TUTTI_JOB_KEY (the text itself, at least 16 bytes) or TUTTI_JOB_KEY_FILE (a file only
//! its owner can read, as ssh demands of private keys). tutti-run generates one per launch; under
//! other launchers the caller decides what "no key" means (distribute one, or refuse to start).
//! The bytes live in exactly one heap block per copy, which is cleansed (OPENSSL_cleanse, which the
//! compiler may not optimise away) when the copy goes; no operator<<, and describe() only says
//! how long it is, so a key cannot reach a log or an error message by accident.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"

namespace tutti::bootstrap {

class job_key {
 public:
  static constexpr std::size_t min_bytes = 16;    //!< shorter text is a password, not a key
  static constexpr std::size_t max_bytes = 4096;  //!< more is a mistake (a wrong file), not security

  //! No key.
  job_key() = default;

  //! A key made of these bytes; invalid_argument (without the bytes) unless min..max bytes long.
  //! `source` names where they came from, for that message.
  explicit job_key(std::string_view bytes, std::string_view source = "the job key") {
    if (bytes.size() < min_bytes || bytes.size() > max_bytes)
      throw invalid_argument(std::string(source) + " is " + std::to_string(bytes.size()) +
                             " bytes long; a job key needs " + std::to_string(min_bytes) + " to " +
                             std::to_string(max_bytes) + " bytes (e.g. `openssl rand -hex 32`)");
    assign(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  }

  job_key(const job_key& other) { assign(other.data_.get(), other.size_); }
  job_key(job_key&& other) noexcept : data_(std::move(other.data_)), size_(other.size_) { other.size_ = 0; }
  job_key& operator=(const job_key& other) {
    if (this != &other) {
      job_key copy(other);
      swap(copy);
    }
    return *this;
  }
  job_key& operator=(job_key&& other) noexcept {
    job_key moved(std::move(other));
    swap(moved);
    return *this;
  }
  ~job_key() { wipe(); }

  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  //! The secret itself, for the MAC and nothing else.
  [[nodiscard]] std::span<const unsigned char> bytes() const noexcept { return {data_.get(), size_}; }
  //! What a log may say about the key.
  [[nodiscard]] std::string describe() const {
    return empty() ? std::string("<no key>") : "<redacted, " + std::to_string(size_) + " bytes>";
  }

  void swap(job_key& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

 private:
  void assign(const unsigned char* p, std::size_t n) {
    wipe();
    if (n == 0) return;
    data_ = std::make_unique<unsigned char[]>(n);
    std::memcpy(data_.get(), p, n);
    size_ = n;
  }
  void wipe() noexcept {
    if (data_) OPENSSL_cleanse(data_.get(), size_);
    data_.reset();
    size_ = 0;
  }

  std::unique_ptr<unsigned char[]> data_;
  std::size_t size_ = 0;
};

namespace detail {

//! Cleanses a buffer that held key bytes when it goes out of scope.
struct cleanse_on_exit {
  std::string& text;
  ~cleanse_on_exit() {
    if (!text.empty()) OPENSSL_cleanse(text.data(), text.size());
  }
};

//! The key file's contents, refused unless only its owner can read and write it; one trailing
//! newline ("\n" or "\r\n") is not part of the key (editors and `echo` add one).
inline job_key read_job_key_file(const std::string& path) {
  const std::string what = "TUTTI_JOB_KEY_FILE='" + path + "'";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw invalid_argument(what + " cannot be opened: " + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw invalid_argument(what + " cannot be examined: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw invalid_argument(what + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw invalid_argument(what + " is accessible by group or others (mode " + mode +
                           "); a key file must be readable by its owner only: chmod 600 it");
  }
  if (st.st_size > static_cast<off_t>(job_key::max_bytes + 2))
    throw invalid_argument(what + " is " + std::to_string(st.st_size) + " bytes; a job key needs at most " +
                           std::to_string(job_key::max_bytes));
  std::string text(job_key::max_bytes + 3, '\0');
  cleanse_on_exit guard{text};
  std::size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw invalid_argument(what + " cannot be read: " + std::strerror(errno));
    if (n == 0 || got + static_cast<std::size_t>(n) == text.size()) {
      got += static_cast<std::size_t>(n);
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  std::string_view content(text.data(), got);
  if (content.ends_with("\r\n")) content.remove_suffix(2);
  else if (content.ends_with('\n')) content.remove_suffix(1);
  return job_key(content, what);
}

}  // namespace detail

//! The job key from TUTTI_JOB_KEY or TUTTI_JOB_KEY_FILE, or nullopt when neither is set. Setting
//! both is an invalid_argument (which one would win is not obvious). Errors never contain the key.
[[nodiscard]] inline std::optional<job_key> job_key_from_env() {
  const char* text = std::getenv("TUTTI_JOB_KEY");
  const bool have_text = text != nullptr && *text != '\0';
  const auto file = config::raw("TUTTI_JOB_KEY_FILE");
  if (have_text && file)
    throw invalid_argument("both TUTTI_JOB_KEY and TUTTI_JOB_KEY_FILE are set; set only one");
  if (have_text) return job_key(std::string_view(text), "TUTTI_JOB_KEY");
  if (file) return detail::read_job_key_file(*file);
  return std::nullopt;
}

}  // namespace tutti::bootstrap
