// Deduplicator: effectively-once message handling for consumers of an at-least-once
// broker (docs/design.md). Messages are de-duplicated by message id within a scope fixed at
// construction — typically the consumer group — using the record operations of store.h
// (a Guard with an empty fingerprint and no waiting):
//
//   idem::Deduplicator dedup(store, "billing-consumers");
//   auto d = dedup.handle(msg.id, [&](idem::Fence fence) { return grant_points(msg, fence); });
//   if (!d) return channel.nack(msg, /*requeue=*/true);   // failed: redelivery runs it again
//   switch (d->kind) {
//     case idem::Delivery::Kind::processed:                  // ran now
//     case idem::Delivery::Kind::duplicate: channel.ack(msg); break;  // ran before: do nothing
//     case idem::Delivery::Kind::in_progress: channel.nack(msg, true); break;  // another consumer has it
//     case idem::Delivery::Kind::uncertain: channel.dead_letter(msg); break;
//   }
//
// fn takes (const Attempt&), (Fence) or () and returns Status, void, std::string or
// Result<std::string> (a small result, stored with the record; an empty one otherwise).
//
// Returned: Delivery on every answer of the store; a Status when fn failed (returned an
// error; the claim was released, so a redelivery runs fn again) or when the store could
// not answer (nothing ran). An exception from fn releases the claim and propagates.
//
// A consumer that crashed mid-message leaves a pending claim; once its lease expires the
// broker's redelivery takes it over. By default (on_uncertain = retry) fn runs again, since
// the broker only redelivers messages that were never acknowledged; `hold` reports them as
// `uncertain` instead, until the retention passes (at most once: park them for a person).
//
// GCC 12 and coroutines: see the note at the top of guard.h (name lambdas that capture
// strings by value before `co_await dedup.async_handle(...)`).
//
// Thread safety: safe for concurrent use from any number of threads and coroutines. The
// Store must outlive the Deduplicator.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "idem/guard.h"

namespace idem {

struct DeduplicatorOptions {
  Duration lease = std::chrono::seconds(60);    // > 0: how long one consumer holds a message
  Duration retention = std::chrono::hours(24);  // > 0: at least as long as the broker may redeliver
  bool renew = true;                            // extend the lease every lease/3 while fn runs
  OnUncertain on_uncertain = OnUncertain::retry;
};

struct Delivery {
  enum class Kind {
    processed,    // fn ran now and succeeded: ack
    duplicate,    // fn already ran for this message id: ack and do nothing
    in_progress,  // another consumer is running fn for it now: requeue, retry later
    uncertain,    // a consumer died mid-message and on_uncertain = hold: park it
  };
  Kind kind = Kind::processed;
  Fence fence = 0;         // processed: the fence fn ran under
  bool recovered = false;  // processed: a crashed consumer's claim was taken over
  bool stored = true;      // processed: false when the claim was lost while fn ran
  Duration retry_after{};  // in_progress: until the other consumer's lease ends
  std::string result;      // processed / duplicate: fn's result (usually empty)

  // True when the broker should consider the message handled.
  bool ack() const noexcept { return kind == Kind::processed || kind == Kind::duplicate; }
};

// "processed", "duplicate", "in_progress", "uncertain".
const char* to_string(Delivery::Kind k) noexcept;

class Deduplicator {
 public:
  Deduplicator(Store& store, std::string scope, DeduplicatorOptions options = {});

  // Handles one delivery of message_id, blocking the caller (see the top of this file).
  template <class Fn>
  Result<Delivery> handle(std::string_view message_id, Fn&& fn) {
    return to_delivery(guard_.run(scope_, std::string(message_id), std::string(), std::forward<Fn>(fn)));
  }

  // The same for coroutines: fn returns boost::asio::awaitable of one of the types above.
  template <class Fn>
  boost::asio::awaitable<Result<Delivery>> async_handle(std::string message_id, Fn fn) {
    return to_delivery(guard_.async_run(scope_, std::move(message_id), std::string(), std::move(fn)));
  }

  const std::string& scope() const noexcept { return scope_; }

 private:
  static Result<Delivery> to_delivery(GuardResult r);
  static boost::asio::awaitable<Result<Delivery>> to_delivery(boost::asio::awaitable<GuardResult> r);

  std::string scope_;
  Guard guard_;
};

}  // namespace idem
