// A type that does not model strata::consistency_model must be refused with a readable message.
// expect: must model strata::consistency_model
#include <strata/strata.hpp>

struct not_a_policy {
  static constexpr int staleness = 1;  // no consistency_tag, no push, ...
};

int main() {
  strata::system<not_a_policy> sys({});
  return 0;
}
