#include "halite/common/cpu_budget.h"

#include <time.h>

#include <string>

namespace halite {

std::chrono::nanoseconds ThreadCpuTime() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

CpuBudget::CpuBudget(std::chrono::nanoseconds allowance)
    : wall_start_(std::chrono::steady_clock::now()),
      start_(ThreadCpuTime()),
      allowance_(allowance) {}

std::chrono::nanoseconds CpuBudget::used() const { return ThreadCpuTime() - start_; }

Status CpuBudget::Check(std::string_view what) const {
  if (std::chrono::steady_clock::now() - wall_start_ <= allowance_) return OkStatus();
  if (used() <= allowance_) return OkStatus();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(allowance_).count();
  return Error::ResourceExhausted(std::string(what) + " needs more than " + std::to_string(ms) +
                                  " ms of CPU; refused");
}

}  // namespace halite
