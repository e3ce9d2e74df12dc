#pragma once
/// \file program_ref<Party>: a program given to `system::run`, without its type. The runtime takes
/// it as a plain reference (an object and a function pointer), so it is compiled once for every
/// program; `run` blocks until every program has returned, so the referenced callable outlives it.
#include <concepts>
#include <functional>
#include <memory>
#include <type_traits>

#include <strata/runtime/task.hpp>

namespace strata {

/// What `system::run` accepts as a party's program: callable as `f(party&)` and returning
/// `strata::task<>` (a coroutine: write a lambda as `[&](strata::worker& w) -> strata::task<> {...}`).
template <class F, class Party>
concept program_for = std::invocable<F&, Party&> && std::same_as<std::invoke_result_t<F&, Party&>, task<>>;

/// A non-owning reference to a program of a party (worker or coordinator): `task<>(Party&)`.
template <class Party>
class program_ref {
 public:
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, program_ref> && program_for<F, Party>)
  program_ref(F& f) noexcept  // NOLINT(google-explicit-constructor): a program is a program_ref
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Party& p) -> task<> { return std::invoke(*static_cast<F*>(o), p); }) {}
  task<> operator()(Party& p) const { return call_(obj_, p); }

 private:
  void* obj_;
  task<> (*call_)(void*, Party&);
};

}  // namespace strata
