/* netloop's C shim over Eclipse Zenoh 1.x (the Rust crate in this folder, a static library).
 *
 * Used only by src/ros2/zenoh.cpp. See src/lib.rs for what each call does on the wire (rmw_zenoh's
 * publishers, subscribers and attachment). Failing calls return NULL or a negative number and
 * leave a message for nlz_last_error() (per thread).
 */
#ifndef NETLOOP_ZENOH_SHIM_H
#define NETLOOP_ZENOH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct NlzSession NlzSession;
typedef struct NlzPublisher NlzPublisher;
typedef struct NlzSubscriber NlzSubscriber;

/* Called on a Zenoh thread for every sample; `data` is valid only during the call. */
typedef void (*NlzSampleCallback)(const uint8_t* data, size_t len, void* user);

const char* nlz_last_error(void);
const char* nlz_zenoh_version(void);

/* config_path: Zenoh JSON5 file or NULL/""; config_json5: NULL/"" or a JSON5 document used instead. */
NlzSession* nlz_open(const char* config_path, const char* config_json5);
void nlz_session_zid(const NlzSession* s, uint8_t out[16]);
void nlz_close(NlzSession* s);

/* reliable: Reliability::Reliable (1) or BestEffort (0); block: CongestionControl::Block (1) or
 * Drop (0); transient_local: keep the last `depth` samples for late subscribers. */
NlzPublisher* nlz_declare_publisher(const NlzSession* s, const char* keyexpr, int reliable, int block,
                                    int transient_local, int depth);
/* Publishes with rmw_zenoh's attachment (sequence number from 1, source_ts_ns, gid: 16 bytes or NULL). */
int nlz_put(const NlzPublisher* p, const uint8_t* data, size_t len, int64_t source_ts_ns, const uint8_t* gid);
int64_t nlz_publisher_matched(const NlzPublisher* p);
void nlz_undeclare_publisher(NlzPublisher* p);

/* transient_local: get the cached samples (up to `depth` per publisher) of publishers found later. */
NlzSubscriber* nlz_declare_subscriber(const NlzSession* s, const char* keyexpr, int transient_local, int depth,
                                      NlzSampleCallback callback, void* user);
int64_t nlz_subscriber_matched(const NlzSubscriber* sub);
/* No callback runs after it returns. */
void nlz_undeclare_subscriber(NlzSubscriber* sub);

#ifdef __cplusplus
}
#endif

#endif /* NETLOOP_ZENOH_SHIM_H */
