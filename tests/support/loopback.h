// One address allocator for every test: servers listen on 127.x.y.z addresses no other test
// process uses, so `ctest -j` never puts two servers on one address and port.
//
// A process owns a /24 (127.A.B.0/24) by holding an flock on
// /tmp/halite-test-addresses/127.A.B; the kernel drops the lock when the process exits, even
// when it is killed, so a crashed run leaves nothing to clean up. Thread-safe.
#pragma once

#include <string>

namespace halite::testing {

// A /24 of this process's own: "127.A.B." (append a host number, 1 - 254).
std::string LoopbackSubnet();

// One address of this process's own, 127.A.B.C, never handed out twice in this process
// (C runs from 2 to 254 in a subnet from LoopbackSubnet(); a fresh one is taken after that).
std::string UniqueLoopbackIp();

}  // namespace halite::testing
