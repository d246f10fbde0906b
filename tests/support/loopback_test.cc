// The loopback address allocator (loopback.h): addresses never repeat within a process, and a
// /24 held by one process cannot be taken by another until that process exits.
#include "loopback.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>

namespace halite::testing {
namespace {

const std::string kLockDir = "/tmp/halite-test-addresses/";

// Whether this call can take the lock of `subnet` ("127.A.B."): a new open file description,
// so it conflicts with every other holder, this process's included. Releases it again.
bool CanLock(const std::string& subnet) {
  const std::string path = kLockDir + subnet.substr(0, subnet.size() - 1);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool locked = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  EXPECT_TRUE(locked || errno == EWOULDBLOCK) << path << ": " << errno;
  ::close(fd);
  return locked;
}

std::string SubnetOf(const std::string& ip) { return ip.substr(0, ip.rfind('.') + 1); }

TEST(LoopbackTest, AddressesNeverRepeatAndStayInHeldSubnets) {
  std::set<std::string> seen;
  std::set<std::string> subnets;
  for (int i = 0; i < 600; ++i) {  // more than one /24 holds
    const std::string ip = UniqueLoopbackIp();
    ASSERT_TRUE(seen.insert(ip).second) << ip << " handed out twice";
    ASSERT_EQ(ip.rfind("127.", 0), 0u) << ip;
    const int host = std::stoi(ip.substr(ip.rfind('.') + 1));
    EXPECT_GE(host, 2) << ip;
    EXPECT_LE(host, 254) << ip;
    subnets.insert(SubnetOf(ip));
  }
  EXPECT_EQ(subnets.size(), 3u);  // 253 hosts each
  for (const std::string& subnet : subnets) EXPECT_FALSE(CanLock(subnet)) << subnet;
}

TEST(LoopbackTest, ASubnetIsHeldUntilItsProcessExits) {
  const std::string mine = LoopbackSubnet();
  EXPECT_FALSE(CanLock(mine)) << mine << " is not locked while this process holds it";
  int to_parent[2], to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // takes a subnet of its own, reports it, holds it until told to exit
    const std::string theirs = LoopbackSubnet();
    (void)!::write(to_parent[1], theirs.data(), theirs.size());
    char go;
    (void)!::read(to_child[0], &go, 1);
    ::_exit(0);
  }
  char buf[32] = {};
  const ssize_t n = ::read(to_parent[0], buf, sizeof buf);
  ASSERT_GT(n, 0);
  const std::string theirs(buf, static_cast<std::size_t>(n));
  EXPECT_NE(theirs, mine);
  EXPECT_FALSE(CanLock(theirs)) << theirs << " is not locked while the child holds it";
  (void)!::write(to_child[1], "x", 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(CanLock(theirs)) << theirs << " stayed locked after its process exited";
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) ::close(fd);
}

}  // namespace
}  // namespace halite::testing
