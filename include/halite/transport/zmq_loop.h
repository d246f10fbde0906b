// EventLoop for ZeroMQ sockets: one named thread, epoll over ZMQ_FD of each watched socket,
// an eventfd for posted work, and timers.
//
// Contract:
// - Everything except Post(), Stop() and IsCurrentThread() runs on the loop thread only
//   (HALITE_DCHECK'ed). Sockets are created, used and closed on the loop thread: create them
//   in a posted task, close them in a shutdown hook.
// - ZMQ_FD is edge-like: the loop calls a socket's handler while ZMQ_EVENTS shows POLLIN. A
//   handler reads at most what it wants; the loop keeps calling while input remains (with a
//   fairness cap per wake-up). After sending on a watched socket from the loop, call
//   MarkDirty(id) so the socket is re-checked at the end of this iteration: a send can eat
//   the wake-up for input that is already queued.
// - Scales to tens of thousands of watched sockets (epoll; only sockets that woke are
//   checked), which halite-swarm needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include <zmq.hpp>

#include "halite/common/check.h"

namespace halite::transport {

class ZmqLoop {
 public:
  using WatchId = std::uint64_t;
  using TimerId = std::uint64_t;
  using Clock = std::chrono::steady_clock;

  explicit ZmqLoop(std::string name);
  ~ZmqLoop();  // Stops and joins if still running.
  ZmqLoop(const ZmqLoop&) = delete;
  ZmqLoop& operator=(const ZmqLoop&) = delete;

  // Starts the thread. Call once.
  void Start();
  // Thread-safe. Runs shutdown hooks on the loop thread (in reverse order of registration),
  // then joins. Idempotent. Must not be called from the loop thread.
  void Stop();
  // Thread-safe: runs `fn` on the loop thread, in order.
  void Post(std::function<void()> fn);
  bool IsCurrentThread() const { return std::this_thread::get_id() == thread_id_; }
  const std::string& name() const { return name_; }

  // Loop thread only. `on_readable` is called while the socket has input; it must not block.
  WatchId Watch(zmq::socket_t& socket, std::function<void()> on_readable);
  // Loop thread only. Stops watching; call before closing the socket.
  void Unwatch(WatchId id);
  void MarkDirty(WatchId id);

  // Loop thread only. One-shot timer; returns an id for CancelTimer.
  TimerId RunAfter(std::chrono::milliseconds delay, std::function<void()> fn);
  // Repeating timer.
  TimerId RunEvery(std::chrono::milliseconds period, std::function<void()> fn);
  void CancelTimer(TimerId id);

  // Loop thread only (or before Start). Hooks run on the loop thread when Stop() is called.
  void AddShutdownHook(std::function<void()> fn);

 private:
  struct Watched {
    zmq::socket_t* socket;
    int fd;
    std::function<void()> on_readable;
  };
  struct Timer {
    std::function<void()> fn;
    std::chrono::milliseconds period{0};  // 0 = one-shot
  };

  void Run();
  void RunPosted();
  void CheckSocket(WatchId id);
  void RunDueTimers();
  int NextTimeoutMs() const;

  const std::string name_;
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  std::thread thread_;
  std::thread::id thread_id_;
  bool started_ = false;
  bool stopped_ = false;

  std::mutex mu_;
  std::deque<std::function<void()>> posted_ HALITE_GUARDED_BY(mu_);
  bool stop_requested_ HALITE_GUARDED_BY(mu_) = false;

  // Loop-thread state.
  WatchId next_watch_id_ = 1;
  std::unordered_map<WatchId, Watched> watched_;
  std::unordered_set<WatchId> dirty_;
  TimerId next_timer_id_ = 1;
  std::multimap<Clock::time_point, TimerId> timer_queue_;
  std::unordered_map<TimerId, Timer> timers_;
  std::vector<std::function<void()>> shutdown_hooks_;
};

}  // namespace halite::transport
