// Telling systemd how the service is doing (docs/admin.md, "Running under systemd"): the
// unit is Type=notify, so systemd counts idem as started when it says READY=1, not when
// the process exists, and kills it when its watchdog pings stop.
//
// Every call is a no-op when NOTIFY_SOCKET is not set (idem started by hand, by a test, by
// another supervisor), and a failed send is ignored: the service never stops for its
// supervisor's socket. Call them from any thread.
#pragma once

#include <string_view>

namespace idem::gateway {
class IoPool;
}

namespace idem::cli {

// READY=1 with MAINPID and STATUS=`status`: the listeners are bound and the store is
// open, so a client connecting now is served. Also the end of a reload (after
// notify_reloading), with the status of the new configuration.
void notify_ready(std::string_view status);

// RELOADING=1 (with MONOTONIC_USEC, as Type=notify-reload expects): a SIGHUP reload
// begins; notify_ready says when it ends, whether the new config was taken or refused.
void notify_reloading();

// STOPPING=1: the drain has begun; systemd waits for the exit (TimeoutStopSec).
void notify_stopping();

// When systemd asks for a watchdog (WATCHDOG_USEC, and WATCHDOG_PID is this process or
// unset), pings WATCHDOG=1 every half of that interval from a timer on pool.main(), each
// time only if a round through every other io context of the pool, sent with the ping
// before, came back: an event loop that hangs (a blocking call, a livelock) stops the
// pings, and systemd restarts the service.
// Returns the interval in microseconds, 0 when no watchdog is asked for (nothing started).
// The pings stop with the pool.
long long start_watchdog(gateway::IoPool& pool);

}  // namespace idem::cli
