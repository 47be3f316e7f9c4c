// The memory store under the shared suites.
#include "stores/contract.h"
#include "stores/model.h"

namespace idem::testutil {

INSTANTIATE_TEST_SUITE_P(memory, StoreContract, ::testing::Values(memory_backend()), backend_name);
INSTANTIATE_TEST_SUITE_P(memory, StoreModel, ::testing::Values(memory_backend()), backend_name);

}  // namespace idem::testutil
