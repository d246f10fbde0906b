#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "halite/jobs/local_job_cache.h"
#include "job_cache_testing.h"

namespace halite::jobs {
namespace {

using FsyncMode = LocalJobCacheOptions::FsyncMode;
using namespace std::chrono_literals;

const JobCacheContext kContext{"/var/cache/halite", "master1"};

TEST(LocalJobCacheFactoryTest, NullOptionsAreDefaults) {
  auto options = ParseLocalJobCacheOptions(kContext, YAML::Node());
  ASSERT_TRUE(options.ok()) << options.error().ToString();
  EXPECT_EQ(options->cachedir, "/var/cache/halite");
  EXPECT_EQ(options->batch_max, 512u);
  EXPECT_EQ(options->max_delay, 0ms);
  EXPECT_EQ(options->fsync_mode, FsyncMode::kSyncfs);
  EXPECT_EQ(options->io_threads, 2u);
  EXPECT_TRUE(ParseLocalJobCacheOptions(kContext, YAML::Load("~")).ok());
}

TEST(LocalJobCacheFactoryTest, ReadsEveryKey) {
  auto options = ParseLocalJobCacheOptions(
      kContext,
      YAML::Load("{batch_max: 64, max_delay_ms: 3, fsync_mode: per_file, io_threads: 8}"));
  ASSERT_TRUE(options.ok()) << options.error().ToString();
  EXPECT_EQ(options->batch_max, 64u);
  EXPECT_EQ(options->max_delay, 3ms);
  EXPECT_EQ(options->fsync_mode, FsyncMode::kPerFile);
  EXPECT_EQ(options->io_threads, 8u);
}

TEST(LocalJobCacheFactoryTest, ListsEveryProblem) {
  auto options = ParseLocalJobCacheOptions(
      kContext, YAML::Load("{batch_max: 0, max_delay_ms: soon, fsync_mode: always, fsync: true, "
                           "io_threads: 0}"));
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().code, ErrorCode::kInvalidArgument);
  const std::string& message = options.error().message;
  EXPECT_NE(message.find("batch_max"), std::string::npos) << message;
  EXPECT_NE(message.find("max_delay_ms"), std::string::npos) << message;
  EXPECT_NE(message.find("'always'"), std::string::npos) << message;
  EXPECT_NE(message.find("job_cache.fsync: unknown key"), std::string::npos) << message;
  EXPECT_NE(message.find("io_threads"), std::string::npos) << message;
}

TEST(LocalJobCacheFactoryTest, RejectsNonMapsAndMissingCachedir) {
  auto options = ParseLocalJobCacheOptions(kContext, YAML::Load("[1, 2]"));
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.error().message.find("map"), std::string::npos);
  options = ParseLocalJobCacheOptions(JobCacheContext{}, YAML::Node());
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.error().message.find("cachedir"), std::string::npos);
  options = ParseLocalJobCacheOptions(kContext, YAML::Load("{batch_max: [1]}"));
  EXPECT_FALSE(options.ok());
}

TEST(LocalJobCacheFactoryTest, CreatesAWorkingCache) {
  testing::ScratchDir dir;
  auto cache = CreateLocalJobCache(JobCacheContext{dir.path(), "m1"}, YAML::Node());
  ASSERT_TRUE(cache.ok()) << cache.error().ToString();
  auto stored = testing::StoreAndWait(
      **cache, testing::MakeReturn("20250101120000123456", "web1", wire::Value(true)));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "jobs"));
}

}  // namespace
}  // namespace halite::jobs
