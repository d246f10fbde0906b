// A bound on the CPU time one piece of work may take on the calling thread, for work whose
// cost an untrusted sender controls and no step count can bound on its own: a target that a
// minion sends in `_mine_get` (or a salt-api user in a publish) is resolved against every
// minion the master knows, and each compound term may legitimately run up to its own limit
// (a regex's match limit, a subdict match's step budget). The budget is thread CPU time
// (CLOCK_THREAD_CPUTIME_ID), so other processes' load does not count against it. One thread
// only: Check() must run on the thread that made the budget.
#pragma once

#include <chrono>
#include <string_view>

#include "halite/common/result.h"

namespace halite {

class CpuBudget {
 public:
  explicit CpuBudget(std::chrono::nanoseconds allowance);

  // kResourceExhausted (naming `what` and the allowance) once this thread has used more
  // than the allowance since the budget was made. Cheap while less wall time than the
  // allowance has passed (a thread cannot have used more CPU than that): the thread CPU
  // clock, a system call of ~1.3 us here, is read only after.
  Status Check(std::string_view what) const;

  std::chrono::nanoseconds used() const;
  std::chrono::nanoseconds allowance() const { return allowance_; }

 private:
  std::chrono::steady_clock::time_point wall_start_;
  std::chrono::nanoseconds start_;
  std::chrono::nanoseconds allowance_;
};

// This thread's CPU time so far.
std::chrono::nanoseconds ThreadCpuTime();

}  // namespace halite
