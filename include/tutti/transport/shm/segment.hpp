//! @file segment.hpp  RAII POSIX shared-memory segments: created 0600 under a job-scoped name.
#pragma once
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "tutti/core/error.hpp"

namespace tutti::transport::shm_detail {

inline std::string errno_text(int e) { return std::string(std::strerror(e)); }

//! A mapped shared-memory segment. The creator owns the name until unlink(); the mapping lives
//! until destruction, whether or not the name still exists.
class segment {
 public:
  segment() = default;
  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;
  segment(segment&& o) noexcept { *this = std::move(o); }
  segment& operator=(segment&& o) noexcept {
    if (this != &o) {
      release();
      name_ = std::move(o.name_);
      base_ = std::exchange(o.base_, nullptr);
      size_ = std::exchange(o.size_, 0);
      linked_ = std::exchange(o.linked_, false);
    }
    return *this;
  }
  ~segment() { release(); }

  //! Creates `name` (exclusive, mode 0600) of `bytes` zero-filled bytes and maps it.
  static segment create(const std::string& name, std::size_t bytes) {
    const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      const int e = errno;
      if (e == EEXIST)
        throw transport_error("shared-memory segment /dev/shm" + name +
                              " already exists: another job is using the same job id (TUTTI_JOB_ID), or a crashed "
                              "job left it behind (tutti-run removes a job's segments; or delete it by hand)");
      throw transport_error("shm_open(" + name + ") failed: " + errno_text(e));
    }
    segment s;
    s.name_ = name;
    s.linked_ = true;
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const int e = errno;
      ::close(fd);
      throw transport_error("ftruncate(/dev/shm" + name + ", " + std::to_string(bytes) + ") failed: " + errno_text(e));
    }
    s.map(fd, bytes);
    return s;
  }

  //! Opens an existing segment; returns an empty segment when it does not exist (yet) or is still
  //! being sized by its creator.
  static segment try_open(const std::string& name, std::size_t min_bytes) {
    const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) {
      if (errno == ENOENT) return {};
      throw transport_error("shm_open(" + name + ") failed: " + errno_text(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < min_bytes) {
      ::close(fd);
      return {};
    }
    segment s;
    s.name_ = name;
    s.map(fd, static_cast<std::size_t>(st.st_size));
    return s;
  }

  //! Removes the name; the memory stays mapped by everyone who has it.
  void unlink() noexcept {
    if (linked_) ::shm_unlink(name_.c_str());
    linked_ = false;
  }

  [[nodiscard]] std::byte* data() const noexcept { return base_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] explicit operator bool() const noexcept { return base_ != nullptr; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  void map(int fd, std::size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    ::close(fd);  // the mapping keeps the memory; the descriptor is not needed
    if (p == MAP_FAILED) {
      unlink();
      throw transport_error("mmap(/dev/shm" + name_ + ", " + std::to_string(bytes) + ") failed: " + errno_text(e));
    }
    base_ = static_cast<std::byte*>(p);
    size_ = bytes;
  }

  void release() noexcept {
    if (base_) ::munmap(base_, size_);
    unlink();
    base_ = nullptr;
    size_ = 0;
  }

  std::string name_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  bool linked_ = false;
};

}  // namespace tutti::transport::shm_detail
