#include "halite/client/salt_cp.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace halite::client {
namespace {

namespace fs = std::filesystem;

TEST(SaltCpTest, CommandLineIsSaltCpsWithHalitesTargetOptions) {
  auto got = ParseSaltCpCommandLine({"-L", "a,b", "/tmp/x", "-t5", "-n", "/srv/y", "/dest/"});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->tgt_type, "list");
  EXPECT_EQ(got->tgt.ToJson(), R"(["a", "b"])");
  EXPECT_EQ(got->sources, (std::vector<std::string>{"/tmp/x", "/srv/y"}));
  EXPECT_EQ(got->dest, "/dest/");
  EXPECT_EQ(got->timeout, 5);
  EXPECT_FALSE(got->gzip);
  auto few = ParseSaltCpCommandLine({"*", "/tmp/x"});
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.error().message, "Insufficient arguments");
  auto bad = ParseSaltCpCommandLine({"--bogus", "*", "/a", "/b"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  auto two = ParseSaltCpCommandLine({"-E", "-G", "*", "/a", "/b"});
  EXPECT_FALSE(two.ok());
}

TEST(SaltCpTest, RemotePathsAreSaltCps) {
  const fs::path root = fs::temp_directory_path() / ("salt_cp_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "dir" / "empty");
  fs::create_directories(root / "dir" / "a");
  std::ofstream(root / "dir" / "a" / "f.txt") << "f";
  std::ofstream(root / "one.txt") << "1";
  fs::permissions(root / "one.txt", fs::perms(0640));
  // One file: DEST is the file's name unless it ends in '/'.
  auto single = PlanCopy({(root / "one.txt").string()}, "/etc/x.conf");
  ASSERT_TRUE(single.ok());
  ASSERT_EQ(single->files.size(), 1u);
  EXPECT_EQ(single->files[0].remote, "/etc/x.conf");
  EXPECT_EQ(single->files[0].mode, 0640);
  EXPECT_EQ(PlanCopy({(root / "one.txt").string()}, "/etc/")->files[0].remote, "/etc/one.txt");
  // A directory: DEST/<its name>/<relative path>, empty directories too.
  auto tree = PlanCopy({(root / "dir").string(), (root / "one.txt").string()}, "/d");
  ASSERT_TRUE(tree.ok());
  ASSERT_EQ(tree->files.size(), 2u);
  EXPECT_EQ(tree->files[0].remote, "/d/dir/a/f.txt");
  EXPECT_EQ(tree->files[1].remote, "/d/one.txt");
  EXPECT_EQ(tree->remote_dirs, std::vector<std::string>{"/d/dir/empty"});
  auto missing = PlanCopy({(root / "nope").string()}, "/d");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, (root / "nope").string() + " does not exist");
  fs::remove_all(root);
}

}  // namespace
}  // namespace halite::client
