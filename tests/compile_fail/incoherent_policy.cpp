// A policy whose answers contradict each other (exact snapshots pushed on update) must be refused
// with a sentence saying what to write.
// expect: cannot push them as they are applied
#include <strata/strata.hpp>

#include <limits>

struct exact_but_pushed_on_update {
  using consistency_tag = void;
  static constexpr int staleness = 0;
  static constexpr strata::push_mode push = strata::push_mode::on_update;
  static constexpr bool exact_snapshots = true;
  static constexpr double value_bound = std::numeric_limits<double>::infinity();
  static constexpr const char* name() noexcept { return "incoherent"; }
};

int main() {
  strata::system<exact_but_pushed_on_update> sys({});
  return 0;
}
