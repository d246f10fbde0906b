// The msgpack codec: Pack (Salt's two packings) and Unpack (bounded by the bytes present and a
// node budget). Value itself is value.cc; its JSON rendering json.cc.
#include "halite/wire/msgpack.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace halite::wire {

namespace {

// ---------------------------------------------------------------------------------------------
// Packing

void PutBE(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PackStr(const Str& s, Packing packing, std::string& out) {
  const std::size_t n = s.bytes.size();
  if (packing == Packing::kBinType && s.binary) {
    if (n <= 0xff) {
      out.push_back(static_cast<char>(0xc4));
      PutBE(out, n, 1);
    } else if (n <= 0xffff) {
      out.push_back(static_cast<char>(0xc5));
      PutBE(out, n, 2);
    } else {
      out.push_back(static_cast<char>(0xc6));
      PutBE(out, n, 4);
    }
  } else if (n <= 31) {
    out.push_back(static_cast<char>(0xa0 | n));
  } else if (packing == Packing::kBinType && n <= 0xff) {
    out.push_back(static_cast<char>(0xd9));
    PutBE(out, n, 1);
  } else if (n <= 0xffff) {
    out.push_back(static_cast<char>(0xda));
    PutBE(out, n, 2);
  } else {
    out.push_back(static_cast<char>(0xdb));
    PutBE(out, n, 4);
  }
  out += s.bytes;
}

void PackInt(std::int64_t i, std::string& out) {
  if (i >= 0) {
    auto u = static_cast<std::uint64_t>(i);
    if (u <= 0x7f) {
      out.push_back(static_cast<char>(u));
    } else if (u <= 0xff) {
      out.push_back(static_cast<char>(0xcc));
      PutBE(out, u, 1);
    } else if (u <= 0xffff) {
      out.push_back(static_cast<char>(0xcd));
      PutBE(out, u, 2);
    } else if (u <= 0xffffffffULL) {
      out.push_back(static_cast<char>(0xce));
      PutBE(out, u, 4);
    } else {
      out.push_back(static_cast<char>(0xcf));
      PutBE(out, u, 8);
    }
  } else if (i >= -32) {
    out.push_back(static_cast<char>(static_cast<std::int8_t>(i)));
  } else if (i >= -128) {
    out.push_back(static_cast<char>(0xd0));
    PutBE(out, static_cast<std::uint8_t>(i), 1);
  } else if (i >= -32768) {
    out.push_back(static_cast<char>(0xd1));
    PutBE(out, static_cast<std::uint16_t>(i), 2);
  } else if (i >= std::numeric_limits<std::int32_t>::min()) {
    out.push_back(static_cast<char>(0xd2));
    PutBE(out, static_cast<std::uint32_t>(i), 4);
  } else {
    out.push_back(static_cast<char>(0xd3));
    PutBE(out, static_cast<std::uint64_t>(i), 8);
  }
}

void PackContainerHeader(std::size_t n, std::uint8_t fix, std::uint8_t c16, std::uint8_t c32,
                         std::string& out) {
  if (n <= 15) {
    out.push_back(static_cast<char>(fix | n));
  } else if (n <= 0xffff) {
    out.push_back(static_cast<char>(c16));
    PutBE(out, n, 2);
  } else {
    out.push_back(static_cast<char>(c32));
    PutBE(out, n, 4);
  }
}

void PackExt(const Ext& e, std::string& out) {
  const std::size_t n = e.data.size();
  switch (n) {
    case 1:
      out.push_back(static_cast<char>(0xd4));
      break;
    case 2:
      out.push_back(static_cast<char>(0xd5));
      break;
    case 4:
      out.push_back(static_cast<char>(0xd6));
      break;
    case 8:
      out.push_back(static_cast<char>(0xd7));
      break;
    case 16:
      out.push_back(static_cast<char>(0xd8));
      break;
    default:
      if (n <= 0xff) {
        out.push_back(static_cast<char>(0xc7));
        PutBE(out, n, 1);
      } else if (n <= 0xffff) {
        out.push_back(static_cast<char>(0xc8));
        PutBE(out, n, 2);
      } else {
        out.push_back(static_cast<char>(0xc9));
        PutBE(out, n, 4);
      }
  }
  out.push_back(static_cast<char>(e.type));
  out += e.data;
}

// ---------------------------------------------------------------------------------------------
// Unpacking

// Distinguishes "need more bytes" from malformed input for the streaming decoder.
struct Incomplete {};

class Reader {
 public:
  Reader(std::string_view in, const UnpackLimits& limits) : in_(in), limits_(limits) {}

  // Returns nullopt + sets incomplete_ when input ends early.
  Result<Value> Read(std::size_t depth) {
    if (depth > limits_.max_depth) {
      return Error::ResourceExhausted("msgpack nesting deeper than " +
                                      std::to_string(limits_.max_depth));
    }
    if (nodes_ >= limits_.max_nodes) return OverBudget(1);
    ++nodes_;
    std::uint8_t tag = 0;
    if (!Byte(tag)) return Truncated();
    if (tag <= 0x7f) return Value(static_cast<std::int64_t>(tag));
    if (tag >= 0xe0) return Value(static_cast<std::int64_t>(static_cast<std::int8_t>(tag)));
    if ((tag & 0xe0) == 0xa0) return ReadStr(tag & 0x1f, false);
    if ((tag & 0xf0) == 0x90) return ReadArray(tag & 0x0f, depth);
    if ((tag & 0xf0) == 0x80) return ReadMap(tag & 0x0f, depth);
    std::uint64_t n = 0;
    switch (tag) {
      case 0xc0:
        return Value();
      case 0xc2:
        return Value(false);
      case 0xc3:
        return Value(true);
      case 0xc4:
      case 0xc5:
      case 0xc6:
        if (!BE(n, 1 << (tag - 0xc4))) return Truncated();
        return ReadStr(n, true);
      case 0xd9:
      case 0xda:
      case 0xdb:
        if (!BE(n, 1 << (tag - 0xd9))) return Truncated();
        return ReadStr(n, false);
      case 0xca: {
        if (!BE(n, 4)) return Truncated();
        return Value(static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(n))));
      }
      case 0xcb:
        if (!BE(n, 8)) return Truncated();
        return Value(std::bit_cast<double>(n));
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
        if (!BE(n, 1 << (tag - 0xcc))) return Truncated();
        return Value(static_cast<unsigned long long>(n));  // NOLINT(google-runtime-int)
      case 0xd0:
        if (!BE(n, 1)) return Truncated();
        return Value(static_cast<std::int64_t>(static_cast<std::int8_t>(n)));
      case 0xd1:
        if (!BE(n, 2)) return Truncated();
        return Value(static_cast<std::int64_t>(static_cast<std::int16_t>(n)));
      case 0xd2:
        if (!BE(n, 4)) return Truncated();
        return Value(static_cast<std::int64_t>(static_cast<std::int32_t>(n)));
      case 0xd3:
        if (!BE(n, 8)) return Truncated();
        return Value(static_cast<std::int64_t>(n));
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        return ReadExt(std::size_t{1} << (tag - 0xd4));
      case 0xc7:
      case 0xc8:
      case 0xc9:
        if (!BE(n, 1 << (tag - 0xc7))) return Truncated();
        return ReadExt(n);
      case 0xdc:
      case 0xdd:
        if (!BE(n, tag == 0xdc ? 2 : 4)) return Truncated();
        return ReadArray(n, depth);
      case 0xde:
      case 0xdf:
        if (!BE(n, tag == 0xde ? 2 : 4)) return Truncated();
        return ReadMap(n, depth);
      default:
        return Error::InvalidArgument("msgpack: invalid type byte 0x" + HexByte(tag) +
                                      " at offset " + std::to_string(pos_ - 1));
    }
  }

  std::size_t pos() const { return pos_; }
  bool incomplete() const { return incomplete_; }

 private:
  static std::string HexByte(std::uint8_t b) {
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string{kHex[b >> 4], kHex[b & 0xf]};
  }

  // `more` values would take the document past the node budget.
  Error OverBudget(std::uint64_t more) const {
    return Error::ResourceExhausted("msgpack: document of more than " +
                                    std::to_string(limits_.max_nodes) + " values (" +
                                    std::to_string(nodes_) + " decoded, " + std::to_string(more) +
                                    " more declared at offset " + std::to_string(pos_) + ")");
  }

  Error Truncated() {
    incomplete_ = true;
    return Error::InvalidArgument("msgpack: truncated input at offset " + std::to_string(pos_));
  }

  bool Byte(std::uint8_t& b) {
    if (pos_ >= in_.size()) return false;
    b = static_cast<std::uint8_t>(in_[pos_++]);
    return true;
  }

  bool BE(std::uint64_t& v, int bytes) {
    if (in_.size() - pos_ < static_cast<std::size_t>(bytes)) return false;
    v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(in_[pos_++]);
    return true;
  }

  std::size_t Remaining() const { return in_.size() - pos_; }

  Result<Value> ReadStr(std::uint64_t n, bool binary) {
    if (n > Remaining()) return Truncated();
    Str s{std::string(in_.substr(pos_, n)), binary};
    pos_ += n;
    return Value(std::move(s));
  }

  Result<Value> ReadExt(std::uint64_t n) {
    std::uint8_t type = 0;
    if (!Byte(type)) return Truncated();
    if (n > Remaining()) return Truncated();
    Ext e{static_cast<std::int8_t>(type), std::string(in_.substr(pos_, n))};
    pos_ += n;
    return Value(std::move(e));
  }

  // Containers reserve at most this many elements up front and grow with the elements really
  // decoded: a header can declare millions of elements that are each one byte on the wire and
  // 48 bytes (96 for a map entry) in memory.
  static constexpr std::uint64_t kMaxReserve = 64;

  Result<Value> ReadArray(std::uint64_t n, std::size_t depth) {
    // Every element takes at least one byte: a larger count cannot be honest.
    if (n > Remaining()) return Truncated();
    if (n > limits_.max_nodes - nodes_) return OverBudget(n);
    Array a;
    a.reserve(std::min(n, kMaxReserve));
    for (std::uint64_t i = 0; i < n; ++i) {
      HALITE_ASSIGN_OR_RETURN(Value v, Read(depth + 1));
      a.push_back(std::move(v));
    }
    return Value(std::move(a));
  }

  Result<Value> ReadMap(std::uint64_t n, std::size_t depth) {
    if (n > Remaining() / 2) return Truncated();
    if (n > (limits_.max_nodes - nodes_) / 2) return OverBudget(2 * n);
    Map m;
    m.reserve(std::min(n, kMaxReserve));
    for (std::uint64_t i = 0; i < n; ++i) {
      HALITE_ASSIGN_OR_RETURN(Value k, Read(depth + 1));
      HALITE_ASSIGN_OR_RETURN(Value v, Read(depth + 1));
      m.emplace_back(std::move(k), std::move(v));
    }
    return Value(std::move(m));
  }

  std::string_view in_;
  const UnpackLimits& limits_;
  std::size_t pos_ = 0;
  std::size_t nodes_ = 0;  // Values decoded so far, counted against limits_.max_nodes
  bool incomplete_ = false;
};

}  // namespace

void PackTo(const Value& value, Packing packing, std::string& out) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Nil>) {
          out.push_back(static_cast<char>(0xc0));
        } else if constexpr (std::is_same_v<T, bool>) {
          out.push_back(static_cast<char>(x ? 0xc3 : 0xc2));
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          PackInt(x, out);
        } else if constexpr (std::is_same_v<T, std::uint64_t>) {
          out.push_back(static_cast<char>(0xcf));
          PutBE(out, x, 8);
        } else if constexpr (std::is_same_v<T, double>) {
          out.push_back(static_cast<char>(0xcb));
          PutBE(out, std::bit_cast<std::uint64_t>(x), 8);
        } else if constexpr (std::is_same_v<T, Str>) {
          PackStr(x, packing, out);
        } else if constexpr (std::is_same_v<T, Array>) {
          PackContainerHeader(x.size(), 0x90, 0xdc, 0xdd, out);
          for (const Value& e : x) PackTo(e, packing, out);
        } else if constexpr (std::is_same_v<T, Map>) {
          PackContainerHeader(x.size(), 0x80, 0xde, 0xdf, out);
          for (const auto& [k, v] : x) {
            PackTo(k, packing, out);
            PackTo(v, packing, out);
          }
        } else {
          PackExt(x, out);
        }
      },
      value.variant());
}

std::string Pack(const Value& value, Packing packing) {
  std::string out;
  PackTo(value, packing, out);
  return out;
}

std::size_t PackedSizeBound(const Value& value) {
  return std::visit(
      [](const auto& x) -> std::size_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Str>) {
          return 5 + x.bytes.size();
        } else if constexpr (std::is_same_v<T, Array>) {
          std::size_t n = 5;
          for (const Value& e : x) n += PackedSizeBound(e);
          return n;
        } else if constexpr (std::is_same_v<T, Map>) {
          std::size_t n = 5;
          for (const auto& [k, v] : x) n += PackedSizeBound(k) + PackedSizeBound(v);
          return n;
        } else if constexpr (std::is_same_v<T, Ext>) {
          return 6 + x.data.size();
        } else {
          return 9;  // nil, bool, integers, double
        }
      },
      value.variant());
}

Result<Value> Unpack(std::string_view bytes, const UnpackLimits& limits) {
  if (bytes.size() > limits.max_bytes) {
    return Error::ResourceExhausted("msgpack: document of " + std::to_string(bytes.size()) +
                                    " bytes exceeds the limit of " +
                                    std::to_string(limits.max_bytes));
  }
  if (bytes.empty()) return Error::InvalidArgument("msgpack: empty input");
  Reader reader(bytes, limits);
  HALITE_ASSIGN_OR_RETURN(Value v, reader.Read(0));
  if (reader.pos() != bytes.size()) {
    return Error::InvalidArgument("msgpack: " + std::to_string(bytes.size() - reader.pos()) +
                                  " trailing bytes after the document");
  }
  return v;
}

Result<std::optional<Value>> UnpackOne(std::string_view bytes, std::size_t* consumed,
                                       const UnpackLimits& limits) {
  *consumed = 0;
  if (bytes.empty()) return std::optional<Value>();
  Reader reader(bytes, limits);
  auto v = reader.Read(0);
  if (!v.ok()) {
    if (reader.incomplete()) {
      if (bytes.size() > limits.max_bytes) {
        return Error::ResourceExhausted("msgpack: incomplete document exceeds " +
                                        std::to_string(limits.max_bytes) + " bytes");
      }
      return std::optional<Value>();
    }
    return std::move(v).error();
  }
  *consumed = reader.pos();
  return std::optional<Value>(std::move(v).value());
}

}  // namespace halite::wire
