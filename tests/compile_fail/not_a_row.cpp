// A table row type that does not model strata::row_type must be refused with a readable message.
// expect: must model strata::row_type
#include <strata/strata.hpp>

struct not_a_row {
  using value_type = int;
};

int main() {
  strata::system<strata::bsp> sys({});
  auto t = sys.add_table<not_a_row>(4);
  (void)t;
  return 0;
}
