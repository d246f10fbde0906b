// HealthChecker on a lone master (no peers): what makes /health fail, what only degrades it,
// and that it recovers, with real directories and a job cache check the test controls.
#include "halite/cluster/health_checker.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "descriptors.h"
#include "wait.h"

namespace halite::cluster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using halite::testing::WaitUntil;

class HealthCheckerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-health-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    fs::create_directories(dir_ / "cache");
  }
  void TearDown() override {
    checker_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Start() {
    HealthCheckerOptions options;
    options.self_id = "m1";
    options.dirs = {dir_ / "cache"};
    options.check_job_cache = [this]() -> Status {
      if (job_cache_down_) return Error::Unavailable("connection refused");
      return OkStatus();
    };
    // A loop that runs what it is given at once, and one that can be made to hang.
    options.loops = {{"request server", [](std::function<void()> f) { f(); }},
                     {"publisher", [this](std::function<void()> f) {
                        if (!publisher_hung_) f();
                      }}};
    options.connected_minions = [] { return 7u; };
    options.period = 50ms;
    options.stale = 500ms;
    checker_ = std::make_unique<HealthChecker>(std::move(options));
    checker_->Start();
  }
  nlohmann::json Body() { return nlohmann::json::parse(checker_->Report().json); }
  bool Healthy() { return checker_->Report().healthy; }
  bool Problem(const std::string& text) {
    const nlohmann::json body = Body();
    for (const auto& p : body["problems"]) {
      if (p.get<std::string>().find(text) != std::string::npos) return true;
    }
    return false;
  }

  fs::path dir_;
  std::atomic<bool> job_cache_down_{false};
  std::atomic<bool> publisher_hung_{false};
  std::unique_ptr<HealthChecker> checker_;
};

TEST_F(HealthCheckerTest, HealthyOnceARoundRanAndSaysWhatItSaw) {
  Start();
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); }));
  auto body = Body();
  EXPECT_EQ(body["id"], "m1");
  EXPECT_EQ(body["connected_minions"], 7);
  EXPECT_TRUE(body["problems"].empty());
  EXPECT_FALSE(body.contains("peers"));
  EXPECT_FALSE(checker_->storage_lost().load());
  EXPECT_FALSE(checker_->quorum().has_value());
}

TEST_F(HealthCheckerTest, AVanishedDirectoryFailsHealthAndItsReturnHealsIt) {
  Start();
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); }));
  fs::remove_all(dir_ / "cache");
  ASSERT_TRUE(WaitUntil([&] { return !Healthy() && Problem("cannot write"); })) << Body().dump();
  EXPECT_TRUE(checker_->storage_lost().load());
  fs::create_directories(dir_ / "cache");
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); })) << Body().dump();
  EXPECT_FALSE(checker_->storage_lost().load());
}

// A process with no descriptor left (a sign-in storm past RLIMIT_NOFILE) cannot write its
// probe: that is reported as degraded, not as lost storage, which would drop every minion
// request and make the minions retry on yet more connections.
TEST_F(HealthCheckerTest, OutOfDescriptorsDegradesButIsNotLostStorage) {
  Start();
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); }));
  halite::testing::DescriptorExhaustion exhaustion;
  // The round that found it publishes its report when it ends: wait for that report. A
  // descriptor the checker held when they ran out (its probe file) comes free after; taking
  // it again each time keeps the process out of descriptors, else every later probe uses it.
  nlohmann::json body;
  const bool reported = WaitUntil([&] {
    exhaustion.TopUp();
    body = Body();
    return checker_->descriptors_exhausted() && body.contains("degraded");
  });
  const bool lost = checker_->storage_lost().load();
  const bool healthy = Healthy();
  exhaustion.Release();
  ASSERT_EQ(exhaustion.error(), EMFILE);
  ASSERT_TRUE(reported) << body.dump();
  EXPECT_FALSE(lost);
  EXPECT_TRUE(healthy) << body.dump();
  ASSERT_EQ(body["degraded"].size(), 1u) << body.dump();
  EXPECT_NE(body["degraded"][0].get<std::string>().find("out of file descriptors"),
            std::string::npos);
  ASSERT_TRUE(WaitUntil([&] { return !checker_->descriptors_exhausted(); }));
  EXPECT_FALSE(checker_->storage_lost().load());
}

TEST_F(HealthCheckerTest, ALoneMastersJobCacheDownFailsHealthAtOnce) {
  Start();
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); }));
  job_cache_down_ = true;
  ASSERT_TRUE(WaitUntil([&] { return Problem("job cache: connection refused"); })) << Body().dump();
  job_cache_down_ = false;
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); })) << Body().dump();
}

TEST_F(HealthCheckerTest, ALoopThatStopsAnsweringIsNamed) {
  Start();
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); }));
  publisher_hung_ = true;
  ASSERT_TRUE(WaitUntil([&] { return Problem("publisher is not running"); })) << Body().dump();
  EXPECT_EQ(checker_->LoopProblems(), std::vector<std::string>{"publisher is not running"});
  EXPECT_FALSE(Problem("request server"));
  publisher_hung_ = false;
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); })) << Body().dump();
}

TEST_F(HealthCheckerTest, StopEndsTheThreadAndReportsStayReadable) {
  Start();
  ASSERT_TRUE(WaitUntil([&] { return Healthy(); }));
  checker_->Stop();
  checker_->Stop();  // twice is fine
  // No rounds any more: the verdict goes stale and says so.
  ASSERT_TRUE(WaitUntil([&] { return Problem("health checks are stuck"); })) << Body().dump();
}

}  // namespace
}  // namespace halite::cluster
