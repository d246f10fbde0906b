// Runs this process out of file descriptors, as a master in a storm past its RLIMIT_NOFILE:
// the soft limit is lowered to at most 1,024 and /dev/null opened until open fails (EMFILE).
// Release (or destruction) closes them and restores the limit.
//
// Sanitizer builds: UBSan's vptr check opens a pipe the first time it checks a pair of
// types, and reports a false "invalid vptr" when it cannot. So the constructor first logs
// through spdlog the shapes the code under test logs while out of descriptors (a string, an
// unsigned and a signed integer), while the check still can.
#pragma once

#include <sys/resource.h>

#include <vector>

namespace halite::testing {

class DescriptorExhaustion {
 public:
  DescriptorExhaustion();
  ~DescriptorExhaustion() { Release(); }
  DescriptorExhaustion(const DescriptorExhaustion&) = delete;
  DescriptorExhaustion& operator=(const DescriptorExhaustion&) = delete;

  // Takes any descriptor freed since: a thread that held one while the process ran out
  // (a probe file open at that moment) closes it later, and that one free descriptor would
  // let its every later round succeed. Returns error().
  int TopUp();
  void Release();
  // The errno of the open that failed: EMFILE when it worked.
  int error() const { return error_; }

 private:
  struct rlimit old_ {};
  bool lowered_ = false;
  std::vector<int> held_;
  int error_ = 0;
};

}  // namespace halite::testing
