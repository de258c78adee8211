//! @file idx.hpp  Reads the gzipped IDX files MNIST and Fashion-MNIST come in.
//!
//! IDX (yann.lecun.com/exdb/mnist): a big-endian magic 0x000008NN (0x08: unsigned bytes; NN: the
//! number of dimensions), NN big-endian u32 dimensions, then the values. Images are 0x00000803
//! (count, rows, cols), labels 0x00000801 (count). Every failure names the file and what is wrong
//! with it: a wrong magic, a header that disagrees with the data, a file cut short.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace fashion_mnist {

//! `count` images of rows × cols pixels, row-major, one after another, scaled to [0, 1].
struct idx_images {
  std::size_t count = 0, rows = 0, cols = 0;
  std::vector<float> pixels;  //!< count · rows · cols
  [[nodiscard]] std::size_t pixels_per_image() const noexcept { return rows * cols; }
};

namespace detail {

//! A gzFile that closes itself; reads exactly what it is asked for or says why not.
class gz_reader {
 public:
  explicit gz_reader(std::filesystem::path path) : path_(std::move(path)) {
    errno = 0;
    file_ = ::gzopen(path_.c_str(), "rb");
    if (!file_)
      throw std::runtime_error(path_.string() + ": cannot open: " +
                               (errno ? std::strerror(errno) : "zlib could not allocate its state"));
    ::gzbuffer(file_, 1 << 17);
  }
  gz_reader(const gz_reader&) = delete;
  gz_reader& operator=(const gz_reader&) = delete;
  ~gz_reader() { ::gzclose(file_); }

  //! Fills `out` completely; `what` names the part being read for the error message.
  void read(void* out, std::size_t n, const std::string& what) {
    auto* p = static_cast<unsigned char*>(out);
    std::size_t done = 0;
    while (done < n) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = ::gzread(file_, p + done, chunk);
      if (got < 0) fail();
      if (got == 0)
        throw std::runtime_error(path_.string() + ": ends after " + std::to_string(done) + " of the " +
                                 std::to_string(n) + " bytes of " + what);
      done += static_cast<std::size_t>(got);
    }
  }

  std::uint32_t read_be32(const std::string& what) {
    unsigned char b[4];
    read(b, 4, what);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  }

  //! Refuses data after the announced values: the header and the file disagree.
  void expect_end() {
    unsigned char extra[256];
    std::size_t n = 0;
    for (;;) {
      const int got = ::gzread(file_, extra, sizeof extra);
      if (got < 0) fail();
      if (got == 0) break;
      n += static_cast<std::size_t>(got);
    }
    if (n) throw std::runtime_error(path_.string() + ": " + std::to_string(n) + " bytes more than its header announces");
  }

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  [[noreturn]] void fail() {
    int code = 0;
    const char* text = ::gzerror(file_, &code);
    throw std::runtime_error(path_.string() + ": " +
                             (code == Z_ERRNO ? std::string(std::strerror(errno)) : std::string(text ? text : "zlib error")));
  }

  std::filesystem::path path_;
  gzFile file_ = nullptr;
};

inline std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

inline void expect_magic(gz_reader& in, std::uint32_t expected, const char* kind) {
  const auto magic = in.read_be32("the magic number");
  if (magic != expected)
    throw std::runtime_error(in.path().string() + ": magic " + hex(magic) + ", expected " + hex(expected) + " (IDX " +
                             kind + ")");
}

}  // namespace detail

//! Reads an IDX image file (gzipped, or plain: zlib reads both). With `max_count` only the first
//! images are read (quick runs); without it, bytes beyond what the header announces are refused too.
[[nodiscard]] inline idx_images read_idx_images(const std::filesystem::path& path,
                                                std::size_t max_count = std::numeric_limits<std::size_t>::max()) {
  detail::gz_reader in(path);
  detail::expect_magic(in, 0x00000803, "unsigned-byte images, 3 dimensions");
  idx_images out;
  out.count = in.read_be32("the image count");
  out.rows = in.read_be32("the row count");
  out.cols = in.read_be32("the column count");
  if (out.rows == 0 || out.cols == 0 || out.rows > 4096 || out.cols > 4096)
    throw std::runtime_error(path.string() + ": images of " + std::to_string(out.rows) + " x " +
                             std::to_string(out.cols) + " pixels are not plausible");
  const bool whole = max_count >= out.count;
  out.count = std::min(out.count, max_count);
  std::vector<unsigned char> raw(out.count * out.pixels_per_image());
  in.read(raw.data(), raw.size(), std::to_string(out.count) + " images of " + std::to_string(out.rows) + " x " +
                                      std::to_string(out.cols));
  if (whole) in.expect_end();
  out.pixels.resize(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) out.pixels[i] = static_cast<float>(raw[i]) / 255.0f;
  return out;
}

//! Reads an IDX label file; `max_count` as for images.
[[nodiscard]] inline std::vector<std::uint8_t> read_idx_labels(
    const std::filesystem::path& path, std::size_t max_count = std::numeric_limits<std::size_t>::max()) {
  detail::gz_reader in(path);
  detail::expect_magic(in, 0x00000801, "unsigned-byte labels, 1 dimension");
  std::size_t count = in.read_be32("the label count");
  const bool whole = max_count >= count;
  count = std::min(count, max_count);
  std::vector<std::uint8_t> labels(count);
  in.read(labels.data(), labels.size(), std::to_string(count) + " labels");
  if (whole) in.expect_end();
  return labels;
}

//! Images and their labels, checked to agree in number and with labels in [0, classes).
struct labelled_images {
  idx_images images;
  std::vector<std::uint8_t> labels;
};

//! Reads `<dir>/<split>-images-idx3-ubyte.gz` and `<dir>/<split>-labels-idx1-ubyte.gz`
//! (split: "train" or "t10k", as the files are named).
[[nodiscard]] inline labelled_images read_idx_split(const std::filesystem::path& dir, const std::string& split,
                                                    std::size_t max_count = std::numeric_limits<std::size_t>::max(),
                                                    std::size_t classes = 10) {
  const auto images_path = dir / (split + "-images-idx3-ubyte.gz");
  const auto labels_path = dir / (split + "-labels-idx1-ubyte.gz");
  labelled_images out{read_idx_images(images_path, max_count), read_idx_labels(labels_path, max_count)};
  if (out.images.count != out.labels.size())
    throw std::runtime_error(images_path.string() + " holds " + std::to_string(out.images.count) + " images but " +
                             labels_path.string() + " " + std::to_string(out.labels.size()) + " labels");
  for (std::size_t i = 0; i < out.labels.size(); ++i)
    if (out.labels[i] >= classes)
      throw std::runtime_error(labels_path.string() + ": label " + std::to_string(out.labels[i]) + " of record " +
                               std::to_string(i) + " is not below " + std::to_string(classes));
  return out;
}

}  // namespace fashion_mnist
