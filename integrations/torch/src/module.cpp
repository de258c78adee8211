//! @file module.cpp  The Python module _tutti_torch: the factory torch.distributed calls for "tutti".
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "make_group.hpp"

namespace {
c10::intrusive_ptr<tutti_torch::c10d_backend> make_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                           int size, const std::chrono::duration<float>& timeout) {
  return tutti_torch::make_process_group(store, rank, size,
                                         std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

c10::intrusive_ptr<c10d::Work> codec_allreduce(const c10::intrusive_ptr<c10d::ProcessGroup>& group, at::Tensor bucket,
                                               const std::string& codec, std::int64_t index) {
#if TUTTI_TORCH_MAJOR >= 2  // torch's ProcessGroup wraps ours: the backend it holds for CPU tensors
  auto* ours = dynamic_cast<tutti_torch::group_base*>(group->getBackend(c10::DeviceType::CPU).get());
#else
  auto* ours = dynamic_cast<tutti_torch::group_base*>(group.get());
#endif
  TORCH_CHECK(ours, "tutti: the codec hook needs a process group of backend \"tutti\", not \"",
              group->getBackendName(), "\" (dist.init_process_group(\"tutti\", ...))");
  return ours->codec_allreduce(bucket, codec, index);
}
}  // namespace

PYBIND11_MODULE(_tutti_torch, m) {
  m.doc() = "tutti as a torch.distributed backend";
  m.def("make_process_group", &make_process_group, "the ProcessGroup torch.distributed makes for backend 'tutti'");
  m.def("codec_allreduce", &codec_allreduce,
        "a float32 tensor averaged in place over the group through a codec's compressed allreduce (the DDP hook's)");
}
