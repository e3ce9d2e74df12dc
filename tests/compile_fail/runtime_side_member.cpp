// A worker program cannot call the runtime's side of its worker (finish, reset, on_message, ...):
// those members are private, reached only by the runtime through strata::detail::party_access.
// expect: strata::worker::finish.* is private within this context
#include <strata/strata.hpp>

int main() {
  strata::system<strata::bsp> sys({});
  sys.run([](strata::worker& w) -> strata::task<> {
    w.finish([] {});
    co_return;
  });
  return 0;
}
