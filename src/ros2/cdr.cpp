// ROS 1 serialized messages <-> ROS 2 CDR (XCDR1), driven by the ROS 1 full message definition.
// See include/netloop/ros2/cdr.h for the mapping.
#include "netloop/ros2/cdr.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace netloop {
namespace ros2 {

namespace {

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

void computePlain(Type* t) {
  size_t off = 0;
  uint8_t max_align = 1, first_align = 0;
  bool plain = !t->fields.empty();
  for (const Field& f : t->fields) {
    if (!plain) break;
    if (f.ros1_only || f.variable || f.kind == Field::String) {
      plain = false;
    } else if (f.kind == Field::Prim) {
      if (off % f.size) plain = false;
      off += static_cast<size_t>(f.fixed) * f.mult * f.size;
      max_align = std::max(max_align, f.size);
      if (!first_align) first_align = f.size;
    } else {
      const Type* n = f.type;
      if (!n->plain || off % n->max_align) plain = false;
      off += static_cast<size_t>(f.fixed) * n->plain_size;
      max_align = std::max(max_align, n->max_align);
      if (!first_align) first_align = n->first_align;
    }
  }
  t->plain = plain && off > 0 && off % max_align == 0;
  t->plain_size = t->plain ? off : 0;
  t->max_align = max_align;
  t->first_align = first_align ? first_align : 1;
}

// std_msgs/Header, for definitions that leave its section out.
const char* kHeaderDefinition =
    "uint32 seq\n"
    "time stamp\n"
    "string frame_id\n";

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return std::string();
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool primitiveOf(const std::string& base, uint8_t* size, uint32_t* mult, bool* is_string) {
  static const std::map<std::string, std::pair<uint8_t, uint32_t>> prims = {
      {"bool", {1, 1}},    {"int8", {1, 1}},    {"uint8", {1, 1}},   {"byte", {1, 1}},  {"char", {1, 1}},
      {"int16", {2, 1}},   {"uint16", {2, 1}},  {"int32", {4, 1}},   {"uint32", {4, 1}}, {"float32", {4, 1}},
      {"int64", {8, 1}},   {"uint64", {8, 1}},  {"float64", {8, 1}}, {"time", {4, 2}},  {"duration", {4, 2}},
  };
  *is_string = false;
  if (base == "string") {
    *is_string = true;
    return true;
  }
  auto it = prims.find(base);
  if (it == prims.end()) return false;
  *size = it->second.first;
  *mult = it->second.second;
  return true;
}

class Parser {
 public:
  Parser(const std::string& datatype, const std::string& definition) : root_name_(datatype) {
    if (datatype.find('/') == std::string::npos || datatype.front() == '/' || datatype.back() == '/')
      throw CdrError("message type '" + datatype + "' is not <package>/<Type>");
    splitSections(definition);
  }

  void build(MessageLayout::Impl* impl, std::vector<std::unique_ptr<Type>>* types, const Type** root) {
    types_ = types;
    *root = resolve(root_name_, "");
    (void)impl;
  }

 private:
  struct Line {
    int number;  // 1-based line in the full definition
    std::string text;
  };
  struct Section {
    std::vector<Line> lines;
  };

  void splitSections(const std::string& def) {
    std::istringstream in(def);
    std::string line;
    std::string current = root_name_;
    int number = 0;
    bool expect_msg = false;
    sections_[current];
    while (std::getline(in, line)) {
      ++number;
      std::string t = trim(line);
      if (t.size() >= 3 && t.find_first_not_of('=') == std::string::npos) {
        expect_msg = true;
        continue;
      }
      if (t.compare(0, 4, "MSG:") == 0) {
        std::string name = trim(t.substr(4));
        if (name.find('/') == std::string::npos)
          throw CdrError(where(number) + "'MSG:' line names '" + name + "', not <package>/<Type>");
        current = name;
        if (sections_.count(current) && current != root_name_)
          throw CdrError(where(number) + "type " + current + " defined twice");
        sections_[current];
        expect_msg = false;
        continue;
      }
      if (expect_msg && !t.empty() && t[0] != '#')
        throw CdrError(where(number) + "expected 'MSG: <package>/<Type>' after a line of '=', got '" + t + "'");
      sections_[current].lines.push_back({number, line});
    }
  }

  std::string where(int line) const {
    return "definition of " + root_name_ + ", line " + std::to_string(line) + ": ";
  }

  const Type* resolve(const std::string& name, const std::string& used_by) {
    auto done = built_.find(name);
    if (done != built_.end()) return done->second;
    if (building_.count(name)) throw CdrError("definition of " + root_name_ + ": type " + name + " contains itself");
    auto sec = sections_.find(name);
    Section fallback;
    if (sec == sections_.end()) {
      if (name == "std_msgs/Header") {
        std::istringstream in(kHeaderDefinition);
        std::string l;
        while (std::getline(in, l)) fallback.lines.push_back({0, l});
      } else {
        throw CdrError("definition of " + root_name_ + ": type " + name + " (" + used_by +
                       ") has no 'MSG: " + name + "' section");
      }
    }
    const Section& section = sec == sections_.end() ? fallback : sec->second;
    building_.insert(name);
    auto type = std::make_unique<Type>();
    type->name = name;
    const std::string package = name.substr(0, name.find('/'));
    for (const Line& line : section.lines) parseLine(line, package, type.get());
    if (name == "std_msgs/Header" && !type->fields.empty() && type->fields[0].name == "seq" &&
        type->fields[0].kind == Field::Prim && type->fields[0].size == 4 && !type->fields[0].is_array)
      type->fields[0].ros1_only = true;
    bool any = false;
    for (const Field& f : type->fields) any = any || !f.ros1_only;
    type->empty_in_cdr = !any;
    computePlain(type.get());
    building_.erase(name);
    const Type* raw = type.get();
    types_->push_back(std::move(type));
    built_[name] = raw;
    return raw;
  }

  void parseLine(const Line& line, const std::string& package, Type* type) {
    const std::string& s = line.text;
    size_t i = s.find_first_not_of(" \t\r");
    if (i == std::string::npos || s[i] == '#') return;
    size_t e = s.find_first_of(" \t", i);
    if (e == std::string::npos)
      throw CdrError(where(line.number) + "'" + trim(s) + "' has a type but no field name (in " + type->name + ")");
    std::string type_text = s.substr(i, e - i);
    size_t n = s.find_first_not_of(" \t", e);
    if (n == std::string::npos || s[n] == '#' || s[n] == '=')
      throw CdrError(where(line.number) + "'" + trim(s) + "' has a type but no field name (in " + type->name + ")");
    size_t ne = s.find_first_of(" \t=#\r", n);
    std::string name = s.substr(n, ne == std::string::npos ? std::string::npos : ne - n);
    size_t rest = ne == std::string::npos ? std::string::npos : s.find_first_not_of(" \t\r", ne);
    if (rest != std::string::npos && s[rest] == '=') return;  // a constant: not on the wire
    if (rest != std::string::npos && s[rest] != '#')
      throw CdrError(where(line.number) + "unexpected '" + trim(s.substr(rest)) + "' after field '" + name + "' (in " +
                     type->name + ")");
    for (char c : name)
      if (!(isalnum(static_cast<unsigned char>(c)) || c == '_'))
        throw CdrError(where(line.number) + "field name '" + name + "' is not a valid name (in " + type->name + ")");

    Field f;
    f.name = name;
    f.type_text = type_text;
    std::string base = type_text;
    size_t br = type_text.find('[');
    if (br != std::string::npos) {
      if (type_text.back() != ']')
        throw CdrError(where(line.number) + "array type '" + type_text + "' does not end with ']'");
      base = type_text.substr(0, br);
      std::string count = type_text.substr(br + 1, type_text.size() - br - 2);
      f.is_array = true;
      if (count.empty()) {
        f.variable = true;
      } else {
        if (count.find_first_not_of("0123456789") != std::string::npos || count.size() > 9)
          throw CdrError(where(line.number) + "array size in '" + type_text + "' is not a number");
        f.fixed = static_cast<uint32_t>(std::stoul(count));
      }
    }
    if (base.empty()) throw CdrError(where(line.number) + "field '" + name + "' has no type");
    bool is_string = false;
    if (primitiveOf(base, &f.size, &f.mult, &is_string)) {
      f.kind = is_string ? Field::String : Field::Prim;
    } else {
      std::string full;
      if (base == "Header" || base == "std_msgs/Header")
        full = "std_msgs/Header";
      else if (base.find('/') == std::string::npos)
        full = package + "/" + base;
      else
        full = base;
      size_t slash = full.find('/');
      if (full.find('/', slash + 1) != std::string::npos || slash == 0 || slash + 1 == full.size())
        throw CdrError(where(line.number) + "type '" + base + "' of field '" + name + "' is not a type name");
      f.kind = Field::Msg;
      f.type = resolve(full, "field '" + name + "' of " + type->name);
    }
    type->fields.push_back(std::move(f));
  }

  std::string root_name_;
  std::map<std::string, Section> sections_;
  std::map<std::string, const Type*> built_;
  std::set<std::string> building_;
  std::vector<std::unique_ptr<Type>>* types_ = nullptr;
};

// ---- conversion ---------------------------------------------------------------------------

/// Thrown inside the converters; each nested level prefixes its field name on the way out.
struct FieldError {
  std::string path;
  std::string what;
};

inline void swapInPlace(uint8_t* p, size_t count, uint8_t size) {
  switch (size) {
    case 2:
      for (size_t i = 0; i < count; ++i, p += 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        v = __builtin_bswap16(v);
        memcpy(p, &v, 2);
      }
      break;
    case 4:
      for (size_t i = 0; i < count; ++i, p += 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        v = __builtin_bswap32(v);
        memcpy(p, &v, 4);
      }
      break;
    case 8:
      for (size_t i = 0; i < count; ++i, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        v = __builtin_bswap64(v);
        memcpy(p, &v, 8);
      }
      break;
    default:
      break;
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

// ROS 1 -> CDR.
class ToCdr {
 public:
  ToCdr(const uint8_t* p, size_t len, Out* out) : begin_(p), p_(p), end_(p + len), out_(out) {}

  void message(const Type& t) {
    if (t.empty_in_cdr) {
      out_->reserve(1);  // structure_needs_at_least_one_member = 0
      // A Header with only seq is not a thing; but skip ROS-1-only fields anyway.
    }
    for (const Field& f : t.fields) {
      try {
        field(f);
      } catch (FieldError& e) {
        e.path = f.name + (e.path.empty() ? "" : "." + e.path);
        throw;
      }
    }
  }

  const uint8_t* pos() const { return p_; }

 private:
  const uint8_t* take(size_t n, const char* what) {
    if (static_cast<size_t>(end_ - p_) < n) {
      throw FieldError{"", std::string("the ROS 1 bytes end at offset ") + std::to_string(end_ - begin_) + " inside " +
                               what + " (" + std::to_string(n) + " bytes needed at offset " +
                               std::to_string(p_ - begin_) + ")"};
    }
    const uint8_t* q = p_;
    p_ += n;
    return q;
  }
  uint32_t u32(const char* what) {
    uint32_t v;
    memcpy(&v, take(4, what), 4);
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
        const uint8_t* src = take(bytes, f.is_array ? "an array" : "a value");
        if (f.ros1_only) return;
        if (n == 0) return;
        out_->alignCdr(f.size);
        out_->put(src, bytes);
        return;
      }
      case Field::String:
        for (uint32_t i = 0; i < count; ++i) {
          uint32_t len = u32("a string length");
          const uint8_t* src = take(len, "a string");
          out_->alignCdr(4);
          out_->putU32(len + 1);
          uint8_t* dst = out_->reserve(static_cast<size_t>(len) + 1);
          if (len) memcpy(dst, src, len);
          dst[len] = 0;
        }
        return;
      case Field::Msg:
        if (f.variable && static_cast<size_t>(count) > static_cast<size_t>(end_ - p_) && !f.type->fields.empty())
          throw FieldError{"", "array length " + std::to_string(count) + " exceeds the " +
                                   std::to_string(end_ - p_) + " bytes left"};
        if (f.type->plain && count > 0) {
          out_->alignCdr(f.type->first_align);  // where the first element's first field goes anyway
          if ((out_->pos() - 4) % f.type->max_align == 0) {
            size_t bytes = static_cast<size_t>(count) * f.type->plain_size;
            out_->put(take(bytes, f.is_array ? "an array of messages" : "a message"), bytes);
            return;
          }
        }
        for (uint32_t i = 0; i < count; ++i) {
          try {
            message(*f.type);
          } catch (FieldError& e) {
            if (f.is_array) e.path = "[" + std::to_string(i) + "]" + (e.path.empty() ? "" : "." + e.path);
            throw;
          }
        }
        return;
    }
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  Out* out_;
};

// CDR -> ROS 1.
class FromCdr {
 public:
  FromCdr(const uint8_t* body, size_t len, bool swap, Out* out)
      : body_(body), p_(body), end_(body + len), swap_(swap), out_(out) {}

  void message(const Type& t) {
    if (t.empty_in_cdr) take(1, "structure_needs_at_least_one_member");
    for (const Field& f : t.fields) {
      try {
        field(f);
      } catch (FieldError& e) {
        e.path = f.name + (e.path.empty() ? "" : "." + e.path);
        throw;
      }
    }
  }

  size_t consumed() const { return static_cast<size_t>(p_ - body_); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  void align(size_t a) {
    size_t off = static_cast<size_t>(p_ - body_) & (a - 1);
    if (off) {
      size_t pad = a - off;
      if (left() < pad) throw FieldError{"", "the CDR bytes end inside padding at offset " + std::to_string(consumed())};
      p_ += pad;
    }
  }
  const uint8_t* take(size_t n, const char* what) {
    if (left() < n) {
      throw FieldError{"", std::string("the CDR bytes end at offset ") + std::to_string(end_ - body_) + " inside " +
                               what + " (" + std::to_string(n) + " bytes needed at offset " +
                               std::to_string(consumed()) + ", offsets after the 4-byte encapsulation header)"};
    }
    const uint8_t* q = p_;
    p_ += n;
    return q;
  }
  uint32_t u32(const char* what) {
    align(4);
    uint32_t v;
    memcpy(&v, take(4, what), 4);
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
        const uint8_t* src = take(bytes, f.is_array ? "an array" : "a value");
        uint8_t* dst = out_->reserve(bytes);
        memcpy(dst, src, bytes);
        if (swap_ && f.size > 1) swapInPlace(dst, n, f.size);
        return;
      }
      case Field::String:
        for (uint32_t i = 0; i < count; ++i) {
          uint32_t len = u32("a string length");
          const uint8_t* src = take(len, "a string");
          uint32_t chars = len;
          if (len > 0 && src[len - 1] == 0) chars = len - 1;  // the terminating NUL
          out_->putU32(chars);
          out_->put(src, chars);
        }
        return;
      case Field::Msg:
        if (f.variable && static_cast<size_t>(count) > left())
          throw FieldError{"", "sequence length " + std::to_string(count) + " exceeds the " + std::to_string(left()) +
                                   " bytes left"};
        if (f.type->plain && count > 0 && !swap_) {
          align(f.type->first_align);
          if (consumed() % f.type->max_align == 0) {
            size_t bytes = static_cast<size_t>(count) * f.type->plain_size;
            out_->put(take(bytes, f.is_array ? "an array of messages" : "a message"), bytes);
            return;
          }
        }
        for (uint32_t i = 0; i < count; ++i) {
          try {
            message(*f.type);
          } catch (FieldError& e) {
            if (f.is_array) e.path = "[" + std::to_string(i) + "]" + (e.path.empty() ? "" : "." + e.path);
            throw;
          }
        }
        return;
    }
  }

  const uint8_t* body_;
  const uint8_t* p_;
  const uint8_t* end_;
  bool swap_;
  Out* out_;
};

}  // namespace

struct MessageLayout::Impl {
  std::string datatype;
  std::vector<std::unique_ptr<Type>> types;
  const Type* root = nullptr;
};

MessageLayout::MessageLayout(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MessageLayout::~MessageLayout() = default;

const std::string& MessageLayout::datatype() const { return impl_->datatype; }

bool MessageLayout::startsWithHeader() const {
  const Type* r = impl_->root;
  return !r->fields.empty() && r->fields[0].kind == Field::Msg && !r->fields[0].is_array &&
         r->fields[0].type->name == "std_msgs/Header";
}

std::shared_ptr<const MessageLayout> MessageLayout::parse(const std::string& datatype, const std::string& definition) {
  auto impl = std::make_unique<Impl>();
  impl->datatype = datatype;
  Parser parser(datatype, definition);
  parser.build(impl.get(), &impl->types, &impl->root);
  return std::make_shared<const MessageLayout>(std::move(impl));
}

std::vector<uint8_t> ros1ToCdr(const MessageLayout& layout, const uint8_t* ros1, size_t len) {
  const Type* root = layout.impl().root;
  Out out(len + 64 + len / 16);
  uint8_t* header = out.reserve(4);
  header[0] = 0x00;
  header[1] = 0x01;  // CDR_LE
  header[2] = 0x00;
  header[3] = 0x00;
  ToCdr conv(ros1, len, &out);
  try {
    conv.message(*root);
  } catch (const FieldError& e) {
    throw CdrError(layout.datatype() + " (ROS 1 -> CDR): field '" + e.path + "': " + e.what);
  }
  size_t used = static_cast<size_t>(conv.pos() - ros1);
  if (used != len)
    throw CdrError(layout.datatype() + " (ROS 1 -> CDR): " + std::to_string(len - used) +
                   " bytes left over after the last field (message of " + std::to_string(len) +
                   " bytes; the definition does not match the bytes)");
  return out.finish();
}

std::vector<uint8_t> cdrToRos1(const MessageLayout& layout, const uint8_t* cdr, size_t len) {
  const Type* root = layout.impl().root;
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
  Out out(len + 64);
  FromCdr conv(cdr + 4, len - 4, swap, &out);
  try {
    conv.message(*root);
  } catch (const FieldError& e) {
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
