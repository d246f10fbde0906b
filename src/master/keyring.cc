#include "halite/master/keyring.h"

namespace halite::master {

AesKeyRing::AesKeyRing(wire::Crypticle initial)
    : current_(std::make_shared<const wire::Crypticle>(std::move(initial))) {}

CrypticlePtr AesKeyRing::Current() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::uint64_t AesKeyRing::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

std::uint64_t AesKeyRing::Rotate(wire::Crypticle next) {
  std::lock_guard lock(mu_);
  current_ = std::make_shared<const wire::Crypticle>(std::move(next));
  serial_ = 0;
  return ++generation_;
}

std::pair<CrypticlePtr, std::uint64_t> AesKeyRing::NextSerial() {
  std::lock_guard lock(mu_);
  return {current_, ++serial_};
}

}  // namespace halite::master
