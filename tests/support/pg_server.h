// PgServer: a real PostgreSQL server for tests, in a temp dir of its own, listening only on a
// loopback address (and a unix socket in that dir). initdb and postgres run as the "postgres"
// user when the test runs as root (the server refuses root), directly otherwise. Stop and
// Start keep the data, so a test can take the server away and bring it back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "halite/common/result.h"

namespace halite::testing {

class PgServer {
 public:
  // Makes a cluster (initdb, trust auth for user "halite") under a fresh temp dir and starts
  // it on ip:port. FailedPrecondition names what is missing when PostgreSQL is not installed.
  static Result<std::unique_ptr<PgServer>> Create(const std::string& ip, int port = 5432);
  ~PgServer();  // stops the server (SIGKILL if it lingers) and removes the dir
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // "host=<ip> port=<port> user=halite dbname=postgres connect_timeout=5"
  std::string dsn() const;
  const std::string& ip() const { return ip_; }
  int port() const { return port_; }

  // Fast shutdown (SIGINT: open connections are cut, as when a server goes away), and wait.
  Status Stop();
  // Starts the server on the same data and waits until it accepts connections.
  Status Start();
  bool running() const { return pid_ > 0; }
  // Immediate shutdown (SIGQUIT): no checkpoint, so the next Start recovers from the WAL, as
  // after a power cut. Waits for the exit.
  Status Crash();
  // SIGSTOP / SIGCONT to every server process: a server that accepts bytes and never answers.
  void Freeze();
  void Thaw();

 private:
  PgServer(std::filesystem::path root, std::filesystem::path bin, std::string ip, int port)
      : root_(std::move(root)), bin_(std::move(bin)), ip_(std::move(ip)), port_(port) {}

  const std::filesystem::path root_;  // <root>/data, <root>/log, the unix socket
  const std::filesystem::path bin_;   // /usr/lib/postgresql/<v>/bin
  const std::string ip_;
  const int port_;
  pid_t pid_ = -1;
};

}  // namespace halite::testing
