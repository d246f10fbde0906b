// halite-run's runners, halite-key's salt/key events and --gen-keys, and presence events, as
// an operator runs them against a real halite-master with halite-minions (issue 15 items 5-7).
// Expected shapes come from stock salt-run / salt-key 3007.8 run on the same tree and the same
// jobs (tests/data/salt/salt_run: commands.txt, expected/, and the capture.sh that made them).
// One fixture: its master has presence_events on and loop_interval 1 s.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <zmq.hpp>

#include "file_modes.h"
#include "halite/client/local_client.h"
#include "halite/keys/key_admin.h"
#include "halite/master/minion_data.h"
#include "halite/version.h"
#include "halite/wire/event.h"
#include "harness.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

const std::filesystem::path kData =
    std::filesystem::path(HALITE_TEST_DATA_DIR) / "salt" / "salt_run";

class RunnerTest : public ::testing::Test {
 protected:
  RunnerTest() : master_(tmp_.path(), Spec(tmp_.path())) {
    // The tree capture.sh gives the stock master.
    const auto srv = tmp_.path() / "srv";
    WriteFile(srv / "salt" / "top.sls", "base:\n  \"*\": [web]\n");
    WriteFile(srv / "salt" / "web" / "init.sls", "x: test.nop\n");
    WriteFile(srv / "salt" / "web" / "files" / "a.txt", "hi\n");
    WriteFile(srv / "dev" / "tools" / "init.sls", "y: test.nop\n");
  }
  static MasterSpec Spec(const std::filesystem::path& root) {
    MasterSpec spec;
    spec.auto_accept = true;
    spec.extra_yaml = "presence_events: True\n";  // the harness sets loop_interval: 1
    spec.file_roots = "  base: [" + (root / "srv" / "salt").string() + "]\n  dev: [" +
                      (root / "srv" / "dev").string() + "]\n";
    return spec;
  }
  std::unique_ptr<MinionUnderTest> StartMinion(const std::string& id) {
    MinionSpec spec;
    spec.id = id;
    spec.master_ip = master_.ip();
    auto m = std::make_unique<MinionUnderTest>(tmp_.path(), spec);
    m->Start();
    return m;
  }
  // halite-run with -t 2: runners that publish wait 2 s for the stopped m002, not 5.
  CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"-t", "2"});
    return master_.Cli("halite-run", args, 60s);
  }
  // The newest jid jobs.list_jobs finds with these filters.
  std::string NewestJid(const std::vector<std::string>& filters) {
    std::vector<std::string> args{"--out", "json", "jobs.list_jobs"};
    args.insert(args.end(), filters.begin(), filters.end());
    auto r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json jobs = Json::parse(r.out, nullptr, false);
    if (!jobs.is_object() || jobs.empty()) return "";
    return (--jobs.end()).key();
  }

  TempDir tmp_;
  MasterUnderTest master_;
};

// Jids and times differ between runs: each jid becomes its name in commands.txt, StartTime
// values "<time>"; `mask` paths ("/Result/*/return", "*" matches any key) become "<masked>".
Json Normalised(const Json& j, const std::map<std::string, std::string>& jids,
                const std::vector<std::vector<std::string>>& masks,
                const std::vector<std::string>& at = {}) {
  for (const auto& m : masks) {
    if (m.size() != at.size()) continue;
    bool hit = true;
    for (std::size_t i = 0; i < m.size(); ++i) hit = hit && (m[i] == "*" || m[i] == at[i]);
    if (hit) return "<masked>";
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string key = jids.contains(it.key()) ? jids.at(it.key()) : it.key();
      auto path = at;
      path.push_back(key);
      out[key] = key == "StartTime" ? Json("<time>") : Normalised(it.value(), jids, masks, path);
    }
    return out;
  }
  if (j.is_array()) {
    Json out = Json::array();
    for (std::size_t i = 0; i < j.size(); ++i) {
      auto path = at;
      path.push_back(std::to_string(i));
      out.push_back(Normalised(j[i], jids, masks, path));
    }
    return out;
  }
  if (j.is_string() && jids.contains(j.get<std::string>())) return jids.at(j.get<std::string>());
  return j;
}

// The kinds of JSON values (map keys kept, every value a kind name): for data whose values
// differ by design (which minion came or went), the shape still has to be Salt's.
Json Shape(const Json& j) {
  if (!j.is_object()) return j.type_name();
  Json out = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = Shape(it.value());
  return out;
}

// Every `halite-run` line of commands.txt, run after the jobs capture.sh ran (JOB1: test.arg
// answered by m001 and m002; JOB2: test.ping with m002 stopped), against stock salt-run's
// output of the same line.
TEST_F(RunnerTest, RunnersPrintWhatStockSaltRunPrinted) {
  master_.Start();
  auto m1 = StartMinion("m001");
  auto m2 = StartMinion("m002");
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(master_, "*", {"test.ping"}, 2, &last)) << last;
  // capture.sh's stock minions have a mine (mine_functions: test.ping); halite-minion sends
  // none, so the master's data cache gets the same entries directly.
  master::FileMinionData data(master_.dir() / "cache");
  for (const char* id : {"m001", "m002"}) {
    ASSERT_TRUE(data.UpdateMine(id, wire::Value::MapOf({{"test.ping", true}}), false, 0).ok());
  }
  auto job1 = master_.Cli("halite", {"-L", "m001,m002", "test.arg", "1", "two", "a=b"});
  ASSERT_EQ(job1.exit_code, 0) << job1.out << job1.err;
  const std::string jid1 = NewestJid({"search_function=test.arg"});
  ASSERT_EQ(jid1.size(), 20u);
  m2->Stop();
  (void)master_.Cli("halite", {"-t", "3", "-L", "m001,m002", "test.ping"});
  const std::string jid2 = NewestJid({"search_function=test.ping", "search_target=m001,m002"});
  ASSERT_EQ(jid2.size(), 20u);
  ASSERT_NE(jid1, jid2);

  // What each line compares (by runner; exact after Normalised unless said).
  const std::map<std::string, std::vector<std::vector<std::string>>> masks = {
      // halite-minion's test.arg reports its arguments its own way.
      {"jobs.list_job", {{"Result", "*", "return"}}},
      {"jobs.print_job", {{"JOB1", "Result", "*", "return"}}},
      {"jobs.lookup_jid JOB1", {{"*"}}},
  };
  // Presence is by identity here, by connection address in Salt (docs/cli.md "Presence":
  // stock Salt's answer for the stopped m002 depended on when its connection closed, 11.json
  // has it, 26.txt not); cache.grains differ by minion kind, versions by minion version: the
  // shape must be Salt's.
  // Stock JOB1's jid is in its jobs.list_job output; no stock output shows JOB2's.
  const Json stock_job = Json::parse(ReadFileOrEmpty(kData / "expected" / "01.json"));
  const std::map<std::string, std::string> stock_jids = {
      {stock_job["jid"].get<std::string>(), "JOB1"}};
  const std::set<std::string> shape_only = {
      "manage.present", "manage.not_present", "manage.alived",        "manage.not_alived",
      "manage.joined",  "manage.versions",    "cache.grains tgt=m001"};
  std::istringstream commands(ReadFileOrEmpty(kData / "commands.txt"));
  int n = 0;
  for (std::string line; std::getline(commands, line);) {
    if (line.empty()) continue;
    ++n;
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    std::vector<std::string> args;
    std::string command;
    for (std::string w; words >> w;) {
      command += (command.empty() ? "" : " ") + w;
      args.push_back(w == "JOB1" ? jid1 : w == "JOB2" ? jid2 : w);
    }
    char name[16];
    std::snprintf(name, sizeof name, "%02d.%s", n, kind == "json" ? "json" : "txt");
    const std::string expected = ReadFileOrEmpty(kData / "expected" / name);
    SCOPED_TRACE(std::string(name) + ": halite-run " + command);
    if (command.rfind("manage.", 0) == 0 && command != "manage.versions") {
      // Presence is who talked to the master within 2 s (loop_interval 1): m001 talks now.
      ASSERT_EQ(master_.Cli("halite", {"m001", "test.ping"}).exit_code, 0);
    }
    if (kind == "text") {
      auto got = Run(args);
      if (command == "manage.present") {
        // Salt's "- id" lines. Present is "talked within 2 s", and under a sanitizer on a
        // loaded machine the runner can start later than that: talk, then ask, until the
        // answer comes in time (as PresenceAndKeyEventsReachTheEventBus does).
        EXPECT_TRUE(WaitFor(
            [&] {
              if (got.out == "- m001\n") return true;
              if (master_.Cli("halite", {"m001", "test.ping"}).exit_code != 0) return false;
              got = Run(args);
              return got.out == "- m001\n";
            },
            60s, 100ms))
            << got.out << got.err;
      } else if (command == "jobs.lookup_jid" || command == "no_such.runner") {
        // Usage errors: Salt's first line, halite's exit code 64 (Salt exits 0 or 1).
        EXPECT_EQ(got.exit_code, 64);
        std::istringstream lines(expected);
        std::string first;
        while (first.empty() && std::getline(lines, first)) {
        }
        ASSERT_FALSE(first.empty()) << expected;
        EXPECT_NE(got.err.find(first), std::string::npos) << got.err << "\nwant: " << first;
      } else {
        EXPECT_EQ(got.exit_code, 0) << got.err;
        EXPECT_EQ(got.out, expected);
      }
      continue;
    }
    args.insert(args.begin(), {"--out", "json"});
    auto got = Run(args);
    ASSERT_EQ(got.exit_code, 0) << got.err;
    Json ours = Json::parse(got.out, nullptr, false);
    Json stock = Json::parse(expected, nullptr, false);
    ASSERT_FALSE(ours.is_discarded()) << got.out;
    ASSERT_FALSE(stock.is_discarded()) << expected;
    const std::map<std::string, std::string> jids = {{jid1, "JOB1"}, {jid2, "JOB2"}};
    std::string runner = command.substr(0, command.find(' '));
    auto mask = masks.contains(command)  ? masks.at(command)
                : masks.contains(runner) ? masks.at(runner)
                                         : std::vector<std::vector<std::string>>{};
    if (shape_only.contains(command)) {
      if (command == "cache.grains tgt=m001") {
        ASSERT_TRUE(ours.contains("m001")) << got.out;
        EXPECT_EQ(ours.size(), 1u);
        EXPECT_TRUE(ours["m001"].is_object() && ours["m001"].contains("id"));
        continue;
      }
      if (command == "manage.versions") {
        EXPECT_EQ(ours["Master"], stock["Master"]);
        EXPECT_EQ(ours["Minion offline"], stock["Minion offline"]) << got.out;
        EXPECT_EQ(ours["Minion requires update"],
                  Json({{"m001", std::string("halite ") + kVersion}}))
            << got.out;
        continue;
      }
      // A presence listing: a list of minion ids, as Salt's.
      EXPECT_TRUE(stock.is_array());
      ASSERT_TRUE(ours.is_array()) << got.out;
      for (const Json& id : ours) EXPECT_TRUE(id.is_string()) << got.out;
      continue;
    }
    EXPECT_EQ(Normalised(ours, jids, mask).dump(2), Normalised(stock, stock_jids, mask).dump(2));
  }
  EXPECT_EQ(n, 32);
}

// The master's event bus as a test subscriber sees it: tags and data (no _stamp).
class EventWatch {
 public:
  EventWatch(zmq::context_t& ctx, const std::filesystem::path& sock_dir) : sub_(ctx, ZMQ_SUB) {
    sub_.set(zmq::sockopt::linger, 0);
    sub_.set(zmq::sockopt::subscribe, "salt/presence/");
    sub_.set(zmq::sockopt::subscribe, "salt/key");
    sub_.connect("ipc://" + (sock_dir / "halite_event_pub.ipc").string());
  }
  // The next event whose tag starts with `prefix`, within `timeout`.
  std::optional<std::pair<std::string, Json>> Next(const std::string& prefix,
                                                   std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{static_cast<void*>(sub_), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t msg;
      if (!sub_.recv(msg, zmq::recv_flags::dontwait)) continue;
      auto event = wire::UnpackEvent(msg.to_string_view());
      if (!event.ok() || event->tag.rfind(prefix, 0) != 0) continue;
      event->data.Erase("_stamp");
      return std::make_pair(event->tag, Json::parse(event->data.ToJson()));
    }
    return std::nullopt;
  }

 private:
  zmq::socket_t sub_;
};

// presence_events: salt/presence/present every loop_interval, salt/presence/change when a
// minion came or went, with stock salt-master's data shapes (expected/events.jsonl); the
// runners see the same set. halite-key's accept, reject and delete fire salt-key's salt/key
// events with stock salt-key's data, in order.
TEST_F(RunnerTest, PresenceAndKeyEventsReachTheEventBus) {
  master_.Start();
  zmq::context_t ctx;
  EventWatch watch(ctx, master_.dir() / "sock");
  // The subscription is live once a periodic event comes through: nobody is present yet.
  auto first = watch.Next("salt/presence/present", 20s);
  ASSERT_TRUE(first) << "no salt/presence/present within 20 s";
  EXPECT_EQ(first->second, Json({{"present", Json::array()}}));

  auto m1 = StartMinion("m001");
  auto change = watch.Next("salt/presence/change", 30s);
  ASSERT_TRUE(change) << m1->Log();
  EXPECT_EQ(change->second, Json({{"new", {"m001"}}, {"lost", Json::array()}}));
  auto present = watch.Next("salt/presence/present", 10s);
  ASSERT_TRUE(present);
  EXPECT_EQ(present->second, Json({{"present", {"m001"}}}));
  // Stock salt-master's events carry the same keys.
  std::map<std::string, Json> stock;
  std::istringstream lines(ReadFileOrEmpty(kData / "expected" / "events.jsonl"));
  std::vector<Json> stock_key_events;
  for (std::string line; std::getline(lines, line);) {
    Json e = Json::parse(line);
    if (e["tag"] == "salt/key") {
      stock_key_events.push_back(e["data"]);
    } else {
      stock[e["tag"]] = e["data"];
    }
  }
  ASSERT_TRUE(stock.contains("salt/presence/change") && stock.contains("salt/presence/present"));
  EXPECT_EQ(Shape(change->second).dump(), Shape(stock["salt/presence/change"]).dump());
  EXPECT_EQ(Shape(present->second).dump(), Shape(stock["salt/presence/present"]).dump());

  // The runners ask the master for the same set, right after m001 talked to it; a key that
  // never signed in is accepted but not present.
  WriteFile(master_.dir() / "pki" / "minions" / "ghost",
            ReadFileOrEmpty(kData / ".." / "salt_key" / "keys" / "db1.pub"));
  // Present means "talked within twice loop_interval" (2 s here), and a runner process can
  // take longer than that to start under a sanitizer on a loaded machine: talk, then ask, until
  // the answer comes in time (what is checked is its shape, not the timing).
  auto talk_then_ask = [&](std::vector<std::string> args, const Json& want) {
    CommandResult got;
    EXPECT_TRUE(WaitFor(
        [&] {
          if (master_.Cli("halite", {"m001", "test.ping"}).exit_code != 0) return false;
          got = Run(args);
          return Json::parse(got.out, nullptr, false) == want;
        },
        60s, 100ms))
        << args.back() << ": " << got.out << got.err;
  };
  talk_then_ask({"--out", "json", "manage.present"}, Json({"m001"}));
  talk_then_ask({"--out", "json", "manage.not_present"}, Json({"ghost"}));
  talk_then_ask({"--out", "json", "manage.alived", "show_ip=True"}, Json({{"m001", ""}}));

  // jobs.active: a job m001 still runs (it waits for a gate file), with its pid, as Salt's
  // runner shows one (saltutil.running on the minions, returns from the job cache).
  const auto gate = tmp_.path() / "gate";
  auto async = master_.Cli("halite", {"--async", "m001", "cmd.run",
                                      "while [ ! -e " + gate.string() + " ]; do sleep 0.1; done"});
  ASSERT_EQ(async.exit_code, 0) << async.out << async.err;
  const std::string prefix = "Executed command with job ID: ";
  ASSERT_EQ(async.out.rfind(prefix, 0), 0u) << async.out;
  const std::string jid = async.out.substr(prefix.size(), 20);
  Json active;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = Run({"--out", "json", "jobs.active"});
        active = Json::parse(r.out, nullptr, false);
        return active.is_object() && active.contains(jid);
      },
      30s))
      << active.dump();
  const Json& job = active[jid];
  EXPECT_EQ(job["Function"], "cmd.run");
  EXPECT_EQ(job["Target"], "m001");
  EXPECT_EQ(job["Target-type"], "glob");
  EXPECT_EQ(job["Returned"], Json::array());
  ASSERT_EQ(job["Running"].size(), 1u) << job.dump();
  EXPECT_TRUE(job["Running"][0]["m001"].is_number_integer()) << job.dump();
  for (const char* key : {"Arguments", "User", "StartTime"}) EXPECT_TRUE(job.contains(key));
  WriteFile(gate, "");
  EXPECT_TRUE(WaitFor(
      [&] {
        auto r = Run({"--out", "json", "jobs.lookup_jid", jid});
        return Json::parse(r.out, nullptr, false).contains("m001");
      },
      30s));

  // Presence is what talks to the master: m001 idle for two loop_intervals is lost, as the
  // stopped minion would be (docs/cli.md "Presence").
  auto lost = watch.Next("salt/presence/change", 30s);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->second, Json({{"new", Json::array()}, {"lost", {"m001"}}}));

  // A malformed key event is refused with a message and fires nothing (the list below must
  // start with halite-key's first event).
  auto client = client::LocalClient::Connect(
      {(master_.dir() / "sock").string(), (master_.dir() / "cache").string(), 10000ms});
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto refused = (*client)->Call(wire::Value::MapOf(
      {{"cmd", "_halite_key_event"},
       {"events", wire::Value(wire::Array{wire::Value::MapOf(
                      {{"id", "../etc"}, {"act", "accept"}, {"result", true}})})}}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("each event needs id (a valid minion id)"),
            std::string::npos)
      << refused.error().message;

  // salt/key, as capture.sh made stock salt-key fire them (a pending key accepted, rejected
  // from accepted, deleted).
  WriteFile(master_.dir() / "pki" / "minions_pre" / "web9",
            ReadFileOrEmpty(kData / ".." / "salt_key" / "keys" / "web2.pub"));
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"-y", "-a", "web9"},
                                             {"-y", "-r", "web9", "--include-accepted"},
                                             {"-y", "-d", "web9"}}) {
    auto r = master_.Cli("halite-key", args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.err, "") << "no complaint about events";
  }
  std::vector<Json> got;
  while (got.size() < stock_key_events.size()) {
    auto e = watch.Next("salt/key", 10s);
    if (!e) break;
    got.push_back(e->second);
  }
  ASSERT_EQ(stock_key_events.size(), 3u);
  EXPECT_EQ(Json(got).dump(), Json(stock_key_events).dump());
}

// halite-key --gen-keys as salt-key --gen-keys (expected/gen_keys.txt: files, modes, PEM
// headers), its option errors; halite-run -d as salt-run -d lists; argument errors as
// Python's; no master needed for any of these.
TEST_F(RunnerTest, GenKeysDocsAndArgumentErrorsNeedNoMaster) {
  const auto dir = tmp_.path() / "gen";
  ScopedUmask umask(022);  // capture.sh's
  auto made = master_.Cli("halite-key", {"--gen-keys=node1", "--gen-keys-dir=" + dir.string()});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  auto finger = keys::Fingerprint(ReadFileOrEmpty(dir / "node1.pub"));
  ASSERT_TRUE(finger.ok()) << finger.error().message;
  const std::string stock = ReadFileOrEmpty(kData / "expected" / "gen_keys.txt");
  const std::string printed = "return:\n    <fingerprint of node1.pub>\n";
  ASSERT_EQ(stock.rfind(printed, 0), 0u) << stock;
  EXPECT_EQ(made.out, "return:\n    " + *finger + "\n");
  std::string listing;
  for (const char* f : {"node1.pem", "node1.pub"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir / f).c_str(), &st), 0) << f;
    std::string text = ReadFileOrEmpty(dir / f);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%o", st.st_mode & 07777);
    listing += std::string(mode) + " " + f + "\n" + text.substr(0, text.find('\n') + 1);
  }
  EXPECT_NE(stock.find(listing), std::string::npos) << "ours:\n" << listing << "stock:\n" << stock;
  auto small = master_.Cli("halite-key", {"--gen-keys", "node2", "--keysize", "1024"});
  EXPECT_EQ(small.exit_code, 64);
  EXPECT_NE(small.err.find("The minimum value for keysize is 2048"), std::string::npos);
  EXPECT_NE(stock.find("The minimum value for keysize is 2048"), std::string::npos);

  auto docs = Run({"-d", "jobs"});
  EXPECT_EQ(docs.exit_code, 0) << docs.err;
  std::vector<std::string> names;
  std::istringstream lines(docs.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != ' ') names.push_back(line);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"jobs.active:", "jobs.exit_success:", "jobs.list_job:",
                                      "jobs.list_jobs:", "jobs.lookup_jid:", "jobs.print_job:"}));
  auto all = Run({"-d"});
  for (const char* runner : {"cache.clear_all:", "fileserver.dir_list:", "manage.versions:",
                             "manage.not_alived:", "cluster.status:"}) {
    EXPECT_NE(("\n" + all.out).find(std::string("\n") + runner + "\n"), std::string::npos)
        << runner;
  }
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"jobs.list_job", "1", "2", "3", "4"},
            "list_job() takes from 1 to 3 positional arguments but 4 were given"},
           {{"jobs.active", "bogus=1"}, "active() got an unexpected keyword argument 'bogus'"},
           {{"jobs.exit_success", "1", "jid=2"},
            "exit_success() got multiple values for argument 'jid'"}}) {
    auto r = Run(args);
    EXPECT_EQ(r.exit_code, 64) << r.err;
    EXPECT_NE(r.err.find("Passed invalid arguments: " + message), std::string::npos) << r.err;
  }
  // Local runners work with the master down; master ones say it is not running (exit 3).
  auto envs = Run({"--out", "json", "fileserver.envs"});
  EXPECT_EQ(envs.exit_code, 0) << envs.err;
  EXPECT_EQ(Json::parse(envs.out, nullptr, false), Json({"base", "dev"}));
  EXPECT_EQ(Run({"manage.present"}).exit_code, 3);
}

}  // namespace
}  // namespace halite::testing
