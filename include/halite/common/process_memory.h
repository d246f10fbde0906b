// This process's resident memory, and giving the heap's free pages back to the kernel.
// glibc keeps what a burst freed (a sign-in storm's third connection per minion, a job's
// returns) in its arenas, resident, until something trims them: the master does so once
// per maintenance loop. Reentrant.
#pragma once

#include <chrono>
#include <cstdint>

namespace halite {

// VmRSS, from /proc/self/statm; 0 when it cannot be read.
std::uint64_t ResidentBytes();

struct HeapTrim {
  std::uint64_t resident_before = 0;  // bytes
  std::uint64_t resident_after = 0;
  std::chrono::microseconds took{0};
};
// malloc_trim(0): every arena's free pages back to the kernel (MADV_DONTNEED), not only the
// top of the main heap as free() does. It holds each arena's lock in turn while it walks it.
// Under a sanitizer, whose allocator is not glibc's, it gives nothing back.
HeapTrim TrimHeap();

}  // namespace halite
