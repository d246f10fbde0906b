#include "halite/jobs/job_cache_registry.h"

#include <gtest/gtest.h>

#include "job_cache_testing.h"

namespace halite::jobs {
namespace {

TEST(JobCacheRegistryTest, BuiltinsIncludeLocalCache) {
  JobCacheRegistry registry;
  RegisterBuiltinJobCaches(registry);
  const std::vector<std::string> names = registry.Names();
  EXPECT_NE(std::find(names.begin(), names.end(), "local_cache"), names.end());
}

TEST(JobCacheRegistryTest, UnknownNameIsNotFoundAndListsKnownNames) {
  JobCacheRegistry registry;
  RegisterBuiltinJobCaches(registry);
  auto cache = registry.Create("mongo", JobCacheContext{"/nonexistent", "m1"}, YAML::Node());
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.error().code, ErrorCode::kNotFound);
  EXPECT_NE(cache.error().message.find("mongo"), std::string::npos);
  EXPECT_NE(cache.error().message.find("local_cache"), std::string::npos);
}

TEST(JobCacheRegistryTest, CreatesRegisteredBackend) {
  testing::ScratchDir dir;
  JobCacheRegistry registry;
  RegisterBuiltinJobCaches(registry);
  auto cache = registry.Create("local_cache", JobCacheContext{dir.path(), "m1"},
                               YAML::Load("{batch_max: 64, fsync_mode: per_file}"));
  ASSERT_TRUE(cache.ok()) << cache.error().ToString();
  Status status = (*cache)->Check();
  EXPECT_TRUE(status.ok()) << status.error().ToString();
}

TEST(JobCacheRegistryTest, FactoryErrorsPassThrough) {
  JobCacheRegistry registry;
  RegisterBuiltinJobCaches(registry);
  auto cache =
      registry.Create("local_cache", JobCacheContext{"/tmp", "m1"}, YAML::Load("{bogus: 1}"));
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.error().code, ErrorCode::kInvalidArgument);
}

TEST(JobCacheRegistryTest, CustomFactoryIsCalled) {
  JobCacheRegistry registry;
  int calls = 0;
  registry.Register("fake",
                    [&calls](const JobCacheContext& context,
                             const YAML::Node&) -> Result<std::unique_ptr<JobCache>> {
                      ++calls;
                      EXPECT_EQ(context.master_id, "m1");
                      return Error::Unavailable("no fake today");
                    });
  EXPECT_EQ(registry.Names(), std::vector<std::string>{"fake"});
  auto cache = registry.Create("fake", JobCacheContext{"/tmp", "m1"}, YAML::Node());
  EXPECT_EQ(calls, 1);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.error().code, ErrorCode::kUnavailable);
}

TEST(JobCacheRegistryDeathTest, RegisteringANameTwiceIsABug) {
  JobCacheRegistry registry;
  RegisterBuiltinJobCaches(registry);
  EXPECT_DEATH(RegisterBuiltinJobCaches(registry), "registered twice");
}

}  // namespace
}  // namespace halite::jobs
