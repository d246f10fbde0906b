// cluster.leave on the master being asked to leave (master_daemon_impl.h): drain, then
// deregister. The request arrives through etcd (Membership::SetLeaveHandler), not the local
// runner IPC, so the runner can run on any master, or any host that reaches etcd.
#include <pthread.h>
#include <spdlog/spdlog.h>

#include "master_daemon_impl.h"

namespace halite::daemon {

namespace {

// How often the drain looks at the publisher's connection count.
constexpr auto kDrainPoll = std::chrono::milliseconds(200);

}  // namespace

void MasterDaemon::Impl::OnLeaveRequested(const cluster::LeaveRequest& request) {
  std::lock_guard lock(leave_mu);
  if (leave_stop || leaving.exchange(true)) return;
  spdlog::warn(
      "leaving the cluster: /health answers 503 so HAProxy moves this master's {} minions "
      "away; new sign-ins go unanswered; deregistering once they are gone or in {} s",
      publisher->connected_subscribers(), request.drain_timeout.count());
  leave_thread = std::thread([this, timeout = request.drain_timeout] { DrainAndLeave(timeout); });
}

void MasterDaemon::Impl::DrainAndLeave(std::chrono::seconds timeout) {
  pthread_setname_np(pthread_self(), "cluster-leave");
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  std::size_t connected = 0;
  {
    std::unique_lock lock(leave_mu);
    for (;;) {
      connected = publisher->connected_subscribers();
      if (connected == 0 || std::chrono::steady_clock::now() >= deadline) break;
      if (leave_cv.wait_for(lock, kDrainPoll, [this] { return leave_stop; })) return;
    }
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  if (connected == 0) {
    spdlog::warn("drained in {} ms: no minion is connected; deregistering", took.count());
  } else {
    spdlog::warn("drain timed out after {} s with {} minions still connected; deregistering",
                 timeout.count(), connected);
  }
  if (auto st = membership->Leave(); !st.ok()) {
    spdlog::error("leaving the cluster: {}", st.error().message);
  }
  left = true;
}

void MasterDaemon::Impl::StopLeaving() {
  std::thread drain;
  {
    std::lock_guard lock(leave_mu);
    leave_stop = true;
    drain = std::move(leave_thread);
  }
  leave_cv.notify_all();
  if (drain.joinable()) drain.join();
}

}  // namespace halite::daemon
