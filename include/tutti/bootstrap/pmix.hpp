//! @file pmix.hpp  A PMIx client session: what tutti asks of the launcher under mpirun and srun.
//!
//! Open MPI's mpirun (4.x: its orted daemons embed a PMIx server) and Slurm's srun --mpi=pmix
//! start every process with PMIX_NAMESPACE, PMIX_RANK and the address of a local PMIx server. A
//! process that links libpmix (Debian libpmix-dev; tutti::pmix) can then publish small values,
//! wait until every process of the job has published (a fence), and read what any process
//! published — which is all a rendezvous needs, with no variable set by the user
//! (bootstrap/pmix_rendezvous.hpp uses it to find rank 0's store).
//!
//! pmix_session is RAII over PMIx_Init/PMIx_Finalize (PMIx counts nested inits, so an MPI library
//! in the same process is not disturbed). Every call that can wait takes a deadline: the fence is
//! non-blocking (PMIx_Fence_nb) and waited for here, so a rank that never arrives (a process that
//! is not tutti, a mistyped launch) becomes a tutti::timeout naming the fence, not a hang.
#pragma once
#include <pmix.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"

namespace tutti::bootstrap {

//! True when a PMIx server started this process (mpirun, srun --mpi=pmix, prterun).
[[nodiscard]] inline bool pmix_present() noexcept {
  const char* ns = std::getenv("PMIX_NAMESPACE");
  const char* rank = std::getenv("PMIX_RANK");
  return ns && *ns && rank && *rank;
}

class pmix_session {
 public:
  //! Joins the launcher's PMIx server. `who` prefixes every message ("rank 3").
  explicit pmix_session(std::string who) : who_(std::move(who)) {
    const pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS) fail("PMIx_Init", rc, " (is this process started by mpirun or srun --mpi=pmix?)");
  }
  ~pmix_session() {
    if (!abandoned_) PMIx_Finalize(nullptr, 0);
  }
  pmix_session(const pmix_session&) = delete;
  pmix_session& operator=(const pmix_session&) = delete;

  [[nodiscard]] int rank() const noexcept { return static_cast<int>(me_.rank); }
  [[nodiscard]] std::string nspace() const { return me_.nspace; }

  //! The job's process count (PMIX_JOB_SIZE).
  [[nodiscard]] int job_size() {
    pmix_proc_t job = me_;
    job.rank = PMIX_RANK_WILDCARD;
    pmix_value_t* v = nullptr;
    const pmix_status_t rc = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &v);
    if (rc != PMIX_SUCCESS || !v) fail("PMIx_Get(" PMIX_JOB_SIZE ")", rc);
    std::uint32_t size = 0;
    if (v->type == PMIX_UINT32) size = v->data.uint32;
    else if (v->type == PMIX_INT) size = static_cast<std::uint32_t>(v->data.integer);
    PMIX_VALUE_RELEASE(v);
    return static_cast<int>(size);
  }

  //! Publishes `key` = `value` (bytes) to every process of the job, after the next commit().
  void put(const std::string& key, const std::string& value) {
    check_key(key);
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = const_cast<char*>(value.data());  // PMIx_Put copies; not freed by us
    v.data.bo.size = value.size();
    const pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
    if (rc != PMIX_SUCCESS) fail("PMIx_Put(" + key + ")", rc);
  }

  void commit() {
    const pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) fail("PMIx_Commit", rc);
  }

  //! Waits until every process of the job reached this fence, collecting what each committed.
  void fence(deadline until, const std::string& what) {
    struct state {
      std::mutex m;
      std::condition_variable cv;
      bool done = false;
      pmix_status_t rc = PMIX_SUCCESS;
    };
    // Shared with PMIx's progress thread, which may still call back after a timeout: it keeps the
    // state alive through a leaked reference in that case (see below).
    auto* s = new state;
    auto callback = [](pmix_status_t rc, void* data) {
      auto* st = static_cast<state*>(data);
      std::lock_guard lock(st->m);
      st->rc = rc;
      st->done = true;
      st->cv.notify_all();
    };
    pmix_proc_t all = me_;
    all.rank = PMIX_RANK_WILDCARD;
    pmix_info_t info;
    PMIX_INFO_CONSTRUCT(&info);
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    const pmix_status_t started = PMIx_Fence_nb(&all, 1, &info, 1, callback, s);
    PMIX_INFO_DESTRUCT(&info);
    if (started != PMIX_SUCCESS) {
      delete s;
      fail("PMIx_Fence_nb (" + what + ")", started);
    }
    std::unique_lock lock(s->m);
    if (!s->cv.wait_until(lock, until.at(), [&] { return s->done; })) {
      // The fence is still pending in PMIx and will call back into `s` if it ever completes:
      // leave `s` to it, and leave PMIx initialised (finalising under a pending fence can block).
      abandoned_ = true;
      throw timeout(who_ + ": PMIx fence (" + what + ") not reached by every process of job " + nspace() +
                    " before the deadline (TUTTI_TIMEOUT); a process of the job is not a tutti rank, is stuck "
                    "before it, or died");
    }
    const pmix_status_t rc = s->rc;
    lock.unlock();
    delete s;
    if (rc != PMIX_SUCCESS) fail("PMIx fence (" + what + ")", rc);
  }

  //! What process `rank` of this job published under `key` (after a fence that both passed).
  [[nodiscard]] std::string get(int rank, const std::string& key) {
    check_key(key);
    pmix_proc_t from = me_;
    from.rank = static_cast<pmix_rank_t>(rank);
    pmix_value_t* v = nullptr;
    const pmix_status_t rc = PMIx_Get(&from, key.c_str(), nullptr, 0, &v);
    if (rc != PMIX_SUCCESS || !v) fail("PMIx_Get(" + key + " of rank " + std::to_string(rank) + ")", rc);
    std::string out;
    if (v->type == PMIX_BYTE_OBJECT && v->data.bo.bytes) out.assign(v->data.bo.bytes, v->data.bo.size);
    else if (v->type == PMIX_STRING && v->data.string) out = v->data.string;
    const bool bad_type = v->type != PMIX_BYTE_OBJECT && v->type != PMIX_STRING;
    PMIX_VALUE_RELEASE(v);
    if (bad_type) throw transport_error(who_ + ": PMIx value " + key + " of rank " + std::to_string(rank) +
                                        " has an unexpected type");
    return out;
  }

 private:
  void check_key(const std::string& key) const {
    if (key.empty() || key.size() > PMIX_MAX_KEYLEN)
      throw invalid_argument(who_ + ": PMIx key '" + key + "' is empty or longer than " +
                             std::to_string(PMIX_MAX_KEYLEN) + " characters");
  }
  [[noreturn]] void fail(const std::string& call, pmix_status_t rc, const std::string& hint = "") const {
    throw transport_error(who_ + ": " + call + " failed: " + PMIx_Error_string(rc) + " (" + std::to_string(rc) +
                          ")" + hint);
  }

  std::string who_;
  pmix_proc_t me_{};
  bool abandoned_ = false;
};

}  // namespace tutti::bootstrap
