// HaproxyRuntime over a Unix socket, and the member-list sync (haproxy_runtime.h).
#include "halite/cluster/haproxy_runtime.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace halite::cluster {

namespace {

constexpr int kAdminMaint = 0x01;  // SRV_ADMF_FMAINT

class SocketRuntime final : public HaproxyRuntime {
 public:
  SocketRuntime(std::filesystem::path path, std::chrono::milliseconds timeout)
      : path_(std::move(path)), timeout_(timeout) {}

  // HaproxyRuntime:
  Result<std::string> Command(const std::string& command) override {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.native().size() >= sizeof addr.sun_path) {
      return Error::InvalidArgument(path_.string() + ": socket path too long");
    }
    std::memcpy(addr.sun_path, path_.c_str(), path_.native().size());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Error::Internal(std::string("socket: ") + std::strerror(errno));
    auto fail = [&](const std::string& what) {
      const std::string why = what + ": " + std::strerror(errno);
      ::close(fd);
      return Error::Unavailable("haproxy socket " + path_.string() + ": " + why);
    };
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return fail("connect");
    const std::string line = command + "\n";
    if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
      return fail("send");
    }
    std::string answer;
    char buf[4096];
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {  // HAProxy closes the connection after answering one command
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) {
        ::close(fd);
        return Error::Unavailable("haproxy socket " + path_.string() + ": no answer to '" +
                                  command + "' within " + std::to_string(timeout_.count()) + " ms");
      }
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0) return fail("recv");
      if (n == 0) break;
      answer.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return answer;
  }

 private:
  const std::filesystem::path path_;
  const std::chrono::milliseconds timeout_;
};

std::uint16_t ToPort(const std::string& text) {
  int n = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || n > 65535) return 0;
    n = n * 10 + (c - '0');
  }
  return n > 65535 ? 0 : static_cast<std::uint16_t>(n);
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// One backend of `desired`: server name -> (address, port, check port).
struct Want {
  std::string address;
  std::uint16_t port;
  std::uint16_t check_port;
};

std::map<std::string, Want> Wanted(const HaproxyOptions& o, bool publish) {
  std::map<std::string, Want> out;
  for (const HaproxyMaster& m : o.masters) {
    out[m.id] = {m.address, publish ? HaproxyPublishPort(o, m) : HaproxyRetPort(o, m),
                 HaproxyHealthPort(o, m)};
  }
  return out;
}

Result<std::vector<HaproxyServerState>> ReadBackend(HaproxyRuntime& rt, const std::string& b) {
  HALITE_ASSIGN_OR_RETURN(std::string text, rt.Command("show servers state " + b));
  return ParseServersState(text);
}

// Runs `command`; an answer starting with a word of failure is an error. (Success answers
// vary: empty, "New server registered.", "IP changed from ...".)
Status Run(HaproxyRuntime& rt, const std::string& command) {
  HALITE_ASSIGN_OR_RETURN(std::string answer, rt.Command(command));
  for (const char* bad : {"No such", "Already", "Unknown", "Require", "Invalid", "Cannot", "cannot", "Only",
                          "Server still", "Permission denied", "error", "'"}) {
    if (answer.rfind(bad, 0) == 0) {
      while (!answer.empty() && (answer.back() == '\n' || answer.back() == ' ')) answer.pop_back();
      return Error::Internal("haproxy refused '" + command + "': " + answer);
    }
  }
  return OkStatus();
}

Status SyncBackend(HaproxyRuntime& rt, const std::string& backend,
                   const std::map<std::string, Want>& want, HaproxySyncReport& report) {
  HALITE_ASSIGN_OR_RETURN(std::vector<HaproxyServerState> have, ReadBackend(rt, backend));
  std::set<std::string> present;
  for (const HaproxyServerState& s : have) {
    const std::string id = backend + "/" + s.name;
    present.insert(s.name);
    auto it = want.find(s.name);
    if (it == want.end()) {
      if ((s.admin_state & kAdminMaint) == 0) {
        HALITE_RETURN_IF_ERROR(Run(rt, "set server " + id + " state maint"));
      }
      (void)Run(rt, "shutdown sessions server " + id);
      if (Run(rt, "del server " + id).ok()) {
        report.removed.push_back(id);
      } else {
        report.draining.push_back(id);
      }
      continue;
    }
    const Want& w = it->second;
    bool updated = false;
    if (s.address != w.address || s.port != w.port) {
      HALITE_RETURN_IF_ERROR(
          Run(rt, "set server " + id + " addr " + w.address + " port " + std::to_string(w.port)));
      updated = true;
    }
    if (s.check_port != w.check_port) {
      HALITE_RETURN_IF_ERROR(
          Run(rt, "set server " + id + " check-port " + std::to_string(w.check_port)));
      updated = true;
    }
    if (updated) report.updated.push_back(id);
    if ((s.admin_state & kAdminMaint) != 0) {
      HALITE_RETURN_IF_ERROR(Run(rt, "set server " + id + " state ready"));
      report.enabled.push_back(id);
    }
  }
  for (const auto& [name, w] : want) {
    if (present.count(name) != 0) continue;
    const std::string id = backend + "/" + name;
    HALITE_RETURN_IF_ERROR(Run(rt, "add server " + id + " " + HaproxyHostPort(w.address, w.port) +
                                       " check port " + std::to_string(w.check_port) + " " +
                                       kHaproxyServerCheck));
    HALITE_RETURN_IF_ERROR(Run(rt, "enable health " + id));
    HALITE_RETURN_IF_ERROR(Run(rt, "enable server " + id));
    report.added.push_back(id);
  }
  // Read back: every member serves (not in maintenance) at its address.
  HALITE_ASSIGN_OR_RETURN(have, ReadBackend(rt, backend));
  std::set<std::string> serving;
  for (const HaproxyServerState& s : have) {
    auto it = want.find(s.name);
    if (it == want.end() || (s.admin_state & kAdminMaint) != 0) continue;
    if (s.address == it->second.address && s.port == it->second.port) serving.insert(s.name);
  }
  for (const auto& [name, w] : want) {
    if (serving.count(name) == 0) {
      return Error::Internal("haproxy: " + backend + "/" + name +
                             " is not serving at its address after the sync");
    }
  }
  return OkStatus();
}

}  // namespace

std::unique_ptr<HaproxyRuntime> MakeHaproxySocket(std::filesystem::path socket,
                                                  std::chrono::milliseconds timeout) {
  return std::make_unique<SocketRuntime>(std::move(socket), timeout);
}

Result<std::vector<HaproxyServerState>> ParseServersState(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || Words(line) != std::vector<std::string>{"1"}) {
    return Error::InvalidArgument("show servers state: not format 1: " + line.substr(0, 200));
  }
  std::map<std::string, std::size_t> column;
  std::vector<HaproxyServerState> out;
  while (std::getline(in, line)) {
    std::vector<std::string> w = Words(line);
    if (w.empty()) continue;
    if (w[0] == "#") {
      for (std::size_t i = 1; i < w.size(); ++i) column[w[i]] = i - 1;
      continue;
    }
    if (w[0][0] == '#') continue;
    auto get = [&](const char* name) -> const std::string* {
      auto it = column.find(name);
      return it == column.end() || it->second >= w.size() ? nullptr : &w[it->second];
    };
    const std::string *backend = get("be_name"), *name = get("srv_name"), *addr = get("srv_addr"),
                      *port = get("srv_port"), *check_port = get("srv_check_port"),
                      *admin = get("srv_admin_state");
    if (!backend || !name || !addr || !port || !check_port || !admin) {
      return Error::InvalidArgument("show servers state: a line without the columns used: " +
                                    line.substr(0, 200));
    }
    out.push_back(
        {*backend, *name, *addr, ToPort(*port), ToPort(*check_port), std::atoi(admin->c_str())});
  }
  return out;
}

Result<HaproxySyncReport> SyncHaproxyServers(HaproxyRuntime& runtime,
                                             const HaproxyOptions& desired) {
  HaproxySyncReport report;
  HALITE_RETURN_IF_ERROR(
      SyncBackend(runtime, kHaproxyPublishBackend, Wanted(desired, true), report));
  HALITE_RETURN_IF_ERROR(
      SyncBackend(runtime, kHaproxyRequestBackend, Wanted(desired, false), report));
  return report;
}

}  // namespace halite::cluster
