// A collective with the wrong signature (here: not static) is not taken for "absent": the error
// says the signature may differ and shows the expected one.
#include <tutti/tutti.hpp>
#include <vector>
struct member_allreduce {
  using tutti_role = tutti::role::algorithm;
  static constexpr std::string_view name = "member_allreduce";
  template <class Ctx>
  void allreduce(Ctx&, const void*, void*, std::size_t, tutti::dtype, tutti::op) {}  // missing `static`
};
void f(tutti::communicator<tutti::transport::inproc, member_allreduce>& c) {
  std::vector<float> v(4);
  c.allreduce(v, tutti::op::sum);
}
