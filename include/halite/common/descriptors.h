// This process's file descriptors: its limit, how many are open, and whether it has run out.
// A master holds two per connected minion and a third while one signs in, so these are what
// /metrics and the health check report during a storm. Reentrant.
#pragma once

#include <cstdint>

namespace halite {

// RLIMIT_NOFILE's soft limit; 0 when it cannot be read.
std::uint64_t FileDescriptorLimit();
// Descriptors open now (a listing of /proc/self/fd); 0 when it cannot be listed.
std::uint64_t OpenFileDescriptors();
// True when opening one more descriptor fails with EMFILE (this process is at its limit) or
// ENFILE (the system is): after an I/O error, tells running out from a failing directory.
bool OutOfFileDescriptors();

}  // namespace halite
