// Conan test_package: the packaged headers compile, link and run a 4-rank allreduce.
#include <tutti/tutti.hpp>

#include <cstdio>
#include <vector>

int main() {
  using comm_t = tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring>;
  std::vector<float> result(4);
  auto errors = tutti::transport::inproc::run(4, [&](tutti::transport::inproc& t) {
    comm_t comm(t);
    std::vector<float> grads(1000, static_cast<float>(comm.rank() + 1));
    comm.allreduce(grads, tutti::op::sum);  // 1 + 2 + 3 + 4 everywhere
    result[static_cast<std::size_t>(comm.rank())] = grads.back();
  });
  for (auto& e : errors)
    if (e) return 1;
  for (float v : result)
    if (v != 10.0f) return std::printf("wrong allreduce result %g\n", v), 1;
  std::printf("tutti %s: 4-rank allreduce ok\n", tutti::version);
  return 0;
}
