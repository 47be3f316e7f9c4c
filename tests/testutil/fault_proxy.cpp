#include "testutil/fault_proxy.h"

#include <fcntl.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace idem::testutil {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kBuffer = 64 * 1024;

// The proxy's sockets are not inherited by the processes a test starts after it (a
// gateway, a server): a child holding the listening socket would keep the port listening
// after refuse(), its connections queued and never answered, and accepting again would
// find the port taken.
void close_on_exec(int fd) { ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC); }

// One client connection and its connection to the server.
struct Session {
  explicit Session(tcp::socket c)
      : client(std::move(c)), server(client.get_executor()), timer(client.get_executor()) {}
  void close() {
    boost::system::error_code ignored;
    client.close(ignored);
    server.close(ignored);
    timer.cancel();
  }
  tcp::socket client;
  tcp::socket server;
  asio::steady_timer timer;  // delays a reply
};
using SessionPtr = std::shared_ptr<Session>;

}  // namespace

struct FaultProxy::Impl {
  Impl(const std::string& host, std::uint16_t port) : work(asio::make_work_guard(io)), acceptor(io) {
    tcp::resolver resolver(io);
    auto results = resolver.resolve(host, std::to_string(port));
    if (results.empty()) throw std::runtime_error("fault proxy: cannot resolve " + host);
    target = results.begin()->endpoint();
    open_acceptor(0);
  }

  void open_acceptor(std::uint16_t port) {
    const tcp::endpoint at(asio::ip::make_address("127.0.0.1"), port);
    acceptor.open(at.protocol());
    close_on_exec(acceptor.native_handle());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(at);
    acceptor.listen();
    listen_port = acceptor.local_endpoint().port();
    asio::co_spawn(io, accept_loop(), asio::detached);
  }

  // Runs `fn` on the proxy's thread and waits for it.
  void on_io(std::function<void()> fn) {
    std::promise<void> done;
    asio::post(io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

  void count(const std::function<void(Counters&)>& change) {
    {
      std::lock_guard lock(mu);
      change(totals);
    }
    cv.notify_all();
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kUseTuple);
      if (ec) {
        if (!acceptor.is_open()) co_return;
        continue;
      }
      count([](Counters& c) { ++c.connections; });
      close_on_exec(socket.native_handle());
      auto s = std::make_shared<Session>(std::move(socket));
      sessions.insert(s);
      asio::co_spawn(io, run(s), asio::detached);
    }
  }

  asio::awaitable<void> run(SessionPtr s) {
    auto [ec] = co_await s->server.async_connect(target, kUseTuple);
    if (ec) {
      end(s);
      co_return;
    }
    boost::system::error_code ignored;
    close_on_exec(s->server.native_handle());
    s->server.set_option(tcp::no_delay(true), ignored);
    s->client.set_option(tcp::no_delay(true), ignored);
    asio::co_spawn(io, to_server(s), asio::detached);
    co_await to_client(s);
  }

  asio::awaitable<void> to_server(SessionPtr s) {
    std::vector<char> buffer(kBuffer);
    for (;;) {
      auto [rec, n] = co_await s->client.async_read_some(asio::buffer(buffer), kUseTuple);
      if (rec) break;
      auto [wec, written] = co_await asio::async_write(s->server, asio::buffer(buffer.data(), n), kUseTuple);
      if (wec) break;
      count([bytes = n](Counters& c) {
        c.bytes_to_server += bytes;
        ++c.writes_to_server;
      });
    }
    end(s);
  }

  asio::awaitable<void> to_client(SessionPtr s) {
    std::vector<char> buffer(kBuffer);
    for (;;) {
      auto [rec, n] = co_await s->server.async_read_some(asio::buffer(buffer), kUseTuple);
      if (rec) break;
      count([bytes = n](Counters& c) { c.bytes_from_server += bytes; });
      const Mode now = mode.load();
      if (now == Mode::drop_replies || now == Mode::drop_and_cut) {
        count([](Counters& c) { ++c.replies_dropped; });
        if (now == Mode::drop_and_cut) break;
        continue;
      }
      if (now == Mode::delay_replies) {
        s->timer.expires_after(std::chrono::milliseconds(delay_ms.load()));
        co_await s->timer.async_wait(kUseTuple);
        if (!s->client.is_open()) break;
      }
      auto [wec, written] = co_await asio::async_write(s->client, asio::buffer(buffer.data(), n), kUseTuple);
      if (wec) break;
      count([bytes = n](Counters& c) { c.bytes_to_client += bytes; });
    }
    end(s);
  }

  void end(const SessionPtr& s) {
    s->close();
    sessions.erase(s);
  }

  void cut_all() {
    auto all = std::move(sessions);
    sessions.clear();
    for (const auto& s : all) s->close();
  }

  void close_acceptor() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
  }

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  tcp::acceptor acceptor;
  tcp::endpoint target;
  std::uint16_t listen_port = 0;
  std::set<SessionPtr> sessions;  // the io thread's
  std::atomic<Mode> mode{Mode::forward};
  std::atomic<std::int64_t> delay_ms{0};

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  Counters totals;  // guarded by mu

  std::thread thread;
};

FaultProxy::FaultProxy(std::string target_host, std::uint16_t target_port)
    : impl_(std::make_unique<Impl>(target_host, target_port)) {
  port_ = impl_->listen_port;
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

FaultProxy::~FaultProxy() {
  impl_->on_io([this] {
    impl_->close_acceptor();
    impl_->cut_all();
    impl_->work.reset();
  });
  impl_->thread.join();
}

void FaultProxy::forward() {
  impl_->mode = Mode::forward;
  accept_again();
}

void FaultProxy::drop_replies() { impl_->mode = Mode::drop_replies; }
void FaultProxy::drop_and_cut() { impl_->mode = Mode::drop_and_cut; }

void FaultProxy::delay_replies(std::chrono::milliseconds delay) {
  impl_->delay_ms = delay.count();
  impl_->mode = Mode::delay_replies;
}

void FaultProxy::cut_all() {
  impl_->on_io([this] { impl_->cut_all(); });
}

void FaultProxy::refuse() {
  impl_->on_io([this] { impl_->close_acceptor(); });
}

void FaultProxy::accept_again() {
  impl_->on_io([this] {
    if (!impl_->acceptor.is_open()) impl_->open_acceptor(port_);
  });
}

FaultProxy::Counters FaultProxy::counters() const {
  std::lock_guard lock(impl_->mu);
  return impl_->totals;
}

bool FaultProxy::wait_for(const std::function<bool(const Counters&)>& done,
                          std::chrono::milliseconds limit) const {
  std::unique_lock lock(impl_->mu);
  return impl_->cv.wait_for(lock, limit, [&] { return done(impl_->totals); });
}

bool FaultProxy::wait_to_server_beyond(std::uint64_t before, std::chrono::milliseconds limit) const {
  return wait_for([before](const Counters& c) { return c.bytes_to_server > before; }, limit);
}

}  // namespace idem::testutil
