#include "halite/keys/fs.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <vector>

namespace halite::keys {
namespace {

namespace fs = std::filesystem;

class FsTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-keys-fs-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static mode_t ModeOf(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_mode & 07777;
  }

  fs::path dir_;
};

TEST_F(FsTest, UnsyncedWritesAndDirectoriesBehaveLikeSyncedOnes) {
  const fs::path path = dir_ / "cache" / "m1" / "data.p";
  ASSERT_TRUE(EnsureDir(path.parent_path(), 0700, Sync::kNone).ok());
  EXPECT_EQ(ModeOf(path.parent_path()), 0700u);
  ASSERT_TRUE(WriteFileAtomic(path, "one", 0600, Sync::kNone).ok());
  ASSERT_TRUE(WriteFileAtomic(path, "two", 0600, Sync::kNone).ok());
  EXPECT_EQ(ReadFile(path).value(), "two");
  EXPECT_EQ(ModeOf(path), 0600u);
  // A missing directory is NotFound, which lets a cache writer make it only when needed.
  Status missing = WriteFileAtomic(dir_ / "nope" / "f", "x", 0600, Sync::kNone);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(FsTest, WriteFileAtomicCreatesAndReplacesWithMode) {
  const fs::path path = dir_ / "file";
  ASSERT_TRUE(WriteFileAtomic(path, "first", 0644).ok());
  EXPECT_EQ(ReadFile(path).value(), "first");
  EXPECT_EQ(ModeOf(path), 0644u);

  ASSERT_TRUE(WriteFileAtomic(path, "second, longer", 0400).ok());
  EXPECT_EQ(ReadFile(path).value(), "second, longer");
  EXPECT_EQ(ModeOf(path), 0400u);
  EXPECT_EQ(Entries(), std::vector<std::string>{"file"});  // no temp files left
}

TEST_F(FsTest, WriteFileAtomicIntoMissingDirectoryIsNotFound) {
  Status status = WriteFileAtomic(dir_ / "missing" / "file", "x", 0644);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(Entries().empty());
}

TEST_F(FsTest, RacingWritersLeaveOneWholeFileAndNoTempFiles) {
  const fs::path path = dir_ / "contended";
  const std::string a(64 * 1024, 'a');
  const std::string b(32 * 1024, 'b');
  std::latch start(2);
  auto writer = [&](const std::string& content) {
    start.arrive_and_wait();
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(WriteFileAtomic(path, content, 0644).ok());
  };
  std::thread t1(writer, std::cref(a));
  std::thread t2(writer, std::cref(b));
  t1.join();
  t2.join();
  const std::string result = ReadFile(path).value();
  EXPECT_TRUE(result == a || result == b);
  EXPECT_EQ(Entries(), std::vector<std::string>{"contended"});
}

TEST_F(FsTest, CreateFileExclusiveCreatesOnlyOnce) {
  const fs::path path = dir_ / "once";
  EXPECT_TRUE(CreateFileExclusive(path, "winner", 0400).value());
  EXPECT_FALSE(CreateFileExclusive(path, "loser", 0644).value());
  EXPECT_EQ(ReadFile(path).value(), "winner");
  EXPECT_EQ(ModeOf(path), 0400u);
  EXPECT_EQ(Entries(), std::vector<std::string>{"once"});
}

TEST_F(FsTest, CreateFileExclusiveRaceHasExactlyOneWinner) {
  const fs::path path = dir_ / "raced";
  constexpr int kThreads = 4;
  std::latch start(kThreads);
  std::vector<int> won(kThreads, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      won[i] = CreateFileExclusive(path, "writer " + std::to_string(i), 0644).value() ? 1 : 0;
    });
  }
  for (auto& thread : threads) thread.join();
  int winners = 0;
  for (int i = 0; i < kThreads; ++i) {
    if (won[i] == 1) {
      ++winners;
      EXPECT_EQ(ReadFile(path).value(), "writer " + std::to_string(i));
    }
  }
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(Entries(), std::vector<std::string>{"raced"});
}

TEST_F(FsTest, ReadFileMissingIsNotFound) {
  Result<std::string> content = ReadFile(dir_ / "nope");
  ASSERT_FALSE(content.ok());
  EXPECT_EQ(content.error().code, ErrorCode::kNotFound);
}

TEST_F(FsTest, ReadFileOfDirectoryIsNotFound) {
  Result<std::string> content = ReadFile(dir_);
  ASSERT_FALSE(content.ok());
  EXPECT_EQ(content.error().code, ErrorCode::kNotFound);
}

TEST_F(FsTest, ReadFileReturnsBytesVerbatim) {
  const std::string bytes("a\0b\r\n\xff", 6);
  ASSERT_TRUE(WriteFileAtomic(dir_ / "bin", bytes, 0600).ok());
  EXPECT_EQ(ReadFile(dir_ / "bin").value(), bytes);
}

TEST_F(FsTest, EnsureDirCreatesParentsWithExactMode) {
  const fs::path nested = dir_ / "a" / "b" / "c";
  const mode_t old_umask = ::umask(0077);
  ASSERT_TRUE(EnsureDir(nested, 0750).ok());
  ::umask(old_umask);
  EXPECT_TRUE(fs::is_directory(nested));
  EXPECT_EQ(ModeOf(nested), 0750u);
  EXPECT_EQ(ModeOf(dir_ / "a"), 0750u);
  EXPECT_TRUE(EnsureDir(nested, 0700).ok());  // exists: fine, mode untouched
  EXPECT_EQ(ModeOf(nested), 0750u);
}

TEST_F(FsTest, EnsureDirOverAFileIsFailedPrecondition) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "file", "x", 0644).ok());
  Status status = EnsureDir(dir_ / "file", 0700);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(FsTest, RemoveFileRemovesAndMissingIsNotFound) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "file", "x", 0644).ok());
  EXPECT_TRUE(RemoveFile(dir_ / "file").ok());
  EXPECT_TRUE(Entries().empty());
  Status again = RemoveFile(dir_ / "file");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
}

TEST_F(FsTest, ErrnoErrorMapsCodes) {
  EXPECT_EQ(ErrnoError(ENOENT, "x").code, ErrorCode::kNotFound);
  EXPECT_EQ(ErrnoError(EEXIST, "x").code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(ErrnoError(EACCES, "x").code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError(ENOSPC, "x").code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(ErrnoError(EIO, "x").code, ErrorCode::kUnavailable);
  EXPECT_NE(ErrnoError(EIO, "writing y").message.find("writing y: "), std::string::npos);
}

}  // namespace
}  // namespace halite::keys
