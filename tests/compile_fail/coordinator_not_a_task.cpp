// A coordinator program with the wrong parameter is refused at system::run in one sentence.
// expect: the coordinator program must be callable as coord\(strata::coordinator&\) and return strata::task<>
#include <strata/strata.hpp>

int main() {
  strata::system<strata::bsp> sys({});
  sys.run([](strata::worker&) -> strata::task<> { co_return; }, [](int) -> strata::task<> { co_return; });
  return 0;
}
