// Two consistency policies in one system's options must be refused, naming the mistake.
// expect: two consistency policies given
#include <strata/strata.hpp>

int main() {
  strata::system<strata::bsp, strata::options::consistency<strata::essp<2>>> sys({});
  return 0;
}
