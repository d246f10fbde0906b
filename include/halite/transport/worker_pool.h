// A fixed set of named threads that run posted tasks (CPU work such as RSA, and blocking
// storage calls). Owns no sockets. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "halite/common/check.h"

namespace halite::transport {

class WorkerPool {
 public:
  WorkerPool(std::string name, std::size_t threads);
  ~WorkerPool();  // Shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Thread-safe. Tasks posted after Shutdown() began are dropped.
  void Post(std::function<void()> task);
  // Runs every task already queued, then joins the threads. Idempotent.
  void Shutdown();
  std::size_t queued() const;
  std::size_t size() const { return threads_.size(); }

 private:
  void Run(std::size_t index);

  const std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_ HALITE_GUARDED_BY(mu_);
  bool stopping_ HALITE_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace halite::transport
