// TreeDigests (daemon/tree_digests.h): what makes two masters' trees "the same" for
// cluster.status.
#include "halite/daemon/tree_digests.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "scratch_dir.h"

namespace halite::daemon {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class TreeDigestsTest : public ::testing::Test {
 protected:
  // One master's roots: base and dev file trees, a base pillar.
  std::map<std::string, std::string> Digest(const fs::path& m) {
    return digests_.Compute({{"base", {(m / "states").string()}}, {"dev", {(m / "dev").string()}}},
                            {{"base", {(m / "pillar").string()}}});
  }
  void Populate(const fs::path& m) {
    Write(m / "states" / "top.sls", "base:\n  '*': [web]\n");
    Write(m / "states" / "web" / "init.sls", "nginx: pkg.installed\n");
    Write(m / "pillar" / "top.sls", "base:\n  '*': [common]\n");
  }
  testing::ScratchDir tmp_;
  TreeDigests digests_;
};

TEST_F(TreeDigestsTest, SameContentsAgreeWhateverTheirTimesAndDotFiles) {
  Populate(tmp_.path() / "m1");
  Populate(tmp_.path() / "m2");
  fs::last_write_time(tmp_.path() / "m2" / "states" / "top.sls",
                      fs::file_time_type::clock::now() - std::chrono::hours(5));
  Write(tmp_.path() / "m2" / "states" / ".git" / "HEAD", "ref: refs/heads/main\n");
  const auto a = Digest(tmp_.path() / "m1");
  const auto b = Digest(tmp_.path() / "m2");
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.at("file_roots/base").size(), 16u);
  // A missing root (no dev tree on either) digests as empty, alike.
  EXPECT_EQ(a.at("file_roots/dev"), b.at("file_roots/dev"));
}

TEST_F(TreeDigestsTest, AChangedFileARenameOrANewFileChangesOnlyItsTree) {
  const fs::path m = tmp_.path() / "m1";
  Populate(m);
  const auto before = Digest(m);
  Write(m / "states" / "web" / "init.sls", "nginx: pkg.removed\n");
  const auto edited = Digest(m);
  EXPECT_NE(edited.at("file_roots/base"), before.at("file_roots/base"));
  EXPECT_EQ(edited.at("pillar_roots/base"), before.at("pillar_roots/base"));
  fs::rename(m / "pillar" / "top.sls", m / "pillar" / "top2.sls");
  EXPECT_NE(Digest(m).at("pillar_roots/base"), before.at("pillar_roots/base"));
  Write(m / "dev" / "x.sls", "x\n");
  EXPECT_NE(Digest(m).at("file_roots/dev"), before.at("file_roots/dev"));
}

// With two roots in one saltenv, the first root's file is the one served (Salt's order), so
// it is the one that counts.
TEST_F(TreeDigestsTest, TheFirstRootHoldingAPathIsTheOneThatCounts) {
  const fs::path a = tmp_.path() / "a", b = tmp_.path() / "b";
  Write(a / "top.sls", "first\n");
  Write(b / "top.sls", "second\n");
  const auto both = digests_.Compute({{"base", {a.string(), b.string()}}}, {});
  const auto first_only = digests_.Compute({{"base", {a.string()}}}, {});
  EXPECT_EQ(both.at("file_roots/base"), first_only.at("file_roots/base"));
  Write(b / "top.sls", "changed in the shadowed root\n");
  EXPECT_EQ(digests_.Compute({{"base", {a.string(), b.string()}}}, {}).at("file_roots/base"),
            both.at("file_roots/base"));
}

}  // namespace
}  // namespace halite::daemon
