// Nothing a real master writes may be read by the group or others, whatever the umask it was
// started with (issue 12, finding 8: returns and job arguments can hold secrets).
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

// Every entry under `root` (itself included) that lets the group or others in: a file (or
// socket) with any group/other bit, a directory the group or others may list or enter. One
// "path mode type" line each.
std::vector<std::string> Offenders(const fs::path& root) {
  std::vector<std::string> offenders;
  auto check = [&](const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
    if ((st.st_mode & 077) == 0) return;
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const char* type = S_ISDIR(st.st_mode) ? "dir" : S_ISSOCK(st.st_mode) ? "socket" : "file";
    offenders.push_back(path.string() + " " + mode + " " + type);
  };
  std::error_code ec;
  if (!fs::exists(root, ec)) return {root.string() + " is missing"};
  check(root);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    check(it->path());
  }
  return offenders;
}

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : saved_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(saved_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  const mode_t saved_;
};

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
    for (const std::string& offender : Offenders(master.dir() / dir)) {
      std::printf("[ offender ] %s\n", offender.c_str());
      listing += "\n  " + offender;
    }
  }
  EXPECT_TRUE(listing.empty()) << "group/other may read, write or enter:" << listing;
}

}  // namespace
}  // namespace halite::testing
