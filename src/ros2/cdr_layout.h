// Private to libnetloop_ros2: a parsed message type (cdr_definition.cpp builds it, the two
// converters cdr_encode.cpp and cdr_decode.cpp walk it) and what both directions of the
// conversion share: the bytes read (Input) and written (Out), the error that carries a field's
// path up to the converter that names it, and the copy of plain message arrays in one piece.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "netloop/ros2/cdr.h"

namespace netloop {
namespace ros2 {

namespace cdr {

struct Type;

/// One field of a message type, as both wire forms need it.
struct Field {
  enum Kind : uint8_t { Prim, String, Msg };
  Kind kind = Prim;
  uint8_t size = 1;         // Prim: element size (1, 2, 4, 8) = CDR alignment
  uint32_t mult = 1;        // Prim: primitives per element (time/duration = 2 x 4 bytes)
  bool is_array = false;    // T[] or T[N]
  bool variable = false;    // T[]
  uint32_t fixed = 1;       // T[N]: N; scalar: 1
  bool ros1_only = false;   // std_msgs/Header's seq: read and dropped (ROS 1 -> 2), written 0 (2 -> 1)
  const Type* type = nullptr;  // Msg
  std::string name;
  std::string type_text;    // as written, for messages
};

struct Type {
  std::string name;  // pkg/Type
  std::vector<Field> fields;
  bool empty_in_cdr = false;  // no fields: ROS 2 adds `uint8 structure_needs_at_least_one_member`
  // Plain: fixed-size primitives only, laid out in CDR exactly as packed in ROS 1 when the type
  // starts at an offset that is a multiple of max_align (e.g. geometry_msgs/Point, Point32,
  // Quaternion, Pose): arrays of it are then one memcpy.
  bool plain = false;
  size_t plain_size = 0;
  uint8_t max_align = 1;
  uint8_t first_align = 1;
};

// ---- conversion: what ROS 1 -> CDR and CDR -> ROS 1 share ---------------------------------

/// Thrown inside the converters; each nested level prefixes its field name on the way out.
struct FieldError {
  std::string path;
  std::string what;
};

/// Runs `convert` for field `f`, prefixing the field's name to the path of an error inside it.
template <class Convert>
void inField(const Field& f, Convert convert) {
  try {
    convert();
  } catch (FieldError& e) {
    e.path = f.name + (e.path.empty() ? "" : "." + e.path);
    throw;
  }
}

/// A growing output buffer; bytes between the write position and the end are always zero
/// (so skipped padding is zero).
class Out {
 public:
  explicit Out(size_t initial) { buf_.resize(initial); }
  uint8_t* reserve(size_t n) {
    if (pos_ + n > buf_.size()) buf_.resize(std::max(buf_.size() * 2, pos_ + n));
    uint8_t* p = buf_.data() + pos_;
    pos_ += n;
    return p;
  }
  void put(const void* src, size_t n) {
    if (n) memcpy(reserve(n), src, n);
  }
  void putU32(uint32_t v) { put(&v, 4); }  // little endian host (x86, ARM)
  /// CDR: pad to `a` counted from the end of the 4-byte encapsulation header.
  void alignCdr(size_t a) {
    size_t off = (pos_ - 4) & (a - 1);
    if (off) reserve(a - off);
  }
  size_t pos() const { return pos_; }
  std::vector<uint8_t> finish() {
    buf_.resize(pos_);
    return std::move(buf_);
  }

 private:
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;
};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "netloop's CDR conversion assumes a little endian host");

/// The bytes a conversion reads and where it is in them; running out names the bytes' form
/// ("ROS 1", "CDR"), what was being read, and the offsets.
class Input {
 public:
  /// `offsets_note` follows the offset in an error (e.g. how offsets are counted).
  Input(const uint8_t* begin, size_t len, const char* form, const char* offsets_note)
      : begin_(begin), p_(begin), end_(begin + len), form_(form), offsets_note_(offsets_note) {}

  /// The next `n` bytes (`what` they are names them in the error when fewer are left).
  const uint8_t* take(size_t n, const char* what) {
    if (left() < n) {
      throw FieldError{"", std::string("the ") + form_ + " bytes end at offset " + std::to_string(end_ - begin_) +
                               " inside " + what + " (" + std::to_string(n) + " bytes needed at offset " +
                               std::to_string(consumed()) + offsets_note_ + ")"};
    }
    const uint8_t* q = p_;
    p_ += n;
    return q;
  }
  /// Skips `n` bytes; the caller has checked that they are left.
  void skip(size_t n) { p_ += n; }
  size_t consumed() const { return static_cast<size_t>(p_ - begin_); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  const char* form_;
  const char* offsets_note_;
};

/// Converts the `count` messages of field `f` (a message or an array of them): in one copy when
/// the type is plain and `alignedAlike()` (which aligns the side that needs it) finds both sides
/// at the same alignment, else one by one with `message`, prefixing "[i]" to the path of an
/// error inside element i of an array.
template <class AlignedAlike, class Message>
void messages(const Field& f, uint32_t count, Input* in, Out* out, AlignedAlike alignedAlike, Message message) {
  if (count > 0 && f.type->plain && alignedAlike()) {
    size_t bytes = static_cast<size_t>(count) * f.type->plain_size;
    out->put(in->take(bytes, f.is_array ? "an array of messages" : "a message"), bytes);
    return;
  }
  for (uint32_t i = 0; i < count; ++i) {
    try {
      message(*f.type);
    } catch (FieldError& e) {
      if (f.is_array) e.path = "[" + std::to_string(i) + "]" + (e.path.empty() ? "" : "." + e.path);
      throw;
    }
  }
}


}  // namespace cdr

struct MessageLayout::Impl {
  std::string datatype;
  std::vector<std::unique_ptr<cdr::Type>> types;
  const cdr::Type* root = nullptr;
};

}  // namespace ros2
}  // namespace netloop
