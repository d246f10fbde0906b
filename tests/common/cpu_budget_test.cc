#include "halite/common/cpu_budget.h"

#include <gtest/gtest.h>

#include <thread>

#include "halite/common/logging.h"

namespace halite {
namespace {

using namespace std::chrono_literals;

// Spins on this thread until it has used `cpu` more CPU time.
void Burn(std::chrono::nanoseconds cpu) {
  const auto until = ThreadCpuTime() + cpu;
  volatile unsigned sink = 0;
  while (ThreadCpuTime() < until) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<unsigned>(i);
  }
}

TEST(CpuBudgetTest, RunsOutOnThisThreadsCpuNotOnWallTime) {
  const CpuBudget budget(20ms);
  EXPECT_TRUE(budget.Check("work").ok());
  // Waiting is not working: a thread that sleeps past the allowance still has it.
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(budget.Check("work").ok()) << budget.used().count() << " ns used";
  // Another thread's CPU does not count either.
  std::thread([] { Burn(40ms); }).join();
  EXPECT_TRUE(budget.Check("work").ok()) << budget.used().count() << " ns used";
  Burn(30ms);
  auto st = budget.Check("resolving a compound target");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(st.error().message,
            "resolving a compound target needs more than 20 ms of CPU; refused");
  EXPECT_GE(budget.used(), 30ms);
}

TEST(PrintableTest, ControlBytesAreEscapedAndLongTextCut) {
  EXPECT_EQ(Printable("web1"), "web1");
  EXPECT_EQ(Printable("a\nb\x1b[31m\x7f"), "a\\x0ab\\x1b[31m\\x7f");
  const std::string cut = Printable(std::string(200, 'x'));
  EXPECT_EQ(cut, std::string(128, 'x') + "...");
}

}  // namespace
}  // namespace halite
