#include "descriptors.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

namespace halite::testing {

DescriptorExhaustion::DescriptorExhaustion() {
  spdlog::warn("test: exhausting file descriptors: {} {} {}", std::string("warm-up"),
               std::uint64_t{0}, std::int64_t{0});
  spdlog::error("test: exhausting file descriptors ({})", std::uint64_t{0});
  if (::getrlimit(RLIMIT_NOFILE, &old_) != 0) {
    error_ = errno;
    return;
  }
  struct rlimit low = old_;
  low.rlim_cur = std::min<rlim_t>(old_.rlim_cur, 1024);
  lowered_ = ::setrlimit(RLIMIT_NOFILE, &low) == 0;
  TopUp();
}

int DescriptorExhaustion::TopUp() {
  for (;;) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error_ = errno;
      return error_;
    }
    held_.push_back(fd);
  }
}

void DescriptorExhaustion::Release() {
  for (int fd : held_) ::close(fd);
  held_.clear();
  if (lowered_) ::setrlimit(RLIMIT_NOFILE, &old_);
  lowered_ = false;
}

}  // namespace halite::testing
