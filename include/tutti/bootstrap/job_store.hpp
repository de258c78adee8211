//! @file job_store.hpp  The job's rendezvous store for this process: found from the launcher, made once, shared.
//!
//! Where rank 0's tcp_store is and which key proves membership come from, in order:
//!  1. TUTTI_STORE_ADDR=host:port or torchrun's MASTER_ADDR/MASTER_PORT, with TUTTI_JOB_KEY(_FILE)
//!     (tutti-run sets all of them; under torchrun or by hand the user sets the key);
//!  2. under mpirun or srun --mpi=pmix, with nothing set: PMIx (bootstrap/pmix_rendezvous.hpp;
//!     in builds that link tutti::pmix, which defines TUTTI_HAVE_PMIX);
//!  3. a job of one rank: a private store on loopback.
//! Otherwise an invalid_argument says what to set.
//!
//! One store per process, however many transports: each transport takes its own key scope
//! (next_scope(): "tutti/t0", "tutti/t1", ...), the same on every rank because every rank makes its
//! transports in the same order — the rule communicators already follow. A store per transport
//! would race: a client of the next transport could reach the previous server while it drains.
#pragma once
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"
#ifdef TUTTI_HAVE_PMIX
#include "tutti/bootstrap/pmix.hpp"
#include "tutti/bootstrap/pmix_rendezvous.hpp"
#endif

namespace tutti::bootstrap {

namespace detail {

//! A fresh 32-byte key (hex text) from OpenSSL's CSPRNG, for stores this process makes itself.
[[nodiscard]] inline job_key fresh_job_key(int rank) {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1)
    throw transport_error(on_rank(rank) + "OpenSSL RAND_bytes could not make a job key");
  std::string hex;
  for (unsigned char b : raw) {
    hex += "0123456789abcdef"[b >> 4];
    hex += "0123456789abcdef"[b & 15];
  }
  OPENSSL_cleanse(raw, sizeof raw);
  job_key key(hex, "a generated key");
  OPENSSL_cleanse(hex.data(), hex.size());
  return key;
}

[[nodiscard]] inline std::shared_ptr<tcp_store> make_job_store(const rank_info& info) {
  const bool server = info.rank == 0;
  if (store_address_from_env()) {
    auto opt = tcp_store_options::from_env(info.rank, server);
    opt.server_rank = 0;
    return std::make_shared<tcp_store>(std::move(opt));
  }
#ifdef TUTTI_HAVE_PMIX
  if (info.world_size > 1 && pmix_present()) return store_through_pmix(info, fresh_job_key);
  const char* pmix_hint = "";
#else
  const char* pmix_hint = std::getenv("PMIX_NAMESPACE")
                              ? "; this launcher offers PMIx, which this build does not use: link tutti::pmix "
                                "(libpmix-dev) and nothing needs setting"
                              : "";
#endif
  if (info.world_size == 1) {
    tcp_store_options opt;
    opt.rank = 0;
    opt.is_server = true;
    opt.bind_address = "127.0.0.1";
    opt.key = fresh_job_key(0);
    return std::make_shared<tcp_store>(std::move(opt));
  }
  throw invalid_argument(rank_text(info.rank) + " (launched by " + info.launcher +
                         "): a multi-host job needs a rendezvous store: set TUTTI_STORE_ADDR=host:port (rank 0's "
                         "host and a free port) or MASTER_ADDR and MASTER_PORT, and TUTTI_JOB_KEY on every rank; or "
                         "start the job with tutti-run, or under mpirun or srun --mpi=pmix in a build with "
                         "tutti::pmix" + std::string(pmix_hint));
}

struct job_store_state {
  std::mutex mutex;
  std::shared_ptr<tcp_store> store;
  int rank = -1;
  std::atomic<unsigned> scopes{0};
};

inline job_store_state& job_store_singleton() {
  // OpenSSL first: it registers its clean-up with atexit when it initialises, and exit runs
  // handlers in reverse order, so the store (whose server thread draws nonces for late clients
  // while it closes) is destroyed before OpenSSL is torn down. The other order crashed rank 0 in
  // RAND_bytes at exit when a rank connected during its final wait for clients.
  // (A real option: OPENSSL_init_crypto(0, ...) returns before initialising anything.)
  [[maybe_unused]] static const int crypto_before_store = OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CRYPTO_STRINGS, nullptr);
  static job_store_state state;
  return state;
}

}  // namespace detail

//! This process's store for the job `info` describes, made on first use and kept until exit.
[[nodiscard]] inline std::shared_ptr<tcp_store> job_store(const rank_info& info) {
  auto& s = detail::job_store_singleton();
  std::lock_guard lock(s.mutex);
  if (!s.store) {
    s.store = detail::make_job_store(info);
    s.rank = info.rank;
  } else if (s.rank != info.rank) {
    throw invalid_argument(on_rank(info.rank) + "this process already joined the job's store as rank " +
                           std::to_string(s.rank));
  }
  return s.store;
}

//! A key prefix no other transport of this process uses ("tutti/t<n>"); see the top of this file.
[[nodiscard]] inline std::string next_scope() {
  return "tutti/t" + std::to_string(detail::job_store_singleton().scopes.fetch_add(1));
}

}  // namespace tutti::bootstrap
