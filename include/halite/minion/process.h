// Runs a shell command (/bin/sh -c) with pipes, a deadline and cancellation. Blocks the
// calling thread until the child exits: call it from a worker thread only. Thread-safe.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "halite/common/result.h"

namespace halite::minion {

struct ProcessOptions {
  std::string command;
  std::optional<std::string> cwd;
  bool merge_stderr = false;  // stderr into the stdout pipe (cmd.run)
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancelled = nullptr;
  std::size_t max_output = 16u << 20;  // per stream; the rest is read and dropped
};

struct ProcessResult {
  pid_t pid = 0;
  int retcode = 0;  // exit status, or 128 + signal when killed by one
  std::string stdout_text;
  std::string stderr_text;
  bool timed_out = false;  // the deadline passed: the process group was killed
  bool cancelled = false;  // *cancelled became true: the process group was killed
};

// The child gets stdin from /dev/null, its own process group (killed as a whole with SIGKILL
// at the deadline) and the caller's environment. Errors: Unavailable when the process cannot
// be started (pipes, posix_spawn).
Result<ProcessResult> RunShell(const ProcessOptions& options);

// Python's str.rstrip(): trailing whitespace removed.
std::string RStrip(std::string text);

}  // namespace halite::minion
