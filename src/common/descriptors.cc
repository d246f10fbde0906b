#include "halite/common/descriptors.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace halite {

std::uint64_t FileDescriptorLimit() {
  struct rlimit limit {};
  return ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 0;
}

std::uint64_t OpenFileDescriptors() {
  std::error_code ec;
  std::uint64_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n > 0 ? n - 1 : 0;  // less the one the listing itself holds
}

bool OutOfFileDescriptors() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == EMFILE || errno == ENFILE;
}

}  // namespace halite
