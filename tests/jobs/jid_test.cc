#include "halite/jobs/jid.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace halite::jobs {
namespace {

using namespace std::chrono_literals;

nlohmann::json LoadVectors() {
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/vectors/jobcache.json");
  return nlohmann::json::parse(in);
}

std::chrono::system_clock::time_point Utc(int year, int month, int day, int hour, int minute,
                                          int second, int micros) {
  using namespace std::chrono;
  const sys_days date =
      year_month_day{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                     std::chrono::day(static_cast<unsigned>(day))};
  return system_clock::time_point(date) + hours(hour) + minutes(minute) + seconds(second) +
         microseconds(micros);
}

TEST(JidTest, GenerateJidIsUtcWithMicroseconds) {
  EXPECT_EQ(GenerateJid(Utc(2025, 1, 1, 12, 0, 0, 123456)), "20250101120000123456");
  EXPECT_EQ(GenerateJid(Utc(1999, 12, 31, 23, 59, 59, 7)), "19991231235959000007");
  // Sub-microseconds are truncated, as Python's %f.
  EXPECT_EQ(GenerateJid(Utc(2025, 1, 1, 0, 0, 0, 5) + 999ns), "20250101000000000005");
}

TEST(JidTest, IsJidFollowsSalt) {
  EXPECT_TRUE(IsJid("20250101120000123456"));
  EXPECT_TRUE(IsJid("20250101120000123456_1234"));
  EXPECT_FALSE(IsJid("20250101120000123456_"));
  EXPECT_FALSE(IsJid("2025010112000012345"));
  EXPECT_FALSE(IsJid("202501011200001234567"));
  EXPECT_FALSE(IsJid("2025010112000012345x"));
  EXPECT_FALSE(IsJid("req"));
  EXPECT_FALSE(IsJid(""));
  // Stricter than Salt in the suffix: it goes into event tags (finding 22).
  EXPECT_TRUE(IsJid("20250101120000123456_web1.example-2_x"));
  EXPECT_TRUE(IsJid("20250101120000123456_" + std::string(64, '7')));
  EXPECT_FALSE(IsJid("20250101120000123456_" + std::string(65, '7')));
  EXPECT_FALSE(IsJid("20250101120000123456_\r\rdata: {}"));
  EXPECT_FALSE(IsJid("20250101120000123456_1/ret/other"));
  EXPECT_FALSE(IsJid("20250101120000123456_1 2"));
  EXPECT_FALSE(IsJid(std::string("20250101120000123456_1\0", 23)));
}

TEST(JidTest, JidToStartTimeFollowsSalt) {
  EXPECT_EQ(JidToStartTime("20250101120000123456"), "2025, Jan 01 12:00:00.123456");
  EXPECT_EQ(JidToStartTime("20251231235959000001_77"), "2025, Dec 31 23:59:59.000001");
  EXPECT_EQ(JidToStartTime("20251301120000123456"), "");  // no month 13
  EXPECT_EQ(JidToStartTime("nocache"), "");
}

TEST(JidTest, JidDirMatchesSaltVector) {
  const nlohmann::json vectors = LoadVectors();
  EXPECT_EQ(JidDir(vectors["jid"].get<std::string>()), vectors["jid_dir_rel"].get<std::string>());
}

TEST(JidTest, GeneratorIsStrictlyIncreasingWhenTheClockStalls) {
  JidGenerator generator;
  const auto t = Utc(2025, 1, 1, 12, 0, 0, 999999);
  EXPECT_EQ(generator.NextAt(t), "20250101120000999999");
  EXPECT_EQ(generator.NextAt(t), "20250101120001000000");
  EXPECT_EQ(generator.NextAt(t - 1h), "20250101120001000001");  // clock stepped back
  EXPECT_EQ(generator.NextAt(t + 1s), "20250101120001999999");
}

TEST(JidTest, GeneratorAppendsSuffix) {
  JidGenerator generator("master1");
  const std::string jid = generator.NextAt(Utc(2025, 1, 1, 12, 0, 0, 1));
  EXPECT_EQ(jid, "20250101120000000001_master1");
  EXPECT_TRUE(IsJid(jid));
}

TEST(JidTest, GeneratorIsUniqueAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  JidGenerator generator;
  std::vector<std::vector<std::string>> jids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) jids[t].push_back(generator.Next());
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<std::string> all;
  for (const auto& list : jids) {
    for (std::size_t i = 1; i < list.size(); ++i) EXPECT_LT(list[i - 1], list[i]);
    for (const std::string& jid : list) {
      EXPECT_TRUE(IsJid(jid)) << jid;
      all.insert(jid);
    }
  }
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kPerThread));
}

}  // namespace
}  // namespace halite::jobs
