#include "halite/swarm/ledger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace halite::swarm {
namespace {

std::vector<std::vector<std::string>> ReadRecords(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> out;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, '\t');) fields.push_back(f);
    out.push_back(std::move(fields));
  }
  return out;
}

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/halite-ledger-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(LedgerTest, RecordsFromManyThreadsAreWholeLinesInTheFile) {
  const auto path = dir_ / "ledger";
  auto ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok()) << ledger.error().ToString();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        std::string id = "m" + std::to_string(t);
        std::string jid = std::to_string(i);
        (*ledger)->PublisherConnection(id, true);
        (*ledger)->JobStarted(id, jid, "cmd.run\twith\ntabs");
        (*ledger)->ReturnAcknowledged(id, jid);
      }
    });
  }
  for (auto& t : threads) t.join();
  (*ledger)->Close();
  LedgerStats stats = (*ledger)->Stats();
  EXPECT_EQ(stats.lost, 0u);
  EXPECT_EQ(stats.write_errors, 0u);
  EXPECT_GE(stats.batches, 1u);

  auto records = ReadRecords(path);
  ASSERT_EQ(records.size(), 1u + 4 * 500 * 3);
  EXPECT_EQ(records[0][0], "# halite-swarm ledger " + std::to_string(getpid()));
  std::map<std::string, int> kinds;
  std::map<std::string, int> acks_before_runs;  // per minion: an ack never precedes its run
  std::map<std::string, std::set<std::string>> ran;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    ASSERT_GE(r.size(), 3u) << i;
    EXPECT_GT(std::stoll(r[0]), 1'600'000'000'000'000LL);  // microseconds since 1970
    kinds[r[1]]++;
    if (r[1] == "run") {
      ASSERT_EQ(r.size(), 5u);
      EXPECT_EQ(r[4], "cmd.run with tabs");
      ran[r[2]].insert(r[3]);
    }
    if (r[1] == "ack" && !ran[r[2]].count(r[3])) acks_before_runs[r[2]]++;
  }
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"ack", 2000}, {"run", 2000}, {"up", 2000}}));
  EXPECT_TRUE(acks_before_runs.empty());
}

TEST_F(LedgerTest, ReopeningAppends) {
  const auto path = dir_ / "ledger";
  for (int round = 0; round < 2; ++round) {
    auto ledger = Ledger::Open(path);
    ASSERT_TRUE(ledger.ok());
    (*ledger)->PublisherConnection("m1", round == 0);
  }
  auto records = ReadRecords(path);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[1][1], "up");
  EXPECT_EQ(records[3][1], "down");
}

TEST_F(LedgerTest, AnUnwritablePathIsAnError) {
  auto ledger = Ledger::Open(dir_ / "no-such-dir" / "ledger");
  ASSERT_FALSE(ledger.ok());
  EXPECT_EQ(ledger.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(ledger.error().message.find("no-such-dir"), std::string::npos);
}

}  // namespace
}  // namespace halite::swarm
