// ROS 2 CDR (XCDR1, either byte order) -> ROS 1 serialized message: include/netloop/ros2/cdr.h
// gives the mapping.
#include <cstdio>

#include "cdr_layout.h"

namespace netloop {
namespace ros2 {

namespace cdr {

namespace {

inline uint16_t byteSwapped(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t byteSwapped(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t byteSwapped(uint64_t v) { return __builtin_bswap64(v); }

/// Reverses the bytes of each of the `count` values of type T at `p` (unaligned).
template <class T>
void swapEach(uint8_t* p, size_t count) {
  for (size_t i = 0; i < count; ++i, p += sizeof(T)) {
    T v;
    memcpy(&v, p, sizeof(T));
    v = byteSwapped(v);
    memcpy(p, &v, sizeof(T));
  }
}

/// Reverses the bytes of each of the `count` values of `size` bytes at `p`.
inline void swapInPlace(uint8_t* p, size_t count, uint8_t size) {
  if (size == 2) swapEach<uint16_t>(p, count);
  if (size == 4) swapEach<uint32_t>(p, count);
  if (size == 8) swapEach<uint64_t>(p, count);
}

// CDR -> ROS 1.
class FromCdr {
 public:
  FromCdr(const uint8_t* body, size_t len, bool swap, Out* out)
      : in_(body, len, "CDR", ", offsets after the 4-byte encapsulation header"), swap_(swap), out_(out) {}

  void message(const Type& t) {
    if (t.empty_in_cdr) in_.take(1, "structure_needs_at_least_one_member");
    for (const Field& f : t.fields) inField(f, [&] { field(f); });
  }

  size_t left() const { return in_.left(); }

 private:
  void align(size_t a) {
    size_t off = in_.consumed() & (a - 1);
    if (off) {
      size_t pad = a - off;
      if (in_.left() < pad)
        throw FieldError{"", "the CDR bytes end inside padding at offset " + std::to_string(in_.consumed())};
      in_.skip(pad);
    }
  }
  uint32_t u32(const char* what) {
    align(4);
    uint32_t v;
    memcpy(&v, in_.take(4, what), 4);
    return swap_ ? __builtin_bswap32(v) : v;
  }

  void field(const Field& f) {
    if (f.ros1_only) {
      // Header.seq: ROS 2 has none; ROS 1 gets 0.
      size_t n = static_cast<size_t>(f.fixed) * f.mult * f.size;
      memset(out_->reserve(n), 0, n);
      return;
    }
    uint32_t count = f.fixed;
    if (f.variable) {
      count = u32("a sequence length");
      out_->putU32(count);
    }
    switch (f.kind) {
      case Field::Prim: {
        size_t n = static_cast<size_t>(count) * f.mult;
        if (n == 0) return;
        size_t bytes = n * f.size;
        if (bytes / n != f.size) throw FieldError{"", "sequence too large"};
        align(f.size);
        const uint8_t* src = in_.take(bytes, f.is_array ? "an array" : "a value");
        uint8_t* dst = out_->reserve(bytes);
        memcpy(dst, src, bytes);
        if (swap_ && f.size > 1) swapInPlace(dst, n, f.size);
        return;
      }
      case Field::String:
        for (uint32_t i = 0; i < count; ++i) {
          uint32_t len = u32("a string length");
          const uint8_t* src = in_.take(len, "a string");
          uint32_t chars = len;
          if (len > 0 && src[len - 1] == 0) chars = len - 1;  // the terminating NUL
          out_->putU32(chars);
          out_->put(src, chars);
        }
        return;
      case Field::Msg:
        if (f.variable && static_cast<size_t>(count) > in_.left())
          throw FieldError{"", "sequence length " + std::to_string(count) + " exceeds the " + std::to_string(in_.left()) +
                                   " bytes left"};
        messages(
            f, count, &in_, out_,
            [&] {
              if (swap_) return false;
              align(f.type->first_align);
              return in_.consumed() % f.type->max_align == 0;
            },
            [&](const Type& t) { message(t); });
        return;
    }
  }

  Input in_;
  bool swap_;
  Out* out_;
};

}  // namespace

}  // namespace cdr

std::vector<uint8_t> cdrToRos1(const MessageLayout& layout, const uint8_t* cdr, size_t len) {
  const cdr::Type* root = layout.impl().root;
  if (len < 4)
    throw CdrError(layout.datatype() + " (CDR -> ROS 1): " + std::to_string(len) +
                   " bytes, shorter than the 4-byte encapsulation header");
  if (cdr[0] != 0x00 || (cdr[1] != 0x00 && cdr[1] != 0x01)) {
    char buf[16];
    snprintf(buf, sizeof buf, "%02x %02x", cdr[0], cdr[1]);
    throw CdrError(layout.datatype() + " (CDR -> ROS 1): encapsulation " + buf +
                   " is not plain CDR (00 00 big endian or 00 01 little endian)");
  }
  bool swap = cdr[1] == 0x00;
  cdr::Out out(len + 64);
  cdr::FromCdr conv(cdr + 4, len - 4, swap, &out);
  try {
    conv.message(*root);
  } catch (const cdr::FieldError& e) {
    throw CdrError(layout.datatype() + " (CDR -> ROS 1): field '" + e.path + "': " + e.what);
  }
  // Writers may pad the payload to a multiple of 4 (the encapsulation options say how much).
  if (conv.left() >= 4)
    throw CdrError(layout.datatype() + " (CDR -> ROS 1): " + std::to_string(conv.left()) +
                   " bytes left over after the last field (sample of " + std::to_string(len) +
                   " bytes; the definition does not match the bytes)");
  return out.finish();
}

}  // namespace ros2
}  // namespace netloop
