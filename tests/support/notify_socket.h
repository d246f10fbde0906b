// The service manager's side of sd_notify(3) for tests: a unix datagram socket at a path
// (give it to a child as NOTIFY_SOCKET) and the messages received on it, in order, each
// split into its KEY=VALUE lines. Polled by Next(); no thread of its own.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace halite::testing {

class NotifySocket {
 public:
  using Message = std::map<std::string, std::string>;  // READY -> "1", STATUS -> "..."

  // Binds `path` (removed first); throws std::runtime_error when it cannot.
  explicit NotifySocket(std::filesystem::path path);
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // "NOTIFY_SOCKET=<path>", for a child's environment.
  std::string EnvEntry() const { return "NOTIFY_SOCKET=" + path_.string(); }
  // The next message received within `timeout`, or nullopt.
  std::optional<Message> Next(std::chrono::milliseconds timeout);
  // Skips messages until one has key `key` (with `value`, when given); nullopt on timeout.
  // Every message seen goes to `seen` when given.
  std::optional<Message> WaitFor(const std::string& key, std::optional<std::string> value,
                                 std::chrono::milliseconds timeout,
                                 std::vector<Message>* seen = nullptr);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace halite::testing
