// amqp.h on librabbitmq (rabbitmq-c 0.11, Debian's headers are <amqp.h> and
// <amqp_tcp_socket.h>). One connection and one channel per object; every wait has a
// deadline (connect, handshake and RPCs 10 s, confirms and deliveries the caller's).
#include "amqp.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <sys/time.h>

#include <charconv>
#include <cstdio>
#include <utility>

namespace shop {
namespace {

using Clock = std::chrono::steady_clock;

constexpr amqp_channel_t kChannel = 1;
constexpr auto kConnectTimeout = std::chrono::seconds(10);
// No heartbeats: librabbitmq only sends them from inside its own calls, so an outbox relay
// that sits idle longer than two intervals would be disconnected by the broker. A broken
// connection still shows as a socket error on the next call.
constexpr int kHeartbeatSeconds = 0;

timeval to_timeval(std::chrono::microseconds d) {
  if (d.count() < 0) d = {};
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1'000'000);
  tv.tv_usec = static_cast<suseconds_t>(d.count() % 1'000'000);
  return tv;
}

amqp_bytes_t bytes_of(std::string_view s) {
  amqp_bytes_t b;
  b.len = s.size();
  b.bytes = const_cast<char*>(s.data());  // librabbitmq only reads the bytes it sends
  return b;
}

std::string string_of(amqp_bytes_t b) {
  return b.len == 0 ? std::string() : std::string(static_cast<const char*>(b.bytes), b.len);
}

// The broker's reason for closing the channel or the connection: "406 PRECONDITION_FAILED - ...".
template <class Close>
std::string close_reason(const void* decoded) {
  const auto* m = static_cast<const Close*>(decoded);
  return std::to_string(m->reply_code) + " " + string_of(m->reply_text);
}

std::string describe(const amqp_rpc_reply_t& r) {
  switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return "ok";
    case AMQP_RESPONSE_NONE:
      return "no reply from the broker";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return amqp_error_string2(r.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        return "the broker closed the connection: " + close_reason<amqp_connection_close_t>(r.reply.decoded);
      }
      if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        return "the broker closed the channel: " + close_reason<amqp_channel_close_t>(r.reply.decoded);
      }
      return "unexpected server method " + std::to_string(r.reply.id);
  }
  return "unknown reply type";
}

// Percent-decodes one URL component; throws on a bad escape.
std::string percent_decode(std::string_view s, std::string_view url) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    unsigned value = 0;
    const char* first = s.data() + i + 1;
    if (i + 2 >= s.size() || std::from_chars(first, first + 2, value, 16).ptr != first + 2) {
      throw AmqpError("bad percent-escape in AMQP URL '" + std::string(url) + "'");
    }
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

// One connection with one open channel. Any failure marks it broken: the destructor then
// just drops the socket (the broker requeues unacked deliveries) instead of a polite close
// that could wait on a connection in an unknown state.
class Connection {
 public:
  explicit Connection(const AmqpUrl& url) : state_(amqp_new_connection()) {
    if (state_ == nullptr) throw AmqpError("amqp: out of memory");
    const std::string where = "amqp://" + url.host + ":" + std::to_string(url.port);
    amqp_socket_t* socket = amqp_tcp_socket_new(state_.get());  // owned by the connection
    if (socket == nullptr) throw AmqpError("amqp: cannot create a socket");
    const timeval deadline = to_timeval(kConnectTimeout);
    amqp_set_handshake_timeout(state_.get(), &deadline);
    amqp_set_rpc_timeout(state_.get(), &deadline);
    if (int st = amqp_socket_open_noblock(socket, url.host.c_str(), url.port, &deadline);
        st != AMQP_STATUS_OK) {
      throw AmqpError("cannot connect to " + where + ": " + amqp_error_string2(st));
    }
    amqp_rpc_reply_t r =
        amqp_login(state_.get(), url.vhost.c_str(), 0, AMQP_DEFAULT_FRAME_SIZE, kHeartbeatSeconds,
                   AMQP_SASL_METHOD_PLAIN, url.user.c_str(), url.password.c_str());
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
      throw AmqpError("cannot log in to " + where + " (vhost '" + url.vhost + "', user '" + url.user +
                      "'): " + describe(r));
    }
    amqp_channel_open(state_.get(), kChannel);
    check_rpc("channel.open");
  }

  ~Connection() {
    if (broken_) return;
    amqp_channel_close(state_.get(), kChannel, AMQP_REPLY_SUCCESS);
    amqp_connection_close(state_.get(), AMQP_REPLY_SUCCESS);
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  amqp_connection_state_t get() const { return state_.get(); }

  // Every call on a broken connection fails at once rather than on a confused protocol.
  void ensure_usable() const {
    if (broken_) throw AmqpError("amqp: the connection failed earlier; open a new one");
  }

  [[noreturn]] void fail(const std::string& message) {
    broken_ = true;
    throw AmqpError("amqp: " + message);
  }

  // After a synchronous call (queue.declare, basic.qos, ...): throws unless it succeeded.
  void check_rpc(const std::string& what) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(state_.get());
    if (r.reply_type != AMQP_RESPONSE_NORMAL) fail(what + ": " + describe(r));
  }

  void check_status(int status, const std::string& what) {
    if (status != AMQP_STATUS_OK) fail(what + ": " + amqp_error_string2(status));
  }

  // A durable queue that outlives connections (so does what is in it).
  void declare_queue(const std::string& queue) {
    amqp_queue_declare(state_.get(), kChannel, bytes_of(queue), /*passive=*/0, /*durable=*/1, /*exclusive=*/0,
                       /*auto_delete=*/0, amqp_empty_table);
    check_rpc("queue.declare '" + queue + "'");
  }

  // Methods the broker may send at any time: a channel or connection close ends the object.
  void fail_on_close(const amqp_frame_t& frame) {
    const amqp_method_t& m = frame.payload.method;
    if (m.id == AMQP_CHANNEL_CLOSE_METHOD) {
      fail("the broker closed the channel: " + close_reason<amqp_channel_close_t>(m.decoded));
    }
    if (m.id == AMQP_CONNECTION_CLOSE_METHOD) {
      fail("the broker closed the connection: " + close_reason<amqp_connection_close_t>(m.decoded));
    }
  }

 private:
  struct Destroy {
    void operator()(amqp_connection_state_t s) const { amqp_destroy_connection(s); }
  };
  std::unique_ptr<std::remove_pointer_t<amqp_connection_state_t>, Destroy> state_;
  bool broken_ = false;
};

}  // namespace

AmqpUrl AmqpUrl::parse(std::string_view url) {
  const auto bad = [&](const std::string& why) {
    return AmqpError("bad AMQP URL '" + std::string(url) + "': " + why);
  };
  constexpr std::string_view kScheme = "amqp://";
  if (url.substr(0, kScheme.size()) != kScheme) throw bad("expected amqp://USER:PASSWORD@HOST:PORT/VHOST");
  std::string_view rest = url.substr(kScheme.size());
  rest =
      rest.substr(0, rest.find_first_of("?#"));  // query options (heartbeat=...) are not supported: ignored

  AmqpUrl out;
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  // "amqp://h" and "amqp://h/" both mean the default vhost "/" (an empty vhost name is
  // never what anyone means); "amqp://h/%2f" spells it out.
  if (slash != std::string_view::npos && slash + 1 < rest.size()) {
    out.vhost = percent_decode(rest.substr(slash + 1), url);
  }

  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    out.user = percent_decode(userinfo.substr(0, colon), url);
    out.password = colon == std::string_view::npos ? "" : percent_decode(userinfo.substr(colon + 1), url);
  }

  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw bad("unclosed '[' in the host");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad("junk after the host");
      port = after.substr(1);
      if (port.empty()) throw bad("empty port");
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) throw bad("empty port");
    }
    out.host = std::string(authority.substr(0, colon));
  }
  if (out.host.empty()) throw bad("no host");
  if (!port.empty()) {
    int value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
      throw bad("port must be 1-65535");
    }
    out.port = value;
  }
  return out;
}

// ---- Publisher --------------------------------------------------------------------------

struct Publisher::Impl {
  Impl(const AmqpUrl& url, std::string q) : conn(url), queue(std::move(q)) {}
  Connection conn;
  std::string queue;
  std::uint64_t published = 0;  // the channel's publish sequence number: the tag of the next confirm
};

Publisher::Publisher(const AmqpUrl& url, std::string queue)
    : impl_(std::make_unique<Impl>(url, std::move(queue))) {
  Connection& c = impl_->conn;
  c.declare_queue(impl_->queue);
  amqp_confirm_select(c.get(), kChannel);
  c.check_rpc("confirm.select");
}

Publisher::~Publisher() = default;

void Publisher::publish(std::string_view message_id, std::string_view body,
                        std::chrono::milliseconds timeout) {
  Connection& c = impl_->conn;
  c.ensure_usable();
  const std::string id(message_id);
  const Clock::time_point deadline = Clock::now() + timeout;

  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
  props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  props.message_id = bytes_of(message_id);
  // Mandatory: a message no queue takes (the queue was deleted) comes back as basic.return
  // instead of being confirmed and silently dropped.
  c.check_status(
      amqp_basic_publish(c.get(), kChannel, amqp_empty_bytes, bytes_of(impl_->queue), /*mandatory=*/1,
                         /*immediate=*/0, &props, bytes_of(body)),
      "basic.publish '" + id + "'");
  const std::uint64_t tag = ++impl_->published;

  // Confirms arrive in order, possibly several at once ("multiple"): wait for ours.
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      c.fail("no confirm for '" + id + "' within " + std::to_string(timeout.count()) + " ms");
    const timeval tv = to_timeval(left);
    amqp_frame_t frame;
    const int st = amqp_simple_wait_frame_noblock(c.get(), &frame, &tv);
    if (st == AMQP_STATUS_TIMEOUT) continue;
    c.check_status(st, "waiting for the confirm of '" + id + "'");
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    c.fail_on_close(frame);
    const amqp_method_t& m = frame.payload.method;
    if (m.id == AMQP_BASIC_ACK_METHOD) {
      const auto* ack = static_cast<const amqp_basic_ack_t*>(m.decoded);
      if (ack->delivery_tag == tag || (ack->multiple && ack->delivery_tag > tag)) return;
    } else if (m.id == AMQP_BASIC_NACK_METHOD) {
      const auto* nack = static_cast<const amqp_basic_nack_t*>(m.decoded);
      if (nack->delivery_tag == tag || (nack->multiple && nack->delivery_tag > tag)) {
        c.fail("the broker refused '" + id + "' (basic.nack)");
      }
    } else if (m.id == AMQP_BASIC_RETURN_METHOD) {
      const std::string reason = close_reason<amqp_basic_return_t>(m.decoded);
      amqp_message_t returned;  // the returned message's header and body follow: read them off
      amqp_rpc_reply_t r = amqp_read_message(c.get(), frame.channel, &returned, 0);
      if (r.reply_type == AMQP_RESPONSE_NORMAL) amqp_destroy_message(&returned);
      c.fail("the broker returned '" + id + "' unrouted (" + reason + "): is queue '" + impl_->queue +
             "' gone?");
    }
  }
}

// ---- Consumer ---------------------------------------------------------------------------

struct Consumer::Impl {
  Impl(const AmqpUrl& url, std::string q) : conn(url), queue(std::move(q)) {}
  Connection conn;
  std::string queue;
};

Consumer::Consumer(const AmqpUrl& url, std::string queue, std::uint16_t prefetch)
    : impl_(std::make_unique<Impl>(url, std::move(queue))) {
  Connection& c = impl_->conn;
  c.declare_queue(impl_->queue);
  amqp_basic_qos(c.get(), kChannel, 0, prefetch, /*global=*/0);
  c.check_rpc("basic.qos");
  amqp_basic_consume(c.get(), kChannel, bytes_of(impl_->queue), amqp_empty_bytes, /*no_local=*/0,
                     /*no_ack=*/0,
                     /*exclusive=*/0, amqp_empty_table);
  c.check_rpc("basic.consume '" + impl_->queue + "'");
}

Consumer::~Consumer() = default;

std::optional<Delivery> Consumer::next(std::chrono::milliseconds timeout) {
  Connection& c = impl_->conn;
  c.ensure_usable();
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    amqp_maybe_release_buffers(c.get());
    const timeval tv =
        to_timeval(std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()));
    amqp_envelope_t envelope;
    amqp_rpc_reply_t r = amqp_consume_message(c.get(), &envelope, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
      Delivery d;
      d.delivery_tag = envelope.delivery_tag;
      d.redelivered = envelope.redelivered != 0;
      if (envelope.message.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
        d.message_id = string_of(envelope.message.properties.message_id);
      }
      d.body = string_of(envelope.message.body);
      amqp_destroy_envelope(&envelope);
      return d;
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) {
      return std::nullopt;
    }
    if (r.reply_type != AMQP_RESPONSE_LIBRARY_EXCEPTION || r.library_error != AMQP_STATUS_UNEXPECTED_STATE) {
      c.fail("waiting for a delivery on '" + impl_->queue + "': " + describe(r));
    }
    // Something other than a delivery arrived (the library kept it for us): a close or a
    // cancel ends this consumer; anything else (a stray ack, ...) is read off and ignored.
    amqp_frame_t frame;
    c.check_status(amqp_simple_wait_frame(c.get(), &frame), "reading a frame");
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    c.fail_on_close(frame);
    if (frame.payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
      c.fail("the broker cancelled the consumer of '" + impl_->queue + "' (was the queue deleted?)");
    }
    if (Clock::now() >= deadline) return std::nullopt;
  }
}

void Consumer::ack(std::uint64_t delivery_tag) {
  Connection& c = impl_->conn;
  c.ensure_usable();
  c.check_status(amqp_basic_ack(c.get(), kChannel, delivery_tag, /*multiple=*/0), "basic.ack");
}

void Consumer::nack(std::uint64_t delivery_tag, bool requeue) {
  Connection& c = impl_->conn;
  c.ensure_usable();
  c.check_status(amqp_basic_nack(c.get(), kChannel, delivery_tag, /*multiple=*/0, requeue ? 1 : 0),
                 "basic.nack");
}

}  // namespace shop
