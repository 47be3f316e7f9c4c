// The PostgreSQL store under the shared suites (skipped without IDEM_TEST_POSTGRES_URL).
#include "stores/contract.h"
#include "stores/model.h"

namespace idem::testutil {

INSTANTIATE_TEST_SUITE_P(postgres, StoreContract, ::testing::Values(postgres_backend()), backend_name);
INSTANTIATE_TEST_SUITE_P(postgres, StoreModel, ::testing::Values(postgres_backend()), backend_name);

}  // namespace idem::testutil
