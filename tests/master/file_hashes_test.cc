// FileHashes (master/file_hashes.h): a hash is remembered only while its file is provably
// unchanged, and the memory stays bounded.
#include "halite/master/file_hashes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "halite/wire/encoding.h"
#include "scratch_dir.h"

namespace halite::master {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

void Write(const fs::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
}

// Sets the file's mtime to `seconds` after the epoch (its ctime becomes now).
void SetMtime(const fs::path& p, long seconds) {
  const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
}

std::string HashOf(FileHashes& hashes, const fs::path& p, bool* from_memory = nullptr) {
  auto h = hashes.Sha256(p);
  EXPECT_TRUE(h.ok()) << h.error().ToString();
  if (!h.ok()) return "";
  if (from_memory) *from_memory = h->from_memory;
  return h->sha256_hex;
}

class FileHashesTest : public ::testing::Test {
 protected:
  testing::ScratchDir tmp_;
};

TEST_F(FileHashesTest, AFileJustWrittenIsReadEveryTime) {
  const fs::path f = tmp_.path() / "f";
  Write(f, "one");
  FileHashes hashes;  // the default racy window: 2 s
  bool from_memory = true;
  EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("one"));
  EXPECT_FALSE(from_memory);
  // The same size, written within the same clock tick: only a second read can tell.
  Write(f, "two");
  EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("two"));
  EXPECT_FALSE(from_memory);
  EXPECT_EQ(hashes.read(), 2u);
  EXPECT_EQ(hashes.from_memory(), 0u);
  EXPECT_EQ(hashes.remembered(), 0u);
}

TEST_F(FileHashesTest, AnUnchangedFileIsRememberedAndAnyChangeReadsItAgain) {
  const fs::path f = tmp_.path() / "f";
  Write(f, "one");
  FileHashes hashes(16, 0ns);  // no racy window: each change below moves the mtime
  bool from_memory = false;
  EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("one"));
  EXPECT_FALSE(from_memory);
  EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("one"));
  EXPECT_TRUE(from_memory);

  // Same size, a different mtime.
  Write(f, "two");
  SetMtime(f, 1000);
  EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("two"));
  EXPECT_FALSE(from_memory);
  // Same size and the same old mtime (what rsync -t leaves): the ctime differs.
  const struct stat before = [&] {
    struct stat st {};
    ::stat(f.c_str(), &st);
    return st;
  }();
  Write(f, "six");
  SetMtime(f, 1000);
  struct stat after {};
  ASSERT_EQ(::stat(f.c_str(), &after), 0);
  if (after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
      after.st_ctim.tv_nsec != before.st_ctim.tv_nsec) {
    EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("six"));
    EXPECT_FALSE(from_memory);
  }
  // Another file renamed over it (a new inode), with the same size and mtime.
  const fs::path g = tmp_.path() / "g";
  Write(g, "ten");
  SetMtime(g, 1000);
  fs::rename(g, f);
  EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("ten"));
  EXPECT_FALSE(from_memory);
  EXPECT_EQ(HashOf(hashes, f, &from_memory), wire::Sha256Hex("ten"));
  EXPECT_TRUE(from_memory);
}

TEST_F(FileHashesTest, MissingFilesAndDirectoriesAreErrorsAndMemoryIsBounded) {
  FileHashes hashes(3, 0ns);
  EXPECT_EQ(hashes.Sha256(tmp_.path() / "absent").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(hashes.Sha256(tmp_.path()).error().code, ErrorCode::kInvalidArgument);
  for (int i = 0; i < 10; ++i) {
    const fs::path f = tmp_.path() / ("f" + std::to_string(i));
    Write(f, std::to_string(i));
    EXPECT_EQ(HashOf(hashes, f), wire::Sha256Hex(std::to_string(i)));
    EXPECT_LE(hashes.remembered(), 3u);
  }
  EXPECT_EQ(hashes.read(), 10u);
}

}  // namespace
}  // namespace halite::master
