#include "halite/api/event_bus.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include "halite/client/local_client.h"
#include "halite/common/logging.h"
#include "halite/wire/event.h"

namespace halite::api {

std::string FormatSseEvent(const std::string& tag, const wire::Value& data) {
  wire::Value full = wire::Value::MapOf({{"tag", tag}, {"data", data}});
  // A CR or LF would end the `tag:` line and start a record of the sender's making. Tags
  // that reach the bus carry none (event tags and jids are checked), but this is where SSE
  // framing is made, so it holds here whatever the source.
  std::string line;
  line.reserve(tag.size());
  for (char c : tag) {
    if (c == '\r') {
      line += "\\r";
    } else if (c == '\n') {
      line += "\\n";
    } else {
      line += c;
    }
  }
  return "tag: " + line + "\ndata: " + full.ToJson() + "\n\n";
}

EventBus::EventBus(std::string sock_dir, std::string cachedir, std::size_t max_event_bytes)
    : sock_dir_(std::move(sock_dir)),
      cachedir_(std::move(cachedir)),
      max_event_bytes_(max_event_bytes) {}

EventBus::~EventBus() { Stop(); }

void EventBus::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "api-events");
    Run();
  });
}

void EventBus::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::uint64_t EventBus::Subscribe(Listener listener) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_id_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void EventBus::Unsubscribe(std::uint64_t id) {
  std::lock_guard lock(mu_);
  listeners_.erase(id);
}

bool EventBus::Connected() const {
  std::lock_guard lock(mu_);
  return connected_;
}

bool EventBus::WaitConnected(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return connected_ || stop_; }) && connected_;
}

void EventBus::Run() {
  std::unique_ptr<client::LocalClient> client;
  bool warned = false;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    if (!client) {
      auto c =
          client::LocalClient::Connect({sock_dir_, cachedir_, std::chrono::milliseconds(2000)});
      Status st = c.ok() ? (*c)->SubscribeEvents({""}) : Status(c.error());
      if (!st.ok()) {
        if (!warned)
          spdlog::warn("/events: the master's event bus is unavailable: {}", st.error().message);
        warned = true;
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
        continue;
      }
      warned = false;
      client = std::move(*c);
      spdlog::info("/events: subscribed to the master's event bus");
      std::lock_guard lock(mu_);
      connected_ = true;
      cv_.notify_all();
    }
    auto event = client->NextEvent(std::chrono::milliseconds(200));
    if (!event.ok()) {
      spdlog::warn("/events: event bus: {}", event.error().message);
      client.reset();
      std::lock_guard lock(mu_);
      connected_ = false;
      continue;
    }
    if (!*event || (*event)->first.rfind("halite/probe/", 0) == 0) continue;
    {
      std::lock_guard lock(mu_);
      if (listeners_.empty()) continue;  // formatting costs up to six bytes per byte
    }
    auto& [tag, data] = **event;
    // Salt trims every event on its bus to max_event_size, so its /events carries none
    // larger; halite's bus keeps returns whole (its CLI reads them), and they are trimmed
    // here, as a /events client of Salt would see them.
    if (max_event_bytes_ > 0 &&
        wire::TrimEventData(data, max_event_bytes_) == wire::EventTrim::kTooLarge) {
      static LogLimiter limiter(std::chrono::seconds(10));
      if (auto n = limiter.Pass()) {
        spdlog::warn("/events: {} is over max_event_size ({} bytes) even trimmed; not sent{}", tag,
                     max_event_bytes_, SuppressedSuffix(*n));
      }
      continue;
    }
    auto record = std::make_shared<const std::string>(FormatSseEvent(tag, data));
    std::lock_guard lock(mu_);
    for (auto& [id, listener] : listeners_) listener(record);
  }
}

}  // namespace halite::api
