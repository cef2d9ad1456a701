//! netloop's C shim over Eclipse Zenoh 1.x (the `zenoh` and `zenoh-ext` crates).
//!
//! The C declarations are in `netloop_zenoh_shim.h` beside this crate. Everything here is what
//! src/ros2/zenoh.cpp needs to behave on the wire as a ROS 2 node on rmw_zenoh does:
//!
//! * a session opened from a JSON5 configuration file (Zenoh's own format; empty path = the
//!   library's defaults: peer mode, multicast scouting), with timestamping always enabled as in
//!   rmw_zenoh's default configuration (the AdvancedPublisher's cache needs it);
//! * publishers as rmw_zenoh (Jazzy 0.2.4 to 0.2.10) declares them: an AdvancedPublisher on the
//!   topic's key expression, reliability and congestion control from the QoS, and for
//!   transient_local a cache of the last `depth` samples with publisher detection, so that late
//!   AdvancedSubscribers get them; reliable + transient_local also announces its last sequence
//!   number by a sporadic heartbeat (every 500 ms while it publishes) so that a subscriber that
//!   missed a sample asks the cache for it;
//! * each put carries rmw_zenoh's attachment: zenoh-ext serialization of the sequence number
//!   (i64), the source timestamp (i64, ns) and the source GID (16 bytes) (rmw_zenoh_cpp's
//!   AttachmentData::serialize_to_zbytes, Jazzy 0.2.4 to 0.2.10);
//! * subscribers as AdvancedSubscribers calling a C callback with the payload's bytes; for
//!   transient_local with history (late publishers detected, `depth` samples per publisher, the
//!   query never timing out), and for reliable + transient_local with recovery of missed samples
//!   on the publisher's heartbeat;
//! * the ROS graph: liveliness tokens whose key expressions the caller forms (rmw_zenoh's
//!   `@ros2_lv/...` format, src/ros2/zenoh_tokens.cpp): one per node, one per publisher and
//!   subscriber. Matching counts the other side's tokens on a pattern the caller gives, so a
//!   real rmw_zenoh node's endpoints count as netloop's do; a publisher also counts Zenoh's
//!   matching status (a subscriber without a token), since Zenoh tells a subscriber nothing
//!   about publishers.
//!
//! Errors: functions that fail return NULL or a negative number and leave a message for
//! `nlz_last_error()` (per thread). No function panics across the C boundary.
#![allow(clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zenoh::bytes::ZBytes;
use zenoh::liveliness::LivelinessToken;
use zenoh::pubsub::Subscriber;
use zenoh::qos::{CongestionControl, Reliability};
use zenoh::sample::SampleKind;
use zenoh::{Session, Wait};
use zenoh_ext::{
    AdvancedPublisher, AdvancedPublisherBuilderExt, AdvancedSubscriber, AdvancedSubscriberBuilderExt,
    CacheConfig, HistoryConfig, MissDetectionConfig, RecoveryConfig, ZSerializer,
};

/// rmw_zenoh's heartbeat period of a reliable + transient_local publisher (its
/// SAMPLE_MISS_DETECTION_HEARTBEAT_PERIOD, sporadic: sent only after the publisher has published).
const MISS_DETECTION_HEARTBEAT: Duration = Duration::from_millis(500);

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: impl std::fmt::Display) {
    let s = CString::new(msg.to_string().replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = s);
}

/// Runs `f`, turning an error or a panic into `fallback` and a message for nlz_last_error().
fn guarded<T>(fallback: T, f: impl FnOnce() -> Result<T, String>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(msg)) => {
            set_error(msg);
            fallback
        }
        Err(_) => {
            set_error("panic inside the zenoh shim");
            fallback
        }
    }
}

unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str, String> {
    if p.is_null() {
        return Err(format!("{what} is NULL"));
    }
    CStr::from_ptr(p).to_str().map_err(|e| format!("{what} is not UTF-8: {e}"))
}

/// The message of the last failure on this thread ("" if none); valid until the next call.
#[no_mangle]
pub extern "C" fn nlz_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The Zenoh release this shim was built with, e.g. "1.10.2".
#[no_mangle]
pub extern "C" fn nlz_zenoh_version() -> *const c_char {
    b"1.10.2\0".as_ptr() as *const c_char
}

// ---------------------------------------------------------------------------------------------
// Session

pub struct NlzSession {
    session: Session,
}

/// Opens a session. `config_path`: a Zenoh JSON5 configuration file, or NULL/"" for the
/// defaults. `config_json5`: NULL/"" or a JSON5 document used instead of the file (tests).
/// Returns NULL on failure (see nlz_last_error()).
#[no_mangle]
pub unsafe extern "C" fn nlz_open(config_path: *const c_char, config_json5: *const c_char) -> *mut NlzSession {
    guarded(std::ptr::null_mut(), || {
        let path = if config_path.is_null() { "" } else { c_str(config_path, "config_path")? };
        let inline = if config_json5.is_null() { "" } else { c_str(config_json5, "config_json5")? };
        let mut config = if !inline.is_empty() {
            zenoh::Config::from_json5(inline).map_err(|e| format!("zenoh config: {e}"))?
        } else if !path.is_empty() {
            zenoh::Config::from_file(path).map_err(|e| format!("zenoh config {path}: {e}"))?
        } else {
            zenoh::Config::default()
        };
        // As rmw_zenoh's default configuration: samples are timestamped, which the
        // AdvancedPublisher's cache (transient_local) needs.
        config
            .insert_json5("timestamping/enabled", "true")
            .map_err(|e| format!("zenoh config: timestamping: {e}"))?;
        let session = zenoh::open(config).wait().map_err(|e| format!("zenoh open: {e}"))?;
        Ok(Box::into_raw(Box::new(NlzSession { session })))
    })
}

/// The session's Zenoh id, 16 bytes little endian (rmw_zenoh's GIDs start from it).
#[no_mangle]
pub unsafe extern "C" fn nlz_session_zid(s: *const NlzSession, out: *mut u8) {
    if s.is_null() || out.is_null() {
        return;
    }
    let zid = (*s).session.zid().to_le_bytes();
    std::ptr::copy_nonoverlapping(zid.as_ptr(), out, 16);
}

/// The session's Zenoh id as Zenoh prints it (rmw_zenoh's tokens carry it), NUL-terminated into
/// `out` of `size` bytes. Returns the string's length, or -1 when it does not fit.
#[no_mangle]
pub unsafe extern "C" fn nlz_session_zid_string(s: *const NlzSession, out: *mut c_char, size: usize) -> i64 {
    guarded(-1, || {
        let s = s.as_ref().ok_or("session is NULL")?;
        let text = s.session.zid().to_string();
        if out.is_null() || text.len() + 1 > size {
            return Err(format!("zid '{text}' does not fit in {size} bytes"));
        }
        std::ptr::copy_nonoverlapping(text.as_ptr(), out as *mut u8, text.len());
        *out.add(text.len()) = 0;
        Ok(text.len() as i64)
    })
}

/// Closes the session and frees it. Declare nothing on it afterwards; undeclare its publishers
/// and subscribers first.
#[no_mangle]
pub unsafe extern "C" fn nlz_close(s: *mut NlzSession) {
    if s.is_null() {
        return;
    }
    let s = Box::from_raw(s);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let _ = s.session.close().wait();
    }));
}

// ---------------------------------------------------------------------------------------------
// The ROS graph: liveliness tokens

pub struct NlzToken {
    token: LivelinessToken,
}

/// Declares a liveliness token on `keyexpr` (a node's: the caller forms it). NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn nlz_declare_token(s: *const NlzSession, keyexpr: *const c_char) -> *mut NlzToken {
    guarded(std::ptr::null_mut(), || {
        let s = s.as_ref().ok_or("session is NULL")?;
        let key = c_str(keyexpr, "keyexpr")?.to_string();
        let token = s.session.liveliness().declare_token(key.clone()).wait()
            .map_err(|e| format!("liveliness token {key}: {e}"))?;
        Ok(Box::into_raw(Box::new(NlzToken { token })))
    })
}

/// Undeclares the token and frees it.
#[no_mangle]
pub unsafe extern "C" fn nlz_undeclare_token(t: *mut NlzToken) {
    if t.is_null() {
        return;
    }
    let t = Box::from_raw(t);
    let _ = catch_unwind(AssertUnwindSafe(move || {
        let _ = t.token.undeclare().wait();
    }));
}

/// The live tokens matching a pattern (the other side's endpoints of one topic).
struct PeerCount {
    keys: Mutex<HashSet<String>>,
}

impl PeerCount {
    fn len(&self) -> i64 {
        self.keys.lock().map(|k| k.len()).unwrap_or(0) as i64
    }
}

/// An endpoint's own token on `token_key`, and a count of the live tokens on `peer_pattern`.
fn declare_presence(
    s: &NlzSession,
    token_key: &str,
    peer_pattern: &str,
) -> Result<(LivelinessToken, Subscriber<()>, Arc<PeerCount>), String> {
    let token = s
        .session
        .liveliness()
        .declare_token(token_key.to_string())
        .wait()
        .map_err(|e| format!("liveliness token {token_key}: {e}"))?;
    let count = Arc::new(PeerCount { keys: Mutex::new(HashSet::new()) });
    let c = count.clone();
    let watcher = s
        .session
        .liveliness()
        .declare_subscriber(peer_pattern.to_string())
        .history(true)
        .callback(move |sample| {
            let key = sample.key_expr().as_str().to_string();
            let mut keys = c.keys.lock().unwrap_or_else(|p| p.into_inner());
            match sample.kind() {
                SampleKind::Put => keys.insert(key),
                SampleKind::Delete => keys.remove(&key),
            };
        })
        .wait()
        .map_err(|e| format!("liveliness subscriber {peer_pattern}: {e}"))?;
    Ok((token, watcher, count))
}

// ---------------------------------------------------------------------------------------------
// Publisher

pub struct NlzPublisher {
    publisher: AdvancedPublisher<'static>,
    _token: LivelinessToken,
    _watcher: Subscriber<()>,
    subscribers: Arc<PeerCount>,
    seq: AtomicU64,
}

/// Declares a publisher on `keyexpr`, with its liveliness token `token` and counting the
/// subscriptions' tokens on `peers` (key expressions the caller forms).
/// `reliable`: 1 = Reliability::Reliable, 0 = BestEffort. `block`: 1 = CongestionControl::Block,
/// 0 = Drop. `transient_local`: 1 = keep the last `depth` samples for late subscribers (and, when
/// reliable, a sporadic heartbeat for the subscribers' sample miss detection).
/// Returns NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn nlz_declare_publisher(
    s: *const NlzSession,
    keyexpr: *const c_char,
    reliable: c_int,
    block: c_int,
    transient_local: c_int,
    depth: c_int,
    token: *const c_char,
    peers: *const c_char,
) -> *mut NlzPublisher {
    guarded(std::ptr::null_mut(), || {
        let s = s.as_ref().ok_or("session is NULL")?;
        let key = c_str(keyexpr, "keyexpr")?.to_string();
        let token = c_str(token, "token")?;
        let peers = c_str(peers, "peers")?;
        let builder = s
            .session
            .declare_publisher(key.clone())
            .congestion_control(if block != 0 { CongestionControl::Block } else { CongestionControl::Drop })
            .reliability(if reliable != 0 { Reliability::Reliable } else { Reliability::BestEffort });
        let builder = if transient_local != 0 {
            let cached = builder
                .cache(CacheConfig::default().max_samples(depth.max(1) as usize))
                .publisher_detection();
            if reliable != 0 {
                cached.sample_miss_detection(MissDetectionConfig::default().sporadic_heartbeat(MISS_DETECTION_HEARTBEAT))
            } else {
                cached
            }
        } else {
            builder.advanced()
        };
        let publisher = builder.wait().map_err(|e| format!("declare publisher {key}: {e}"))?;
        let (token, watcher, subscribers) = declare_presence(s, token, peers)?;
        Ok(Box::into_raw(Box::new(NlzPublisher {
            publisher,
            _token: token,
            _watcher: watcher,
            subscribers,
            seq: AtomicU64::new(1),
        })))
    })
}

/// rmw_zenoh's attachment of one sample (Jazzy 0.2.4 to 0.2.10: the three values in order; the
/// GID as a 16-element array, which zenoh-ext writes with its length).
fn attachment(seq: i64, source_ts_ns: i64, gid: &[u8; 16]) -> ZBytes {
    let mut ser = ZSerializer::new();
    ser.serialize(seq);
    ser.serialize(source_ts_ns);
    ser.serialize(gid);
    ser.finish()
}

/// Publishes `len` bytes. `source_ts_ns`: the source timestamp for the attachment [ns since the
/// epoch]; `gid`: 16 bytes, the publisher's GID for the attachment (NULL: zeros). The sequence
/// number counts from 1 per publisher. Returns 0, or -1 on failure.
#[no_mangle]
pub unsafe extern "C" fn nlz_put(
    p: *const NlzPublisher,
    data: *const u8,
    len: usize,
    source_ts_ns: i64,
    gid: *const u8,
) -> c_int {
    guarded(-1, || {
        let p = p.as_ref().ok_or("publisher is NULL")?;
        let bytes = if len == 0 { Vec::new() } else { std::slice::from_raw_parts(data, len).to_vec() };
        let mut g = [0u8; 16];
        if !gid.is_null() {
            std::ptr::copy_nonoverlapping(gid, g.as_mut_ptr(), 16);
        }
        let seq = p.seq.fetch_add(1, Ordering::Relaxed) as i64;
        p.publisher
            .put(bytes)
            .attachment(attachment(seq, source_ts_ns, &g))
            .wait()
            .map_err(|e| format!("put: {e}"))?;
        Ok(0)
    })
}

/// Subscriptions matched: the number of subscription tokens seen on the publisher's `peers`
/// pattern (netloop's or a ROS 2 node's), or 1 if there is none but Zenoh's matching status says
/// some subscriber matches (a Zenoh application without a token). -1 on failure.
#[no_mangle]
pub unsafe extern "C" fn nlz_publisher_matched(p: *const NlzPublisher) -> i64 {
    guarded(-1, || {
        let p = p.as_ref().ok_or("publisher is NULL")?;
        let n = p.subscribers.len();
        if n > 0 {
            return Ok(n);
        }
        let matching = p.publisher.matching_status().wait().map_err(|e| format!("matching status: {e}"))?;
        Ok(if matching.matching() { 1 } else { 0 })
    })
}

/// Undeclares the publisher and frees it.
#[no_mangle]
pub unsafe extern "C" fn nlz_undeclare_publisher(p: *mut NlzPublisher) {
    if p.is_null() {
        return;
    }
    let p = Box::from_raw(p);
    let _ = catch_unwind(AssertUnwindSafe(move || {
        let NlzPublisher { publisher, _token, _watcher, .. } = *p;
        let _ = _token.undeclare().wait();
        let _ = _watcher.undeclare().wait();
        let _ = publisher.undeclare().wait();
    }));
}

// ---------------------------------------------------------------------------------------------
// Subscriber

/// Called on a Zenoh thread for every sample: its payload and the subscriber's `user` pointer.
/// `data` is valid only during the call.
pub type NlzSampleCallback = extern "C" fn(data: *const u8, len: usize, user: *mut c_void);

struct UserPtr(*mut c_void);
unsafe impl Send for UserPtr {}
unsafe impl Sync for UserPtr {}

pub struct NlzSubscriber {
    subscriber: AdvancedSubscriber<()>,
    _token: LivelinessToken,
    _watcher: Subscriber<()>,
    publishers: Arc<PeerCount>,
}

/// Declares a subscriber on `keyexpr` calling `callback(data, len, user)` for every sample, with
/// its liveliness token `token` and counting the publishers' tokens on `peers`.
/// `transient_local`: 1 = ask late-detected publishers for their cached samples (up to `depth`
/// each), and when `reliable` is 1 also recover a missed sample from its publisher's cache on the
/// publisher's heartbeat. `user` must stay valid until nlz_undeclare_subscriber returns. NULL on
/// failure.
#[no_mangle]
pub unsafe extern "C" fn nlz_declare_subscriber(
    s: *const NlzSession,
    keyexpr: *const c_char,
    reliable: c_int,
    transient_local: c_int,
    depth: c_int,
    callback: NlzSampleCallback,
    user: *mut c_void,
    token: *const c_char,
    peers: *const c_char,
) -> *mut NlzSubscriber {
    guarded(std::ptr::null_mut(), || {
        let s = s.as_ref().ok_or("session is NULL")?;
        let key = c_str(keyexpr, "keyexpr")?.to_string();
        let token = c_str(token, "token")?;
        let peers = c_str(peers, "peers")?;
        let user = UserPtr(user);
        let on_sample = move |sample: zenoh::sample::Sample| {
            let user = &user;
            if sample.kind() != SampleKind::Put {
                return;
            }
            let bytes = sample.payload().to_bytes();
            let _ = catch_unwind(AssertUnwindSafe(|| callback(bytes.as_ptr(), bytes.len(), user.0)));
        };
        let builder = s.session.declare_subscriber(key.clone());
        let subscriber = if transient_local != 0 {
            let history = builder
                .history(HistoryConfig::default().detect_late_publishers().max_samples(depth.max(1) as usize))
                .subscriber_detection()
                .query_timeout(Duration::from_millis(u64::MAX));   // rmw_zenoh: never
            let history = if reliable != 0 { history.recovery(RecoveryConfig::default().heartbeat()) } else { history };
            history.callback(on_sample).wait()
        } else {
            builder.advanced().callback(on_sample).wait()
        }
        .map_err(|e| format!("declare subscriber {key}: {e}"))?;
        let (token, watcher, publishers) = declare_presence(s, token, peers)?;
        Ok(Box::into_raw(Box::new(NlzSubscriber { subscriber, _token: token, _watcher: watcher, publishers })))
    })
}

/// Publishers matched: the number of publisher tokens seen on the subscriber's `peers` pattern
/// (netloop's or a ROS 2 node's). -1 on failure.
#[no_mangle]
pub unsafe extern "C" fn nlz_subscriber_matched(sub: *const NlzSubscriber) -> i64 {
    guarded(-1, || {
        let sub = sub.as_ref().ok_or("subscriber is NULL")?;
        Ok(sub.publishers.len())
    })
}

/// Undeclares the subscriber and frees it; no callback runs after it returns.
#[no_mangle]
pub unsafe extern "C" fn nlz_undeclare_subscriber(sub: *mut NlzSubscriber) {
    if sub.is_null() {
        return;
    }
    let sub = Box::from_raw(sub);
    let _ = catch_unwind(AssertUnwindSafe(move || {
        let NlzSubscriber { subscriber, _token, _watcher, .. } = *sub;
        let _ = _token.undeclare().wait();
        let _ = _watcher.undeclare().wait();
        let _ = subscriber.undeclare().wait_callbacks().wait();
    }));
}
