#include "halite/common/process_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

namespace halite {

std::uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "re");
  if (f == nullptr) return 0;
  unsigned long long pages_total = 0, pages_resident = 0;
  const int read = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
  std::fclose(f);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (read != 2 || page <= 0) return 0;
  return pages_resident * static_cast<std::uint64_t>(page);
}

HeapTrim TrimHeap() {
  HeapTrim trim;
  trim.resident_before = ResidentBytes();
  const auto start = std::chrono::steady_clock::now();
  ::malloc_trim(0);
  trim.took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  trim.resident_after = ResidentBytes();
  return trim;
}

}  // namespace halite
