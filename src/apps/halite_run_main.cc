// halite-run: runners against the local master, as salt-run.
//   halite-run [-c CONFIG] [--out json|yaml|nested] [-t SECS] FUNCTION [ARG ...]
//   jobs.list_jobs | jobs.lookup_jid JID | manage.status | manage.up | manage.down
#include <sys/resource.h>

#include <algorithm>
#include <iostream>

#include "cli_common.h"
#include "halite/client/local_client.h"
#include "halite/client/output.h"
#include "halite/cluster/haproxy_config.h"
#include "halite/version.h"

namespace {

using halite::wire::Value;

void Usage(std::ostream& os) {
  os << "usage: halite-run [-c CONFIG] [--out FORMAT] [-t SECS] FUNCTION [ARG ...]\n"
        "  jobs.list_jobs          every job in the job cache\n"
        "  jobs.lookup_jid JID     the stored returns of a job\n"
        "  manage.status           test.ping every accepted minion: up and down lists\n"
        "  manage.up / manage.down the minions that answered / did not\n"
        "  cluster.status          this master's peer links: state, last contact, backlog\n"
        "  cluster.haproxy_config [bind=IP] [maxconn=N]\n"
        "                          HAProxy config for this cluster's masters, on stdout\n";
}

void Print(const Value& doc, halite::client::OutputFormat format) {
  if (format == halite::client::OutputFormat::kJson) {
    std::cout << halite::client::ToPrettyJson(doc) << "\n";
    return;
  }
  if (const halite::wire::Map* m = doc.map()) {
    for (const auto& [k, v] : *m) {
      std::cout << halite::client::FormatReturn(k.str() ? *k.str() : k.ToJson(), v, format);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = halite::apps::kDefaultMasterConfig;
  std::string out_name = "nested";
  int timeout_s = -1;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-c" || a == "--config") && i + 1 < argc) {
      config_path = argv[++i];
    } else if ((a == "--out" || a == "--output") && i + 1 < argc) {
      out_name = argv[++i];
    } else if ((a == "-t" || a == "--timeout") && i + 1 < argc) {
      timeout_s = std::atoi(argv[++i]);
    } else if (a == "--version") {
      std::cout << "halite-run " << halite::kVersion << "\n";
      return 0;
    } else if (a == "-h" || a == "--help") {
      Usage(std::cout);
      return 0;
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) {
    Usage(std::cerr);
    return 64;
  }
  auto format = halite::client::ParseOutputFormat(out_name);
  if (!format.ok()) {
    std::cerr << "halite-run: " << format.error().message << "\n";
    return 64;
  }
  auto cfg = halite::apps::LoadConfigOrComplain("halite-run", config_path);
  if (!cfg) return 78;
  if (positional[0] == "cluster.haproxy_config") {
    // Needs no running master: the masters are this one and its cluster_peers.
    halite::cluster::HaproxyOptions h;
    // HAProxy needs two descriptors per connection: keep maxconn within this host's limit.
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_max != RLIM_INFINITY) {
      h.maxconn = std::min<int>(h.maxconn, static_cast<int>((lim.rlim_max - 100) / 2));
    }
    for (std::size_t i = 1; i < positional.size(); ++i) {
      const std::string& a = positional[i];
      if (a.rfind("bind=", 0) == 0) h.bind_address = a.substr(5);
      if (a.rfind("maxconn=", 0) == 0) h.maxconn = std::atoi(a.c_str() + 8);
      if (a.rfind("stats_socket=", 0) == 0) h.stats_socket = a.substr(13);
    }
    h.publish_port = cfg->publish_port;
    h.ret_port = cfg->ret_port;
    h.health_port = cfg->health_port;
    h.publish_session = cfg->publish_session;
    h.masters.push_back({cfg->id, cfg->id});
    for (const auto& peer : cfg->cluster_peers) h.masters.push_back({peer, peer});
    std::cout << halite::cluster::RenderHaproxyConfig(h);
    return 0;
  }
  auto client = halite::client::LocalClient::Connect(
      {cfg->sock_dir, cfg->cachedir, std::chrono::milliseconds(10000)});
  if (!client.ok()) {
    std::cerr << "halite-run: " << client.error().message << "\n";
    return 3;
  }
  const std::string& fun = positional[0];
  if (fun == "jobs.list_jobs") {
    auto jobs = (*client)->ListJobs();
    if (!jobs.ok()) {
      std::cerr << "halite-run: " << jobs.error().message << "\n";
      return 1;
    }
    Print(jobs->Find("jobs") ? *jobs->Find("jobs") : Value::EmptyMap(), *format);
    return 0;
  }
  if (fun == "jobs.lookup_jid") {
    if (positional.size() < 2) {
      std::cerr << "halite-run: jobs.lookup_jid needs a jid\n";
      return 64;
    }
    auto job = (*client)->LookupJid(positional[1]);
    if (!job.ok()) {
      std::cerr << "halite-run: " << job.error().message << "\n";
      return 1;
    }
    Value out = Value::EmptyMap();
    if (const halite::wire::Map* rets =
            job->Find("returns") ? job->Find("returns")->map() : nullptr) {
      for (const auto& [id, r] : *rets) {
        const Value* ret = r.Find("return");
        out.Set(*id.str(), ret ? *ret : Value());
      }
    }
    Print(out, *format);
    return 0;
  }
  if (fun == "cluster.status") {
    auto status = (*client)->Call(Value::MapOf({{"cmd", "_halite_cluster_status"}}));
    if (!status.ok()) {
      std::cerr << "halite-run: " << status.error().message << "\n";
      return 1;
    }
    if (*format == halite::client::OutputFormat::kJson) {
      std::cout << halite::client::ToPrettyJson(*status) << "\n";
    } else {
      std::cout << halite::client::FormatReturn(
          status->FindStr("id") ? *status->FindStr("id") : "master", *status, *format);
    }
    return 0;
  }
  if (fun == "manage.status" || fun == "manage.up" || fun == "manage.down") {
    if (auto st = (*client)->SubscribeEvents(); !st.ok()) {
      std::cerr << "halite-run: " << st.error().message << "\n";
      return 3;
    }
    halite::client::PublishRequest ping;
    ping.tgt = Value("*");
    ping.fun = "test.ping";
    auto job = (*client)->Publish(ping);
    halite::wire::Array up;
    halite::wire::Array down;
    if (job.ok()) {
      halite::client::WaitOptions wait;
      wait.timeout = std::chrono::seconds(timeout_s >= 0 ? timeout_s : cfg->timeout.count());
      wait.find_job = false;
      std::vector<std::string> returned;
      auto missing = (*client)->WaitForReturns(
          *job, wait, [&](const halite::client::MinionReturn& r) { returned.push_back(r.id); });
      if (!missing.ok()) {
        std::cerr << "halite-run: " << missing.error().message << "\n";
        return 1;
      }
      std::sort(returned.begin(), returned.end());
      for (const auto& id : returned) up.emplace_back(id);
      for (const auto& id : *missing) down.emplace_back(id);
    } else if (job.error().code != halite::ErrorCode::kNotFound) {
      std::cerr << "halite-run: " << job.error().message << "\n";
      return 1;
    }
    Value out = Value::EmptyMap();
    if (fun != "manage.down") out.Set("up", Value(up));
    if (fun != "manage.up") out.Set("down", Value(down));
    if (fun == "manage.status") {
      Print(out, *format);
    } else {
      Print(Value::MapOf({{fun == "manage.up" ? "up" : "down",
                           fun == "manage.up" ? Value(up) : Value(down)}}),
            *format);
    }
    return 0;
  }
  std::cerr << "halite-run: unknown function '" << fun << "'\n";
  Usage(std::cerr);
  return 64;
}
