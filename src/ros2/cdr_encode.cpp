// ROS 1 serialized message -> ROS 2 CDR (XCDR1, little endian): include/netloop/ros2/cdr.h
// gives the mapping.
#include "cdr_layout.h"

namespace netloop {
namespace ros2 {

namespace cdr {

namespace {

// ROS 1 -> CDR.
class ToCdr {
 public:
  ToCdr(const uint8_t* p, size_t len, Out* out) : in_(p, len, "ROS 1", ""), out_(out) {}

  void message(const Type& t) {
    if (t.empty_in_cdr) {
      out_->reserve(1);  // structure_needs_at_least_one_member = 0
      // A Header with only seq is not a thing; but skip ROS-1-only fields anyway.
    }
    for (const Field& f : t.fields) inField(f, [&] { field(f); });
  }

  size_t consumed() const { return in_.consumed(); }

 private:
  uint32_t u32(const char* what) {
    uint32_t v;
    memcpy(&v, in_.take(4, what), 4);
    return v;
  }

  void field(const Field& f) {
    uint32_t count = f.fixed;
    if (f.variable) {
      count = u32("an array length");
      if (f.ros1_only) throw FieldError{"", "internal: variable ROS-1-only field"};
      out_->alignCdr(4);
      out_->putU32(count);
    }
    switch (f.kind) {
      case Field::Prim: {
        size_t n = static_cast<size_t>(count) * f.mult;
        size_t bytes = n * f.size;
        if (n && bytes / n != f.size) throw FieldError{"", "array too large"};
        const uint8_t* src = in_.take(bytes, f.is_array ? "an array" : "a value");
        if (f.ros1_only) return;
        if (n == 0) return;
        out_->alignCdr(f.size);
        out_->put(src, bytes);
        return;
      }
      case Field::String:
        for (uint32_t i = 0; i < count; ++i) {
          uint32_t len = u32("a string length");
          const uint8_t* src = in_.take(len, "a string");
          out_->alignCdr(4);
          out_->putU32(len + 1);
          uint8_t* dst = out_->reserve(static_cast<size_t>(len) + 1);
          if (len) memcpy(dst, src, len);
          dst[len] = 0;
        }
        return;
      case Field::Msg:
        if (f.variable && static_cast<size_t>(count) > in_.left() && !f.type->fields.empty())
          throw FieldError{"", "array length " + std::to_string(count) + " exceeds the " + std::to_string(in_.left()) +
                                   " bytes left"};
        messages(
            f, count, &in_, out_,
            [&] {
              out_->alignCdr(f.type->first_align);  // where the first element's first field goes anyway
              return (out_->pos() - 4) % f.type->max_align == 0;
            },
            [&](const Type& t) { message(t); });
        return;
    }
  }

  Input in_;
  Out* out_;
};

}  // namespace

}  // namespace cdr

std::vector<uint8_t> ros1ToCdr(const MessageLayout& layout, const uint8_t* ros1, size_t len) {
  cdr::Out out(len + 64 + len / 16);
  uint8_t* header = out.reserve(4);
  header[0] = 0x00;
  header[1] = 0x01;  // CDR_LE
  header[2] = 0x00;
  header[3] = 0x00;
  cdr::ToCdr conv(ros1, len, &out);
  try {
    conv.message(*layout.impl().root);
  } catch (const cdr::FieldError& e) {
    throw CdrError(layout.datatype() + " (ROS 1 -> CDR): field '" + e.path + "': " + e.what);
  }
  size_t used = conv.consumed();
  if (used != len)
    throw CdrError(layout.datatype() + " (ROS 1 -> CDR): " + std::to_string(len - used) +
                   " bytes left over after the last field (message of " + std::to_string(len) +
                   " bytes; the definition does not match the bytes)");
  return out.finish();
}

}  // namespace ros2
}  // namespace netloop
