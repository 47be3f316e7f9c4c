// The MySQL store under the shared suites (skipped without IDEM_TEST_MYSQL_URL).
#include "stores/contract.h"
#include "stores/model.h"

namespace idem::testutil {

INSTANTIATE_TEST_SUITE_P(mysql, StoreContract, ::testing::Values(mysql_backend()), backend_name);
INSTANTIATE_TEST_SUITE_P(mysql, StoreModel, ::testing::Values(mysql_backend()), backend_name);

}  // namespace idem::testutil
