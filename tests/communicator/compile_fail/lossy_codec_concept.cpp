// A lossy codec that lacks encode/decode/decode_add is refused naming tutti::lossy_codec_policy.
#include <tutti/tutti.hpp>
struct my_fp16 {
  using tutti_role = tutti::role::codec;
  static constexpr std::string_view name = "my_fp16";
  static constexpr bool lossless = false;
  static constexpr std::size_t encoded_bytes(tutti::dtype, std::size_t n) { return 2 * n; }
};
tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, my_fp16>* p = nullptr;
static_assert(sizeof(*p) > 0);
