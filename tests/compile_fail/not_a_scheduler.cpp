// A type that does not model strata::sched::scheduler must be refused with a sentence saying what to write.
// expect: not a STRADS scheduler: opt in with
#include <strata/sched/engine.hpp>
#include <strata/strata.hpp>

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

struct picks_everything {  // no scheduler_tag
  void schedule(const strata::sched::context&, strata::sched::plan&) {}
};

int main() {
  strata::system<strata::bsp> sys({});
  my_program p;
  picks_everything s;
  strata::sched::run(sys, p, s, {});
  return 0;
}
