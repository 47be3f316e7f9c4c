// The SQLite store under the shared suites.
#include "stores/contract.h"
#include "stores/model.h"

namespace idem::testutil {

INSTANTIATE_TEST_SUITE_P(sqlite, StoreContract, ::testing::Values(sqlite_backend()), backend_name);
INSTANTIATE_TEST_SUITE_P(sqlite, StoreModel, ::testing::Values(sqlite_backend()), backend_name);

}  // namespace idem::testutil
