// Parsing a ROS 1 full message definition into the layout both converters walk (cdr_layout.h):
// the sections of nested types, each field's kind, size and array shape, std_msgs/Header's
// ROS-1-only seq, and which types are "plain" (one memcpy per array).
#include <map>
#include <set>
#include <sstream>

#include "cdr_layout.h"

namespace netloop {
namespace ros2 {

namespace cdr {

namespace {

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

}  // namespace

}  // namespace cdr

MessageLayout::MessageLayout(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MessageLayout::~MessageLayout() = default;

const std::string& MessageLayout::datatype() const { return impl_->datatype; }

bool MessageLayout::startsWithHeader() const {
  const cdr::Type* r = impl_->root;
  return !r->fields.empty() && r->fields[0].kind == cdr::Field::Msg && !r->fields[0].is_array &&
         r->fields[0].type->name == "std_msgs/Header";
}

std::shared_ptr<const MessageLayout> MessageLayout::parse(const std::string& datatype, const std::string& definition) {
  auto impl = std::make_unique<Impl>();
  impl->datatype = datatype;
  cdr::Parser parser(datatype, definition);
  parser.build(impl.get(), &impl->types, &impl->root);
  return std::make_shared<const MessageLayout>(std::move(impl));
}

}  // namespace ros2
}  // namespace netloop
