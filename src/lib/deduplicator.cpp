// Deduplicator: a Guard with the consumer's vocabulary.
#include "idem/deduplicator.h"

namespace idem {

namespace {

GuardOptions guard_options(const DeduplicatorOptions& o) {
  // No waiting: a consumer that finds the message in progress hands it back to the broker
  // rather than holding a delivery slot.
  return GuardOptions{o.lease, o.retention, Duration{0}, o.renew, o.on_uncertain};
}

}  // namespace

const char* to_string(Delivery::Kind k) noexcept {
  switch (k) {
    case Delivery::Kind::processed:
      return "processed";
    case Delivery::Kind::duplicate:
      return "duplicate";
    case Delivery::Kind::in_progress:
      return "in_progress";
    case Delivery::Kind::uncertain:
      return "uncertain";
  }
  return "?";
}

Deduplicator::Deduplicator(Store& store, std::string scope, DeduplicatorOptions options)
    : scope_(std::move(scope)), guard_(store, guard_options(options)) {}

Result<Delivery> Deduplicator::to_delivery(GuardResult r) {
  using O = GuardResult::Outcome;
  Delivery d;
  switch (r.outcome()) {
    case O::executed:
      d.kind = Delivery::Kind::processed;
      d.fence = r.fence();
      d.recovered = r.recovered();
      d.stored = r.stored();
      d.result = std::move(r).value();
      return d;
    case O::replayed:
      d.kind = Delivery::Kind::duplicate;
      d.fence = r.fence();
      d.result = std::move(r).value();
      return d;
    case O::in_progress:
      d.kind = Delivery::Kind::in_progress;
      d.retry_after = r.retry_after();
      return d;
    case O::outcome_unknown:
      d.kind = Delivery::Kind::uncertain;
      return d;
    case O::key_reused:  // cannot happen without fingerprints; report it rather than guess
    case O::failed:
      return r.status();
  }
  return internal_error("deduplicator: unknown guard outcome");
}

boost::asio::awaitable<Result<Delivery>> Deduplicator::to_delivery(boost::asio::awaitable<GuardResult> r) {
  GuardResult answer = co_await std::move(r);
  co_return to_delivery(std::move(answer));
}

}  // namespace idem
