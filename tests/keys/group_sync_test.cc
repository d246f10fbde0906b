#include "halite/keys/group_sync.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "halite/keys/fs.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// A flush that the test holds until it says go; it records what each flush was given.
class ControlledFlush {
 public:
  GroupSync::Flush AsFlush() {
    return [this](const std::vector<fs::path>& files) {
      std::unique_lock lock(mu_);
      calls_.push_back(files);
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_ > 0; });
      --released_;
      return result_;
    };
  }
  // Lets one waiting (or future) flush finish with `result`.
  void Release(Status result = OkStatus()) {
    std::lock_guard lock(mu_);
    result_ = std::move(result);
    ++released_;
    cv_.notify_all();
  }
  // Lets every flush through from now on.
  void ReleaseAll() {
    std::lock_guard lock(mu_);
    released_ = 1 << 30;
    cv_.notify_all();
  }
  // True once `n` flushes have started, false on timeout.
  bool WaitForCalls(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(10), [&] { return calls_.size() >= n; });
  }
  std::vector<std::vector<fs::path>> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<fs::path>> calls_;
  int released_ = 0;
  Status result_ = OkStatus();
};

// Collects AfterDurable outcomes and lets the test wait for them.
class Outcomes {
 public:
  std::function<void(Status)> Callback() {
    return [this](Status st) {
      std::lock_guard lock(mu_);
      results_.push_back(std::move(st));
      cv_.notify_all();
    };
  }
  bool WaitFor(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(10), [&] { return results_.size() >= n; });
  }
  std::vector<Status> results() {
    std::lock_guard lock(mu_);
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Status> results_;
};

class GroupSyncTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-group-sync-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<GroupSync> OpenControlled(ControlledFlush& flush) {
    auto sync = GroupSync::Open({dir_, "test-sync", flush.AsFlush()});
    EXPECT_TRUE(sync.ok());
    return std::move(sync).value();
  }

  fs::path dir_;
};

TEST_F(GroupSyncTest, NothingWrittenRunsTheCallbackAtOnceOnTheCallersThread) {
  ControlledFlush flush;
  auto sync = OpenControlled(flush);
  std::thread::id ran_on;
  sync->AfterDurable([&](Status st) {
    EXPECT_TRUE(st.ok());
    ran_on = std::this_thread::get_id();
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(sync->flushes(), 0u);
}

TEST_F(GroupSyncTest, CallbackWaitsForTheFlushThatCoversTheWrite) {
  ControlledFlush flush;
  auto sync = OpenControlled(flush);
  Outcomes outcomes;
  sync->Wrote(dir_ / "a");
  sync->AfterDurable(outcomes.Callback());
  ASSERT_TRUE(flush.WaitForCalls(1));
  EXPECT_TRUE(outcomes.results().empty());  // the flush has not finished
  flush.Release();
  ASSERT_TRUE(outcomes.WaitFor(1));
  EXPECT_TRUE(outcomes.results()[0].ok());
  EXPECT_EQ(flush.calls()[0], std::vector<fs::path>{dir_ / "a"});
  // Everything is flushed now: a new waiter needs no flush.
  bool ran = false;
  sync->AfterDurable([&](Status st) { ran = st.ok(); });
  EXPECT_TRUE(ran);
}

TEST_F(GroupSyncTest, WritesDuringAFlushShareTheNextOne) {
  ControlledFlush flush;
  auto sync = OpenControlled(flush);
  Outcomes outcomes;
  sync->Wrote(dir_ / "first");
  sync->AfterDurable(outcomes.Callback());
  ASSERT_TRUE(flush.WaitForCalls(1));
  // While the first flush runs, many writers arrive; they must not be acknowledged by it.
  for (int i = 0; i < 20; ++i) {
    sync->Wrote(dir_ / ("k" + std::to_string(i)));
    sync->AfterDurable(outcomes.Callback());
  }
  flush.Release();
  ASSERT_TRUE(outcomes.WaitFor(1));
  ASSERT_TRUE(flush.WaitForCalls(2));
  EXPECT_EQ(outcomes.results().size(), 1u);
  flush.Release();
  ASSERT_TRUE(outcomes.WaitFor(21));
  for (const Status& st : outcomes.results()) EXPECT_TRUE(st.ok());
  EXPECT_EQ(sync->flushes(), 2u);
  EXPECT_EQ(flush.calls()[1].size(), 20u);
}

TEST_F(GroupSyncTest, FailedFlushReachesItsWaitersAndTheNextFlushRetriesTheFiles) {
  ControlledFlush flush;
  auto sync = OpenControlled(flush);
  Outcomes outcomes;
  sync->Wrote(dir_ / "key");
  sync->AfterDurable(outcomes.Callback());
  flush.Release(Error::Unavailable("disk on fire"));
  ASSERT_TRUE(outcomes.WaitFor(1));
  ASSERT_FALSE(outcomes.results()[0].ok());
  EXPECT_EQ(outcomes.results()[0].error().code, ErrorCode::kUnavailable);

  // Not durable yet, so the next waiter needs a flush, which retries the same file.
  sync->AfterDurable(outcomes.Callback());
  flush.Release();
  ASSERT_TRUE(outcomes.WaitFor(2));
  EXPECT_TRUE(outcomes.results()[1].ok());
  ASSERT_EQ(flush.calls().size(), 2u);
  EXPECT_EQ(flush.calls()[1], std::vector<fs::path>{dir_ / "key"});
}

TEST_F(GroupSyncTest, ShutdownFlushesAndAnswersEveryWaiter) {
  ControlledFlush flush;
  auto sync = OpenControlled(flush);
  Outcomes outcomes;
  for (int i = 0; i < 5; ++i) {
    sync->Wrote(dir_ / std::to_string(i));
    sync->AfterDurable(outcomes.Callback());
  }
  flush.ReleaseAll();
  sync->Shutdown();
  EXPECT_EQ(outcomes.results().size(), 5u);
  for (const Status& st : outcomes.results()) EXPECT_TRUE(st.ok());
  // After shutdown, unflushed writes cannot be promised durable.
  sync->Wrote(dir_ / "late");
  Status late = OkStatus();
  sync->AfterDurable([&](Status st) { late = std::move(st); });
  EXPECT_FALSE(late.ok());
}

TEST_F(GroupSyncTest, RealFlushMakesAWrittenFileDurable) {
  auto sync = GroupSync::Open({dir_, "test-sync", nullptr});
  ASSERT_TRUE(sync.ok());
  const fs::path file = dir_ / "minion-1";
  ASSERT_TRUE(WriteFileAtomic(file, "pem", 0644, Sync::kNone).ok());
  (*sync)->Wrote(file);
  std::promise<Status> done;
  (*sync)->AfterDurable([&](Status st) { done.set_value(std::move(st)); });
  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(seconds(30)), std::future_status::ready);
  EXPECT_TRUE(future.get().ok());
  EXPECT_EQ((*sync)->flushes(), 1u);
}

TEST_F(GroupSyncTest, OpenFailsForAMissingDirectory) {
  auto sync = GroupSync::Open({dir_ / "missing", "test-sync", nullptr});
  ASSERT_FALSE(sync.ok());
  EXPECT_EQ(sync.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace halite::keys
