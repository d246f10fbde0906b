#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

#include "harness.h"

namespace halite::testing {

namespace {

using Clock = std::chrono::steady_clock;

int ConnectTo(const std::string& ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads what is there within the deadline; false on timeout or EOF (`eof` set).
bool ReadSome(int fd, std::string& into, Clock::time_point deadline, bool* eof) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char buf[65536];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n <= 0) {
    *eof = true;
    return false;
  }
  into.append(buf, static_cast<std::size_t>(n));
  return true;
}

std::string Request(const std::string& ip, int port, const std::string& method,
                    const std::string& target, const Headers& headers, const std::string& body) {
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: " + ip + ":" +
                    std::to_string(port) + "\r\nConnection: close\r\n";
  bool has_type = false;
  for (const auto& [k, v] : headers) {
    req += k + ": " + v + "\r\n";
    std::string lower = k;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    has_type = has_type || lower == "content-type";
  }
  if (!body.empty() && !has_type) req += "Content-Type: application/json\r\n";
  if (!body.empty() || method == "POST")
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return req + "\r\n" + body;
}

// Status and headers from the head (up to "\r\n\r\n").
int ParseHead(const std::string& head, std::map<std::string, std::string>& headers) {
  int status = 0;
  std::size_t sp = head.find(' ');
  if (sp != std::string::npos) status = std::atoi(head.c_str() + sp + 1);
  std::size_t pos = head.find("\r\n");
  while (pos != std::string::npos && pos + 2 < head.size()) {
    std::size_t end = head.find("\r\n", pos + 2);
    std::string line =
        head.substr(pos + 2, end == std::string::npos ? std::string::npos : end - pos - 2);
    std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      headers[name] = value;
    }
    pos = end;
  }
  return status;
}

}  // namespace

HttpResponse HttpCall(const std::string& ip, int port, const std::string& method,
                      const std::string& target, const Headers& headers, const std::string& body,
                      std::chrono::milliseconds timeout) {
  HttpResponse out;
  int fd = ConnectTo(ip, port);
  if (fd < 0) return out;
  const auto deadline = Clock::now() + timeout;
  if (!SendAll(fd, Request(ip, port, method, target, headers, body))) {
    ::close(fd);
    return out;
  }
  std::string raw;
  bool eof = false;
  std::size_t head_end = std::string::npos;
  while (head_end == std::string::npos && ReadSome(fd, raw, deadline, &eof)) {
    head_end = raw.find("\r\n\r\n");
  }
  if (head_end == std::string::npos) {
    ::close(fd);
    return out;
  }
  std::map<std::string, std::string> h;
  int status = ParseHead(raw.substr(0, head_end), h);
  std::size_t length = h.count("content-length") ? std::stoul(h["content-length"]) : 0;
  while (raw.size() - head_end - 4 < length && ReadSome(fd, raw, deadline, &eof)) {
  }
  ::close(fd);
  if (raw.size() - head_end - 4 < length) return out;
  out.status = status;
  out.headers = std::move(h);
  out.body = raw.substr(head_end + 4, length);
  return out;
}

SseClient::SseClient(const std::string& ip, int port, const std::string& target,
                     const Headers& headers) {
  fd_ = ConnectTo(ip, port);
  if (fd_ >= 0 && !SendAll(fd_, Request(ip, port, "GET", target, headers, ""))) {
    ::close(fd_);
    fd_ = -1;
  }
}

SseClient::~SseClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool SseClient::Fill(Clock::time_point deadline) {
  if (fd_ < 0 || closed_) return false;
  bool eof = false;
  bool got = ReadSome(fd_, raw_, deadline, &eof);
  if (eof) closed_ = true;
  if (!got) return false;
  if (!head_done_) {
    std::size_t end = raw_.find("\r\n\r\n");
    if (end == std::string::npos) return true;
    std::map<std::string, std::string> h;
    status_ = ParseHead(raw_.substr(0, end), h);
    raw_.erase(0, end + 4);
    head_done_ = true;
  }
  // De-chunk what is complete.
  while (true) {
    std::size_t line = raw_.find("\r\n");
    if (line == std::string::npos) break;
    std::size_t size = std::stoul(raw_.substr(0, line), nullptr, 16);
    if (raw_.size() < line + 2 + size + 2) break;
    decoded_.append(raw_, line + 2, size);
    raw_.erase(0, line + 2 + size + 2);
  }
  return true;
}

int SseClient::Status(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!head_done_ && Fill(deadline)) {
  }
  return status_;
}

std::optional<SseEvent> SseClient::Next(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    // "retry: 400\n" stands alone; events end with a blank line.
    if (decoded_.rfind("retry:", 0) == 0) {
      std::size_t nl = decoded_.find('\n');
      if (nl != std::string::npos) {
        SseEvent e{"retry", decoded_.substr(7, nl - 7)};
        decoded_.erase(0, nl + 1);
        return e;
      }
    }
    std::size_t end = decoded_.find("\n\n");
    if (end != std::string::npos) {
      std::string record = decoded_.substr(0, end);
      decoded_.erase(0, end + 2);
      SseEvent e;
      std::size_t pos = 0;
      while (pos < record.size()) {
        std::size_t nl = std::min(record.find('\n', pos), record.size());
        std::string line = record.substr(pos, nl - pos);
        if (line.rfind("tag: ", 0) == 0) e.tag = line.substr(5);
        if (line.rfind("data: ", 0) == 0) e.data = line.substr(6);
        pos = nl + 1;
      }
      return e;
    }
    if (!Fill(deadline)) return std::nullopt;
  }
}

bool SseClient::ClosedWithin(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!closed_ && Clock::now() < deadline) {
    raw_.clear();
    bool eof = false;
    ReadSome(fd_, raw_, deadline, &eof);
    if (eof) closed_ = true;
  }
  return closed_;
}

std::unique_ptr<Process> StartHaliteApi(const std::filesystem::path& config,
                                        const std::filesystem::path& log,
                                        const std::function<bool()>& answers) {
  auto api = std::make_unique<Process>(
      std::vector<std::string>{BinaryPath("halite-api").string(), "-c", config.string()}, log);
  const bool up = WaitFor([&] { return !api->Alive() || answers(); });
  if (!up || !api->Alive()) throw std::runtime_error("halite-api did not start:\n" + api->Log());
  return api;
}

}  // namespace halite::testing
