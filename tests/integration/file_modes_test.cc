// Nothing a real master writes may be read by the group or others, whatever the umask it was
// started with (issue 12, finding 8: returns and job arguments can hold secrets).
#include "file_modes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness.h"

namespace halite::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(FileModesTest, MasterStartedWithUmaskZeroWritesNothingOthersCanRead) {
  TempDir tmp;
  // The master, its minion and the CLI inherit the umask (set before they are forked).
  ScopedUmask umask(0);
  MasterSpec spec;
  spec.id = "m1";
  MasterUnderTest master(tmp.path(), spec);
  master.Start();
  MinionSpec minion_spec;
  minion_spec.id = "web1";
  minion_spec.master_ip = master.ip();
  MinionUnderTest minion(tmp.path(), minion_spec);
  minion.Start();
  ASSERT_TRUE(WaitFor([&] {
    return master.Cli("halite-key", {"-l", "un"}).out.find("web1") != std::string::npos;
  })) << master.Log();
  auto accept = master.Cli("halite-key", {"-A", "--yes"});
  ASSERT_EQ(accept.exit_code, 0) << accept.out << accept.err;
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, 1, &last)) << last << minion.Log();
  // A job with arguments and a return that is stored in the job cache.
  auto echo = master.Cli("halite", {"web1", "cmd.run", "echo secret"});
  ASSERT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "web1:\n    secret\n");

  std::string listing;
  for (const char* dir : {"pki", "cache", "sock"}) {
    for (const std::string& offender : GroupOrOtherAccessible(master.dir() / dir)) {
      std::printf("[ offender ] %s\n", offender.c_str());
      listing += "\n  " + offender;
    }
  }
  EXPECT_TRUE(listing.empty()) << "group/other may read, write or enter:" << listing;
}

}  // namespace
}  // namespace halite::testing
