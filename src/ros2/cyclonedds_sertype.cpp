// The opaque CDR sertype / serdata operations Cyclone DDS calls (cyclonedds_sertype.h): bytes in
// from the network or a writer, bytes out to the network or a reader, as they are.
#include "cyclonedds_sertype.h"

#include <dds/ddsi/q_radmin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace netloop {
namespace ros2 {
namespace cyclone {

CdrSerdata* newSerdata(const ddsi_sertype* type, ddsi_serdata_kind kind) {
  auto* d = new CdrSerdata();
  ddsi_serdata_init(d, type, kind);
  return d;
}

namespace {

/// What dds_write / dds_take would see as a sample, should anyone use them on these topics.
struct RawSample {
  uint8_t* data;
  size_t size;
};

bool sdEqkey(const ddsi_serdata*, const ddsi_serdata*) { return true; }  // keyless

uint32_t sdSize(const ddsi_serdata* d) { return static_cast<uint32_t>(static_cast<const CdrSerdata*>(d)->bytes.size()); }

void sdFree(ddsi_serdata* d) { delete static_cast<CdrSerdata*>(d); }

ddsi_serdata* sdFromSer(const ddsi_sertype* type, ddsi_serdata_kind kind, const nn_rdata* frag, size_t size) {
  CdrSerdata* d = newSerdata(type, kind);
  d->bytes.resize(size);
  uint32_t off = 0;
  uint8_t* dst = d->bytes.data();
  for (; frag; frag = frag->nextfrag) {
    if (frag->maxp1 > off) {  // a fragment may overlap what earlier ones gave
      const unsigned char* payload = NN_RMSG_PAYLOADOFF(frag->rmsg, NN_RDATA_PAYLOAD_OFF(frag));
      uint32_t end = std::min<uint32_t>(frag->maxp1, static_cast<uint32_t>(size));
      if (end > off) memcpy(dst + off, payload + (off - frag->min), end - off);
      off = frag->maxp1;
    }
  }
  return d;
}

ddsi_serdata* sdFromSerIov(const ddsi_sertype* type, ddsi_serdata_kind kind, ddsrt_msg_iovlen_t niov,
                           const ddsrt_iovec_t* iov, size_t size) {
  CdrSerdata* d = newSerdata(type, kind);
  d->bytes.resize(size);
  size_t off = 0;
  for (ddsrt_msg_iovlen_t i = 0; i < niov && off < size; ++i) {
    size_t n = std::min(static_cast<size_t>(iov[i].iov_len), size - off);
    memcpy(d->bytes.data() + off, iov[i].iov_base, n);
    off += n;
  }
  return d;
}

ddsi_serdata* sdFromKeyhash(const ddsi_sertype* type, const ddsi_keyhash*) { return newSerdata(type, SDK_KEY); }

ddsi_serdata* sdFromSample(const ddsi_sertype* type, ddsi_serdata_kind kind, const void* sample) {
  CdrSerdata* d = newSerdata(type, kind);
  if (kind == SDK_DATA) {
    const auto* s = static_cast<const RawSample*>(sample);
    d->bytes.assign(s->data, s->data + s->size);
  }
  return d;
}

void sdToSer(const ddsi_serdata* d, size_t off, size_t sz, void* buf) {
  const auto& b = static_cast<const CdrSerdata*>(d)->bytes;
  size_t n = off < b.size() ? std::min(sz, b.size() - off) : 0;
  if (n) memcpy(buf, b.data() + off, n);
  if (n < sz) memset(static_cast<uint8_t*>(buf) + n, 0, sz - n);  // alignup4 tail
}

ddsi_serdata* sdToSerRef(const ddsi_serdata* d, size_t off, size_t sz, ddsrt_iovec_t* ref) {
  const auto& b = static_cast<const CdrSerdata*>(d)->bytes;
  ref->iov_base = const_cast<uint8_t*>(b.data()) + off;
  ref->iov_len = static_cast<ddsrt_iov_len_t>(sz);
  return ddsi_serdata_ref(d);
}

void sdToSerUnref(ddsi_serdata* d, const ddsrt_iovec_t*) { ddsi_serdata_unref(d); }

bool sdToSample(const ddsi_serdata* d, void* sample, void**, void*) {
  const auto& b = static_cast<const CdrSerdata*>(d)->bytes;
  auto* s = static_cast<RawSample*>(sample);
  free(s->data);
  s->data = static_cast<uint8_t*>(malloc(b.size() ? b.size() : 1));
  if (!s->data) return false;
  if (!b.empty()) memcpy(s->data, b.data(), b.size());
  s->size = b.size();
  return true;
}

ddsi_serdata* sdToUntyped(const ddsi_serdata* d) {
  CdrSerdata* u = newSerdata(d->type, SDK_KEY);
  u->type = nullptr;
  return u;
}

bool sdUntypedToSample(const ddsi_sertype*, const ddsi_serdata*, void*, void**, void*) { return true; }

size_t sdPrint(const ddsi_sertype*, const ddsi_serdata* d, char* buf, size_t size) {
  return static_cast<size_t>(
      snprintf(buf, size, "(%zu bytes of CDR)", static_cast<const CdrSerdata*>(d)->bytes.size()));
}

void sdGetKeyhash(const ddsi_serdata*, ddsi_keyhash* buf, bool) { memset(buf, 0, sizeof(*buf)); }

}  // namespace

const ddsi_serdata_ops kSerdataOps = {
    sdEqkey,     sdSize,      sdFromSer,     sdFromSerIov,     sdFromKeyhash, sdFromSample,
    sdToSer,     sdToSerRef,  sdToSerUnref,  sdToSample,       sdToUntyped,   sdUntypedToSample,
    sdFree,      sdPrint,     sdGetKeyhash,
#ifdef DDS_HAS_SHM
    nullptr,     nullptr,
#endif
};

namespace {

void stFree(ddsi_sertype* t) {
  ddsi_sertype_fini(t);
  delete static_cast<CdrSertype*>(t);
}
void stZeroSamples(const ddsi_sertype*, void* samples, size_t count) {
  memset(samples, 0, count * sizeof(RawSample));
}
void stReallocSamples(void** ptrs, const ddsi_sertype*, void* old, size_t oldcount, size_t count) {
  auto* arr = static_cast<RawSample*>(realloc(old, (count ? count : 1) * sizeof(RawSample)));
  if (count > oldcount) memset(arr + oldcount, 0, (count - oldcount) * sizeof(RawSample));
  for (size_t i = 0; i < count; ++i) ptrs[i] = &arr[i];
}
void stFreeSamples(const ddsi_sertype*, void** ptrs, size_t count, dds_free_op_t op) {
  if (count == 0) return;
  if (op & DDS_FREE_CONTENTS_BIT)
    for (size_t i = 0; i < count; ++i) {
      auto* s = static_cast<RawSample*>(ptrs[i]);
      free(s->data);
      s->data = nullptr;
      s->size = 0;
    }
  if (op & DDS_FREE_ALL_BIT) free(ptrs[0]);
}
bool stEqual(const ddsi_sertype*, const ddsi_sertype*) { return true; }  // same name and ops: same type
uint32_t stHash(const ddsi_sertype*) { return 0x6e6c7232u; }
size_t stSerializedSize(const ddsi_sertype*, const void* sample) { return static_cast<const RawSample*>(sample)->size; }
bool stSerializeInto(const ddsi_sertype*, const void* sample, void* dst, size_t dst_size) {
  const auto* s = static_cast<const RawSample*>(sample);
  if (dst_size < s->size) return false;
  memcpy(dst, s->data, s->size);
  return true;
}

}  // namespace

const ddsi_sertype_ops kSertypeOps = {
    ddsi_sertype_v0, nullptr, stFree,  stZeroSamples, stReallocSamples, stFreeSamples, stEqual,          stHash,
    nullptr,         nullptr, nullptr, nullptr,       stSerializedSize, stSerializeInto,
};

}  // namespace cyclone
}  // namespace ros2
}  // namespace netloop
