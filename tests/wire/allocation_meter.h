// Counts the bytes allocated through global operator new in this test binary (allocation_meter.cc
// replaces it), so a test can assert how much memory a call held at its peak.
// Thread-safe counters; meant for single-threaded tests.
#pragma once

#include <cstddef>

namespace halite::wire::testing_support {

// Peak of live operator-new bytes since construction, above what was live at construction.
class AllocationMeter {
 public:
  AllocationMeter();
  std::size_t PeakBytes() const;

 private:
  std::size_t baseline_;
};

}  // namespace halite::wire::testing_support
