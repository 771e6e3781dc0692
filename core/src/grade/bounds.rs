//! Every timing bound the graders interpret, in one place, each with both sides and its reason.
//!
//! A timing is held between a lower and an upper bound derived from what the act observed (the
//! live registration's `timeoutSeconds`, the watchdog's `resume_after_sec` and ready time) plus
//! the small tolerances named here. Units: milliseconds unless the name says otherwise.
//!
//! | timing | lower | upper | where |
//! |---|---|---|---|
//! | a Fail-freeze `webhook-timeout`, or an Ignore-freeze request admitted after the failed call (`elapsed_ms`) | `T·1000 − CLOCK_SKEW_MS` | `T·1000 + TIMEOUT_LATE_MS` | lab B acts 5, 6 |
//! | watchdog resume (`resumed_at − watchdog_armed_at`), when the watchdog resumed | `R·1000 − CLOCK_SKEW_MS` | `R·1000 + WATCHDOG_LATE_MS` | lab B acts 5, 6 |
//! | first explicit deny after resume (`answered_at − resumed_at`) | `0` | `DENY_AFTER_RESUME_MS` | lab B acts 5, 6 |
//! | lab A Lease takeover (`lease_acquired − replicas_restored`; each recovery step after the previous) | `0` (order) | `RECOVERY_MS` | lab A act 6 |
//! | the API server's own time of a webhook call (audit `apiserver.latency.k8s.io/validating-webhook`; metrics `admission_duration_seconds`) of a timed-out call | `T·1000 − CLOCK_SKEW_MS` | `T·1000 + TIMEOUT_LATE_MS` | every act with audit/metrics |
//! | … of any call, and the audit event's own span (`stageTimestamp − requestReceivedTimestamp`) | `0` | the record's `elapsed_ms + CLOCK_SKEW_MS` ([`call_inside_request_ms`]) | every act with audit/metrics |
//! | … of an explicit deny's call | `0` | `T·1000` exclusive ([`deny_call_max_ms`]) | every act with audit/metrics |
//! | a request's follow-up GET (`get.at − answered_at`) | `0` | `GET_AFTER_ANSWER_MS` | every request |
//! | an act's audit window opening (`window[0] − started_at`) | `−CLOCK_SKEW_MS` | `AUDIT_WINDOW_OPEN_MS` | acts with audit |
//! | a recorded duration vs the difference of its two recorded timestamps | `−DERIVED_MS_TOLERANCE` | `+DERIVED_MS_TOLERANCE` | lab B acts 5, 6; lab A act 6 |
//!
//! `T` is the live registration's `timeoutSeconds` (act 2 / act 6's webhook, the snapshot read
//! during the freeze, and the `timeout=` of the failed call's URL must all agree); `R` is the
//! watchdog's `resume_after_sec`.

/// Clock granularity between two timestamps taken by different clocks or processes (the API
/// server's deadline vs the client's wall-clock ms timestamps), milliseconds.
pub const CLOCK_SKEW_MS: u64 = 50;

/// How long after its new holder stamped `acquireTime` a Lease may still read as the old tenure:
/// the holder's Update is stored a few ms after the stamp (client-go `tryAcquireOrRenew`), and a
/// read's `at` is the tool's time of the answer; 500 ms covers both with room.
pub const LEASE_STORE_MS: i64 = 500;

/// How long after a request's answer its follow-up GET may be answered, milliseconds: the GET
/// is the probe's next API call, made at once (the recorded runs: at most 17 ms); 5 s leaves a
/// loaded machine a wide margin, while a GET made later is not the observation of this answer
/// (the object may have been created or deleted in between).
pub const GET_AFTER_ANSWER_MS: i64 = 5000;

/// How far past `timeoutSeconds` a timed-out call may be answered, milliseconds (exclusive).
///
/// Why 1000: `timeoutSeconds` is a whole number of seconds, so 1 s is the smallest difference
/// between two registrations. An answer later than `T + 1 s` could as well come from a webhook
/// registered with `T + 1` (or from another webhook called before this one, kyverno#2869), so it
/// cannot show that *this* registration's timeout fired. The API server answers a deadline within
/// tens of ms (the recorded run: 3004 and 3055 ms under Fail, 3017 and 3099 ms stored under
/// Ignore for T = 3 s), far inside the bound.
pub const TIMEOUT_LATE_MS: u64 = 1000;

/// How long after its deadline the watchdog's SIGCONT may be recorded, milliseconds: the runner
/// waits [`crate::rules::b::WATCHDOG_GRACE`] for the watchdog's report before it resumes the process
/// itself, so a later resume contradicts the fault plan.
pub const WATCHDOG_LATE_MS: u64 = crate::rules::b::WATCHDOG_GRACE.as_millis() as u64;

/// Upper bound on the first explicit deny after resume, milliseconds: the act's own bounded wait
/// ([`crate::rules::b::DENY_AFTER_RESUME_BOUND`]); a later deny cannot have been observed by it.
pub const DENY_AFTER_RESUME_MS: u64 = crate::rules::b::DENY_AFTER_RESUME_BOUND.as_millis() as u64;

/// Upper bound on lab A's recovery, milliseconds from the restore: the act's own bounded wait
/// ([`crate::rules::a::RECOVERY_BOUND`]); a step later than that cannot have been observed by it.
pub const RECOVERY_MS: u64 = crate::rules::a::RECOVERY_BOUND.as_millis() as u64;

/// How far a recorded `*_ms` duration may differ from the difference of the two timestamps it
/// was computed from, milliseconds: both are whole ms, recorded from the same instants, so
/// only rounding separates them.
pub const DERIVED_MS_TOLERANCE: i64 = 2;

/// How far apart the starts of lab A act 6's recovery steps may be, milliseconds: every step's
/// `at − waited_ms` is the one instant its wait began, except that `at` is the time of the
/// observation and `waited_ms` is read when the act records it, an API call or two later (a
/// few ms; on a loaded machine more, never seconds).
pub const STEP_START_SPREAD_MS: i64 = 1000;

/// How long after an act's `started_at` its audit window may open, milliseconds: the act's
/// recorder opens it as soon as it is made (`ActRecorder::begin(..).with_audit(..)`, one stat of
/// the log; the recorded runs: the same millisecond); 1 s leaves a loaded machine a wide margin,
/// while a window opened later than that is not the act's.
pub const AUDIT_WINDOW_OPEN_MS: i64 = 1000;

/// How long kube-proxy may still send calls to an endpoint after a read of the EndpointSlice
/// stopped showing it ready (its sync after the change; 1 s by default,
/// `--iptables-min-sync-period`), ms.
pub const ENDPOINT_SYNC_MS: i64 = 1000;

/// The most a webhook call may take by the API server's own clock (the audit latency annotation,
/// the audit event's span, the metrics' duration), milliseconds, given the tool's `elapsed_ms`
/// for the request: the call happens inside the request the tool timed, and the API server and
/// the tool read the same host clock (the embedded node, the only backend with an audit log), so
/// only [`CLOCK_SKEW_MS`] of granularity separates the two.
pub fn call_inside_request_ms(elapsed_ms: u64) -> f64 {
    (elapsed_ms + CLOCK_SKEW_MS) as f64
}

/// The bound (exclusive, ms) on the API server's time of a call the webhook answered with a
/// deny, for a `timeoutSeconds = t` registration. Why `T·1000`: the webhook client's context
/// ends at `timeoutSeconds` (k8s.io/apiserver `pkg/util/webhook`), so a call that took that long
/// fails with `context deadline exceeded` instead of carrying the webhook's verdict. A healthy
/// Kyverno answers in milliseconds (the recorded runs: a deny's request took 7-17 ms in all,
/// and its latency is below the 500 ms threshold of the audit annotation), far inside the bound.
pub fn deny_call_max_ms(t: u32) -> f64 {
    f64::from(t) * 1000.0
}

/// The window `[lo, hi)` (ms) a call timed out by a `timeoutSeconds = t` registration is answered in.
pub fn timeout_window_ms(t: u32) -> (u64, u64) {
    let t = u64::from(t) * 1000;
    (t.saturating_sub(CLOCK_SKEW_MS), t + TIMEOUT_LATE_MS)
}

/// The window `[lo, hi]` (ms after `watchdog_armed_at`) in which a watchdog with
/// `resume_after_sec = r` resumes the process (its deadline is its ready time + `r`,
/// `faults::freeze`).
pub fn watchdog_window_ms(r: u32) -> (i64, i64) {
    let r = i64::from(r) * 1000;
    (r - CLOCK_SKEW_MS as i64, r + WATCHDOG_LATE_MS as i64)
}

/// Whether a request that failed open can only have timed out: it was sent while the target was
/// frozen and its whole `timeoutSeconds` lay inside the freeze (`facts.freeze.frozen_at` ..
/// `resumed_at`), so the stopped process could not answer or refuse. A request failed open
/// outside that span (e.g. after the resume, while a restarted container refuses connections)
/// may have failed fast: the 201 answer does not say which, and the tool's `elapsed_ms` cannot
/// decide it on a slow host (seen in a cgroup v2 guest under emulation: elapsed ≥ 3 s, the API
/// server's webhook latency 2 ms).
pub(super) fn timeout_inside_freeze(
    ev: &crate::evidence::Evidence,
    r: &crate::evidence::RequestRecord,
    t: u32,
) -> bool {
    let parse = crate::facts::parse_rfc3339;
    let at = |k: &str| ev.facts["freeze"][k].as_str().and_then(parse);
    match (at("frozen_at"), at("resumed_at"), parse(&r.sent_at)) {
        (Some(frozen), Some(resumed), Some(sent)) => {
            sent >= frozen && sent + chrono::Duration::seconds(i64::from(t)) <= resumed
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timeout window separates one-second steps; the watchdog's is its deadline plus the
    /// runner's grace.
    #[test]
    fn the_windows_hold_their_bounds() {
        let (lo, hi) = timeout_window_ms(3);
        assert_eq!((lo, hi), (2950, 4000));
        // The next possible registration's timeout starts where this window ends.
        assert_eq!(timeout_window_ms(4).0 + CLOCK_SKEW_MS, hi);
        assert!(10_004 >= timeout_window_ms(3).1);
        assert_eq!(watchdog_window_ms(20), (19_950, 23_000));
    }
}
