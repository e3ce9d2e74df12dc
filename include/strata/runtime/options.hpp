#pragma once
/// \file Named options for `strata::system<...>`, folded onto defaults: each argument is a
/// consistency policy, a transport, or an `options::` wrapper naming one, in any order.
#include <type_traits>

#include <strata/consistency/model.hpp>
#include <strata/consistency/models.hpp>
#include <strata/transport/inproc.hpp>
#include <strata/transport/transport.hpp>

namespace strata {

namespace options {
/// Names the consistency policy of a system (the default is `bsp`).
template <class C>
struct consistency {
  using type = C;
};
/// Names the transport of a system (the default is `inproc`).
template <class T>
struct transport {
  using type = T;
};
}  // namespace options

namespace detail {
template <class O>
struct is_consistency_option : std::false_type {};
template <class C>
struct is_consistency_option<options::consistency<C>> : std::true_type {};
template <class O>
struct is_transport_option : std::false_type {};
template <class T>
struct is_transport_option<options::transport<T>> : std::true_type {};

struct no_choice {};

/// The options folded: the chosen consistency and transport (or their defaults).
template <class C, class T, class... Rest>
struct fold_options {
  using consistency = std::conditional_t<std::is_same_v<C, no_choice>, bsp, C>;
  using transport = std::conditional_t<std::is_same_v<T, no_choice>, inproc, T>;
};
template <class C, class T, class O, class... Rest>
struct fold_options<C, T, O, Rest...> {
  static constexpr bool names_consistency = is_consistency_option<O>::value || consistency_model<O>;
  static constexpr bool names_transport = is_transport_option<O>::value || (!names_consistency && transport<O>);
  static_assert(names_consistency || names_transport,
                "strata::system<...>: each argument must be a consistency policy (it must model "
                "strata::consistency_model: declare `using consistency_tag = void;` and static members staleness "
                "(int), push (push_mode), exact_snapshots (bool), value_bound (double) and name()), a transport "
                "(strata::transport), or strata::options::consistency<C> / strata::options::transport<T>");
  static_assert(!(names_consistency && !std::is_same_v<C, no_choice>),
                "strata::system<...>: two consistency policies given; name one");
  static_assert(!(names_transport && !std::is_same_v<T, no_choice>), "strata::system<...>: two transports given; name one");
  template <class X>
  static auto unwrap() {
    if constexpr (requires { typename X::type; } && (is_consistency_option<X>::value || is_transport_option<X>::value))
      return std::type_identity<typename X::type>{};
    else
      return std::type_identity<X>{};
  }
  using chosen = typename decltype(unwrap<O>())::type;
  using next = fold_options<std::conditional_t<names_consistency, chosen, C>,
                            std::conditional_t<names_transport && !names_consistency, chosen, T>, Rest...>;
  using consistency = typename next::consistency;
  using transport = typename next::transport;
};

template <class... Options>
struct resolve_options {
  using folded = fold_options<no_choice, no_choice, Options...>;
  using consistency = typename folded::consistency;
  using transport = typename folded::transport;
  static_assert(check_consistency_model<consistency>());
  static_assert(strata::transport<transport>, "strata::system<...>: the transport must model strata::transport");
};
}  // namespace detail

}  // namespace strata
