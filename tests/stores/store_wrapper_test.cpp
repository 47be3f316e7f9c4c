// StoreWrapper (idem/store_wrapper.h) forwards every operation: the contract suite passes
// through one unchanged. And Store checks arguments once, before any do_*: a wrapper that
// counts the calls reaching it sees none of the invalid ones.
#include "idem/store_wrapper.h"

#include <atomic>

#include "stores/contract.h"

namespace idem::testutil {
namespace {

Backend wrapped_memory_backend() {
  Backend b = memory_backend();
  b.name = "wrapped_memory";
  b.open = [inner = b.open](std::shared_ptr<const Clock> clock) -> std::unique_ptr<Store> {
    return std::make_unique<StoreWrapper>(inner(std::move(clock)));
  };
  return b;
}

INSTANTIATE_TEST_SUITE_P(wrapped, StoreContract, ::testing::Values(wrapped_memory_backend()), backend_name);

class CountingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::atomic<int> calls{0};

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    ++calls;
    StoreWrapper::do_begin(std::move(a), std::move(cb));
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    ++calls;
    StoreWrapper::do_release(std::move(a), std::move(cb));
  }
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    ++calls;
    StoreWrapper::do_abandon(std::move(a), std::move(cb));
  }
  void do_lock(LockArgs a, Callback<LockOutcome> cb) override {
    ++calls;
    StoreWrapper::do_lock(std::move(a), std::move(cb));
  }
};

TEST(StoreValidation, InvalidArgumentsNeverReachTheBackend) {
  auto inner = memory_backend().open(std::make_shared<ManualClock>());
  CountingStore store(*inner);
  EXPECT_EQ(store.begin({"s", "", "", 1s, 1s}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store.begin({"s", "k", "", 0s, 1s}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store.release({"s", "k", 1, TokenRestore{"", 1s}}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store.abandon({"s", "k", ""}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store.lock({"n", "o", 0s}).status().code(), StatusCode::invalid_argument);
  // The asynchronous form answers at once, on the caller's thread.
  std::optional<Status> answer;
  store.begin(BeginArgs{"s", "", "", 1s, 1s}, [&](Result<BeginOutcome> r) { answer = r.status(); });
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->code(), StatusCode::invalid_argument);
  EXPECT_EQ(answer->message(), "key must not be empty");
  EXPECT_EQ(store.calls.load(), 0);
  // Valid calls go through.
  EXPECT_EQ(store.begin({"s", "k", "", 1s, 1s}).value().kind, BeginOutcome::Kind::acquired);
  EXPECT_EQ(store.calls.load(), 1);
}

// A wrapper that has no target yet answers every call unavailable (the store applied
// nothing: retry), and once given one forwards to it.
class LateStore final : public StoreWrapper {
 public:
  LateStore() : StoreWrapper("not reached yet") {}
  using StoreWrapper::retarget;
};

TEST(StoreWrapperWithoutTarget, AnswersUnavailableUntilItHasOneThenForwards) {
  LateStore store;
  EXPECT_FALSE(store.has_target());
  EXPECT_STREQ(store.traits().name, "unopened");
  EXPECT_FALSE(store.foreign_writes().has_value());
  Result<BeginOutcome> early = store.begin({"s", "k", "", 1s, 1s});
  EXPECT_EQ(early.status().code(), StatusCode::unavailable);
  EXPECT_EQ(early.status().message(), "not reached yet");
  EXPECT_EQ(store.ping().status().code(), StatusCode::unavailable);
  EXPECT_EQ(store.sweep().status().code(), StatusCode::unavailable);

  auto inner = memory_backend().open(std::make_shared<ManualClock>());
  store.retarget(*inner);
  EXPECT_TRUE(store.has_target());
  EXPECT_STREQ(store.traits().name, inner->traits().name);
  EXPECT_EQ(store.begin({"s", "k", "", 1s, 1s}).value().kind, BeginOutcome::Kind::acquired);
  EXPECT_EQ(inner->get(RecordId{"s", "k"}).value()->state, RecordState::pending)
      << "the call reached the target";
}

}  // namespace
}  // namespace idem::testutil
