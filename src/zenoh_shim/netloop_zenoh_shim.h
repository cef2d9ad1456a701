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
typedef struct NlzToken NlzToken;

/* Called on a Zenoh thread for every sample; `data` is valid only during the call. */
typedef void (*NlzSampleCallback)(const uint8_t* data, size_t len, void* user);

const char* nlz_last_error(void);
const char* nlz_zenoh_version(void);

/* config_path: Zenoh JSON5 file or NULL/""; config_json5: NULL/"" or a JSON5 document used instead. */
NlzSession* nlz_open(const char* config_path, const char* config_json5);
void nlz_session_zid(const NlzSession* s, uint8_t out[16]);
/* The session's id as Zenoh prints it, NUL-terminated; its length, or -1 when size is too small. */
int64_t nlz_session_zid_string(const NlzSession* s, char* out, size_t size);
void nlz_close(NlzSession* s);

/* A liveliness token (a node's) on a key expression the caller forms. */
NlzToken* nlz_declare_token(const NlzSession* s, const char* keyexpr);
void nlz_undeclare_token(NlzToken* t);

/* reliable: Reliability::Reliable (1) or BestEffort (0); block: CongestionControl::Block (1) or
 * Drop (0); transient_local: keep the last `depth` samples for late subscribers (reliable: with a
 * sporadic heartbeat every 500 ms for the subscribers' sample miss detection). token: the
 * publisher's liveliness token; peers: the pattern of the subscriptions' tokens it counts as
 * matched (both formed by the caller, src/ros2/zenoh_tokens.cpp). */
NlzPublisher* nlz_declare_publisher(const NlzSession* s, const char* keyexpr, int reliable, int block,
                                    int transient_local, int depth, const char* token, const char* peers);
/* Publishes with rmw_zenoh's attachment (sequence number from 1, source_ts_ns, gid: 16 bytes or NULL). */
int nlz_put(const NlzPublisher* p, const uint8_t* data, size_t len, int64_t source_ts_ns, const uint8_t* gid);
int64_t nlz_publisher_matched(const NlzPublisher* p);
void nlz_undeclare_publisher(NlzPublisher* p);

/* transient_local: get the cached samples (up to `depth` per publisher) of publishers found later
 * and, when reliable, recover a missed sample from its publisher's cache on its heartbeat.
 * token, peers: as for a publisher (peers: the publishers' tokens). */
NlzSubscriber* nlz_declare_subscriber(const NlzSession* s, const char* keyexpr, int reliable, int transient_local,
                                      int depth, NlzSampleCallback callback, void* user, const char* token,
                                      const char* peers);
int64_t nlz_subscriber_matched(const NlzSubscriber* sub);
/* No callback runs after it returns. */
void nlz_undeclare_subscriber(NlzSubscriber* sub);

#ifdef __cplusplus
}
#endif

#endif /* NETLOOP_ZENOH_SHIM_H */
