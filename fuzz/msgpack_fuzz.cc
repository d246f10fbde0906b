// msgpack decoder: Unpack and UnpackOne on arbitrary bytes, with default and tight limits.
// Whatever decodes must pack, decode and pack again to the same bytes (both packings).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "halite/common/check.h"
#include "halite/wire/msgpack.h"

using halite::wire::Packing;
using halite::wire::Unpack;
using halite::wire::UnpackLimits;
using halite::wire::UnpackOne;
using halite::wire::Value;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto value = Unpack(bytes);
  if (value.ok()) {
    // Packing is canonical after one pass (NaN never equals itself, so compare bytes).
    for (Packing packing : {Packing::kWire, Packing::kBinType}) {
      const std::string packed = halite::wire::Pack(*value, packing);
      auto back = Unpack(packed);
      HALITE_CHECK(back.ok()) << "a packed value does not decode: " << back.error().message;
      HALITE_CHECK(halite::wire::Pack(*back, packing) == packed) << "round trip changed bytes";
    }
    (void)value->ToJson();
  }

  UnpackLimits tight;
  tight.max_depth = 4;
  tight.max_bytes = 512;
  (void)Unpack(bytes, tight);

  // The streaming form: consume documents from the front until the input runs out.
  std::string_view rest = bytes;
  for (int i = 0; i < 64 && !rest.empty(); ++i) {
    std::size_t consumed = 0;
    auto one = UnpackOne(rest, &consumed);
    if (!one.ok() || !one->has_value()) {
      HALITE_CHECK(consumed == 0) << "consumed set without a document";
      break;
    }
    HALITE_CHECK(consumed > 0 && consumed <= rest.size()) << "consumed " << consumed;
    rest.remove_prefix(consumed);
  }
  return 0;
}
