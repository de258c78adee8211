// Example 04's model and data, on their own: the backward pass agrees with central finite
// differences of an independent double-precision forward; gradients are handed over last layer
// first, each final when handed; outputs are bit-identical for identical inputs; the IDX reader
// refuses bad files naming them; and plain SGD on 10,000 Fashion-MNIST images learns (> 80 % on
// the 10,000 test images after 2 epochs), skipped with a message where the dataset is absent.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "mlp.hpp"

using fashion_mnist::fashion_dataset;
using fashion_mnist::mlp;
using tutti::trainer::parameter;

namespace {

//! `n` records of uniform pixels, labels cycling through the classes.
mlp::batch_type random_batch(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  mlp::batch_type b;
  b.size = n;
  b.images.resize(n * mlp::inputs);
  for (auto& p : b.images) p = static_cast<float>(gen() % 256) / 255.0f;
  for (std::size_t i = 0; i < n; ++i) b.labels.push_back(static_cast<std::uint8_t>((i * 7 + seed) % mlp::classes));
  return b;
}

//! The network's mean cross-entropy in double, written from the definition with plain loops,
//! sharing no code with mlp: params in mlp::parameters() order, weights out × in row-major.
double reference_loss(const std::vector<std::vector<double>>& p, const mlp::batch_type& b) {
  const std::size_t sizes[] = {mlp::inputs, mlp::hidden1, mlp::hidden2, mlp::classes};
  double total = 0;
  for (std::size_t r = 0; r < b.size; ++r) {
    std::vector<double> a(b.images.begin() + static_cast<std::ptrdiff_t>(r * mlp::inputs),
                          b.images.begin() + static_cast<std::ptrdiff_t>((r + 1) * mlp::inputs));
    for (std::size_t l = 0; l < 3; ++l) {
      const auto& w = p[2 * l];
      const auto& bias = p[2 * l + 1];
      std::vector<double> z(sizes[l + 1]);
      for (std::size_t o = 0; o < z.size(); ++o) {
        double s = bias[o];
        for (std::size_t i = 0; i < sizes[l]; ++i) s += w[o * sizes[l] + i] * a[i];
        z[o] = l < 2 ? std::max(s, 0.0) : s;
      }
      a = std::move(z);
    }
    const double m = *std::max_element(a.begin(), a.end());
    double sum = 0;
    for (double v : a) sum += std::exp(v - m);
    total += std::log(sum) + m - a[b.labels[r]];
  }
  return total / static_cast<double>(b.size);
}

std::vector<std::vector<double>> as_double(const std::vector<parameter>& params) {
  std::vector<std::vector<double>> out;
  for (const auto& p : params) out.emplace_back(p.value.begin(), p.value.end());
  return out;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

}  // namespace

TEST_CASE("mlp: six parameters named as torch names them, initialised in ±1/sqrt(fan_in) from the seed alone") {
  mlp a(42), b(42), c(43);
  const auto pa = a.parameters(), pb = b.parameters(), pc = c.parameters();
  REQUIRE(pa.size() == 6);
  const char* names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
  const std::size_t sizes[] = {784 * 256, 256, 256 * 128, 128, 128 * 10, 10};
  const std::size_t fan_in[] = {784, 784, 256, 256, 128, 128};
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(pa[i].name == names[i]);
    CHECK(pa[i].value.size() == sizes[i]);
    CHECK(pa[i].grad.size() == sizes[i]);
    CHECK(same_bits(pa[i].value, pb[i].value));
    CHECK_FALSE(same_bits(pa[i].value, pc[i].value));
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in[i]));
    double lo = 0, hi = 0, mean = 0;
    for (float v : pa[i].value) {
      lo = std::min(lo, double{v});
      hi = std::max(hi, double{v});
      mean += v;
    }
    mean /= static_cast<double>(sizes[i]);
    CHECK(lo >= -bound);
    CHECK(hi <= bound);
    if (sizes[i] >= 1000) {  // uniform: spread to near the bounds, centred
      CHECK(lo < -0.95 * bound);
      CHECK(hi > 0.95 * bound);
      CHECK(std::abs(mean) < 0.05 * bound);
    }
  }
}

TEST_CASE("mlp: the backward pass matches central differences of a double-precision forward") {
  mlp model(7);
  const auto params = model.parameters();
  const auto batch = random_batch(3, 11);
  const auto m = model.forward_backward(batch, {});
  const auto p = as_double(params);
  const double ref = reference_loss(p, batch);
  CHECK(std::abs(m.at("loss") - ref) < 1e-5 * ref);

  std::mt19937 gen(5);
  const double h = 1e-5;
  auto q = p;
  for (std::size_t k = 0; k < params.size(); ++k) {
    CAPTURE(params[k].name);
    // Every coordinate of the small parameters, a sample of 60 of the weight matrices.
    std::vector<std::size_t> coords(params[k].value.size());
    std::iota(coords.begin(), coords.end(), 0);
    if (coords.size() > 300) {
      std::shuffle(coords.begin(), coords.end(), gen);
      coords.resize(60);
    }
    double diff2 = 0, norm2 = 0;
    std::size_t nonzero = 0;
    for (std::size_t i : coords) {
      q[k][i] = p[k][i] + h;
      const double up = reference_loss(q, batch);
      q[k][i] = p[k][i] - h;
      const double down = reference_loss(q, batch);
      q[k][i] = p[k][i];
      const double numeric = (up - down) / (2 * h);
      const double analytic = params[k].grad[i];
      diff2 += (analytic - numeric) * (analytic - numeric);
      norm2 += numeric * numeric;
      nonzero += numeric != 0;
    }
    const double relative = std::sqrt(diff2 / norm2);
    MESSAGE(params[k].name << ": relative error " << relative << " over " << coords.size() << " coordinates");
    CHECK(nonzero > 0);
    CHECK(relative < 1e-3);
  }
}

TEST_CASE("mlp: gradients are handed over last layer first, each final when handed over") {
  mlp model(3);
  const auto params = model.parameters();
  const auto batch = random_batch(16, 2);
  for (const auto& p : params) std::fill(p.grad.begin(), p.grad.end(), std::numeric_limits<float>::quiet_NaN());

  std::vector<std::size_t> order;
  std::vector<std::vector<float>> at_ready(params.size());
  bool fc1_untouched_when_fc3_ready = false;
  model.forward_backward(batch, [&](std::size_t i) {
    order.push_back(i);
    at_ready[i].assign(params[i].grad.begin(), params[i].grad.end());
    if (i == 4) fc1_untouched_when_fc3_ready = std::isnan(params[0].grad[0]) && std::isnan(params[1].grad[0]);
  });
  CHECK(order == std::vector<std::size_t>{4, 5, 2, 3, 0, 1});
  CHECK(fc1_untouched_when_fc3_ready);  // so a trainer can reduce fc3 while fc1 is computed
  for (std::size_t i = 0; i < params.size(); ++i) {
    CAPTURE(params[i].name);
    CHECK(same_bits(at_ready[i], params[i].grad));
    CHECK(std::none_of(at_ready[i].begin(), at_ready[i].end(), [](float v) { return std::isnan(v); }));
  }
}

TEST_CASE("mlp: the same inputs give the same bits; evaluate agrees with forward_backward") {
  mlp a(9), b(9);
  const auto batch = random_batch(37, 4);
  auto copy = batch;  // another allocation: results must not depend on where the data lie
  copy.images.reserve(copy.images.size() * 2);
  const auto ma = a.forward_backward(batch, {});
  const auto mb = b.forward_backward(copy, {});
  CHECK(ma == mb);
  const auto pa = a.parameters(), pb = b.parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) CHECK(same_bits(pa[i].grad, pb[i].grad));
  // A second step of another size in between leaves the next result unchanged.
  (void)a.forward_backward(random_batch(5, 1), {});
  const auto again = a.forward_backward(batch, {});
  CHECK(again == ma);
  for (std::size_t i = 0; i < pa.size(); ++i) CHECK(same_bits(pa[i].grad, pb[i].grad));
  const auto e = a.evaluate(batch);
  CHECK(e == ma);
  CHECK(ma.at("accuracy") >= 0.0);
  CHECK(ma.at("accuracy") <= 1.0);

  mlp::batch_type bad = batch;
  bad.labels.pop_back();
  CHECK_THROWS_AS(a.evaluate(bad), tutti::invalid_argument);
  bad = batch;
  bad.labels[3] = 10;
  CHECK_THROWS_WITH_AS(a.evaluate(bad), doctest::Contains("label 10 of record 3"), tutti::invalid_argument);
  CHECK_THROWS_AS(a.evaluate(mlp::batch_type{}), tutti::invalid_argument);
}

TEST_CASE("idx: bad files are refused, naming the file and the problem") {
  const auto dir = std::filesystem::temp_directory_path() / ("tutti-idx-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write_gz = [&](const std::string& name, const std::vector<unsigned char>& bytes) {
    const auto path = dir / name;
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f);
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return path;
  };
  std::vector<unsigned char> images = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 28, 0, 0, 0, 28};
  images.resize(16 + 2 * 784, 255);
  images[16 + 784] = 0;
  std::vector<unsigned char> labels = {0, 0, 8, 1, 0, 0, 0, 2, 9, 3};

  const auto good_images = write_gz("good-images", images);
  const auto read = fashion_mnist::read_idx_images(good_images);
  CHECK(read.count == 2);
  CHECK(read.pixels.size() == 2 * 784);
  CHECK(read.pixels[0] == 1.0f);
  CHECK(read.pixels[784] == 0.0f);
  CHECK(fashion_mnist::read_idx_images(good_images, 1).count == 1);
  CHECK(fashion_mnist::read_idx_labels(write_gz("good-labels", labels)) == std::vector<std::uint8_t>{9, 3});

  CHECK_THROWS_WITH(fashion_mnist::read_idx_images(write_gz("labels-as-images", labels)),
                    doctest::Contains("labels-as-images: magic 0x00000801, expected 0x00000803"));
  auto cut = images;
  cut.resize(cut.size() - 10);
  CHECK_THROWS_WITH(fashion_mnist::read_idx_images(write_gz("cut", cut)),
                    doctest::Contains("cut: ends after 1558 of the 1568 bytes of 2 images of 28 x 28"));
  auto longer = labels;
  longer.push_back(4);
  CHECK_THROWS_WITH(fashion_mnist::read_idx_labels(write_gz("longer", longer)),
                    doctest::Contains("longer: 1 bytes more than its header announces"));
  CHECK_THROWS_WITH(fashion_mnist::read_idx_labels(dir / "absent"), doctest::Contains("absent: cannot open"));
  auto bad_label = labels;
  bad_label[9] = 12;
  write_gz("x-images-idx3-ubyte.gz", images);
  write_gz("x-labels-idx1-ubyte.gz", bad_label);
  CHECK_THROWS_WITH(fashion_mnist::read_idx_split(dir, "x"), doctest::Contains("label 12 of record 1 is not below 10"));
  write_gz("x-labels-idx1-ubyte.gz", {0, 0, 8, 1, 0, 0, 0, 1, 9});
  CHECK_THROWS_WITH(fashion_mnist::read_idx_split(dir, "x"), doctest::Contains("holds 2 images but"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("mlp: two epochs of SGD on 10,000 Fashion-MNIST images reach 80 % test accuracy") {
  const auto& dir = fashion_mnist::default_data_dir;
  if (!std::filesystem::exists(dir / "train-images-idx3-ubyte.gz") ||
      !std::filesystem::exists(dir / "t10k-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: Fashion-MNIST is not at " << dir.string() << " (apt-get install dataset-fashion-mnist)");
    return;
  }
  const auto train = fashion_dataset::load(dir, "train", 10000);
  const auto test = fashion_dataset::load(dir, "t10k");
  REQUIRE(train.size() == 10000);
  REQUIRE(test.size() == 10000);

  // Plain SGD, batch 8, learning rate 0.1 then 0.03: 82.0-82.5 % over model and data-order seeds
  // 1-5 (GCC 12, x86-64); momentum 0.9 at batch 32 stays near 79-81 %, too close to the bar.
  mlp model(1);
  const auto params = model.parameters();
  const std::size_t batch_size = 8;
  const float learning_rates[] = {0.1f, 0.03f};
  std::vector<std::size_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 gen(2);

  auto evaluate = [&] {
    double correct = 0, loss = 0;
    std::vector<std::size_t> idx(1000);
    for (std::size_t first = 0; first < test.size(); first += idx.size()) {
      std::iota(idx.begin(), idx.end(), first);
      const auto m = model.evaluate(test.batch(idx));
      correct += m.at("accuracy") * static_cast<double>(idx.size());
      loss += m.at("loss") * static_cast<double>(idx.size());
    }
    return std::pair{correct / static_cast<double>(test.size()), loss / static_cast<double>(test.size())};
  };

  for (int epoch = 0; epoch < 2; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    std::shuffle(order.begin(), order.end(), gen);
    double train_loss = 0;
    std::size_t steps = 0;
    for (std::size_t first = 0; first + batch_size <= order.size(); first += batch_size) {
      const auto b = train.batch(std::span<const std::size_t>(order).subspan(first, batch_size));
      train_loss += model.forward_backward(b, {}).at("loss");
      ++steps;
      for (const auto& p : params)
        for (std::size_t i = 0; i < p.value.size(); ++i) p.value[i] -= learning_rates[epoch] * p.grad[i];
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto [accuracy, test_loss] = evaluate();
    MESSAGE("epoch " << epoch + 1 << ": train loss " << train_loss / static_cast<double>(steps) << ", test loss "
                     << test_loss << ", test accuracy " << accuracy * 100 << " %, " << seconds << " s per epoch of "
                     << train.size() << " images");
    if (epoch == 1) CHECK(accuracy > 0.80);
  }
}
