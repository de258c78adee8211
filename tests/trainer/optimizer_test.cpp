//! @file optimizer_test.cpp  sgd, adam / AdamW and lars / LARC against trajectories computed
//! independently, save/load continuing a trajectory bit for bit, refusals, and lr_schedule.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <map>
#include <numbers>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/trainer/lr_schedule.hpp"
#include "tutti/trainer/optimizer.hpp"

using namespace tutti;
using namespace tutti::trainer;

namespace {

// Final values after 5 steps, per case and parameter, from tests/trainer/optimizer_reference.py:
// plain Python doubles reimplementing torch.optim.SGD's, torch.optim.Adam's / AdamW's and apex
// LARC's documented update rules (no torch, none of this code), on the same initial values and
// gradient formula as `tensors` below (all exact in float32). Re-run the script to regenerate.
const std::map<std::string_view, std::vector<std::vector<double>>> reference = {
  {"sgd", {{0.5, -1.275, 1.95, 0.85, -0.475, 1.55}, {0.35, -0.6, 0.175}}},
  {"sgd_momentum", {{0.6551825, -1.3038, 1.7671425, 1.0248025, -0.611755, 1.50158}, {0.5248025, -0.736755, 0.12658}}},
  {"sgd_dampening", {{0.69317, -1.29035, 1.74857375, 0.98169625, -0.603755, 1.55237375}, {0.48169625, -0.728755, 0.17737375}}},
  {"sgd_nesterov", {{0.63966425, -1.32342, 1.74042825, 1.09732225, -0.6880795, 1.551422}, {0.59732225, -0.8130795, 0.176422}}},
  {"sgd_weight_decay", {{0.486631845358, -1.24393407265, 1.90173504682, 0.830319667982, -0.464849507452, 1.51312436409}, {0.342695291421, -0.586755601592, 0.172157328546}}},
  {"sgd_momentum_weight_decay", {{0.618303083983, -1.22331656609, 1.64392673257, 0.971529090295, -0.583702695483, 1.40361177121}, {0.504003366359, -0.700584126467, 0.11791603039}}},
  {"sgd_nesterov_weight_decay", {{0.589925670594, -1.22112410143, 1.58810286298, 1.02622524822, -0.649921235795, 1.42772697129}, {0.567450139833, -0.764615012893, 0.166095423213}}},
  {"sgd_momentum_per_parameter_lr", {{0.6551825, -1.3038, 1.7671425, 1.0248025, -0.611755, 1.50158}, {0.38740125, -0.6183775, 0.12579}}},
  {"adam", {{0.577227734849, -1.24573485136, 1.88324274684, 0.890089849497, -0.494777115695, 1.52564406154}, {0.390089849497, -0.619777115695, 0.150644061545}}},
  {"adam_l2", {{0.558389523685, -1.15220035348, 1.83802556071, 0.864788242789, -0.478397193301, 1.47713153059}, {0.380677950671, -0.598376424019, 0.145555074059}}},
  {"adamw", {{0.563605475163, -1.21516424207, 1.83557748064, 0.86966754523, -0.483951962964, 1.48791948234}, {0.382043168669, -0.605858057105, 0.146952446797}}},
  {"adam_betas", {{0.542609430961, -1.25889187908, 1.9334542741, 0.871102209557, -0.479523509134, 1.53147894541}, {0.371102209557, -0.604523509134, 0.156478945409}}},
  {"lars", {{0.53444683065, -1.2670259136, 1.94664664509, 0.803181494994, -0.422579816778, 1.49320381171}, {0.5248025, -0.736755, 0.12658}, {-0.0999616568257, 0.304385767624, -0.00180334387919, -0.305044696252}, {0.119066194985, -0.056356762757, 0.244757278629, 0.0620566505983}}},
  {"larc", {{0.647740376654, -1.28754989049, 1.74225867179, 1.0140518615, -0.606094677751, 1.48179926572}, {0.5248025, -0.736755, 0.12658}, {-0.0777902045002, 0.280291635477, -0.0175959583907, -0.286802592306}, {0.0606912642622, -0.000911867444034, 0.197949401756, 0.0595075009205}}},
  {"lars_all", {{0.53444683065, -1.2670259136, 1.94664664509, 0.803181494994, -0.422579816778, 1.49320381171}, {0.264167056435, -0.516587727845, 0.129353798183}, {-0.0999616568257, 0.304385767624, -0.00180334387919, -0.305044696252}, {0.119066194985, -0.056356762757, 0.244757278629, 0.0620566505983}}},
  {"larc_adam", {{0.575362595265, -1.19125895651, 1.87796222051, 0.887706977693, -0.493190441797, 1.52040449602}, {0.390089849497, -0.619777115695, 0.150644061545}, {-0.0879551871097, 0.130453166971, -0.00217862931657, -0.137768873316}, {0.00184957377197, 0.072314646205, 0.135732528067, 0.0937695818725}}},
};

// Tolerance, float32 arithmetic against the double reference: every value here is at most 4 in
// magnitude (|w| <= 2.1, |g| <= 0.75, momentum buffers < 3.5, Adam's m/denominator <= 1/(1-beta1)
// bounded by the same), and an element takes at most 8 float roundings per step, each off by at
// most 2^-24 relative: <= 8 * 2^-24 * 4 ~ 1.9e-6 per step. An error in w re-enters the next step
// multiplied by at most 1 + lr*wd (and through LARS's norms only relatively, by a few ulps), so
// 5 steps stay within ~1e-5; the check allows twice that. The largest error seen is 1.9e-7 (at -O0,
// -O2, -O3, -march=native); a wrong rule moves some value by 1e-3 or more. Each rule was checked by
// breaking it on purpose, and each break failed this file: nesterov's d + momentum*b swapped for b,
// the first step's buffer dampened, SGD's weight decay left out, Adam without bias correction,
// AdamW's decay applied as L2, LARC clipping local_lr instead of local_lr/lr, weight decay left out
// of LARS's gradient or of its trust ratio, 1-D parameters adapted, zero-norm parameters adapted.
constexpr double tolerance = 2e-5;
constexpr int steps = 5;

const std::vector<std::string_view> order = {"w", "b", "z", "v"};
const std::map<std::string_view, std::vector<float>> initial = {
    {"w", {0.5f, -1.25f, 2.0f, 0.75f, -0.375f, 1.5f}},
    {"b", {0.25f, -0.5f, 0.125f}},
    {"z", {0.0f, 0.0f, 0.0f, 0.0f}},
    {"v", {0.125f, -0.0625f, 0.25f, 0.0625f}},
};

//! The parameters of one run: values start at `initial`, gradients follow the script's formula.
class tensors {
 public:
  explicit tensors(std::initializer_list<std::string_view> names) {
    for (auto n : names) {
      names_.emplace_back(n);
      values.push_back(initial.at(n));
      grads.emplace_back(values.back().size());
    }
    for (std::size_t k = 0; k < names_.size(); ++k) params.push_back({names_[k], values[k], grads[k]});
  }
  tensors(const tensors&) = delete;
  tensors& operator=(const tensors&) = delete;

  void set_gradients(int step) {
    for (std::size_t k = 0; k < names_.size(); ++k) {
      const auto j = static_cast<int>(std::find(order.begin(), order.end(), names_[k]) - order.begin());
      for (std::size_t i = 0; i < grads[k].size(); ++i)
        grads[k][i] = static_cast<float>(((3 * static_cast<int>(i) + 5 * step + 2 * j) % 7) - 3) * 0.25f;
    }
  }

  //! Copies another run's values (same names) into this one's storage.
  void assign(const std::vector<std::vector<float>>& v) {
    for (std::size_t k = 0; k < values.size(); ++k) std::copy(v[k].begin(), v[k].end(), values[k].begin());
  }

  std::vector<std::vector<float>> values, grads;
  std::vector<parameter> params;

 private:
  std::vector<std::string> names_;
};

//! Steps [from, to) with one lr for all (the double overload).
template <class O> void run(O& opt, tensors& t, double lr, int from = 0, int to = steps) {
  for (int s = from; s < to; ++s) {
    t.set_gradients(s);
    opt.step(t.params, lr);
  }
}

//! Steps [from, to) with one lr per parameter (the span overload).
template <class O> void run(O& opt, tensors& t, const std::vector<double>& lrs, int from = 0, int to = steps) {
  for (int s = from; s < to; ++s) {
    t.set_gradients(s);
    opt.step(t.params, std::span<const double>(lrs));
  }
}

void check_reference(const tensors& t, std::string_view name) {
  const auto& want = reference.at(name);
  REQUIRE(want.size() == t.values.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    REQUIRE(want[k].size() == t.values[k].size());
    for (std::size_t i = 0; i < want[k].size(); ++i) {
      INFO(name, ": parameter ", k, ", element ", i, ": got ", t.values[k][i], ", want ", want[k][i]);
      CHECK(std::abs(static_cast<double>(t.values[k][i]) - want[k][i]) <= tolerance);
    }
  }
}

template <class O> std::string saved(const O& opt) {
  std::ostringstream out;
  opt.save(out);
  return out.str();
}

template <class O> void load(O& opt, const std::string& bytes) {
  std::istringstream in(bytes);
  opt.load(in);
}

bool bit_identical(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].size() != b[k].size() || std::memcmp(a[k].data(), b[k].data(), a[k].size() * sizeof(float)) != 0)
      return false;
  return true;
}

const bool one_d[] = {false, true, false, false};  // w, b (a bias), z, v

}  // namespace

TEST_CASE("sgd follows torch.optim.SGD") {
  struct one {
    std::string_view name;
    sgd_options options;
  };
  for (const auto& c : {
           one{"sgd", {}},
           one{"sgd_momentum", {.momentum = 0.9}},
           one{"sgd_dampening", {.momentum = 0.9, .dampening = 0.25}},
           one{"sgd_nesterov", {.momentum = 0.9, .nesterov = true}},
           one{"sgd_weight_decay", {.weight_decay = 0.05}},
           one{"sgd_momentum_weight_decay", {.momentum = 0.9, .weight_decay = 0.05}},
           one{"sgd_nesterov_weight_decay", {.momentum = 0.9, .nesterov = true, .weight_decay = 0.05}},
       }) {
    CAPTURE(c.name);
    tensors t{"w", "b"};
    sgd opt(c.options);
    run(opt, t, 0.1);
    check_reference(t, c.name);
  }
  SUBCASE("one learning rate per parameter") {
    tensors t{"w", "b"};
    sgd opt({.momentum = 0.9});
    run(opt, t, std::vector<double>{0.1, 0.05});
    check_reference(t, "sgd_momentum_per_parameter_lr");
  }
}

TEST_CASE("adam follows torch.optim.Adam, and AdamW with decoupled weight decay") {
  struct one {
    std::string_view name;
    adam_options options;
  };
  for (const auto& c : {
           one{"adam", {}},
           one{"adam_l2", {.weight_decay = 0.1}},
           one{"adamw", {.weight_decay = 0.1, .decoupled = true}},
           one{"adam_betas", {.beta1 = 0.5, .beta2 = 0.75, .eps = 1e-3}},
       }) {
    CAPTURE(c.name);
    tensors t{"w", "b"};
    adam opt(c.options);
    run(opt, t, 0.05);
    check_reference(t, c.name);
  }
}

TEST_CASE("adam's blocks: every element of a long parameter steps like its twin in a short one") {
  // adam_loop works in blocks of 512; elements with the same inputs must end with the same bits
  // wherever the block boundaries fall (the gradient repeats every 7 elements, the values too).
  constexpr std::size_t n = 7 * 200 + 3;
  std::vector<float> value(n), grad(n), twin_value(7), twin_grad(7);
  for (std::size_t i = 0; i < n; ++i) value[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  std::copy_n(value.begin(), 7, twin_value.begin());
  const std::vector<parameter> long_one{{"long", value, grad}}, short_one{{"short", twin_value, twin_grad}};
  adam a({.weight_decay = 0.1, .decoupled = true}), b({.weight_decay = 0.1, .decoupled = true});
  for (int s = 0; s < steps; ++s) {
    for (std::size_t i = 0; i < n; ++i) grad[i] = static_cast<float>(((3 * static_cast<int>(i) + 5 * s) % 7) - 3);
    std::copy_n(grad.begin(), 7, twin_grad.begin());
    a.step(long_one, 0.05);
    b.step(short_one, 0.05);
  }
  for (std::size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(std::memcmp(&value[i], &twin_value[i % 7], sizeof(float)) == 0);
  }
}

TEST_CASE("lars follows apex LARC: scaling, clipping, 1-D and zero-norm parameters left alone") {
  // The script traces the "larc" case: w is clipped at every step, v scaled, b (1-D) and z (zero
  // at first, so its norm is 0) keep their gradients at step 0; z is scaled from step 1.
  const lars_options base{.eta = 0.1, .epsilon = 1e-9, .weight_decay = 0.01};
  SUBCASE("lars") {
    tensors t{"w", "b", "z", "v"};
    lars opt(sgd({.momentum = 0.9}), base, one_d);
    run(opt, t, 0.1);
    check_reference(t, "lars");
  }
  SUBCASE("larc (clip)") {
    tensors t{"w", "b", "z", "v"};
    auto o = base;
    o.clip = true;
    lars opt(sgd({.momentum = 0.9}), o, one_d);
    run(opt, t, std::vector<double>(4, 0.1));
    check_reference(t, "larc");
  }
  SUBCASE("every parameter adapted (exclude_1d = false)") {
    tensors t{"w", "b", "z", "v"};
    auto o = base;
    o.exclude_1d = false;
    lars opt(sgd({.momentum = 0.9}), o);
    run(opt, t, 0.1);
    check_reference(t, "lars_all");
  }
  SUBCASE("larc around adam") {
    tensors t{"w", "b", "z", "v"};
    auto o = base;
    o.clip = true;
    lars opt(adam(), o, one_d);
    run(opt, t, 0.05);
    check_reference(t, "larc_adam");
  }
}

TEST_CASE_TEMPLATE("save and load continue a trajectory bit for bit", O, sgd, adam, lars<sgd>) {
  auto make = [] {
    if constexpr (std::is_same_v<O, sgd>) return sgd({.momentum = 0.9, .nesterov = true, .weight_decay = 0.05});
    else if constexpr (std::is_same_v<O, adam>) return adam({.weight_decay = 0.1, .decoupled = true});
    else return lars(sgd({.momentum = 0.9}), {.eta = 0.1, .weight_decay = 0.01, .clip = true}, one_d);
  };
  tensors a{"w", "b", "z", "v"}, b{"w", "b", "z", "v"};
  O first = make();
  run(first, a, 0.1, 0, 3);
  const std::string state = saved(first);
  const auto middle = a.values;
  run(first, a, 0.1, 3, 7);

  O second = make();
  load(second, state);
  CHECK(saved(second) == state);  // the bytes round-trip
  b.assign(middle);
  run(second, b, 0.1, 3, 7);
  CHECK(bit_identical(a.values, b.values));
  CHECK(saved(first) == saved(second));

  SUBCASE("a refused load leaves the state as it was") {
    tensors c{"w", "b", "z", "v"};
    O third = make();
    run(third, c, 0.1, 0, 3);
    CHECK_THROWS_AS(load(third, state.substr(0, state.size() - 3)), invalid_argument);
    CHECK(saved(third) == state);
  }
}

TEST_CASE("optimiser refusals name the value") {
  using doctest::Contains;
  CHECK_THROWS_WITH_AS(sgd({.nesterov = true}), Contains("nesterov needs momentum > 0 and dampening 0; got momentum 0"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(sgd({.momentum = 0.9, .nesterov = true, .dampening = 0.5}), Contains("dampening 0.5"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(sgd({.momentum = -1}), Contains("momentum -1 is not >= 0"), invalid_argument);
  CHECK_THROWS_WITH_AS(sgd({.weight_decay = -0.5}), Contains("weight_decay -0.5"), invalid_argument);
  CHECK_THROWS_WITH_AS(adam({.beta1 = 1}), Contains("beta1 1 is not in [0, 1)"), invalid_argument);
  CHECK_THROWS_WITH_AS(adam({.beta2 = -0.1}), Contains("beta2 -0.1"), invalid_argument);
  CHECK_THROWS_WITH_AS(adam({.eps = -1}), Contains("eps -1"), invalid_argument);

  SUBCASE("lars") {
    CHECK_THROWS_WITH_AS(lars(sgd(), {}), Contains("exclude_1d needs is_1d"), invalid_argument);
    CHECK_THROWS_WITH_AS(lars(sgd({.weight_decay = 1e-4}), {.exclude_1d = false}),
                         Contains("the inner sgd has weight_decay 0.0001"), invalid_argument);
    CHECK_THROWS_WITH_AS(lars(adam(), {.eta = 0, .exclude_1d = false}), Contains("eta 0 is not > 0"),
                         invalid_argument);
    tensors t{"w", "b"};
    lars opt(sgd(), {}, one_d);  // four flags, two parameters
    t.set_gradients(0);
    CHECK_THROWS_WITH_AS(opt.step(t.params, 0.1), Contains("is_1d has 4 flags for 2 parameters"), invalid_argument);
  }

  SUBCASE("step") {
    tensors t{"w", "b"};
    t.set_gradients(0);
    sgd opt({.momentum = 0.9});
    CHECK_THROWS_WITH_AS(opt.step(t.params, -0.1), Contains("learning rate -0.1 is not a finite number >= 0"),
                         invalid_argument);
    const std::vector<double> one_lr{0.1};
    CHECK_THROWS_WITH_AS(opt.step(t.params, std::span<const double>(one_lr)),
                         Contains("got 1 learning rates for 2 parameters"), invalid_argument);
    const std::vector<double> nan_lr{0.1, std::nan("")};
    CHECK_THROWS_WITH_AS(opt.step(t.params, std::span<const double>(nan_lr)), Contains("of parameter 'b'"),
                         invalid_argument);
    auto short_grad = t.params;
    short_grad[1].grad = short_grad[1].grad.first(2);
    CHECK_THROWS_WITH_AS(opt.step(short_grad, 0.1), Contains("parameter 'b' has 3 values but 2 gradients"),
                         invalid_argument);
    opt.step(t.params, 0.1);  // binds the state to w, b
    tensors other{"w", "v"};
    other.set_gradients(0);
    CHECK_THROWS_WITH_AS(opt.step(other.params, 0.1),
                         Contains("parameter 1 is 'v' with 4 values; its state (from an earlier step or a load) has "
                                  "'b' with 3"),
                         invalid_argument);
    tensors more{"w", "b", "v"};
    more.set_gradients(0);
    CHECK_THROWS_WITH_AS(opt.step(more.params, 0.1), Contains("got 3 parameters; its state"), invalid_argument);
  }

  SUBCASE("load") {
    tensors t{"w", "b"};
    adam a;
    run(a, t, 0.05, 0, 1);
    sgd s({.momentum = 0.9});
    CHECK_THROWS_WITH_AS(load(s, saved(a)), Contains("holds the state of 'adam', not of 'sgd'"), invalid_argument);
    lars l(sgd({.momentum = 0.9}), {.exclude_1d = false});
    CHECK_THROWS_WITH_AS(load(l, saved(s)), Contains("holds the state of 'sgd', not of 'lars'"), invalid_argument);
    lars<adam> la(adam(), {.exclude_1d = false});
    CHECK_THROWS_WITH_AS(load(la, saved(l)), Contains("holds the state of 'sgd', not of 'adam'"), invalid_argument);
    sgd plain;
    CHECK_THROWS_WITH_AS(load(plain, saved(s)), Contains("keeps 1 buffers per parameter, this one 0"),
                         invalid_argument);
    CHECK_THROWS_WITH_AS(load(s, "not an optimiser"), Contains("does not hold a tutti optimiser state"),
                         invalid_argument);
    CHECK_THROWS_WITH_AS(load(a, saved(a).substr(0, 40)), Contains("the stream ends"), invalid_argument);

    tensors four{"w", "b", "z", "v"};
    adam wider;
    run(wider, four, 0.05, 0, 1);
    CHECK_THROWS_WITH_AS(load(a, saved(wider)), Contains("the state of 4 parameters, this optimiser of 2"),
                         invalid_argument);
    tensors renamed{"w", "v"};
    adam other;
    run(other, renamed, 0.05, 0, 1);
    CHECK_THROWS_WITH_AS(load(a, saved(other)), Contains("parameter 1 is 'v' with 4 values in the stream, 'b' with 3"),
                         invalid_argument);
    adam fresh;  // no state yet: takes the stream's shape, and the next step must match it
    load(fresh, saved(wider));
    t.set_gradients(1);
    CHECK_THROWS_WITH_AS(fresh.step(t.params, 0.05), Contains("got 2 parameters; its state"), invalid_argument);
  }
}

TEST_CASE("lr_schedule: batch scaling") {
  auto scaled = [](scaling_rule r, std::size_t global) {
    return lr_schedule({.base_lr = 0.1, .base_batch_size = 256, .global_batch_size = global, .scaling = r}).scaled_lr();
  };
  CHECK(scaled(scaling_rule::linear, 1024) == doctest::Approx(0.4));
  CHECK(scaled(scaling_rule::sqrt, 1024) == doctest::Approx(0.2));
  CHECK(scaled(scaling_rule::none, 1024) == doctest::Approx(0.1));
  CHECK(scaled(scaling_rule::linear, 128) == doctest::Approx(0.05));
  CHECK(scaled(scaling_rule::sqrt, 64) == doctest::Approx(0.05));
  CHECK(lr_schedule({.global_batch_size = 1024}).at(7) == doctest::Approx(0.4));  // no warm-up, no decay
}

TEST_CASE("lr_schedule: warm-up ramps linearly from base_lr to the scaled rate") {
  for (auto rule : {scaling_rule::linear, scaling_rule::sqrt}) {
    const lr_schedule s({.base_lr = 0.1, .global_batch_size = 1024, .scaling = rule, .warmup_epochs = 5});
    const double top = rule == scaling_rule::linear ? 0.4 : 0.2;
    CHECK(s.scaled_lr() == doctest::Approx(top));
    CHECK(s.at(0) == doctest::Approx(0.1));
    CHECK(s.at(1) == doctest::Approx(0.1 + (top - 0.1) / 5));
    CHECK(s.at(2.5) == doctest::Approx((0.1 + top) / 2));
    CHECK(s.at(5) == doctest::Approx(top));
    CHECK(s.at(6) == doctest::Approx(top));
    double last = 0;
    for (int i = 0; i <= 100; ++i) {
      const double lr = s.at(5.0 * i / 100);
      CHECK(lr >= last);
      CHECK(lr <= top * (1 + 1e-15));
      last = lr;
    }
  }
}

TEST_CASE("lr_schedule: decay after warm-up") {
  const lr_schedule_options base{.base_lr = 0.1, .global_batch_size = 1024, .warmup_epochs = 5};
  SUBCASE("step") {
    auto o = base;
    o.decay = decay_kind::step;
    o.step_epochs = 30;
    o.gamma = 0.1;
    const lr_schedule s(o);
    CHECK(s.at(2.5) == doctest::Approx(0.25));  // still warming up
    CHECK(s.at(34.9) == doctest::Approx(0.4));
    CHECK(s.at(35) == doctest::Approx(0.04));
    CHECK(s.at(64.9) == doctest::Approx(0.04));
    CHECK(s.at(65) == doctest::Approx(0.004));
    o.min_lr = 0.01;
    CHECK(lr_schedule(o).at(65) == doctest::Approx(0.01));  // the floor
  }
  SUBCASE("exponential") {
    auto o = base;
    o.decay = decay_kind::exponential;
    o.gamma = 0.9;
    const lr_schedule s(o);
    CHECK(s.at(5) == doctest::Approx(0.4));
    CHECK(s.at(7) == doctest::Approx(0.4 * 0.81));
    CHECK(s.at(5.5) == doctest::Approx(0.4 * std::sqrt(0.9)));
  }
  SUBCASE("cosine") {
    auto o = base;
    o.decay = decay_kind::cosine;
    o.total_epochs = 85;
    o.min_lr = 0.004;
    const lr_schedule s(o);
    CHECK(s.at(5) == doctest::Approx(0.4));
    CHECK(s.at(25) == doctest::Approx(0.004 + 0.396 * (1 + std::cos(std::numbers::pi / 4)) / 2));
    CHECK(s.at(45) == doctest::Approx(0.202));
    CHECK(s.at(85) == doctest::Approx(0.004));
    CHECK(s.at(100) == doctest::Approx(0.004));
    double last = 1;
    for (int i = 0; i <= 80; ++i) {
      const double lr = s.at(5 + i);
      CHECK(lr <= last);
      last = lr;
    }
  }
}

TEST_CASE("lr_schedule: parsing and refusals name the value") {
  using doctest::Contains;
  CHECK(parse_scaling_rule("linear") == scaling_rule::linear);
  CHECK(parse_scaling_rule("sqrt") == scaling_rule::sqrt);
  CHECK(parse_scaling_rule("none") == scaling_rule::none);
  CHECK(parse_decay_kind("cosine") == decay_kind::cosine);
  CHECK(parse_decay_kind("exponential") == decay_kind::exponential);
  CHECK(parse_decay_kind("step") == decay_kind::step);
  CHECK(parse_decay_kind("none") == decay_kind::none);
  CHECK_THROWS_WITH_AS((void)parse_scaling_rule("cubic"),
                       Contains("'cubic' is not a scaling rule; accepted: none, linear, sqrt"), invalid_argument);
  CHECK_THROWS_WITH_AS((void)parse_decay_kind("Cosine"),
                       Contains("'Cosine' is not a decay; accepted: none, step, exponential, cosine"),
                       invalid_argument);

  CHECK_THROWS_WITH_AS(lr_schedule({.base_lr = 0}), Contains("base_lr 0 is not > 0"), invalid_argument);
  CHECK_THROWS_WITH_AS(lr_schedule({.base_batch_size = 0}), Contains("base_batch_size 0"), invalid_argument);
  CHECK_THROWS_WITH_AS(lr_schedule({.global_batch_size = 0}), Contains("global_batch_size 0"), invalid_argument);
  CHECK_THROWS_WITH_AS(lr_schedule({.warmup_epochs = -1}), Contains("warmup_epochs -1"), invalid_argument);
  CHECK_THROWS_WITH_AS(lr_schedule({.decay = decay_kind::step, .gamma = 1.5}), Contains("gamma 1.5 is not in (0, 1]"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(lr_schedule({.decay = decay_kind::step, .step_epochs = 0}), Contains("step_epochs 0"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(lr_schedule({.warmup_epochs = 10, .decay = decay_kind::cosine, .total_epochs = 10}),
                       Contains("total_epochs 10 is not after the end of warm-up"), invalid_argument);
  CHECK_THROWS_WITH_AS(lr_schedule({.decay = decay_kind::cosine, .min_lr = 0.5}),
                       Contains("min_lr 0.5 is not in [0, the scaled rate 0.1]"), invalid_argument);
  CHECK_THROWS_WITH_AS((void)lr_schedule({}).at(-1), Contains("epoch -1"), invalid_argument);
}
