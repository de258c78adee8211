//! @file any_optimizer.hpp  An optimiser chosen at run time (by a config file) behind one type.
#pragma once
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "tutti/trainer/model.hpp"

namespace tutti::trainer {

//! Holds any optimiser of optimizer.hpp (sgd, adam, lars<...>) so a trainer need not be
//! instantiated once per choice; the step itself stays the optimiser's own loop.
class any_optimizer {
 public:
  template <class Optimizer>
  explicit any_optimizer(Optimizer o, std::string description)
      : self_(std::make_unique<holder<Optimizer>>(std::move(o))), description_(std::move(description)) {}

  void step(std::span<const parameter> params, double lr) { self_->step(params, lr); }
  void save(std::ostream& out) const { self_->save(out); }
  void load(std::istream& in) { self_->load(in); }
  [[nodiscard]] const std::string& description() const noexcept { return description_; }

 private:
  struct base {
    virtual ~base() = default;
    virtual void step(std::span<const parameter>, double) = 0;
    virtual void save(std::ostream&) const = 0;
    virtual void load(std::istream&) = 0;
  };
  template <class Optimizer>
  struct holder final : base {
    explicit holder(Optimizer o) : optimizer(std::move(o)) {}
    void step(std::span<const parameter> params, double lr) override { optimizer.step(params, lr); }
    void save(std::ostream& out) const override { optimizer.save(out); }
    void load(std::istream& in) override { optimizer.load(in); }
    Optimizer optimizer;
  };
  std::unique_ptr<base> self_;
  std::string description_;
};

}  // namespace tutti::trainer
