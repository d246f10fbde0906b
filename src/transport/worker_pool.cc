#include "halite/transport/worker_pool.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace halite::transport {

WorkerPool::WorkerPool(std::string name, std::size_t threads) : name_(std::move(name)) {
  HALITE_CHECK(threads > 0);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { Run(i); });
}

WorkerPool::~WorkerPool() { Shutdown(); }

void WorkerPool::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

std::size_t WorkerPool::queued() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

void WorkerPool::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WorkerPool::Run(std::size_t index) {
  std::string thread_name = (name_ + "-" + std::to_string(index)).substr(0, 15);
  pthread_setname_np(pthread_self(), thread_name.c_str());
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    try {
      task();
    } catch (const std::exception& e) {
      spdlog::critical("{}: task threw: {}", thread_name, e.what());
      std::abort();
    }
  }
}

}  // namespace halite::transport
