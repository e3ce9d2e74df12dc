// A worker program that is not a coroutine returning strata::task<> (here a lambda without
// `-> strata::task<>` that returns void) is refused at system::run in one sentence.
// expect: the worker program must be callable as program\(strata::worker&\) and return strata::task<>
#include <strata/strata.hpp>

int main() {
  strata::system<strata::bsp> sys({});
  auto t = sys.add_table<strata::dense_row<float>>(4);
  sys.run([&](strata::worker& w) { (void)w.inc(t, 0, 0, 1.0f); });
  return 0;
}
