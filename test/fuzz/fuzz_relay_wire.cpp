// libFuzzer target for the relays' wire library (src/relays/wire/): everything a
// relay decodes from the network. The input is read as a sequence of datagrams
// (u16 length + bytes each) fed to one Reassembler, the whole input as a TCP byte stream cut
// at input-chosen points, and as a type announcement and a compressed payload. Invariants
// checked: no crash or sanitizer report, pending memory within the limits, every delivered
// message of the announced size.
//
//   test/fuzz/run_fuzz.sh [seconds]        (builds with clang -fsanitize=fuzzer,address,undefined)
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "wire/relay_wire.h"

using namespace netloop::relay;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReassemblyLimits lim;
  lim.max_message_bytes = 256 << 10;
  lim.max_pending_bytes = 512 << 10;
  lim.max_pending_messages = 8;
  lim.timeout_ns = 1000;
  Reassembler r(lim);
  size_t pos = 0;
  int64_t now = 0;
  while (pos + 2 <= size) {
    const size_t n = std::min<size_t>(data[pos] | (data[pos + 1] << 8), size - pos - 2);
    pos += 2;
    PacketView v;
    if (decodePacket(data + pos, n, lim.max_message_bytes, v) == Error::Ok) {
      Message m;
      if (r.push(v, now, m)) {
        if (m.data.size() != m.h.total_len) std::abort();
        TypeInfo t;
        if (m.h.kind == Kind::Type) decodeTypeInfo(m.data.data(), m.data.size(), t);
        std::vector<uint8_t> out;
        if (m.h.flags & kFlagCompressed) decompressBytes(m.data.data(), m.data.size(), m.h.orig_len, 256 << 10, out);
      }
    }
    if (r.pendingBytes() > lim.max_pending_bytes || r.pendingMessages() > lim.max_pending_messages) std::abort();
    pos += n;
    now += 300;
    if ((now / 300) % 7 == 0) r.expire(now);
  }

  StreamDecoder d(256 << 10);
  size_t off = 0;
  size_t step = size ? (data[0] % 61) + 1 : 1;
  while (off < size) {
    const size_t n = std::min(step, size - off);
    d.feed(data + off, n);
    off += n;
    Frame f;
    while (d.next(f))
      if (f.data.size() != f.h.len) std::abort();
    if (d.buffered() > (256u << 10) + kFrameHeaderSize + 61) std::abort();
    step = step * 7 % 97 + 1;
  }

  TypeInfo t;
  decodeTypeInfo(data, size, t);
  std::vector<uint8_t> out;
  if (size >= 4) decompressBytes(data + 4, size - 4, (data[0] | (data[1] << 8)) % 100000, 256 << 10, out);
  return 0;
}
