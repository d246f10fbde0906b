// The master's event bus for /events: one thread ("api-events") owns a LocalClient subscribed
// to every tag on <sock_dir>/halite_event_pub.ipc and hands each event, already formatted as
// rest_cherrypy's SSE record ("tag: <tag>\ndata: {"tag": ..., "data": ...}\n\n"), to every
// listener. Reconnects (with a fresh liveness probe) when the master goes away.
// Listeners run on the bus thread and must not block: they count and post.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "halite/common/check.h"
#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::api {

// One SSE record as rest_cherrypy writes it.
std::string FormatSseEvent(const std::string& tag, const wire::Value& data);

class EventBus {
 public:
  using Record = std::shared_ptr<const std::string>;
  using Listener = std::function<void(const Record&)>;

  // `max_event_bytes` (the master's max_event_size; 0: none): larger events have their
  // large values trimmed as Salt's bus trims them (wire::TrimEventData).
  EventBus(std::string sock_dir, std::string cachedir, std::size_t max_event_bytes);
  ~EventBus();  // Stop()
  void Start();
  void Stop();
  // Thread-safe. The listener sees every event fired after Subscribe returns while the bus is
  // connected (Connected()).
  std::uint64_t Subscribe(Listener listener);
  void Unsubscribe(std::uint64_t id);
  bool Connected() const;
  // Until the bus is connected or `timeout` passes; whether it is.
  bool WaitConnected(std::chrono::milliseconds timeout);

 private:
  void Run();

  const std::string sock_dir_;
  const std::string cachedir_;
  const std::size_t max_event_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ HALITE_GUARDED_BY(mu_) = false;
  bool connected_ HALITE_GUARDED_BY(mu_) = false;
  std::uint64_t next_id_ HALITE_GUARDED_BY(mu_) = 1;
  std::map<std::uint64_t, Listener> listeners_ HALITE_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace halite::api
