#include "loopback.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "halite/common/check.h"

namespace halite::testing {

namespace {

constexpr int kSubnets = 254 * 256;  // 127.1.0 - 127.254.255

std::mutex mu;
int next_host = 255;  // GUARDED_BY(mu); past the end: no subnet yet
std::string subnet;   // GUARDED_BY(mu)

// Locks the first free /24 at or after a start that differs per process and per call, so
// concurrent runs rarely probe the same files. The fd is kept open (and so locked) for the
// life of the process; O_CLOEXEC keeps it out of the servers the tests start.
std::string LockSubnet() {
  static int calls = 0;
  const std::filesystem::path dir = "/tmp/halite-test-addresses";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  const unsigned start =
      static_cast<unsigned>(::getpid()) * 7919u + static_cast<unsigned>(now) + 131u * calls++;
  for (int i = 0; i < kSubnets; ++i) {
    const int n = static_cast<int>((start + static_cast<unsigned>(i)) % kSubnets);
    const std::string prefix =
        "127." + std::to_string(1 + n / 256) + "." + std::to_string(n % 256) + ".";
    const std::string path = (dir / prefix.substr(0, prefix.size() - 1)).string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    HALITE_CHECK(fd >= 0) << "open " << path << ": " << std::strerror(errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return prefix;  // fd stays open on purpose
    HALITE_CHECK(errno == EWOULDBLOCK) << "flock " << path << ": " << std::strerror(errno);
    ::close(fd);
  }
  HALITE_CHECK(false) << "every loopback /24 is locked by another test process";
  return {};
}

}  // namespace

std::string LoopbackSubnet() {
  std::lock_guard lock(mu);
  return LockSubnet();
}

std::string UniqueLoopbackIp() {
  std::lock_guard lock(mu);
  if (next_host > 254) {
    subnet = LockSubnet();
    next_host = 2;
  }
  return subnet + std::to_string(next_host++);
}

}  // namespace halite::testing
