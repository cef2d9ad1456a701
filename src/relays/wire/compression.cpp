// zlib compression and bounded decompression.
#include "wire/compression.h"

#include <zlib.h>

namespace netloop {
namespace relay {

bool compressBytes(const uint8_t* data, size_t len, std::vector<uint8_t>& out, int level) {
  uLongf cap = compressBound(static_cast<uLong>(len));
  out.resize(cap);
  if (compress2(out.data(), &cap, data, static_cast<uLong>(len), level) != Z_OK) return false;
  out.resize(cap);
  return true;
}

bool decompressBytes(const uint8_t* data, size_t len, size_t orig_len, size_t max_bytes,
                     std::vector<uint8_t>& out) {
  out.clear();
  if (orig_len > max_bytes || data == nullptr) return false;
  uint8_t dummy = 0;
  std::vector<uint8_t> buf(orig_len);
  uLongf got = static_cast<uLongf>(orig_len);
  // uncompress() writes at most `got` bytes and fails if the stream is longer or corrupt;
  // an empty message is a short valid stream that inflates to nothing.
  const int rc = uncompress(orig_len ? buf.data() : &dummy, &got, data, static_cast<uLong>(len));
  if (rc != Z_OK || got != orig_len) return false;
  out = std::move(buf);
  return true;
}

}  // namespace relay
}  // namespace netloop
