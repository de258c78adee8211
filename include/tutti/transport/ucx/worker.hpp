//! @file worker.hpp  The UCP context and worker one rank owns, and its endpoints.
#pragma once
#include <ucp/api/ucp.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/interfaces.hpp"
#include "tutti/core/error.hpp"
#include "tutti/transport/ucx/error.hpp"
#include "tutti/transport/ucx/log_filter.hpp"
#include "tutti/transport/ucx/teardown_watch.hpp"

namespace tutti::transport::ucx_detail {

//! One UCP context and one worker, tag matching only, used by one thread (thread mode SINGLE:
//! tutti drives progress from the waiting thread, so UCX needs no locks). Moves are not needed:
//! the transport owns exactly one, for its whole life.
class worker {
 public:
  //! `rndv_thresh`: UCX's RNDV_THRESH where tutti chose the (TCP) network and the user set none
  //! (ucx_options::rndv_thresh says why); "auto" or empty: UCX's own.
  worker(int rank, std::size_t estimated_endpoints, const std::string& rndv_thresh = "auto")
      : rank_(rank), sockets_before_(open_socket_inodes()) {
    install_log_filter();
    ucp_config_t* config = nullptr;  // reads UCX_* from the environment (UCX_TLS, UCX_NET_DEVICES, ...)
    if (const ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) fail(rank, "ucp_config_read", s);
    if (!rndv_thresh.empty() && rndv_thresh != "auto" && !std::getenv("UCX_RNDV_THRESH") &&
        bootstrap::ucx_network_chosen_by_tutti()) {
      if (const ucs_status_t s = ucp_config_modify(config, "RNDV_THRESH", rndv_thresh.c_str()); s != UCS_OK) {
        ucp_config_release(config);
        fail(rank, "ucp_config_modify(RNDV_THRESH=" + rndv_thresh + ", from TUTTI_UCX_RNDV_THRESH)", s);
      }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = estimated_endpoints;
    const ucs_status_t s = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (s != UCS_OK) fail(rank, "ucp_init", s);

    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // SERIALIZED, not SINGLE: one thread at a time, but not always the one that made it
    // (hierarchical's pipeline drives the network level from its worker thread; group.hpp's
    // network_level), which is the mode UCX documents for that.
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    if (const ucs_status_t ws = ucp_worker_create(context_, &wparams, &worker_); ws != UCS_OK) {
      ucp_cleanup(context_);
      fail(rank, "ucp_worker_create", ws);
    }
  }
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;
  ~worker() { destroy(); }

  //! Destroys the worker (and with it every endpoint still open) and the context. Idempotent.
  //! Bounded by a teardown_watch: UCX's TCP transport can spin in it for ever (teardown_watch.hpp).
  void destroy() noexcept {
    if (worker_) {
      const teardown_watch watch(rank_, sockets_before_);
      ucp_worker_destroy(std::exchange(worker_, nullptr));
    }
    if (context_) ucp_cleanup(std::exchange(context_, nullptr));
  }

  [[nodiscard]] ucp_worker_h get() const noexcept { return worker_; }
  //! Drives UCX; returns how many events it handled (0: nothing happened).
  unsigned progress() noexcept { return worker_ ? ucp_worker_progress(worker_) : 0; }

  //! An endpoint to the worker at `address` (bytes from its address()), with peer error handling:
  //! when the connection breaks UCX fails its operations and calls on_error(arg, ep, status).
  [[nodiscard]] ucp_ep_h connect(int peer, const std::vector<unsigned char>& address, ucp_err_handler_cb_t on_error,
                                 void* arg) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(address.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = on_error;
    params.err_handler.arg = arg;
    ucp_ep_h ep = nullptr;
    if (const ucs_status_t s = ucp_ep_create(worker_, &params, &ep); s != UCS_OK)
      fail(rank_, "ucp_ep_create to rank " + std::to_string(peer), s);
    return ep;
  }

  //! Starts closing `ep` (flushing it first unless `flags` has UCP_EP_CLOSE_FLAG_FORCE); returns
  //! the request to poll until it completes, or null when it closed at once.
  static void* close(ucp_ep_h ep, std::uint32_t flags) noexcept {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = flags;
    const ucs_status_ptr_t sp = ucp_ep_close_nbx(ep, &param);
    return UCS_PTR_IS_PTR(sp) ? sp : nullptr;
  }

  //! This worker's address, as bytes a peer passes to ucp_ep_create.
  [[nodiscard]] std::vector<unsigned char> address() const {
    ucp_address_t* addr = nullptr;
    std::size_t len = 0;
    if (const ucs_status_t s = ucp_worker_get_address(worker_, &addr, &len); s != UCS_OK)
      fail(rank_, "ucp_worker_get_address", s);
    const auto* p = reinterpret_cast<const unsigned char*>(addr);
    std::vector<unsigned char> out(p, p + len);
    ucp_worker_release_address(worker_, addr);
    return out;
  }

 private:
  int rank_;
  std::set<unsigned long> sockets_before_;  //!< this process's sockets before UCX's: a teardown_watch spares them
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
};

}  // namespace tutti::transport::ucx_detail
