// halite: publish a job and print the returns, with the salt CLI's habits.
//   halite [-c CONFIG] [-L|-E|-G|-P|-C] [-t SECONDS] [--async] [--out json|yaml|txt|nested] [-v]
//          TARGET FUNCTION [ARG ...] [key=value ...]
// Exit codes: 0 every expected minion returned and succeeded; 1 a function failed;
// 2 a minion did not return; 78 bad config; 64 bad usage; 3 the publish itself failed.
#include <unistd.h>

#include <iostream>

#include "cli_common.h"
#include "halite/client/local_client.h"
#include "halite/client/output.h"
#include "halite/version.h"

namespace {

void Usage(std::ostream& os) {
  os << "usage: halite [options] TARGET FUNCTION [ARG ...] [key=value ...]\n"
        "  -c, --config PATH     master config (default /etc/halite/master)\n"
        "  -L, --list            TARGET is a comma-separated list of ids\n"
        "  -E, --pcre            TARGET is a regular expression\n"
        "  -G, --grain           TARGET is grain:value\n"
        "  -P, --grain-pcre      TARGET is grain:regex\n"
        "  -C, --compound        TARGET is a compound expression\n"
        "  -t, --timeout SECS    wait this long for silent minions (default: config timeout)\n"
        "  --async               print the jid and return at once\n"
        "  --out FORMAT          nested (default), json, yaml, txt\n"
        "  -v, --verbose         print the jid and the minions that did not return\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = halite::apps::kDefaultMasterConfig;
  std::string tgt_type = "glob";
  std::string out_name = "nested";
  std::optional<int> timeout_s;
  bool async = false;
  bool verbose = false;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "halite: " << a << " needs " << what << "\n";
        std::exit(64);
      }
      return argv[++i];
    };
    if (!positional.empty() && positional.size() >= 2) {
      positional.push_back(a);  // everything after FUNCTION is an argument
    } else if (a == "-c" || a == "--config") {
      config_path = need("a path");
    } else if (a == "-L" || a == "--list") {
      tgt_type = "list";
    } else if (a == "-E" || a == "--pcre") {
      tgt_type = "pcre";
    } else if (a == "-G" || a == "--grain") {
      tgt_type = "grain";
    } else if (a == "-P" || a == "--grain-pcre") {
      tgt_type = "grain_pcre";
    } else if (a == "-C" || a == "--compound") {
      tgt_type = "compound";
    } else if (a == "-t" || a == "--timeout") {
      timeout_s = std::atoi(need("seconds").c_str());
    } else if (a.rfind("--timeout=", 0) == 0) {
      timeout_s = std::atoi(a.c_str() + 10);
    } else if (a == "--async") {
      async = true;
    } else if (a == "--out" || a == "--output") {
      out_name = need("a format");
    } else if (a.rfind("--out=", 0) == 0) {
      out_name = a.substr(6);
    } else if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else if (a == "--version") {
      std::cout << "halite " << halite::kVersion << "\n";
      return 0;
    } else if (a == "-h" || a == "--help") {
      Usage(std::cout);
      return 0;
    } else if (a.size() > 1 && a[0] == '-' && positional.empty()) {
      std::cerr << "halite: unknown option " << a << "\n";
      Usage(std::cerr);
      return 64;
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() < 2) {
    Usage(std::cerr);
    return 64;
  }
  auto format = halite::client::ParseOutputFormat(out_name);
  if (!format.ok()) {
    std::cerr << "halite: " << format.error().message << "\n";
    return 64;
  }
  auto cfg = halite::apps::LoadConfigOrComplain("halite", config_path);
  if (!cfg) return 78;

  halite::client::ClientOptions options{cfg->sock_dir, cfg->cachedir,
                                        std::chrono::milliseconds(10000)};
  auto client = halite::client::LocalClient::Connect(options);
  if (!client.ok()) {
    std::cerr << "halite: " << client.error().message << "\n";
    return 3;
  }
  halite::client::PublishRequest request;
  if (tgt_type == "list") {
    halite::wire::Array ids;
    std::string s = positional[0];
    std::size_t start = 0;
    while (start <= s.size()) {
      std::size_t comma = std::min(s.find(',', start), s.size());
      if (comma > start) ids.emplace_back(s.substr(start, comma - start));
      start = comma + 1;
    }
    request.tgt = halite::wire::Value(std::move(ids));
  } else {
    request.tgt = halite::wire::Value(positional[0]);
  }
  request.tgt_type = tgt_type;
  request.fun = positional[1];
  request.arg = halite::client::ParseCliArgs(
      std::vector<std::string>(positional.begin() + 2, positional.end()));

  if (!async) {
    if (auto st = (*client)->SubscribeEvents(); !st.ok()) {
      std::cerr << "halite: " << st.error().message << "\n";
      return 3;
    }
  }
  auto job = (*client)->Publish(request);
  if (!job.ok()) {
    if (job.error().code == halite::ErrorCode::kNotFound) {
      std::cerr << job.error().message << "\n";
      return 2;
    }
    std::cerr << "halite: " << job.error().message << "\n";
    return 3;
  }
  if (async) {
    std::cout << "Executed command with job ID: " << job->jid << "\n";
    return 0;
  }
  if (verbose) {
    std::cout << "Executing job with jid " << job->jid << "\n"
              << "-------------------------------------------\n\n";
  }
  const bool live = ::isatty(STDERR_FILENO);
  bool failed = false;
  halite::client::WaitOptions wait;
  wait.timeout = std::chrono::seconds(timeout_s.value_or(static_cast<int>(cfg->timeout.count())));
  wait.gather_timeout = std::chrono::seconds(cfg->gather_job_timeout);
  if (live) {
    wait.progress = [](std::size_t got, std::size_t expected) {
      std::cerr << "\r[" << got << "/" << expected << " minions returned]" << std::flush;
    };
  }
  auto missing = (*client)->WaitForReturns(*job, wait, [&](const halite::client::MinionReturn& r) {
    if (live) std::cerr << "\r\033[K" << std::flush;
    std::cout << halite::client::FormatReturn(r.id, r.ret, *format) << std::flush;
    if ((r.retcode && *r.retcode != 0) || (r.success && !*r.success)) failed = true;
  });
  if (live) std::cerr << "\r\033[K" << std::flush;
  if (!missing.ok()) {
    std::cerr << "halite: " << missing.error().message << "\n";
    return 3;
  }
  for (const auto& id : *missing) {
    std::cout << halite::client::FormatReturn(
        id, halite::wire::Value("Minion did not return. [No response]"), *format);
  }
  if (verbose && !missing->empty()) {
    std::cout << "\n-------------------------------------------\nSummary\n"
              << "# of minions targeted: " << job->minions.size() << "\n"
              << "# of minions returned: " << job->minions.size() - missing->size() << "\n"
              << "# of minions that did not return: " << missing->size() << "\n";
  }
  if (failed || !missing->empty()) {
    std::cerr << "ERROR: Minions returned with non-zero exit code\n";
  }
  if (!missing->empty()) {
    std::cerr << "The minions may not have all finished running and any remaining minions "
                 "will return upon completion. To look up the return data for this job later, "
                 "run: halite-run jobs.lookup_jid "
              << job->jid << "\n";
    return 2;
  }
  return failed ? 1 : 0;
}
