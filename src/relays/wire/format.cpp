// Names of decoding errors; kinds.
#include "wire/format.h"

namespace netloop {
namespace relay {

const char* errorName(Error e) {
  switch (e) {
    case Error::Ok: return "ok";
    case Error::TooShort: return "too_short";
    case Error::BadMagic: return "bad_magic";
    case Error::BadVersion: return "bad_version";
    case Error::BadKind: return "bad_kind";
    case Error::BadFlags: return "bad_flags";
    case Error::BadLength: return "bad_length";
    case Error::BadFragment: return "bad_fragment";
    case Error::TooLarge: return "too_large";
    case Error::Count: break;
  }
  return "?";
}

bool isValidKind(uint8_t kind) {
  return kind == static_cast<uint8_t>(Kind::Data) || kind == static_cast<uint8_t>(Kind::Type);
}

}  // namespace relay
}  // namespace netloop
