//! @file policies.hpp  Sorting a communicator's policies into roles, and the compile-time refusals.
//!
//! Policies come in any order; Boost.Hana sorts them into roles by their `tutti_role` tag, fills in
//! defaults (codec::none, fusion::none) and refuses, at compile time and in a sentence naming the
//! role, a missing, duplicated or ill-formed policy. The refusals of one call (codec carried, error
//! feedback, element type) live here too; a collective the Algorithm lacks is collective_refusal.hpp's.
#pragma once
#include <boost/hana/append.hpp>
#include <boost/hana/filter.hpp>
#include <boost/hana/front.hpp>
#include <boost/hana/size.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <cstddef>
#include <type_traits>

#include "tutti/algorithm/concepts.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/codec/none.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/fusion/concepts.hpp"
#include "tutti/fusion/none.hpp"
#include "tutti/transport/concepts.hpp"

namespace tutti::detail {

namespace hana = boost::hana;

template <class P, class = void>
struct role_of {
  using type = void;
};
template <class P>
struct role_of<P, std::void_t<typename P::tutti_role>> {
  using type = typename P::tutti_role;
};

//! Instantiated once per template argument so the diagnostic's "required from" names the type.
template <class P>
struct check_is_policy {
  static constexpr bool value = !std::is_void_v<typename role_of<P>::type>;
  static_assert(value,
                "tutti::communicator<...>: every template argument must be a Transport, Algorithm, Codec or "
                "FusionStrategy (a class declaring `using tutti_role = tutti::role::...;`); this one is none of them");
};

template <class Role, class... Ps>
constexpr auto policies_with_role() {
  return hana::filter(hana::tuple_t<Ps...>, [](auto t) {
    return hana::bool_c<std::is_same_v<typename role_of<typename decltype(t)::type>::type, Role>>;
  });
}

//! Stands in for a policy that was not given, so the static_assert naming the role is the only error.
template <class Role>
struct missing_policy {
  struct request {};
};

//! The policy of `Role` among Ps (Default when there is none) and how many were given.
template <class Role, class Default, class... Ps>
struct pick {
  static constexpr auto found = policies_with_role<Role, Ps...>();
  static constexpr std::size_t count = decltype(hana::size(found))::value;
  using type = typename std::remove_cvref_t<decltype(hana::front(hana::append(found, hana::type_c<Default>)))>::type;
};

//! A transport that moves device memory needs an algorithm that handles it (device_memory_algorithm).
template <class T, class A>
constexpr bool device_memory_fits() {
  if constexpr (transport_policy<T>) return !T::traits.device_memory || device_memory_algorithm<A>;
  else return true;
}

template <class... Ps>
struct sorted_policies {
  static constexpr bool all_policies = (check_is_policy<Ps>::value && ...);
  static_assert(all_policies, "tutti::communicator<...>: a template argument is not a tutti policy (see above)");

  using transport_pick = pick<role::transport, missing_policy<role::transport>, Ps...>;
  using algorithm_pick = pick<role::algorithm, missing_policy<role::algorithm>, Ps...>;
  using codec_pick = pick<role::codec, codec::none, Ps...>;
  using fusion_pick = pick<role::fusion, fusion::none, Ps...>;

  static_assert(transport_pick::count != 0, "tutti::communicator<...> requires exactly one Transport; got none");
  static_assert(transport_pick::count <= 1, "tutti::communicator<...> requires exactly one Transport; got more than one");
  static_assert(algorithm_pick::count != 0, "tutti::communicator<...> requires exactly one Algorithm; got none");
  static_assert(algorithm_pick::count <= 1, "tutti::communicator<...> requires exactly one Algorithm; got more than one");
  static_assert(codec_pick::count <= 1, "tutti::communicator<...> accepts at most one Codec; got more than one");
  static_assert(fusion_pick::count <= 1,
                "tutti::communicator<...> accepts at most one FusionStrategy; got more than one");

  using transport = typename transport_pick::type;
  using algorithm = typename algorithm_pick::type;
  using codec = typename codec_pick::type;
  using fusion = typename fusion_pick::type;

  // Checked only when the role was given once, so one mistake gives one message.
  static_assert(transport_pick::count != 1 || transport_policy<transport>,
                "tutti::communicator<...>: the Transport does not satisfy tutti::transport_policy "
                "(needs request, send, recv, test, wait, rank, world_size, traits; see tutti/transport/concepts.hpp)");
  static_assert(algorithm_pick::count != 1 || algorithm_policy<algorithm>,
                "tutti::communicator<...>: the Algorithm does not satisfy tutti::algorithm_policy "
                "(needs a static constexpr name; see tutti/algorithm/concepts.hpp)");
  static_assert(codec_pick::count != 1 || codec_policy<codec>,
                "tutti::communicator<...>: the Codec does not satisfy tutti::codec_policy "
                "(needs name, lossless, encoded_bytes; see tutti/codec/concepts.hpp)");
  static_assert(fusion_pick::count != 1 || fusion_policy<fusion>,
                "tutti::communicator<...>: the FusionStrategy does not satisfy tutti::fusion_policy "
                "(needs name, threshold_bytes, cycle_time, autotune; see tutti/fusion/concepts.hpp)");
  static_assert(algorithm_pick::count != 1 || !algorithm_policy<algorithm> || device_memory_fits<transport, algorithm>(),
                "tutti::communicator<...>: the Transport moves device memory (traits.device_memory) but the Algorithm "
                "reads and writes buffers on the host; over transport::nccl use algorithm::native (an algorithm that "
                "handles device memory says so with `static constexpr bool handles_device_memory = true;`)");
  static_assert(codec_pick::count != 1 || !codec_policy<codec> || codec::lossless || lossy_codec_policy<codec> ||
                    feedback_codec_policy<codec>,
                "tutti::communicator<...>: a lossy Codec must satisfy tutti::lossy_codec_policy (accepts, encode, "
                "decode, decode_add, max_error) or tutti::feedback_codec_policy (error_feedback, accepts, encode "
                "with a residual, decode, decode_add); see tutti/codec/concepts.hpp");
};

//! Instantiated by allreduce with a lossy codec, so the diagnostic's "required from" line names
//! both the Algorithm and the Codec.
template <class Algorithm, class Codec>
struct check_codec_carried {
  static constexpr bool value = Codec::lossless || lossy_codec_carrier<Algorithm>;
  static_assert(value,
                "tutti::communicator<...>::allreduce: this Algorithm cannot carry a lossy Codec (its allreduce "
                "would sum in the wire format or re-encode partial sums at every hop); algorithms that carry "
                "them: ring, direct, halving_doubling, hierarchical<I, X> with such an X, automatic. An "
                "algorithm says it does with `static constexpr bool carries_lossy_codecs = true;` "
                "(the note below names the Algorithm and the Codec)");
};

//! Codecs with error feedback need the caller's residual; the others take none.
template <class Codec, bool Given>
struct check_feedback {
  static constexpr bool needed = feedback_codec_policy<Codec>;
  static_assert(Given || !needed,
                "tutti::communicator<...>::allreduce: this Codec (topk, onebit) needs error feedback: pass the "
                "tensor's tutti::error_feedback, allreduce(tensor, op, feedback), the same one at every step "
                "(the note below names the Codec)");
  static_assert(!Given || needed,
                "tutti::communicator<...>::allreduce: this Codec takes no error feedback (only topk and onebit "
                "do); call allreduce(tensor, op) (the note below names the Codec)");
  static constexpr bool value = Given == needed;
};

//! A lossy codec carries float32 only; where the element type is known, say so at compile time.
template <class Codec, class Element>
struct check_codec_element {
  static constexpr bool value = Codec::lossless || std::is_same_v<std::remove_cv_t<Element>, float>;
  static_assert(value,
                "tutti::communicator<...>::allreduce: a lossy Codec (fp16, bf16, int8) carries float elements "
                "only; reduce integers or doubles with a communicator whose codec is codec::none "
                "(the note below names the Codec and the element type)");
};

}  // namespace tutti::detail
