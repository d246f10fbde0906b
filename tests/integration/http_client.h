// A small blocking HTTP/1.1 client over loopback TCP for the halite-api tests: one request per
// connection (Content-Length bodies), and an SSE reader for /events (chunked). Every read has
// a deadline.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace halite::testing {

class Process;  // harness.h

struct HttpResponse {
  int status = 0;  // 0: no answer (connection refused, timed out, closed early)
  std::map<std::string, std::string> headers;  // lowercase names
  std::string body;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

HttpResponse HttpCall(const std::string& ip, int port, const std::string& method,
                      const std::string& target, const Headers& headers = {},
                      const std::string& body = "",
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

struct SseEvent {
  std::string tag;
  std::string data;  // the JSON after "data: "
};

class SseClient {
 public:
  // Connects and sends GET `target`; Status() then reads the response head.
  SseClient(const std::string& ip, int port, const std::string& target,
            const Headers& headers = {});
  ~SseClient();
  SseClient(const SseClient&) = delete;
  SseClient& operator=(const SseClient&) = delete;
  // The status line's code (0 when none came within `timeout`).
  int Status(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The next "retry:" line or event; nullopt on timeout or a closed stream.
  std::optional<SseEvent> Next(std::chrono::milliseconds timeout);
  // Whether the server closed the connection within `timeout` (data read meanwhile is dropped).
  bool ClosedWithin(std::chrono::milliseconds timeout);
  int fd() const { return fd_; }

 private:
  bool Fill(std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  std::string raw_;      // undecoded bytes
  std::string decoded_;  // de-chunked body
  bool head_done_ = false;
  bool closed_ = false;
  int status_ = 0;
};

// Starts halite-api on the master config `config` (its output in `log`) and waits until
// `answers()` is true; throws std::runtime_error with its log when it exits or never answers.
std::unique_ptr<Process> StartHaliteApi(const std::filesystem::path& config,
                                        const std::filesystem::path& log,
                                        const std::function<bool()>& answers);

}  // namespace halite::testing
