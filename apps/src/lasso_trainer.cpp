// The Lasso trainer's runs with the built-in schedulers (apps/trainers/lasso_trainer.hpp declares
// them extern), compiled once into strata_apps.
#include <trainers/lasso_trainer.hpp>

namespace strata::ml {

template lasso_run train_lasso<sched::round_robin>(system_base&, const lasso_problem&, sched::round_robin&, const lasso_trainer_options&);
template lasso_run train_lasso<sched::uniform_random>(system_base&, const lasso_problem&, sched::uniform_random&, const lasso_trainer_options&);
template lasso_run train_lasso<sched::priority>(system_base&, const lasso_problem&, sched::priority&, const lasso_trainer_options&);
template lasso_run train_lasso<sched::dependency_filter<sched::priority>>(system_base&, const lasso_problem&, sched::dependency_filter<sched::priority>&, const lasso_trainer_options&);
template lasso_run train_lasso<sched::dependency_filter<sched::uniform_random>>(system_base&, const lasso_problem&, sched::dependency_filter<sched::uniform_random>&, const lasso_trainer_options&);

}  // namespace strata::ml
