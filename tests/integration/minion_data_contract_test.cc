// The minion data cache (master/minion_data.h) run against both backends, so that they cannot
// drift (issue 17): the files of <cachedir>/minions and PostgreSQL (`cache: postgres`, a real
// server). Each "master" is a store of its own on the same cachedir or database, as the
// masters of a cluster are.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "halite/master/minion_data.h"
#include "harness.h"
#include "wait.h"
#ifdef HALITE_WITH_POSTGRES
#include "../jobs/postgres_testing.h"
#include "halite/jobs/pg_connection.h"
#include "halite/stores/postgres_minion_data.h"
#endif

namespace halite::testing {
namespace {

using namespace std::chrono_literals;
using wire::Value;

class MinionDataContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#ifdef HALITE_WITH_POSTGRES
    schema_ = jobs::testing::FreshSchema();
#endif
  }
  // A master's store on the shared cachedir or database.
  std::unique_ptr<master::MinionData> Open() {
#ifdef HALITE_WITH_POSTGRES
    if (GetParam() == "postgres") {
      stores::PostgresMinionDataOptions options;
      options.dsn = jobs::testing::SharedPgDsn();
      options.schema = schema_;
      options.master_id = "m" + std::to_string(++opened_);
      options.feed_period = 100ms;
      auto store = stores::PostgresMinionData::Open(options);
      EXPECT_TRUE(store.ok()) << store.error().ToString();
      return store.ok() ? std::move(store).value() : nullptr;
    }
#endif
    return std::make_unique<master::FileMinionData>(tmp_.path());
  }

  TempDir tmp_;
  std::string schema_;
  int opened_ = 0;
};

const Value kGrains = Value::MapOf({{"os", "Debian"}, {"num_cpus", 2}});
const Value kPillar = Value::MapOf({{"role", "web"}, {"ports", Value(wire::Array{80, 443})}});

TEST_P(MinionDataContractTest, StoredGrainsAndPillarReadBackAsStored) {
  auto data = Open();
  ASSERT_NE(data, nullptr);
  EXPECT_FALSE(data->Grains("web1"));
  EXPECT_FALSE(data->Pillar("web1"));
  ASSERT_TRUE(data->Store("web1", kGrains, kPillar).ok());
  EXPECT_EQ(data->Grains("web1"), kGrains);
  EXPECT_EQ(data->Pillar("web1"), kPillar);
  // Stored again unchanged, and then changed: the change is what is read.
  ASSERT_TRUE(data->Store("web1", kGrains, kPillar).ok());
  const Value grains2 = Value::MapOf({{"os", "Ubuntu"}});
  ASSERT_TRUE(data->Store("web1", grains2, kPillar).ok());
  EXPECT_EQ(data->Grains("web1"), grains2);
  // No grains (cache.clear_grains) keeps the pillar; no pillar reads as {}.
  ASSERT_TRUE(data->Store("web1", Value(), kPillar).ok());
  EXPECT_FALSE(data->Grains("web1"));
  EXPECT_EQ(data->Pillar("web1"), kPillar);
  ASSERT_TRUE(data->Store("web2", kGrains, Value()).ok());
  EXPECT_EQ(data->Pillar("web2"), Value::EmptyMap());
}

TEST_P(MinionDataContractTest, TheMineMergesReplacesAndForgets) {
  auto data = Open();
  ASSERT_NE(data, nullptr);
  EXPECT_FALSE(data->HasMine("db1"));
  EXPECT_EQ(data->Mine("db1"), Value::EmptyMap());
  ASSERT_TRUE(data->UpdateMine("db1", Value::MapOf({{"a", 1}, {"b", "two"}}), false, 0).ok());
  ASSERT_TRUE(data->UpdateMine("db1", Value::MapOf({{"b", 3}}), false, 0).ok());
  EXPECT_TRUE(data->HasMine("db1"));
  EXPECT_EQ(data->Mine("db1"), Value::MapOf({{"a", 1}, {"b", 3}}));
  ASSERT_TRUE(data->UpdateMine("db1", Value::MapOf({{"c", true}}), /*clear=*/true, 0).ok());
  EXPECT_EQ(data->Mine("db1"), Value::MapOf({{"c", true}}));
  ASSERT_TRUE(data->UpdateMine("db1", Value::MapOf({{"d", 4}}), false, 0).ok());
  ASSERT_TRUE(data->DeleteMine("db1", "c").ok());
  ASSERT_TRUE(data->DeleteMine("db1", "never-there").ok());
  EXPECT_EQ(data->Mine("db1"), Value::MapOf({{"d", 4}}));
  EXPECT_EQ(data->UpdateMine("db1", Value("not a map"), false, 0).error().code,
            ErrorCode::kInvalidArgument);
  ASSERT_TRUE(data->FlushMine("db1").ok());
  EXPECT_FALSE(data->HasMine("db1"));
  EXPECT_EQ(data->Mine("db1"), Value::EmptyMap());
}

TEST_P(MinionDataContractTest, ClearDataKeepsTheMineAndRemoveForgetsEverything) {
  auto data = Open();
  ASSERT_NE(data, nullptr);
  for (const char* id : {"a1", "a2"}) {
    ASSERT_TRUE(data->Store(id, kGrains, kPillar).ok());
    ASSERT_TRUE(data->UpdateMine(id, Value::MapOf({{"f", 1}}), false, 0).ok());
  }
  ASSERT_TRUE(data->ClearData("a1").ok());
  EXPECT_FALSE(data->Grains("a1"));
  EXPECT_FALSE(data->Pillar("a1"));
  EXPECT_TRUE(data->HasMine("a1"));
  ASSERT_TRUE(data->Remove("a2").ok());
  EXPECT_FALSE(data->Grains("a2"));
  EXPECT_FALSE(data->Pillar("a2"));
  EXPECT_FALSE(data->HasMine("a2"));
  // Removing what was never stored is no error; storing again after a removal works.
  ASSERT_TRUE(data->Remove("never").ok());
  ASSERT_TRUE(data->Store("a2", kGrains, kPillar).ok());
  EXPECT_EQ(data->Grains("a2"), kGrains);
}

// mine_max_bytes (finding 28): the bound counts each function's name and packed data, as
// the mine would be after the update; past it nothing is stored.
TEST_P(MinionDataContractTest, TheMineIsBoundedByMaxBytes) {
  auto data = Open();
  ASSERT_TRUE(data);
  const Value small = Value(std::string(100, 's'));
  const Value big = Value(std::string(1000, 'b'));
  const std::size_t max = master::MineEntryBytes("a", small) + master::MineEntryBytes("b", big);
  ASSERT_TRUE(data->UpdateMine("m1", Value::MapOf({{"a", small}}), false, max).ok());
  ASSERT_TRUE(data->UpdateMine("m1", Value::MapOf({{"b", big}}), false, max).ok());  // exactly
  const Value full = Value::MapOf({{"a", small}, {"b", big}});
  auto over = data->UpdateMine("m1", Value::MapOf({{"c", 1}}), false, max);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, ErrorCode::kResourceExhausted) << over.error().ToString();
  EXPECT_EQ(data->Mine("m1"), full);
  // Replacing a function counts its new data only; a clear update counts only what it sends.
  EXPECT_TRUE(data->UpdateMine("m1", Value::MapOf({{"b", Value("x")}, {"c", 1}}), false, max).ok());
  EXPECT_FALSE(data->UpdateMine("m1", Value::MapOf({{"d", big}}), false, max).ok());
  EXPECT_TRUE(data->UpdateMine("m1", Value::MapOf({{"d", big}}), /*clear=*/true, max).ok());
  EXPECT_EQ(data->Mine("m1"), Value::MapOf({{"d", big}}));
  // 0: no bound.
  EXPECT_TRUE(data->UpdateMine("m1", Value::MapOf({{"e", big}, {"f", big}}), false, 0).ok());
}

// Updates racing each other cannot all pass the check: eight at once, each with a function of
// two thirds of the bound, leave exactly one stored. On PostgreSQL each comes from a master of
// its own; files are bounded per master (the masters of a shared folder: last writer wins).
TEST_P(MinionDataContractTest, UpdatesAtOnceCannotAllPassTheBound) {
  constexpr int kWriters = 8;
  std::vector<std::unique_ptr<master::MinionData>> stores;
  for (int i = 0; i < (GetParam() == "postgres" ? kWriters : 1); ++i) stores.push_back(Open());
  for (const auto& store : stores) ASSERT_TRUE(store);
  const Value payload = Value(std::string(2000, 'p'));
  const std::size_t max = 3 * master::MineEntryBytes("f0", payload) / 2;
  std::atomic<int> ready{0};
  std::vector<Status> results(kWriters, OkStatus());
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kWriters) std::this_thread::yield();  // start together
      master::MinionData& store = *stores[static_cast<std::size_t>(i) % stores.size()];
      results[static_cast<std::size_t>(i)] =
          store.UpdateMine("race", Value::MapOf({{"f" + std::to_string(i), payload}}), false, max);
    });
  }
  for (auto& t : writers) t.join();
  int passed = 0;
  for (const Status& st : results) {
    if (st.ok()) {
      ++passed;
    } else {
      EXPECT_EQ(st.error().code, ErrorCode::kResourceExhausted) << st.error().ToString();
    }
  }
  EXPECT_EQ(passed, 1);
  const Value mine = stores[0]->Mine("race");
  ASSERT_TRUE(mine.is_map());
  EXPECT_EQ(mine.map()->size(), 1u);
}

// What one master stores, another reads: grains (held in memory by the PostgreSQL backend,
// refreshed by its feed), their change and their removal; pillar and mine at once.
TEST_P(MinionDataContractTest, AnotherMasterSeesWritesChangesAndRemovals) {
  auto m1 = Open();
  auto m2 = Open();
  ASSERT_TRUE(m1 && m2);
  EXPECT_FALSE(m2->Grains("x1"));  // m2 has read (and holds) the empty table
  ASSERT_TRUE(m1->Store("x1", kGrains, kPillar).ok());
  ASSERT_TRUE(m1->UpdateMine("x1", Value::MapOf({{"f", 1}}), false, 0).ok());
  EXPECT_TRUE(WaitFor([&] { return m2->Grains("x1") == kGrains; }, 10s));
  EXPECT_EQ(m2->Pillar("x1"), kPillar);
  EXPECT_EQ(m2->Mine("x1"), Value::MapOf({{"f", 1}}));
  const Value changed = Value::MapOf({{"os", "Alpine"}});
  ASSERT_TRUE(m1->Store("x1", changed, kPillar).ok());
  EXPECT_TRUE(WaitFor([&] { return m2->Grains("x1") == changed; }, 10s));
  ASSERT_TRUE(m1->Remove("x1").ok());
  EXPECT_TRUE(WaitFor([&] { return !m2->Grains("x1"); }, 10s));
  EXPECT_FALSE(m2->HasMine("x1"));
  // And back: m2 writes what m1 then reads.
  ASSERT_TRUE(m2->Store("x2", kGrains, Value()).ok());
  EXPECT_TRUE(WaitFor([&] { return m1->Grains("x2") == kGrains; }, 10s));
}

INSTANTIATE_TEST_SUITE_P(Backends, MinionDataContractTest,
                         ::testing::Values("files"
#ifdef HALITE_WITH_POSTGRES
                                           ,
                                           "postgres"
#endif
                                           ),
                         [](const auto& info) { return info.param; });

#ifdef HALITE_WITH_POSTGRES

// --- PostgreSQL only ---------------------------------------------------------------------------

class PostgresMinionDataTest : public ::testing::Test {
 protected:
  std::unique_ptr<stores::PostgresMinionData> Open(const std::string& dsn, const std::string& id,
                                                   std::chrono::milliseconds feed = 100ms) {
    stores::PostgresMinionDataOptions options;
    options.dsn = dsn;
    options.schema = schema_;
    options.master_id = id;
    options.feed_period = feed;
    options.connect_timeout = 2s;
    options.operation_timeout = 2s;
    auto store = stores::PostgresMinionData::Open(options);
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  // Waits for `n` more feed rounds of `store` (so that what it reads next is past them).
  static bool Rounds(stores::PostgresMinionData& store, std::uint64_t n) {
    const std::uint64_t until = store.feed_rounds() + n;
    return WaitFor([&] { return store.feed_rounds() >= until; }, 10s);
  }

  std::string schema_ = jobs::testing::FreshSchema();
};

// A write whose transaction began before a feed round and committed after it is still read:
// the feed reads from the horizon of transactions still open, not from the newest row seen.
TEST_F(PostgresMinionDataTest, AWriteThatCommitsLateIsNotMissedByTheFeed) {
  const std::string dsn = jobs::testing::SharedPgDsn();
  auto m1 = Open(dsn, "m1");
  auto m2 = Open(dsn, "m2");
  ASSERT_TRUE(m1 && m2);
  ASSERT_TRUE(m1->Store("first", kGrains, Value()).ok());  // the schema is in place
  auto conn = jobs::PgConnection::Connect(dsn, std::chrono::steady_clock::now() + 5s);
  ASSERT_TRUE(conn.ok()) << conn.error().ToString();
  const auto deadline = [] { return std::chrono::steady_clock::now() + 5s; };
  const std::string table = "\"" + schema_ + "\".minion_data";
  const Value late_grains = Value::MapOf({{"late", true}});
  // A master's upsert, held open.
  ASSERT_TRUE((*conn)->Exec("BEGIN", deadline()).ok());
  auto open_write = (*conn)->Exec(
      "INSERT INTO " + table +
          " (minion_id, data, seq, xid, master_id, updated) VALUES ('late', $1, nextval('\"" +
          schema_ + "\".minion_data_seq'), pg_current_xact_id(), 'm3', now())",
      jobs::PgParams().Bytes(wire::Pack(
          Value::MapOf({{"grains", late_grains}, {"pillar", Value()}}), wire::Packing::kBinType)),
      deadline());
  ASSERT_TRUE(open_write.ok()) << open_write.error().ToString();
  // Meanwhile later writes commit and m2's feed reads past them, several rounds.
  ASSERT_TRUE(m1->Store("after", kGrains, Value()).ok());
  EXPECT_TRUE(WaitFor([&] { return m2->Grains("after") == kGrains; }, 10s));
  ASSERT_TRUE(Rounds(*m2, 3));
  EXPECT_FALSE(m2->Grains("late"));
  ASSERT_TRUE((*conn)->Exec("COMMIT", deadline()).ok());
  EXPECT_TRUE(WaitFor([&] { return m2->Grains("late") == late_grains; }, 10s))
      << "a write that committed after the feed passed it was never read";
}

// A fleet signing in again sends what is stored: nothing is written.
TEST_F(PostgresMinionDataTest, StoringWhatIsHeldWritesNothing) {
  auto m1 = Open(jobs::testing::SharedPgDsn(), "m1");
  ASSERT_NE(m1, nullptr);
  ASSERT_TRUE(m1->Store("same", kGrains, kPillar).ok());
  ASSERT_TRUE(m1->Store("same", kGrains, kPillar).ok());
  ASSERT_TRUE(m1->Store("same", kGrains, kPillar).ok());
  EXPECT_EQ(m1->unchanged_stores(), 2u);
  ASSERT_TRUE(m1->Store("same", kGrains, Value()).ok());
  EXPECT_EQ(m1->unchanged_stores(), 2u);
  EXPECT_EQ(m1->Pillar("same"), Value::EmptyMap());
}

// The server away: writes fail within the operation timeout, grains are served as last read,
// and everything resumes when it is back. Its own server (the shared one stays up).
TEST_F(PostgresMinionDataTest, AServerThatGoesAwayIsAnErrorNotAHang) {
  auto server = PgServer::Create(UniqueLoopbackIp());
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  auto m1 = Open((*server)->dsn(), "m1");
  ASSERT_NE(m1, nullptr);
  ASSERT_TRUE(m1->Store("kept", kGrains, kPillar).ok());
  ASSERT_TRUE((*server)->Stop().ok());
  const auto start = std::chrono::steady_clock::now();
  Status st = m1->Store("new", kGrains, kPillar);
  EXPECT_FALSE(st.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(m1->Grains("kept"), kGrains);  // from memory
  EXPECT_FALSE(m1->Pillar("kept"));        // read from the server: not there now
  EXPECT_EQ(m1->Mine("kept"), Value::EmptyMap());
  ASSERT_TRUE((*server)->Start().ok());
  EXPECT_TRUE(WaitFor([&] { return m1->Store("new", kGrains, kPillar).ok(); }, 20s));
  EXPECT_EQ(m1->Pillar("kept"), kPillar);
  // A second master started now reads both from the server.
  auto m2 = Open((*server)->dsn(), "m2");
  ASSERT_NE(m2, nullptr);
  EXPECT_EQ(m2->Grains("new"), kGrains);
  EXPECT_EQ(m2->Grains("kept"), kGrains);
}

#endif  // HALITE_WITH_POSTGRES

}  // namespace
}  // namespace halite::testing
