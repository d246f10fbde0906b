#include "halite/transport/zmq_loop.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>

namespace halite::transport {

namespace {
constexpr int kMaxEvents = 256;
// How many handler calls one socket gets per wake-up before others get a turn.
constexpr int kFairnessCap = 64;
}  // namespace

ZmqLoop::ZmqLoop(std::string name) : name_(std::move(name)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  HALITE_CHECK(epoll_fd_ >= 0) << "epoll_create1: " << std::strerror(errno);
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  HALITE_CHECK(event_fd_ >= 0) << "eventfd: " << std::strerror(errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // watch ids start at 1
  HALITE_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &ev) == 0);
}

ZmqLoop::~ZmqLoop() {
  Stop();
  close(event_fd_);
  close(epoll_fd_);
}

void ZmqLoop::Start() {
  HALITE_CHECK(!started_) << "loop " << name_ << " started twice";
  started_ = true;
  std::mutex ready_mu;
  std::condition_variable ready_cv;
  bool ready = false;
  thread_ = std::thread([this, &ready_mu, &ready_cv, &ready] {
    pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
    {
      // Notify under the lock: once Start() sees `ready` it returns and the mutex and the
      // condition variable on its stack are gone (ThreadSanitizer caught the late notify).
      std::lock_guard lock(ready_mu);
      thread_id_ = std::this_thread::get_id();
      ready = true;
      ready_cv.notify_one();
    }
    Run();
  });
  std::unique_lock lock(ready_mu);
  ready_cv.wait(lock, [&] { return ready; });
}

void ZmqLoop::Stop() {
  if (!started_ || stopped_) return;
  HALITE_CHECK(!IsCurrentThread()) << "ZmqLoop::Stop from its own thread";
  {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
  }
  std::uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof one);
  thread_.join();
  stopped_ = true;
}

void ZmqLoop::Post(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    posted_.push_back(std::move(fn));
  }
  std::uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof one);
}

ZmqLoop::WatchId ZmqLoop::Watch(zmq::socket_t& socket, std::function<void()> on_readable) {
  HALITE_DCHECK(!started_ || IsCurrentThread());
  int fd = socket.get(zmq::sockopt::fd);
  WatchId id = next_watch_id_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = id;
  HALITE_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0)
      << "epoll_ctl: " << std::strerror(errno);
  watched_.emplace(id, Watched{&socket, fd, std::move(on_readable)});
  // Input may already be queued: its signal could have been consumed before we watched.
  dirty_.insert(id);
  return id;
}

void ZmqLoop::Unwatch(WatchId id) {
  HALITE_DCHECK(!started_ || IsCurrentThread());
  auto it = watched_.find(id);
  if (it == watched_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  watched_.erase(it);
  dirty_.erase(id);
}

void ZmqLoop::MarkDirty(WatchId id) {
  HALITE_DCHECK(IsCurrentThread());
  dirty_.insert(id);
}

ZmqLoop::TimerId ZmqLoop::RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
  HALITE_DCHECK(!started_ || IsCurrentThread());
  TimerId id = next_timer_id_++;
  timers_.emplace(id, Timer{std::move(fn), std::chrono::milliseconds(0)});
  timer_queue_.emplace(Clock::now() + delay, id);
  return id;
}

ZmqLoop::TimerId ZmqLoop::RunEvery(std::chrono::milliseconds period, std::function<void()> fn) {
  HALITE_DCHECK(!started_ || IsCurrentThread());
  HALITE_CHECK(period.count() > 0);
  TimerId id = next_timer_id_++;
  timers_.emplace(id, Timer{std::move(fn), period});
  timer_queue_.emplace(Clock::now() + period, id);
  return id;
}

void ZmqLoop::CancelTimer(TimerId id) {
  HALITE_DCHECK(!started_ || IsCurrentThread());
  timers_.erase(id);  // its queue entry is skipped when it comes due
}

void ZmqLoop::AddShutdownHook(std::function<void()> fn) {
  HALITE_DCHECK(!started_ || IsCurrentThread());
  shutdown_hooks_.push_back(std::move(fn));
}

int ZmqLoop::NextTimeoutMs() const {
  if (!dirty_.empty()) return 0;
  if (timer_queue_.empty()) return -1;
  auto delta = timer_queue_.begin()->first - Clock::now();
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(delta).count();
  if (ms < 0) return 0;
  return ms > 60000 ? 60000 : static_cast<int>(ms);
}

void ZmqLoop::RunDueTimers() {
  auto now = Clock::now();
  while (!timer_queue_.empty() && timer_queue_.begin()->first <= now) {
    TimerId id = timer_queue_.begin()->second;
    timer_queue_.erase(timer_queue_.begin());
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;  // cancelled
    if (it->second.period.count() > 0) {
      timer_queue_.emplace(now + it->second.period, id);
      auto fn = it->second.fn;  // copy: fn may cancel its own timer
      fn();
    } else {
      auto fn = std::move(it->second.fn);
      timers_.erase(it);
      fn();
    }
  }
}

void ZmqLoop::RunPosted() {
  std::uint64_t counter;
  (void)!read(event_fd_, &counter, sizeof counter);
  std::deque<std::function<void()>> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) fn();
}

void ZmqLoop::CheckSocket(WatchId id) {
  for (int i = 0; i < kFairnessCap; ++i) {
    auto it = watched_.find(id);
    if (it == watched_.end()) return;  // unwatched by a handler
    int events = 0;
    try {
      events = it->second.socket->get(zmq::sockopt::events);
    } catch (const zmq::error_t& e) {
      spdlog::error("{}: ZMQ_EVENTS failed: {}", name_, e.what());
      return;
    }
    if (!(events & ZMQ_POLLIN)) return;
    it->second.on_readable();
  }
  dirty_.insert(id);  // more input than the cap: come back after the others
}

void ZmqLoop::Run() {
  epoll_event events[kMaxEvents];
  for (;;) {
    int n = epoll_wait(epoll_fd_, events, kMaxEvents, NextTimeoutMs());
    if (n < 0 && errno != EINTR) {
      spdlog::critical("{}: epoll_wait: {}", name_, std::strerror(errno));
      std::abort();
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == 0) {
        RunPosted();
      } else {
        dirty_.insert(events[i].data.u64);
      }
    }
    // Handlers may mark more sockets dirty (sends); loop until quiet.
    while (!dirty_.empty()) {
      std::vector<WatchId> ids(dirty_.begin(), dirty_.end());
      dirty_.clear();
      for (WatchId id : ids) CheckSocket(id);
      if (!dirty_.empty()) {
        // Let timers and posted work run between rounds under sustained load.
        break;
      }
    }
    RunDueTimers();
    bool stop;
    {
      std::lock_guard lock(mu_);
      stop = stop_requested_;
    }
    if (stop) {
      RunPosted();
      for (auto it = shutdown_hooks_.rbegin(); it != shutdown_hooks_.rend(); ++it) (*it)();
      shutdown_hooks_.clear();
      return;
    }
  }
}

}  // namespace halite::transport
