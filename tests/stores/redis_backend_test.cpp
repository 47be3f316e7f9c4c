// Redis and Redis Cluster under the shared suites (skipped when their URL is not set:
// run `scripts/services start redis && eval "$(scripts/services env)"` first).
#include "stores/contract.h"
#include "stores/model.h"

namespace idem::testutil {

INSTANTIATE_TEST_SUITE_P(redis, StoreContract, ::testing::Values(redis_backend(), redis_cluster_backend()),
                         backend_name);
INSTANTIATE_TEST_SUITE_P(redis, StoreModel, ::testing::Values(redis_backend(), redis_cluster_backend()),
                         backend_name);

}  // namespace idem::testutil
