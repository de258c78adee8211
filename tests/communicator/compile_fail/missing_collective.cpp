// Calling a collective the algorithm does not implement is a compile-time error naming it.
#include <tutti/tutti.hpp>
#include <vector>
struct allreduce_only {
  using tutti_role = tutti::role::algorithm;
  static constexpr std::string_view name = "allreduce_only";
  template <class Ctx>
  static void allreduce(Ctx&, const void*, void*, std::size_t, tutti::dtype, tutti::op) {}
};
void f(tutti::communicator<tutti::transport::inproc, allreduce_only>& c) {
  std::vector<float> v(4);
  c.broadcast(v, 0);
}
