//! @file deadline.hpp  Deadlines and the spin-then-yield-then-sleep backoff every wait uses.
#pragma once
#include <sched.h>

#include <chrono>
#include <thread>

namespace tutti {

//! A point in steady time after which a wait gives up with tutti::timeout.
class deadline {
 public:
  using clock = std::chrono::steady_clock;
  explicit deadline(clock::time_point at) noexcept : at_(at) {}
  [[nodiscard]] static deadline after(std::chrono::nanoseconds d) noexcept { return deadline(clock::now() + d); }
  [[nodiscard]] bool passed() const noexcept { return clock::now() >= at_; }
  [[nodiscard]] clock::time_point at() const noexcept { return at_; }

 private:
  clock::time_point at_;
};

//! Whether `ranks` processes outnumber the cores this one may run on (its affinity mask): their
//! waits should then yield at once, since spinning only delays the peer that needs the core.
//! Transports ask it with the job's world size: on one host that counts every rank sharing it,
//! across hosts it is the cautious bound (namespace hosts share one machine's cores).
[[nodiscard]] inline bool outnumbered_cores(int ranks) noexcept {
  cpu_set_t cpus;
  const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return ranks > usable;
}

//! Spinning on a flag costs ~0.1 us, waking a sleeper ~30 us: spin first, then yield (so
//! oversubscribed ranks still progress), then sleep briefly so an idle wait does not burn a core.
class backoff {
 public:
  //! ~256 pauses is a few microseconds: long enough for a peer that is running on another core,
  //! short enough that an oversubscribed rank hands its core to the peer it waits for soon.
  static constexpr unsigned default_spin_rounds = 256;

  //! `spin_rounds` = 0 yields at once: right when ranks outnumber cores, where spinning only
  //! delays the peer that needs this core.
  explicit backoff(unsigned spin_rounds = default_spin_rounds) noexcept : spin_rounds_(spin_rounds) {}

  void pause() noexcept {
    ++rounds_;
    if (rounds_ < spin_rounds_) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else if (rounds_ < spin_rounds_ + yield_rounds) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  //! Whether it is worth reading the clock this round (the clock costs more than a spin).
  [[nodiscard]] bool check_clock() const noexcept { return (rounds_ & 63) == 0 || rounds_ >= spin_rounds_; }
  void reset() noexcept { rounds_ = 0; }

 private:
  static constexpr unsigned yield_rounds = 20000;
  unsigned spin_rounds_;
  unsigned rounds_ = 0;
};

}  // namespace tutti
