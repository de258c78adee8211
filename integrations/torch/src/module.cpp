//! @file module.cpp  The Python module _tutti_torch: the factory torch.distributed calls for "tutti".
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group.hpp"

namespace {
c10::intrusive_ptr<c10d::ProcessGroup> make_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                           int size, const std::chrono::duration<float>& timeout) {
  return c10::make_intrusive<tutti_torch::process_group>(
      store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}
}  // namespace

PYBIND11_MODULE(_tutti_torch, m) {
  m.doc() = "tutti as a torch.distributed backend";
  m.def("make_process_group", &make_process_group, "the ProcessGroup torch.distributed makes for backend 'tutti'");
}
