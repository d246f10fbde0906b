#include "notify_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace halite::testing {

NotifySocket::NotifySocket(std::filesystem::path path) : path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd_ < 0 || path_.string().size() >= sizeof addr.sun_path) {
    throw std::runtime_error("notify socket: cannot make " + path_.string());
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.string().size() + 1);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error("notify socket: cannot bind " + path_.string() + ": " +
                             std::strerror(errno));
  }
}

NotifySocket::~NotifySocket() {
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

std::optional<NotifySocket::Message> NotifySocket::Next(std::chrono::milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
  char buf[4096];
  ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) return std::nullopt;
  Message m;
  std::istringstream lines(std::string(buf, static_cast<std::size_t>(n)));
  for (std::string line; std::getline(lines, line);) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

std::optional<NotifySocket::Message> NotifySocket::WaitFor(const std::string& key,
                                                           std::optional<std::string> value,
                                                           std::chrono::milliseconds timeout,
                                                           std::vector<Message>* seen) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto m = Next(left);
    if (!m) return std::nullopt;
    if (seen) seen->push_back(*m);
    auto it = m->find(key);
    if (it != m->end() && (!value || it->second == *value)) return m;
  }
}

}  // namespace halite::testing
