// A server shard shows only its public face (min_clock, newest_applied, complete, table): the
// runtime's side (on_message, reset, run start and end, checkpoint setup) is private, reached only
// by the runtime through strata::detail::party_access.
// expect: strata::server_shard::reset.* is private within this context
#include <strata/runtime/server.hpp>

int main() {
  strata::server_shard shard(0, strata::worker_map{}, strata::model_params{}, {},
                             [](strata::endpoint, strata::wire::message&&) {});
  shard.reset(false);
  return 0;
}
