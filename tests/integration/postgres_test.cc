// Masters on the PostgreSQL job cache, with a real server the test starts and stops (issue:
// PostgreSQL job cache, acceptance).
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "pg_server.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

std::string JobCacheYaml(const PgServer& pg, const std::string& schema) {
  return "master_job_cache: postgres\njob_cache:\n  dsn: '" + pg.dsn() + "'\n  schema: " + schema +
         "\n  retry_for_seconds: 600\n";
}

// One number from the server: "SELECT count(*) ...".
std::optional<long> QueryCount(const PgServer& pg, const std::string& sql) {
  PGconn* conn = PQconnectdb(pg.dsn().c_str());
  std::optional<long> value;
  if (PQstatus(conn) == CONNECTION_OK) {
    PGresult* result = PQexec(conn, sql.c_str());
    if (PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1) {
      value = std::atol(PQgetvalue(result, 0, 0));
    }
    PQclear(result);
  }
  PQfinish(conn);
  return value;
}

std::string JidFrom(const std::string& verbose_output) {
  const auto pos = verbose_output.find("jid ");
  return pos == std::string::npos ? "" : verbose_output.substr(pos + 4, 20);
}

class PostgresTest : public ::testing::Test {
 protected:
  void StartPostgres() {
    auto server = PgServer::Create(UniqueLoopbackIp());
    ASSERT_TRUE(server.ok()) << server.error().ToString();
    pg_ = std::move(server).value();
  }

  MinionUnderTest& AddMinion(const std::string& id, const std::string& master_ip) {
    MinionSpec spec;
    spec.id = id;
    spec.master_ip = master_ip;
    minions_.push_back(std::make_unique<MinionUnderTest>(tmp_.path(), spec));
    minions_.back()->Start();
    return *minions_.back();
  }

  // `n` masters of one cluster sharing a folder and the schema `schema`, started at once;
  // their addresses (`health_port` 0: no /health).
  std::vector<std::string> StartCluster(int n, const std::string& schema, int health_port = 0) {
    std::vector<std::string> ips;
    for (int i = 0; i < n; ++i) ips.push_back(UniqueLoopbackIp());
    for (int i = 0; i < n; ++i) {
      MasterSpec spec;
      spec.id = ips[i];
      spec.ip = ips[i];
      spec.auto_accept = true;
      spec.health_port = health_port;
      spec.cluster_id = "c1";
      spec.shared_dir = tmp_.path() / "shared";
      for (int j = 0; j < n; ++j) {
        if (j != i) spec.cluster_peers.push_back(ips[j]);
      }
      spec.extra_yaml = JobCacheYaml(*pg_, schema);
      masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    }
    for (auto& m : masters_) m->StartAsync();
    for (auto& m : masters_) m->WaitReady();
    return ips;
  }

  // Every minion answers a test.ping published on `master`: the cluster is wired up.
  void WaitUntilAllAnswer(MasterUnderTest& master) {
    std::string last;
    ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, minions_.size(), &last))
        << "not every minion answered; last output:\n"
        << last;
  }

  TempDir tmp_;
  std::unique_ptr<PgServer> pg_;
  std::vector<std::unique_ptr<MasterUnderTest>> masters_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
};

TEST_F(PostgresTest, ThreeMastersOnOneDatabaseEachAnswerLookupJidCompletely) {
  StartPostgres();
  const std::vector<std::string> ips = StartCluster(3, "cluster_jobs");
  AddMinion("alpha", ips[0]);
  AddMinion("beta", ips[1]);
  AddMinion("gamma", ips[2]);
  WaitUntilAllAnswer(*masters_[1]);

  auto job = masters_[1]->Cli("halite", {"-v", "--out", "txt", "*", "test.echo", "in-postgres"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const std::string jid = JidFrom(job.out);
  ASSERT_EQ(jid.size(), 20u) << job.out;
  for (auto& master : masters_) {
    auto lookup = master->Cli("halite-run", {"--out", "txt", "jobs.lookup_jid", jid});
    ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
    EXPECT_EQ(lookup.out, "alpha: in-postgres\nbeta: in-postgres\ngamma: in-postgres\n")
        << "on master " << master->ip();
    auto listed = master->Cli("halite-run", {"--out", "json", "jobs.list_jobs"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_NE(listed.out.find(jid), std::string::npos) << listed.out;
  }
  // The rows are in the database, and the shared folder holds no job files.
  EXPECT_EQ(QueryCount(*pg_, "SELECT count(*) FROM cluster_jobs.returns WHERE jid = '" + jid + "'"),
            3);
  EXPECT_EQ(
      QueryCount(*pg_, "SELECT count(*) FROM cluster_jobs.job_minions WHERE jid = '" + jid + "'"),
      3);
  EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "shared" / "cache" / "jobs"));
}

// A cluster whose masters all lose the one PostgreSQL they share stays in service: no master
// is better off, and a 503 on every master would make HAProxy cut every minion's connection.
// /health stays 200 and names the problem under "degraded"; a job published after the
// database is back completes.
TEST_F(PostgresTest, MastersSharingAPostgresOutageStayInServiceAndSaySo) {
  StartPostgres();
  const std::vector<std::string> ips = StartCluster(2, "outage", /*health_port=*/4510);
  AddMinion("alpha", ips[0]);
  AddMinion("beta", ips[1]);
  WaitUntilAllAnswer(*masters_[0]);
  // The body and the status code of a master's /health.
  auto health = [&](const std::string& ip) {
    auto r = halite::testing::Run({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "--max-time", "5",
                                   "http://" + ip + ":4510/health"});
    const auto nl = r.out.rfind('\n');
    auto body =
        nlohmann::json::parse(r.out.substr(0, nl == std::string::npos ? 0 : nl), nullptr, false);
    return std::make_pair(nl == std::string::npos ? "" : r.out.substr(nl + 1), body);
  };
  // Both masters see each other's views first (the "quorum" object names both alive).
  ASSERT_TRUE(WaitFor([&] {
    auto [code, body] = health(ips[0]);
    return code == "200" && body.is_object() && body.contains("quorum") &&
           body["quorum"]["alive"].size() == 2;
  })) << health(ips[0]).second.dump();

  ASSERT_TRUE(pg_->Stop().ok());
  // Every answer of both masters for 10 s (past the 3 s grace of a master's own job cache
  // problem) is 200, and both come to name the outage under "degraded".
  const auto end = std::chrono::steady_clock::now() + 10s;
  int answers = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (const auto& ip : ips) {
      auto [code, body] = health(ip);
      ASSERT_EQ(code, "200") << ip << " after the stop: " << body.dump();
      ++answers;
    }
    std::this_thread::sleep_for(250ms);  // polling an invariant, not waiting for an event
  }
  EXPECT_GE(answers, 20);
  for (const auto& ip : ips) {
    auto [code, body] = health(ip);
    ASSERT_TRUE(body.is_object()) << ip;
    EXPECT_EQ(body["degraded"].size(), 1u) << body.dump();
    EXPECT_EQ(body["degraded"][0].dump().rfind("\"job cache: ", 0), 0u) << body.dump();
    EXPECT_EQ(body["quorum"]["job_cache_down"].size(), 2u) << body.dump();
  }
  ASSERT_TRUE(pg_->Start().ok());
  for (const auto& ip : ips) {
    nlohmann::json last;
    EXPECT_TRUE(WaitFor(
        [&] {
          auto [code, body] = health(ip);
          last = body;
          return code == "200" && body.is_object() && !body.contains("degraded");
        },
        60s, 250ms))
        << last.dump();
  }
  auto job = masters_[1]->Cli("halite", {"--out", "txt", "*", "test.echo", "back"});
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("alpha: back\n"), std::string::npos) << job.out << job.err;
  EXPECT_NE(job.out.find("beta: back\n"), std::string::npos) << job.out << job.err;
}

TEST_F(PostgresTest, StoppingPostgresMidJobLosesNoReturnAndTheJobCompletesAfter) {
  StartPostgres();
  MasterSpec spec;
  spec.ip = UniqueLoopbackIp();
  spec.id = spec.ip;
  spec.auto_accept = true;
  spec.health_port = 4510;
  spec.extra_yaml = JobCacheYaml(*pg_, "jobs");
  masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
  MasterUnderTest& master = *masters_[0];
  master.Start();
  for (const char* id : {"m1", "m2", "m3"}) AddMinion(id, spec.ip);
  WaitUntilAllAnswer(master);
  const std::string stored_metric =
      "halite_returns_total{master=\"" + spec.ip + "\",outcome=\"stored\"}";

  // The jobs finish only when the test opens the gate, after PostgreSQL is down.
  const auto gate = tmp_.path() / "gate";
  auto job = master.Cli("halite",
                        {"--async", "*", "cmd.run",
                         "while [ ! -e " + gate.string() + " ]; do sleep 0.05; done; echo done"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const auto pos = job.out.find("job ID: ");
  ASSERT_NE(pos, std::string::npos) << job.out;
  const std::string jid = job.out.substr(pos + 8, 20);
  ASSERT_TRUE(pg_->Stop().ok());
  WriteFile(gate, "");

  // Every minion's return reaches the master while the database is away: held, not
  // acknowledged, and /health says why.
  bool held = WaitFor(
      [&] {
        auto in_flight = Metric(spec.ip, 4510, "halite_returns_in_flight");
        return in_flight && *in_flight >= 3;
      },
      60s, 100ms);
  ASSERT_TRUE(held) << master.Log();
  // The count of stored returns is read once the database is down, not before: a ping that
  // EveryMinionAnswers retried may still be replayed to a minion that subscribed late, and its
  // return stored before the stop.
  const auto stored_before = Metric(spec.ip, 4510, stored_metric);
  ASSERT_TRUE(stored_before.has_value());
  // The health checker runs once a second: wait for its next verdict, not for a fixed time.
  CommandResult health;
  EXPECT_TRUE(WaitFor(
      [&] {
        health = halite::testing::Run({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "--max-time",
                                       "5", "http://" + spec.ip + ":4510/health"});
        return health.out.find("job cache") != std::string::npos &&
               health.out.find("\n503") != std::string::npos;
      },
      30s, 200ms))
      << health.out;
  EXPECT_EQ(Metric(spec.ip, 4510, stored_metric), stored_before);  // nothing acknowledged

  ASSERT_TRUE(pg_->Start().ok());
  std::string last;
  bool complete = WaitFor(
      [&] {
        auto lookup = master.Cli("halite-run", {"--out", "txt", "jobs.lookup_jid", jid});
        last = lookup.out + lookup.err;
        return lookup.exit_code == 0 && lookup.out == "m1: done\nm2: done\nm3: done\n";
      },
      60s, 200ms);
  ASSERT_TRUE(complete) << last << "\n" << master.Log();
  EXPECT_TRUE(WaitFor([&] { return Metric(spec.ip, 4510, "halite_returns_in_flight") == 0.0; }));
  EXPECT_EQ(QueryCount(*pg_, "SELECT count(*) FROM jobs.returns WHERE jid = '" + jid + "'"), 3);
  // At least this job's three; a late ping replay held with them is stored too.
  const auto stored_after = Metric(spec.ip, 4510, stored_metric);
  ASSERT_TRUE(stored_after.has_value());
  EXPECT_GE(*stored_after, *stored_before + 3);
  std::string code;
  EXPECT_TRUE(WaitFor([&] {
    code = halite::testing::Run({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                 "--max-time", "5", "http://" + spec.ip + ":4510/health"})
               .out;
    return code == "200";
  })) << code;
}

}  // namespace
}  // namespace halite::testing
