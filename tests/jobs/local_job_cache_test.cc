// LocalJobCache beyond the contract: Salt's byte layout, failures of the directory, cleanup
// details. Throughput is measured by bench/micro_bench.cc, not here.
#include "halite/jobs/local_job_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "file_modes.h"
#include "halite/jobs/jid.h"
#include "halite/wire/encoding.h"
#include "job_cache_testing.h"

namespace halite::jobs {
namespace {

namespace fs = std::filesystem;
using ::halite::testing::GroupOrOtherAccessible;
using ::halite::testing::ScopedUmask;
using testing::Id;
using testing::MakeReturn;
using testing::OutcomeTally;
using testing::ScratchDir;
using testing::StoreAndWait;
using FsyncMode = LocalJobCacheOptions::FsyncMode;
using namespace std::chrono_literals;

nlohmann::json LoadVectors() {
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/vectors/jobcache.json");
  return nlohmann::json::parse(in);
}

std::string Unhex(const nlohmann::json& hex) {
  auto bytes = wire::HexDecode(hex.get<std::string>());
  HALITE_CHECK(bytes.ok()) << bytes.error().ToString();
  return *bytes;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void WriteFile(const fs::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  HALITE_CHECK(out.good()) << path;
}

std::chrono::system_clock::time_point CtimeOf(const fs::path& path) {
  struct stat st {};
  HALITE_CHECK(::stat(path.c_str(), &st) == 0) << path;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_ctim.tv_sec) + std::chrono::nanoseconds(st.st_ctim.tv_nsec)));
}

class LocalJobCacheTest : public ::testing::TestWithParam<FsyncMode> {
 protected:
  void SetUp() override {
    cachedir_ = scratch_.path() / "cache";
    cache_ = Open();
  }

  std::unique_ptr<LocalJobCache> Open(std::size_t batch_max = 512,
                                      std::chrono::milliseconds max_delay = 0ms,
                                      std::size_t queue_max_bytes = 256u << 20) {
    LocalJobCacheOptions options;
    options.cachedir = cachedir_;
    options.fsync_mode = GetParam();
    options.batch_max = batch_max;
    options.max_delay = max_delay;
    options.queue_max_bytes = queue_max_bytes;
    auto cache = LocalJobCache::Open(options);
    HALITE_CHECK(cache.ok()) << cache.error().ToString();
    return std::move(cache).value();
  }

  fs::path JidPath(std::string_view jid) const { return cachedir_ / JidDir(jid); }

  ScratchDir scratch_;
  fs::path cachedir_;
  std::unique_ptr<LocalJobCache> cache_;
};

TEST_P(LocalJobCacheTest, VectorsRoundTripByteExact) {
  const nlohmann::json vectors = LoadVectors();
  for (const char* name : {"load_p_hex_example", "minions_p_hex_example", "return_p_hex_example",
                           "out_p_hex_example"}) {
    const std::string bytes = Unhex(vectors[name]);
    auto value = wire::Unpack(bytes);
    ASSERT_TRUE(value.ok()) << name << ": " << value.error().ToString();
    EXPECT_EQ(wire::HexEncode(wire::Pack(*value, wire::Packing::kBinType)),
              vectors[name].get<std::string>())
        << name;
  }
}

TEST_P(LocalJobCacheTest, FilesMatchSaltLayoutByteForByte) {
  const nlohmann::json vectors = LoadVectors();
  const std::string jid = vectors["jid"].get<std::string>();
  auto load = wire::Unpack(Unhex(vectors["load_p_hex_example"]));
  auto minions = wire::Unpack(Unhex(vectors["minions_p_hex_example"]));
  ASSERT_TRUE(load.ok() && minions.ok());
  Job job{jid, *load, {}};
  for (const wire::Value& minion : *minions->array()) job.minions.push_back(*minion.str());
  ASSERT_TRUE(cache_->SaveJob(job).ok());
  auto stored =
      StoreAndWait(*cache_, MakeReturn(jid, "minion1", wire::Value(true), 0, true, "nested"));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();

  const fs::path dir = cachedir_ / vectors["jid_dir_rel"].get<std::string>();
  EXPECT_EQ(ReadFile(dir / "jid"), vectors["jid_file_content"].get<std::string>());
  EXPECT_EQ(wire::HexEncode(ReadFile(dir / ".load.p")),
            vectors["load_p_hex_example"].get<std::string>());
  EXPECT_EQ(wire::HexEncode(ReadFile(dir / ".minions.p")),
            vectors["minions_p_hex_example"].get<std::string>());
  EXPECT_EQ(wire::HexEncode(ReadFile(dir / "minion1" / "return.p")),
            vectors["return_p_hex_example"].get<std::string>());
  EXPECT_EQ(wire::HexEncode(ReadFile(dir / "minion1" / "out.p")),
            vectors["out_p_hex_example"].get<std::string>());
  // Nothing else is left behind: no temp files.
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    names.push_back(fs::relative(entry.path(), dir).string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".load.p", ".minions.p", "jid", "minion1",
                                             "minion1/out.p", "minion1/return.p"}));
}

TEST_P(LocalJobCacheTest, SaveJobAddsTheJidToTheLoad) {
  // Salt's jobs.list_jobs reads load["jid"]; a load without it would break the whole listing.
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(
      cache_->SaveJob({jid, wire::Value::MapOf({{"fun", wire::Value("test.ping")}}), {}}).ok());
  auto load = wire::Unpack(ReadFile(JidPath(jid) / ".load.p"));
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(*load,
            wire::Value::MapOf({{"fun", wire::Value("test.ping")}, {"jid", wire::Value(jid)}}));
}

// What a master of a cluster scans for jobs its peers could not forward to it.
TEST_P(LocalJobCacheTest, JidsSinceListsRecentlySavedJobsAndDropsStaleMarkers) {
  const auto now = std::chrono::system_clock::now();
  const std::string first = GenerateJid(now - 2s);
  const std::string second = GenerateJid(now - 1s);
  const std::string stale = GenerateJid(now - std::chrono::minutes(11));
  auto job = [](const std::string& jid) {
    return Job{jid, wire::Value::MapOf({{"fun", wire::Value("test.ping")}}), {"m1"}};
  };
  EXPECT_TRUE(cache_->JidsSince("", 10)->empty());  // nothing saved yet: no directory
  ASSERT_TRUE(cache_->SaveJob(job(second)).ok());
  ASSERT_TRUE(cache_->SaveJob(job(first)).ok());
  ASSERT_TRUE(cache_->SaveJob(job(stale)).ok());
  ASSERT_TRUE(fs::exists(cachedir_ / "halite_recent_jobs" / stale));
  auto since = cache_->JidsSince(first, 10);
  ASSERT_TRUE(since.ok()) << since.error().ToString();
  EXPECT_EQ(*since, (std::vector<std::string>{first, second}));
  EXPECT_FALSE(fs::exists(cachedir_ / "halite_recent_jobs" / stale));  // past its keep
  EXPECT_EQ(*cache_->JidsSince(second, 10), std::vector<std::string>{second});
  EXPECT_EQ(*cache_->JidsSince(first, 1), std::vector<std::string>{first});
  // Not a jid: ignored, as is a marker for a job that is listed but not loadable.
  WriteFile(cachedir_ / "halite_recent_jobs" / "junk", "");
  EXPECT_EQ(cache_->JidsSince(first, 10)->size(), 2u);
}

TEST_P(LocalJobCacheTest, ReturnWithoutOutHasNoOutFile) {
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value("pong"))).ok());
  EXPECT_TRUE(fs::exists(JidPath(jid) / "jid"));  // Salt's prep_jid with a passed jid
  EXPECT_TRUE(fs::exists(JidPath(jid) / "web1" / "return.p"));
  EXPECT_FALSE(fs::exists(JidPath(jid) / "web1" / "out.p"));
  EXPECT_EQ(wire::Unpack(ReadFile(JidPath(jid) / "web1" / "return.p")).value(),
            wire::Value::MapOf({{"return", wire::Value("pong")}}));
}

TEST_P(LocalJobCacheTest, UnstorableMinionIdsAreRejected) {
  const std::string jid = "20250101120000123456";
  for (const char* id : {"", ".", "..", "../escape", "a/b", ".hidden", "jid", "nocache"}) {
    auto stored = StoreAndWait(*cache_, MakeReturn(jid, id, wire::Value(1)));
    ASSERT_FALSE(stored.ok()) << "'" << id << "'";
    EXPECT_EQ(stored.error().code, ErrorCode::kInvalidArgument) << "'" << id << "'";
  }
  EXPECT_FALSE(fs::exists(cachedir_ / "jobs" / "escape"));
  EXPECT_FALSE(fs::exists(JidPath(jid) / "escape"));
}

TEST_P(LocalJobCacheTest, VanishedCacheDirFailsAndRecovers) {
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value(1))).ok());
  ASSERT_TRUE(cache_->Check().ok());

  fs::remove_all(cachedir_);
  auto stored = StoreAndWait(*cache_, MakeReturn(jid, "web2", wire::Value(2)));
  ASSERT_FALSE(stored.ok());
  EXPECT_EQ(stored.error().code, ErrorCode::kUnavailable) << stored.error().ToString();
  stored = StoreAndWait(*cache_, MakeReturn("20250101120000999999", "web1", wire::Value(2)));
  EXPECT_FALSE(stored.ok());
  EXPECT_FALSE(cache_->Check().ok());
  EXPECT_FALSE(cache_->ListJobs().ok());
  EXPECT_FALSE(fs::exists(cachedir_)) << "the cachedir itself must never be re-created";

  fs::create_directory(cachedir_);
  stored = StoreAndWait(*cache_, MakeReturn(jid, "web2", wire::Value(2)));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(*stored, StoreOutcome::kStored);
  Status check = cache_->Check();
  EXPECT_TRUE(check.ok()) << check.error().ToString();
  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok());
  ASSERT_EQ(returns->size(), 1u);
  EXPECT_EQ((*returns)[0].minion_id, "web2");
}

// Clears the capabilities that let root ignore file modes from this thread's effective set,
// and so from every thread it starts meanwhile (capabilities are per thread in Linux); puts
// them back on destruction. Does nothing for a user who has none of them.
class FileModesApplyToRoot {
 public:
  FileModesApplyToRoot() {
    HALITE_CHECK(::syscall(SYS_capget, &header_, saved_) == 0) << std::strerror(errno);
    __user_cap_data_struct dropped[2] = {saved_[0], saved_[1]};
    for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}) {
      dropped[cap / 32].effective &= ~(1u << (cap % 32));
    }
    HALITE_CHECK(::syscall(SYS_capset, &header_, dropped) == 0) << std::strerror(errno);
  }
  ~FileModesApplyToRoot() {
    HALITE_CHECK(::syscall(SYS_capset, &header_, saved_) == 0) << std::strerror(errno);
  }
  FileModesApplyToRoot(const FileModesApplyToRoot&) = delete;
  FileModesApplyToRoot& operator=(const FileModesApplyToRoot&) = delete;

 private:
  __user_cap_header_struct header_{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct saved_[2]{};
};

TEST_P(LocalJobCacheTest, UnwritableJidDirFailsTheCallback) {
  // CI runs as root: the cache and its writer threads start without the override.
  FileModesApplyToRoot modes_apply;
  cache_.reset();
  cache_ = Open();
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(cache_->SaveJob({jid, wire::Value::EmptyMap(), {}}).ok());
  fs::permissions(JidPath(jid), fs::perms::owner_read | fs::perms::owner_exec);
  auto stored = StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value(1)));
  ASSERT_FALSE(stored.ok());
  EXPECT_EQ(stored.error().code, ErrorCode::kPermissionDenied) << stored.error().ToString();
  fs::permissions(JidPath(jid), fs::perms::owner_all);
  stored = StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value(1)));
  EXPECT_TRUE(stored.ok());
}

TEST_P(LocalJobCacheTest, CorruptLoadIsDataLoss) {
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(cache_->SaveJob({jid, wire::Value::MapOf({{"fun", wire::Value("x")}}), {"a"}}).ok());
  ASSERT_TRUE(
      cache_
          ->SaveJob(
              {"20250101120000123457", wire::Value::MapOf({{"fun", wire::Value("y")}}), {"a"}})
          .ok());
  WriteFile(JidPath(jid) / ".load.p", "\x92\x01");  // truncated array
  auto job = cache_->LoadJob(jid);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::kDataLoss);
  auto jobs = cache_->ListJobs();  // the listing skips it
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].jid, "20250101120000123457");

  WriteFile(JidPath(jid) / ".load.p", wire::Pack(wire::Value::EmptyMap(), wire::Packing::kBinType));
  WriteFile(JidPath(jid) / ".minions.p", "\xc1");  // never-used msgpack byte
  job = cache_->LoadJob(jid);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::kDataLoss);
}

TEST_P(LocalJobCacheTest, SyndicMinionListsJoinTheUnion) {
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(cache_->SaveJob({jid, wire::Value::EmptyMap(), {"b"}}).ok());
  WriteFile(JidPath(jid) / ".minions.syndic1.p",
            wire::Pack(wire::Value(wire::Array{"c", "a", "b"}), wire::Packing::kBinType));
  auto job = cache_->LoadJob(jid);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->minions, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_P(LocalJobCacheTest, TornReturnLeftByACrashIsReplaced) {
  // A crash before a batch was durable can leave a minion directory with an empty or missing
  // return.p. That return was never acknowledged, so the minion's retry must be stored.
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn(jid, "other", wire::Value(0))).ok());
  fs::create_directory(JidPath(jid) / "empty");
  WriteFile(JidPath(jid) / "empty" / "return.p", "");
  fs::create_directory(JidPath(jid) / "missing");
  for (const char* minion : {"empty", "missing"}) {
    auto stored = StoreAndWait(*cache_, MakeReturn(jid, minion, wire::Value("retry")));
    ASSERT_TRUE(stored.ok()) << stored.error().ToString();
    EXPECT_EQ(*stored, StoreOutcome::kStored) << minion;
  }
  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok());
  ASSERT_EQ(returns->size(), 3u);
  EXPECT_EQ((*returns)[0].minion_id, "empty");
  EXPECT_EQ((*returns)[0].ret, wire::Value("retry"));
  EXPECT_EQ((*returns)[1].minion_id, "missing");
}

TEST_P(LocalJobCacheTest, LoadReturnsSkipsUnreadableReturnsAndReadsSaltsOldFormat) {
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn(jid, "good", wire::Value(1))).ok());
  fs::create_directory(JidPath(jid) / "torn");
  WriteFile(JidPath(jid) / "torn" / "return.p", "\xa5zz");
  fs::create_directory(JidPath(jid) / "old");
  WriteFile(JidPath(jid) / "old" / "return.p",
            wire::Pack(wire::Value("bare"), wire::Packing::kBinType));
  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  ASSERT_EQ(returns->size(), 2u);
  EXPECT_EQ((*returns)[0].minion_id, "good");
  EXPECT_EQ((*returns)[1].minion_id, "old");
  EXPECT_EQ((*returns)[1].ret, wire::Value("bare"));
}

TEST_P(LocalJobCacheTest, CleanOldAgeIsTheJidFileCtime) {
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(cache_->SaveJob({jid, wire::Value::EmptyMap(), {"a"}}).ok());
  const auto ctime = CtimeOf(JidPath(jid) / "jid");
  auto removed = cache_->CleanOld(60s, ctime + 60s);  // exactly `keep` old: kept, as in Salt
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0u);
  EXPECT_TRUE(fs::exists(JidPath(jid)));
  removed = cache_->CleanOld(60s, ctime + 60s + 1us);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  EXPECT_FALSE(fs::exists(JidPath(jid)));
}

TEST_P(LocalJobCacheTest, CleanOldRemovesStrayAndEmptyDirectories) {
  const fs::path stray = cachedir_ / "jobs" / "ab" / "cdef";  // no jid file
  const fs::path empty_top = cachedir_ / "jobs" / "zz";
  fs::create_directories(stray / "web1");
  fs::create_directories(empty_top);
  const auto now = std::chrono::system_clock::now();
  auto removed = cache_->CleanOld(1h, now);  // fresh: a writer may be filling them right now
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0u);
  EXPECT_TRUE(fs::exists(stray));
  EXPECT_TRUE(fs::exists(empty_top));
  removed = cache_->CleanOld(1h, now + 2h);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  EXPECT_FALSE(fs::exists(stray));
  EXPECT_FALSE(fs::exists(empty_top));
  EXPECT_TRUE(fs::exists(cachedir_ / "jobs" / "ab"));  // emptied now; goes in a later pass
}

TEST_P(LocalJobCacheTest, CheckLeavesNothingBehind) {
  ASSERT_TRUE(cache_->Check().ok());
  ASSERT_TRUE(cache_->Check().ok());
  std::size_t entries = 0;
  for (const auto& entry : fs::recursive_directory_iterator(cachedir_ / "jobs")) {
    EXPECT_TRUE(entry.is_directory()) << entry.path();  // only the probe root may stay
    ++entries;
  }
  EXPECT_LE(entries, 1u);
  // And the listing ignores it.
  auto jobs = cache_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST_P(LocalJobCacheTest, SmallBatchesWithDelayStoreEverything) {
  cache_ = Open(/*batch_max=*/4, /*max_delay=*/2ms);
  OutcomeTally tally;
  for (int i = 0; i < 50; ++i) {
    cache_->StoreReturn(MakeReturn("20250101120000123456", Id("m", i), wire::Value(i)),
                        tally.Callback());
  }
  ASSERT_TRUE(tally.WaitFor(50));
  EXPECT_EQ(tally.stored(), 50u) << tally.last_error();
}

// Returns waiting for the writer are bounded in bytes, as the PostgreSQL cache's are: with a
// stalled shared folder they piled up in memory. Here the writer holds a partial batch for
// max_delay (5 s), so what comes meanwhile waits in the queue: with room for 1 MiB, of ten
// returns of 300 KiB the first three wait and the others are refused at once (not
// acknowledged, so their minions send them again).
TEST_P(LocalJobCacheTest, ReturnsWaitingForTheWriterAreBoundedInBytes) {
  cache_ = Open(/*batch_max=*/512, /*max_delay=*/5000ms, /*queue_max_bytes=*/1u << 20);
  OutcomeTally tally;
  for (int i = 0; i < 10; ++i) {
    cache_->StoreReturn(
        MakeReturn("20250101120000123456", Id("m", i), wire::Value(std::string(300 << 10, 'r'))),
        tally.Callback());
  }
  ASSERT_TRUE(tally.WaitFor(10));
  EXPECT_EQ(tally.stored(), 3u);
  EXPECT_EQ(tally.errors(), 7u);
  EXPECT_NE(tally.last_error().find("write queue is full"), std::string::npos)
      << tally.last_error();
}

TEST_P(LocalJobCacheTest, SharedDirectoryBetweenTwoInstances) {
  // Two masters on one shared directory: mkdir decides, so each return is stored once.
  auto other = Open();
  const std::string jid = "20250101120000123456";
  OutcomeTally tally;
  std::thread a([&] {
    for (int i = 0; i < 300; ++i) {
      cache_->StoreReturn(MakeReturn(jid, Id("m", i), wire::Value("a")), tally.Callback());
    }
  });
  std::thread b([&] {
    for (int i = 0; i < 300; ++i) {
      other->StoreReturn(MakeReturn(jid, Id("m", i), wire::Value("b")), tally.Callback());
    }
  });
  a.join();
  b.join();
  ASSERT_TRUE(tally.WaitFor(600));
  EXPECT_EQ(tally.errors(), 0u) << tally.last_error();
  EXPECT_EQ(tally.stored(), 300u);
  EXPECT_EQ(tally.duplicates(), 300u);
}

TEST_P(LocalJobCacheTest, FilesArePrivateWhateverTheUmask) {
  // Returns and job arguments may hold secrets: nobody but the master's user may read them.
  ScopedUmask umask(0);
  cachedir_ = scratch_.path() / "private-cache";
  cache_ = Open();
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(cache_
                  ->SaveJob({jid,
                             wire::Value::MapOf({{"fun", wire::Value("cmd.run")},
                                                 {"arg", wire::Value("echo secret")}}),
                             {"web1", "web2"}})
                  .ok());
  ASSERT_TRUE(
      StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value("secret"), 0, true, "nested"))
          .ok());
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn("20250101120000999999", "web2", wire::Value(1)))
                  .ok());  // a jid the master never saved: prepared by the writer
  ASSERT_TRUE(cache_->Check().ok());
  ASSERT_TRUE(fs::exists(JidPath(jid) / "web1" / "return.p"));
  const std::vector<std::string> offenders = GroupOrOtherAccessible(cachedir_);
  std::string listing;
  for (const std::string& offender : offenders) listing += "\n  " + offender;
  EXPECT_TRUE(offenders.empty()) << "group/other may read or enter:" << listing;
}

INSTANTIATE_TEST_SUITE_P(FsyncModes, LocalJobCacheTest,
                         ::testing::Values(FsyncMode::kSyncfs, FsyncMode::kPerFile),
                         [](const ::testing::TestParamInfo<FsyncMode>& info) {
                           return info.param == FsyncMode::kSyncfs ? std::string("Syncfs")
                                                                   : std::string("PerFile");
                         });

}  // namespace
}  // namespace halite::jobs
