// A scheduler without the static name() that decorators (dependency_filter<S>) and traces use is
// refused at sched::run with a sentence saying what to write, not deep inside a decorator.
// expect: a STRADS scheduler needs a static `name\(\)`
#include <strata/sched/engine.hpp>
#include <strata/strata.hpp>

#include <span>
#include <vector>

struct my_program {
  struct partial_type {
    template <class Ar>
    void serialize(Ar&) {}
  };
  using update_type = partial_type;
  std::uint32_t vars() const { return 1; }
  partial_type push(strata::worker&, const strata::sched::plan&) { return {}; }
  update_type pull(const strata::sched::plan&, std::vector<partial_type>&) { return {}; }
  void sync(strata::worker&, const update_type&) {}
};

struct nameless {
  using scheduler_tag = void;
  void schedule(const strata::sched::context&, strata::sched::plan&) {}
  void observe(std::span<const strata::sched::var_delta>) {}
};

int main() {
  strata::system<strata::bsp> sys({});
  my_program p;
  strata::sched::run(sys, p, nameless{}, {});  // a temporary scheduler binds
  return 0;
}
