// AMQP 0-9-1 for the shop, on Debian's librabbitmq (rabbitmq-c): a publisher with
// publisher confirms for the outbox relay, and a consumer with manual acks for the points
// service. One durable queue, published to through the default exchange; messages are
// persistent and carry a message_id (the consumer de-duplicates by it).
//
// Errors are exceptions (AmqpError) with the broker's or the library's reason. Neither
// class is thread-safe: one thread uses one object. After an AmqpError the object is
// broken; make a new one (reconnect).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shop {

class AmqpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// amqp://USER:PASSWORD@HOST:PORT/VHOST (defaults guest:guest, 5672, vhost "/"; "%2f" = "/").
struct AmqpUrl {
  std::string host = "127.0.0.1";
  int port = 5672;
  std::string user = "guest";
  std::string password = "guest";
  std::string vhost = "/";
  static AmqpUrl parse(std::string_view url);  // throws AmqpError on a malformed URL
};

// Connects, opens a channel, declares `queue` durable, and turns on publisher confirms.
class Publisher {
 public:
  Publisher(const AmqpUrl& url, std::string queue);
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Publishes one persistent message to the queue and waits (up to `timeout`) until the
  // broker confirms it (basic.ack). Throws AmqpError on a nack, a timeout or a broken
  // connection: the message may or may not have been queued (publish again: the
  // consumer de-duplicates by message_id).
  void publish(std::string_view message_id, std::string_view body,
               std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct Delivery {
  std::uint64_t delivery_tag = 0;
  std::string message_id;
  std::string body;
  bool redelivered = false;  // the broker delivered it before and got no ack
};

// Connects, opens a channel, declares `queue` durable, sets basic.qos(prefetch) and
// starts basic.consume with manual acks.
class Consumer {
 public:
  Consumer(const AmqpUrl& url, std::string queue, std::uint16_t prefetch = 16);
  ~Consumer();
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  // The next delivery, or nullopt when none arrived within `timeout`.
  std::optional<Delivery> next(std::chrono::milliseconds timeout);
  void ack(std::uint64_t delivery_tag);
  void nack(std::uint64_t delivery_tag, bool requeue);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shop
