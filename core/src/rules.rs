//! The lab's shared rules: pure facts and functions that both the acts (`labs/`) and their
//! graders (`grade/`) use, so an act and its grader cannot disagree. No I/O here: the graders
//! may depend on this module (`xtask/tests/tidy.rs` keeps `grade/` away from `labs/`).
//!
//! - [`common`]: the lab namespaces.
//! - [`a`]: lab A's recovery bound, the recovery timeline's order, the report words.
//! - [`b`]: lab B's bounds around the freeze, the report words.
//! - [`c`]: lab C's waves and bounds around each replica's freeze, the report words.

/// `yes` when `holds`, else `no`: a report word chosen by one condition.
fn word(holds: bool, yes: &str, no: &str) -> String {
    String::from(if holds { yes } else { no })
}

/// Every lab.
pub mod common {
    /// Label key and value the lab's policy requires (`'environment' in object.metadata.?labels…`):
    /// probes carry it when they must be admitted, graders read it to tell good from bad requests.
    pub const GOOD_LABEL: (&str, &str) = ("environment", "lab");
    /// Namespace inside the policy's selector.
    pub const TARGET_NAMESPACE: &str = "kca-webhook-target";

    /// Namespace outside it.
    pub const CONTROL_NAMESPACE: &str = "kca-webhook-control";

    /// Namespace of the Kyverno installation (the Helm chart's default release namespace).
    pub const KYVERNO_NAMESPACE: &str = "kyverno";
    /// Kyverno's admission controller Deployment, which the acts read by name (chart 3.x,
    /// `charts/kyverno/templates/admission-controller/deployment.yaml` upstream).
    pub const ADMISSION_DEPLOYMENT: &str = "kyverno-admission-controller";
    /// The admission controller's main container in its pods (chart 3.x), whose restart count
    /// the acts record.
    pub const ADMISSION_CONTAINER: &str = "kyverno";
    /// Kyverno's leader-election Lease in [`KYVERNO_NAMESPACE`], which the acts read by name
    /// (kyverno `pkg/leaderelection`).
    pub const LEADER_LEASE: &str = "kyverno";
    /// Data key of the lab mark ConfigMap.
    pub const MARK_KEY: &str = "mark";
    /// The lab mark's value: a cluster without this exact ConfigMap value is never disturbed.
    pub const MARK_VALUE: &str = "kca-webhook-lab/v1";

    /// Whether `read` shows act 3's existing pod (`reference`) surviving: found, with the same
    /// (known) UID, `Running`. A new pod with the same name is not survival.
    pub fn same_uid_running(
        read: &crate::facts::PodObservation,
        reference: &crate::facts::PodObservation,
    ) -> bool {
        read.exists
            && read.uid.is_some()
            && read.uid == reference.uid
            && read.phase.as_deref() == Some("Running")
    }

    /// The report's word for act 3's pod (`reference`) read again (`read`): `same-uid-running`
    /// when it survived ([`same_uid_running`]), else what the read shows (`uid:…,phase:…`, `none`
    /// for an absent value) followed by `more`.
    pub fn existing_word(
        read: &crate::facts::PodObservation,
        reference: &crate::facts::PodObservation,
        more: &str,
    ) -> String {
        if same_uid_running(read, reference) {
            return "same-uid-running".to_owned();
        }
        let [uid, phase] = [&read.uid, &read.phase].map(|v| v.as_deref().unwrap_or("none"));
        format!("uid:{uid},phase:{phase}{more}")
    }
}

/// Lab A (scale-down).
pub mod a {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::word;
    use crate::evidence::Outcome;
    use crate::facts::a::{Act5Facts, Act6Facts, Act7Facts, TimelineStep};
    use crate::facts::{self, Act2Facts, Act3Facts, PodObservation};

    /// Bound on the whole recovery timeline of act 6 (a trial took about 32 s to the first deny).
    pub const RECOVERY_BOUND: Duration = Duration::from_secs(180);

    /// The orders of act 6's recovery that must hold because one step causes the next, as
    /// `(earlier, later)` field names of [`Act6Facts`], with the steps themselves:
    /// - the replicas come back before a new pod is created;
    /// - a pod exists before it runs and before it can hold the Lease (Kyverno's identity is
    ///   the pod name);
    /// - only the leader registers the webhook (Kyverno's webhook controller runs in the leader);
    /// - only a registered webhook denies.
    ///
    /// Phase `Running` and the Lease are not ordered: the kubelet reports the phase on its own
    /// schedule, so the API server may show the Lease taken before the pod's phase says Running.
    pub fn recovery_order(
        f: &Act6Facts,
    ) -> [(&'static str, &TimelineStep, &'static str, &TimelineStep); 5] {
        macro_rules! orders {
            ($($a:ident < $b:ident),*) => { [$((stringify!($a), &f.$a, stringify!($b), &f.$b)),*] };
        }
        orders!(
            replicas_restored < pod_created,
            pod_created < pod_running,
            pod_created < lease_acquired,
            lease_acquired < webhook_registered,
            webhook_registered < first_explicit_deny
        )
    }

    /// Whether the evidence contradicts "`earlier` happened no later than `later`", for two
    /// confirmed steps observed by polling. Each step happened in `(last check before, at]`
    /// ([`TimelineStep::last_check_before`]); a step already there at the first check has no
    /// earlier check, and `at` stands for both ends.
    ///
    /// The order is contradicted only when `later` was seen before the last check that did not
    /// see `earlier` yet: then `later` happened while `earlier` had not. Two polled steps may be
    /// *seen* in the other order when both changed between two checks (a trial: the first deny
    /// seen 0.52 s before the poll saw the registration, whose last check without it came 76 ms
    /// before that deny), and that is no contradiction.
    ///
    /// Returns the reason when contradicted; `None` when consistent or when a step is not
    /// confirmed (not-confirmed is its own finding).
    pub fn order_contradiction(earlier: &TimelineStep, later: &TimelineStep) -> Option<String> {
        let (e_at, l_at) = (earlier.seen_at()?, later.seen_at()?);
        let e_from = earlier.last_check_before().unwrap_or(e_at);
        let (l, e) = (facts::format_rfc3339(l_at), facts::format_rfc3339(e_from));
        (l_at < e_from).then(|| match earlier.last_check_before() {
            Some(_) => {
                format!("seen at {l} while a later check ({e}) did not see the step it follows yet")
            }
            None => format!(
                "seen at {l}, before the step it follows was first seen ({e}, at the first check)"
            ),
        })
    }

    /// Whether the six timeline steps are all confirmed (each is in an order of
    /// [`recovery_order`]) and no order is contradicted ([`order_contradiction`]): the report's
    /// `lease-then-registration-then-deny`.
    pub fn timeline_in_order(f: &Act6Facts) -> bool {
        recovery_order(f).iter().all(|(_, a, _, b)| {
            a.seen_at().is_some() && b.seen_at().is_some() && order_contradiction(a, b).is_none()
        })
    }

    /// What the evidence supports for each word of lab A's `report.json` (pure).
    ///
    /// - `scale_down`: `registration-absent` when act 5 found no webhook for the policy, else
    ///   `registration-kept`.
    /// - `policy`: `present` when act 5's GET found the policy with act 2's UID, else `absent`.
    /// - `request`: `admitted-without-webhook` when the registration was absent and act 5's violating
    ///   request was `stored`; `rejected-webhook-unreachable` when it was kept and the request failed
    ///   calling the webhook; otherwise the request's outcome.
    /// - `recovery`: `lease-then-registration-then-deny` when all six act-6 steps are confirmed and
    ///   no causal order is contradicted ([`timeline_in_order`]), else `not-confirmed`.
    /// - `dry_run`: `validated-not-stored` when act 7's good dry-run was admitted (kind Pod, same
    ///   name/namespace/labels) and not found by GET, and the bad one was an explicit deny; else
    ///   `not-shown`.
    /// - `existing`: `same-uid-running` when act 5's and act 6's reads of act 3's pod show the same UID
    ///   and `Running`; else `not-same-uid-running`.
    pub fn evidence_words(
        f2: &Act2Facts,
        f3: &Act3Facts,
        f5: &Act5Facts,
        f6: &Act6Facts,
        f7: &Act7Facts,
    ) -> BTreeMap<&'static str, String> {
        let uid2 = f2.policy.pointer("/metadata/uid").and_then(|u| u.as_str());
        let policy =
            f5.policy.exists && f5.policy.uid.is_some() && f5.policy.uid.as_deref() == uid2;
        let request = match (f5.policy_webhook_present, f5.target_bad.outcome) {
            (false, Outcome::Stored) if f5.target_bad.get.uid.is_some() => {
                "admitted-without-webhook"
            }
            (
                true,
                Outcome::ConnectionRefused
                | Outcome::NoEndpoints
                | Outcome::WebhookTimeout
                | Outcome::DnsError,
            ) => "rejected-webhook-unreachable",
            (_, o) => o.as_str(),
        };
        let echo_ok = f7.good_response.kind == "Pod"
            && f7.good_response.name == f7.good.name
            && f7.good_response.namespace == f7.good.namespace
            && f7.good_response.labels == f7.good.labels;
        let dry = f7.good.dry_run
            && f7.bad.dry_run
            && f7.good.outcome == Outcome::DryRunAdmitted
            && !f7.good.get.exists
            && echo_ok
            && f7.bad.outcome == Outcome::ExplicitDeny
            && !f7.bad.get.exists;
        let same = |p: Option<&PodObservation>| {
            p.is_some_and(|p| super::common::same_uid_running(p, &f3.existing))
        };
        let existing = same(Some(&f5.existing)) && same(f6.existing.as_ref());
        let existing = word(existing, "same-uid-running", "not-same-uid-running");
        let kept = f5.policy_webhook_present;
        let scale_down = word(kept, "registration-kept", "registration-absent");
        let recovery = timeline_in_order(f6);
        let recovery = word(
            recovery,
            "lease-then-registration-then-deny",
            "not-confirmed",
        );
        BTreeMap::from([
            ("scale_down", scale_down),
            ("policy", word(policy, "present", "absent")),
            ("request", request.to_owned()),
            ("recovery", recovery),
            ("dry_run", word(dry, "validated-not-stored", "not-shown")),
            ("existing", existing),
        ])
    }
}

/// Lab B (freeze).
pub mod b {
    use std::time::Duration;

    use crate::evidence::{Outcome, RequestRecord};
    use crate::facts::Act3Facts;
    use crate::facts::b::{Act5Facts, Act6Facts, Act7Facts};

    /// Bound on waiting for the first explicit deny after a resume (Kyverno may restart: kubelet's
    /// back-off, container start, leader election, cache sync).
    pub const DENY_AFTER_RESUME_BOUND: Duration = Duration::from_secs(180);

    /// How long after the healer's deadline the runner waits for its report before resuming itself.
    pub const WATCHDOG_GRACE: Duration = Duration::from_secs(3);

    /// Period of the admission controller's liveness probe as Kyverno's chart v1.19.1 sets it
    /// (`/health/liveness`, period 30 s, timeout 5 s, failureThreshold 2; chart 3.x
    /// `charts/kyverno/values.yaml`, `admissionController.livenessProbe`).
    pub const LIVENESS_PERIOD: Duration = Duration::from_secs(30);
    /// The probe's timeout: a probe fails when the process stays frozen for this long after it
    /// starts (the TCP connection is accepted by the kernel; the TLS handshake never answers).
    pub const LIVENESS_TIMEOUT: Duration = Duration::from_secs(5);
    /// Allowance for kubelet's probe timing, the clocks, and the healer's start before SIGSTOP.
    pub const LIVENESS_SLACK: Duration = Duration::from_secs(2);

    /// How long to wait before freezing the process again for `next`, when its previous freeze
    /// lasted `previous` and ended `since` ago, so that kubelet cannot see two liveness probes in
    /// a row fail (failureThreshold 2) and kill the container in the middle of the next freeze.
    ///
    /// With the previous freeze `[-L1, 0]` and the next `[G, G + L2]`, probes `P` apart with
    /// timeout `T` fail twice in a row only when one fails inside each freeze: when `L1 ≥ T`,
    /// `L2 ≥ T` and `P + T − L1 − L2 ≤ G ≤ P − T`. Each bound gets [`LIVENESS_SLACK`]. Returns
    /// zero outside that range (the lab's own act 5 → act 6, G < 1 s, 20 s + 10 s: safe), else the
    /// time until `G` passes its upper end (about 27 s after the previous resume).
    pub fn liveness_wait(previous: Duration, since: Duration, next: Duration) -> Duration {
        let (p, t, s) = (LIVENESS_PERIOD, LIVENESS_TIMEOUT, LIVENESS_SLACK);
        if previous + s < t || next + s < t {
            return Duration::ZERO;
        }
        let low = (p + t).saturating_sub(previous + next + s);
        let high = p - t + s;
        if since < low || since > high {
            Duration::ZERO
        } else {
            high - since + Duration::from_millis(100)
        }
    }

    /// How long to wait before freezing the process for `next`, when kubelet recorded a liveness
    /// probe failure of its pod `since` ago, so that the probe after that failure cannot fall in
    /// the freeze (which would make two failures in a row, failureThreshold 2, and a restart in
    /// the middle of it).
    ///
    /// What is derivable: kubelet records every liveness failure as a Warning Event `Unhealthy`
    /// (`Liveness probe failed: …` / `… errored …`, `pkg/kubelet/prober/prober.go`) at most
    /// [`LIVENESS_TIMEOUT`] after that probe started, and nothing for a success. The next probe
    /// starts one [`LIVENESS_PERIOD`] after the failed one did, so in `[P − T − since, P − since]`
    /// from now, and ends by `P + T − since`. If the freeze `[0, next]` can overlap that window
    /// (each bound with [`LIVENESS_SLACK`]), this waits until the window is over: the probe then
    /// ran unfrozen, and it passed unless a newer failure Event shows (the caller reads the Events
    /// again). A failure older than `P + T + slack` gives zero: its next probe is over. Unlike
    /// [`liveness_wait`] this sees failures no freeze caused (a slow start-up under load).
    pub fn liveness_failure_wait(since: Duration, next: Duration) -> Duration {
        let (p, t, s) = (LIVENESS_PERIOD, LIVENESS_TIMEOUT, LIVENESS_SLACK);
        let window_end = p + t + s;
        if since >= window_end {
            return Duration::ZERO;
        }
        let window_start = (p - t).saturating_sub(since + s);
        if next < window_start {
            Duration::ZERO
        } else {
            window_end - since + Duration::from_millis(100)
        }
    }

    /// What the evidence supports for each conclusion of the report (lab B), as the word the report
    /// should hold, or a description of what the evidence shows instead.
    pub fn report_expectations(
        act3: &Act3Facts,
        act5: &Act5Facts,
        act6: &Act6Facts,
        act7: &Act7Facts,
    ) -> Vec<(&'static str, String)> {
        let (good, bad) = (act5.target_good.outcome, act5.target_bad.outcome);
        let fail = match (good, bad) {
            (Outcome::WebhookTimeout, Outcome::WebhookTimeout) => {
                "matching-requests-timeout".to_owned()
            }
            _ => format!("target-good:{},target-bad:{}", good.as_str(), bad.as_str()),
        };
        // `yes` when `r` was stored, else `what:` and its outcome.
        let stored = |r: &RequestRecord, yes: &str, what: &str| match r.outcome {
            Outcome::Stored => yes.to_owned(),
            o => format!("{what}:{}", o.as_str()),
        };
        let (run, healthy) = (&act6.run, act6.healthy_bad.outcome.as_str());
        let ignore = stored(&run.target_bad, "unvalidated-request-stored", "target-bad");
        let control = stored(&act5.control, "outside-selector", "control");
        let existing = super::common::existing_word(&act7.existing, &act3.existing, "");
        vec![
            ("fail", fail),
            ("ignore", ignore),
            ("healthy_ignore", healthy.to_owned()),
            ("control", control),
            ("existing", existing),
        ]
    }
}

/// Lab C (three replicas; the leader frozen under Fail, a follower under Ignore).
pub mod c {
    use super::word;
    use std::time::Duration;

    use crate::evidence::Outcome;
    use crate::facts::c::{Act3Facts, Act5Facts, Act6Facts, Act7Facts, ReplicaFreezeRun};
    use crate::facts::parse_rfc3339;

    /// The fewest violating pods sent during a freeze: the spec's "with 3 endpoints at least 18"
    /// (`docs/labs.md`, "Lab C", act 5). Each wave's requests are sent at once, so that the API
    /// server opens a connection to more than one endpoint (`docs/lab-c.md`).
    pub const MIN_FREEZE_REQUESTS: u32 = 18;
    /// Act 5 (20 s freeze): waves of violating pods...
    pub const LEADER_WAVES: u32 = 3;
    /// ...of this many each (3 × 6 = 18; each wave lasts at most the 3 s timeout, so all three
    /// are answered well inside the freeze).
    pub const LEADER_WAVE_SIZE: u32 = 6;
    /// Act 6 (10 s freeze): two waves of nine (18), answered inside the shorter freeze.
    pub const FOLLOWER_WAVES: u32 = 2;
    /// See [`FOLLOWER_WAVES`].
    pub const FOLLOWER_WAVE_SIZE: u32 = 9;
    /// How often the Lease and the EndpointSlice are read during a freeze.
    pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);
    /// Bound on the wait after the first explicit deny for the frozen replica to settle: Ready
    /// again (a restarted container passes its startup probe, chart 3.9.1: period 6 s, up to 20
    /// failures = 120 s) with every replica a ready endpoint.
    pub const SETTLE_BOUND: Duration = Duration::from_secs(150);
    /// The settle's minimum after the resume: the Lease `kyverno`'s duration (12 s) plus its retry
    /// period (2 s), Kyverno v1.19 `cmd/kyverno/main.go` (leader election of the admission
    /// controller; `docs/labs.md`, "Lab C"): a replica that lost leadership inside the freeze
    /// exits within its renew deadline, and kubelet restarts it; the wait proves the Lease stayed
    /// or moved (`lab::steps::settle`). Part of acts 5 and 6's floor (`cargo xtask bench`).
    pub const SETTLE_NOT_BEFORE: Duration = Duration::from_secs(12 + 2);
    /// Bound on act 7's wait for the original count and an explicit deny: the Deployment's extra
    /// pods terminate (grace period 30 s) and a new leader may need to take the Lease (12 s) and
    /// reconcile the registration.
    pub const SCALE_BACK_BOUND: Duration = Duration::from_secs(180);

    /// How the violating requests of a freeze ended: `(timed out or failed open, explicit deny,
    /// anything else)`. Under Fail a request that met the frozen replica is a `webhook-timeout`;
    /// under Ignore it is `stored` after the timeout.
    pub fn freeze_counts(run: &ReplicaFreezeRun, met_frozen: Outcome) -> (usize, usize, usize) {
        let count = |o: Outcome| run.bad.iter().filter(|r| r.outcome == o).count();
        let (met, denied) = (count(met_frozen), count(Outcome::ExplicitDeny));
        (met, denied, run.bad.len() - met - denied)
    }

    /// The word for a freeze's requests: `some-…`, `all-…` or `none-…` followed by `what`, when
    /// every request either met the frozen replica or was denied; otherwise the counts verbatim
    /// (`met:N,explicit-deny:M,other:K`), which no report word matches.
    fn freeze_word(run: &ReplicaFreezeRun, met_frozen: Outcome, what: &str) -> String {
        let (met, denied, other) = freeze_counts(run, met_frozen);
        let (n, met_word) = (run.bad.len(), met_frozen.as_str());
        if other > 0 || n == 0 {
            return format!("{met_word}:{met},explicit-deny:{denied},other:{other}");
        }
        let q = match met {
            m if m == n => "all",
            0 => "none",
            _ => "some",
        };
        format!("{q}-{what}")
    }

    /// The first holder of the Lease `kyverno` read between the freeze and the resume that is not
    /// the holder read right before the freeze (`lease_before`): `(holder, when read)`; else the
    /// read after the settle (`lease_after`), when it names another holder whose `acquireTime`
    /// lies inside the freeze (`(holder, acquireTime)`: the new holder stamped its tenure there,
    /// whatever the samples say); `None` when no read shows a takeover during the freeze.
    pub fn takeover(run: &ReplicaFreezeRun) -> Option<(&str, &str)> {
        let resumed = parse_rfc3339(&run.freeze.resumed_at);
        let frozen = parse_rfc3339(&run.freeze.frozen_at);
        let before = run.lease_before.holder.as_deref();
        let sampled = run
            .lease_samples
            .iter()
            .filter(|s| resumed.is_some_and(|r| parse_rfc3339(&s.at).is_some_and(|at| at <= r)))
            .find_map(|s| {
                let h = s.holder.as_deref()?;
                (Some(h) != before).then_some((h, s.at.as_str()))
            });
        sampled.or_else(|| {
            let after = &run.lease_after;
            let h = after.holder.as_deref().filter(|h| Some(*h) != before)?;
            let acq = after.acquire_time.as_deref()?;
            let t = parse_rfc3339(acq)?;
            (frozen? <= t && t <= resumed?).then_some((h, acq))
        })
    }

    /// Whether the frozen replica's container restarted after the resume: its pod kept its UID,
    /// its restart count went up, and the container CRI showed after the resume (when it answered)
    /// is not the frozen one (kubelet starts a new container for every restart).
    pub fn restarted(run: &ReplicaFreezeRun) -> bool {
        let t = &run.target_after;
        t.pod_uid_after.as_deref() == Some(t.pod_uid_before.as_str())
            && t.restart_count_after > t.restart_count_before
            && new_container(run) != Some(false)
    }

    /// Whether the container CRI showed after the resume is another than the frozen one; `None`
    /// when CRI did not answer.
    fn new_container(run: &ReplicaFreezeRun) -> Option<bool> {
        let frozen = &run.freeze.identity.container_id;
        let after = run.target_after.identity_after.as_ref();
        after.map(|i| &i.container_id != frozen)
    }

    /// The former leader after the resume, as the report words it: `restarted` ([`restarted`]),
    /// `kept-running` (the same pod and container, no restart), `pod-uid:<its pod's UID after>`
    /// (`none`: gone); where the restart count and the container disagree (act 5's grade flags
    /// it), `restart-count:<before>-><after>,new-container:<bool>`, which no report word matches.
    pub fn former_leader(run: &ReplicaFreezeRun) -> String {
        let t = &run.target_after;
        let after = t.pod_uid_after.as_deref();
        let rose = t.restart_count_after > t.restart_count_before;
        if restarted(run) {
            "restarted".to_owned()
        } else if after != Some(t.pod_uid_before.as_str()) {
            format!("pod-uid:{}", after.unwrap_or("none"))
        } else if let Some(new) = new_container(run).filter(|new| *new != rose) {
            let (b, a) = (t.restart_count_before, t.restart_count_after);
            format!("restart-count:{b}->{a},new-container:{new}")
        } else {
            "kept-running".to_owned()
        }
    }

    /// The report words the evidence supports, field by field (`report.json`, lab C): the one
    /// rule act 8 and its grader check the report with, and `cargo xtask lab run` writes it by.
    pub fn report_expectations(
        act3: &Act3Facts,
        act5: &Act5Facts,
        act6: &Act6Facts,
        act7: &Act7Facts,
    ) -> Vec<(&'static str, String)> {
        let leader_freeze = freeze_word(act5, Outcome::WebhookTimeout, "matching-requests-timeout");
        let lease = if takeover(act5).is_some() {
            "taken-over-during-freeze".to_owned()
        } else if act5.lease_samples.iter().any(|s| s.holder.is_some()) {
            "kept".to_owned()
        } else {
            "lease-not-observed".to_owned()
        };
        let follower = freeze_word(&act6.run, Outcome::Stored, "unvalidated-stored");
        let kept =
            act5.registration_present_during_freeze && act6.run.registration_present_during_freeze;
        let registration = word(kept, "kept", "absent-during-a-freeze");
        let healthy_bad = format!(",healthy-bad:{}", act7.healthy_bad.outcome.as_str());
        let existing = super::common::existing_word(&act7.existing, &act3.existing, &healthy_bad);
        vec![
            ("leader_freeze", leader_freeze),
            ("lease", lease),
            ("former_leader", former_leader(act5)),
            ("follower_freeze_ignore", follower),
            ("registration", registration),
            ("existing", existing),
        ]
    }
}

#[cfg(test)]
mod liveness_tests {
    use super::b::{liveness_failure_wait, liveness_wait};
    use std::time::Duration;

    const ZERO: Duration = Duration::ZERO;

    const fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    const fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    #[test]
    fn the_labs_own_act_5_then_act_6_needs_no_wait() {
        // Recorded runs: act 6's freeze started 0.36 s and 0.74 s after act 5's resume.
        assert_eq!(liveness_wait(s(20), ms(740), s(10)), ZERO);
    }

    #[test]
    fn a_freeze_started_inside_the_risky_gap_waits_until_past_it() {
        // A student runs act 6 ten seconds after act 5: a probe can fail in each freeze.
        let w = liveness_wait(s(20), s(10), s(10));
        assert!(w > s(16) && w < s(18), "{w:?}");
        // Act 5 again right after act 5 (20 s + 20 s): risky from the first second.
        assert!(liveness_wait(s(20), s(1), s(20)) > ZERO);
        // Past the upper end (a probe has passed in between): no wait.
        assert_eq!(liveness_wait(s(20), s(28), s(20)), ZERO);
    }

    #[test]
    fn a_liveness_failure_before_the_freeze_waits_for_the_next_probe() {
        // Research trial (TCG): a probe failed during Kyverno's slow start-up, act 5 froze it
        // 14 s later for 20 s: the next probe fell in the freeze and kubelet restarted Kyverno.
        let w = liveness_failure_wait(s(14), s(20));
        assert!(w > s(22) && w < s(24), "{w:?}");
        // Act 6 right after act 5: act 5's own failure (≈ 10 s before its resume) leaves the next
        // probe after act 6's 10 s freeze: no wait (as `liveness_wait` found).
        assert_eq!(liveness_failure_wait(ms(10_400), s(10)), ZERO);
        // The same failure and act 5 again (20 s): the next probe can fall in it.
        assert!(liveness_failure_wait(ms(10_400), s(20)) > s(26));
        // A failure whose next probe is over: nothing to wait for.
        assert_eq!(liveness_failure_wait(s(37), s(20)), ZERO);
        assert!(liveness_failure_wait(s(36), s(20)) > ZERO);
    }

    #[test]
    fn a_freeze_shorter_than_the_probe_timeout_cannot_fail_a_probe() {
        assert_eq!(liveness_wait(s(2), s(10), s(20)), ZERO);
    }
}

#[cfg(test)]
mod tests {
    use super::a::{order_contradiction, recovery_order, timeline_in_order};
    use crate::facts::a::{Act6Facts, StepStatus, TimelineStep};

    /// A confirmed step seen at `at`, with the last check that did not see it (if any).
    fn seen(at: &str, last_check: Option<&str>) -> TimelineStep {
        TimelineStep {
            status: StepStatus::Confirmed,
            at: Some(at.into()),
            last_seen: last_check.map(|t| format!("{t} not yet")),
            waited_ms: 0,
        }
    }

    /// Act 6 with `steps` in the order of its fields, restored by the runner, no probes.
    fn timeline(steps: [TimelineStep; 6]) -> Act6Facts {
        let mut f = serde_json::json!({"restored_by": "runner", "deny_probes": []});
        let names = "replicas_restored pod_created pod_running lease_acquired webhook_registered";
        let names = names.split(' ').chain(["first_explicit_deny"]);
        for (name, step) in names.zip(steps) {
            f[name] = serde_json::to_value(step).unwrap();
        }
        serde_json::from_value(f).expect("an Act6Facts")
    }

    /// Act 6 of CI's run of 2026-12-01 (lab_a, 02:48 UTC): the deny probe answered 76 ms after
    /// the last check without the registration and 520 ms before the next check saw it.
    fn ci_run_2026_12_01() -> Act6Facts {
        timeline([
            seen("2026-12-01T02:48:22.776Z", None),
            seen("2026-12-01T02:48:22.988Z", None),
            seen("2026-12-01T02:48:41.532Z", Some("2026-12-01T02:48:41.018Z")),
            seen("2026-12-01T02:48:56.006Z", Some("2026-12-01T02:48:55.477Z")),
            seen("2026-12-01T02:48:56.615Z", Some("2026-12-01T02:48:56.019Z")),
            seen("2026-12-01T02:48:56.095Z", Some("2026-12-01T02:48:55.486Z")),
        ])
    }

    #[test]
    fn timeline_order_needs_all_six_confirmed_and_no_cause_seen_after_its_effect() {
        // Each step confirmed at `2026-11-29T15:00:<at>Z` (first seen at the first check), or
        // not confirmed when `at` is empty.
        let steps = |ats: [&str; 6]| {
            timeline(ats.map(|at| match at {
                "" => TimelineStep {
                    status: StepStatus::NotConfirmed,
                    at: None,
                    ..seen("", None)
                },
                at => seen(&format!("2026-11-29T15:00:{at}Z"), None),
            }))
        };
        let ok = steps(["00.000", "00.200", "16.000", "32.000", "32.100", "32.100"]);
        assert!(timeline_in_order(&ok));
        let swapped = steps(["00.000", "00.200", "16.000", "33.000", "32.100", "34.000"]);
        assert!(
            !timeline_in_order(&swapped),
            "registration before the lease"
        );
        // Any one step not confirmed (each is in an order of `recovery_order`).
        for i in 0..6 {
            let mut ats = ["00.000", "00.200", "16.000", "32.000", "32.100", "34.000"];
            ats[i] = "";
            assert!(!timeline_in_order(&steps(ats)), "step {i} not confirmed");
        }
    }

    #[test]
    fn a_deny_seen_before_the_poll_saw_the_registration_is_consistent_inside_its_window() {
        let f = ci_run_2026_12_01();
        assert_eq!(
            order_contradiction(&f.webhook_registered, &f.first_explicit_deny),
            None
        );
        assert!(timeline_in_order(&f));
    }

    #[test]
    fn a_step_seen_before_the_last_check_without_its_cause_contradicts_the_order() {
        let mut f = ci_run_2026_12_01();
        // The registration's last check without it moves after the deny was seen.
        f.webhook_registered = seen("2026-12-01T02:48:56.615Z", Some("2026-12-01T02:48:56.200Z"));
        let why = order_contradiction(&f.webhook_registered, &f.first_explicit_deny)
            .expect("deny seen while the registration was still absent");
        assert!(
            why.contains("02:48:56.095Z") && why.contains("02:48:56.200Z"),
            "{why}"
        );
        assert!(!timeline_in_order(&f));
    }

    #[test]
    fn a_step_first_seen_at_the_first_check_bounds_its_followers_by_that_time() {
        let mut f = ci_run_2026_12_01();
        // Created at the first check (no earlier check), then a Running seen before it.
        f.pod_running = seen("2026-12-01T02:48:22.900Z", None);
        assert!(order_contradiction(&f.pod_created, &f.pod_running).is_some());
        assert!(!timeline_in_order(&f));
    }

    #[test]
    fn running_and_the_lease_are_not_ordered_but_every_step_must_be_confirmed() {
        let mut f = ci_run_2026_12_01();
        // The Lease taken before the kubelet reported Running: no cause between them.
        f.pod_running = seen("2026-12-01T02:48:57.000Z", Some("2026-12-01T02:48:56.500Z"));
        assert!(
            recovery_order(&f)
                .iter()
                .all(|(a, _, b, _)| !(*a == "pod_running" && *b == "lease_acquired"))
        );
        assert!(timeline_in_order(&f));
        f.lease_acquired.status = StepStatus::NotConfirmed;
        assert!(!timeline_in_order(&f));
    }
}

#[cfg(test)]
mod lab_c_tests {
    use super::c::{former_leader, freeze_counts, restarted, takeover};
    use crate::evidence::Outcome;
    use crate::facts::c::ReplicaFreezeRun;
    use serde_json::json;

    const LEADER: &str = "kyverno-admission-controller-86cbbb5545-5lxrd";
    const OTHER: &str = "kyverno-admission-controller-86cbbb5545-2574z";

    fn record(outcome: &str) -> serde_json::Value {
        json!({
            "name": "kca-c5-frozen-bad-w0-0", "namespace": "kca-webhook-target", "labels": {},
            "dry_run": false, "sent_at": "2026-12-01T23:13:35.000Z",
            "answered_at": "2026-12-01T23:13:38.000Z", "elapsed_ms": 3000, "http_status": 500,
            "reason": null, "message": null, "outcome": outcome, "raw_response": {},
            "get": {"exists": false, "uid": null, "phase": null, "at": "2026-12-01T23:13:38.010Z"}
        })
    }

    fn lease(holder: Option<&str>) -> serde_json::Value {
        json!({"namespace": "kyverno", "name": "kyverno", "holder": holder, "acquire_time": null,
               "renew_time": null, "lease_duration_seconds": 12, "lease_transitions": 0,
               "at": "2026-12-01T23:13:34.000Z"})
    }

    /// Act 5 of the first real lab C run (2026-12-01 23:13 UTC), cut down: the leader frozen
    /// 23:13:34.414 → 23:13:54.431, the Lease read before, during and after.
    fn run(target: &str, before: &str, holders: &[(&str, &str)]) -> ReplicaFreezeRun {
        let samples: Vec<_> = holders
            .iter()
            .map(|(at, h)| json!({"at": at, "holder": h, "renew_time": null, "lease_transitions": 0}))
            .collect();
        serde_json::from_value(json!({
            "target_role": "leader", "target_pod": target, "lease_before": lease(Some(before)),
            "freeze": {"identity": {"pid": 10336, "pid_start_time_ticks": 1, "container_id": "c",
                                    "pod_uid": "u"},
                       "watchdog_pid": 1, "watchdog_armed_at": "2026-12-01T23:13:34.400Z",
                       "resume_after_sec": 20, "frozen_at": "2026-12-01T23:13:34.414Z",
                       "state_during": "T", "resumed_at": "2026-12-01T23:13:54.431Z",
                       "resumed_by": "watchdog", "state_after": "S"},
            "registration_present_during_freeze": true, "registration_snapshot": null,
            "registration_checked_at": "2026-12-01T23:13:34.500Z", "timeout_seconds": 3,
            "waves": 1, "wave_size": 3,
            "bad": [record("webhook-timeout"), record("explicit-deny"), record("explicit-deny")],
            "control": [], "lease_samples": samples, "endpoint_samples": [],
            "replica_requests": [], "after_resume": [], "first_explicit_deny": null,
            "first_deny_after_resume_ms": null,
            "target_after": {"pod": target, "pod_uid_before": "u", "pod_uid_after": "u",
                             "restart_count_before": 0, "restart_count_after": 1,
                             "ready_after": true, "identity_after": null,
                             "holds_lease_after": false,
                             "settled_at": "2026-12-01T23:14:10.000Z", "waited_ms": 15000},
            "lease_after": lease(Some(OTHER)),
            "existing": {"name": "p", "namespace": "kca-webhook-target", "exists": true,
                         "uid": "e", "phase": "Running", "restart_count": 0,
                         "at": "2026-12-01T23:14:10.000Z"}
        }))
        .expect("a ReplicaFreezeRun")
    }

    #[test]
    fn a_takeover_is_the_first_read_of_another_holder_before_the_resume() {
        let (t0, t1) = ("2026-12-01T23:13:35.000Z", "2026-12-01T23:13:49.499Z");
        let follower = "kyverno-admission-controller-86cbbb5545-4chsj";
        for (target, before, samples, expected) in [
            // The leader's Lease moving during the freeze: a takeover at its first read.
            (
                LEADER,
                LEADER,
                &[
                    (t0, LEADER),
                    (t1, OTHER),
                    ("2026-12-01T23:13:50.500Z", OTHER),
                ][..],
                Some((OTHER, t1)),
            ),
            // A follower frozen: every read names the holder of before.
            (
                follower,
                OTHER,
                &[(t0, OTHER), ("2026-12-01T23:13:36.000Z", OTHER)],
                None,
            ),
            // A holder read after the resume is no takeover during the freeze.
            (LEADER, LEADER, &[("2026-12-01T23:13:54.900Z", OTHER)], None),
        ] {
            let r = run(target, before, samples);
            assert_eq!(takeover(&r), expected, "{samples:?}");
            assert!(restarted(&r));
            assert_eq!(freeze_counts(&r, Outcome::WebhookTimeout), (1, 2, 0));
        }
    }

    /// graders-4 case c5-lease-kept-samples: every sample names the frozen leader, but the read
    /// after the settle shows another holder whose tenure was stamped inside the freeze.
    #[test]
    fn a_tenure_acquired_inside_the_freeze_is_a_takeover_whatever_the_samples_say() {
        let mut r = run(LEADER, LEADER, &[("2026-12-01T23:13:49.499Z", LEADER)]);
        assert_eq!(takeover(&r), None);
        r.lease_after.acquire_time = Some("2026-12-01T23:13:45.804852Z".into());
        assert_eq!(takeover(&r), Some((OTHER, "2026-12-01T23:13:45.804852Z")));
        r.lease_after.acquire_time = Some("2026-12-01T23:13:55.000000Z".into());
        assert_eq!(takeover(&r), None, "acquired after the resume");
    }

    /// Stop 47's escape: a restart count that went up while CRI shows the frozen container after
    /// the resume (act 5's grade flags it) supports no report word; nor does a new container
    /// without a restart.
    #[test]
    fn a_restart_count_the_container_contradicts_supports_no_former_leader_word() {
        use crate::facts::b::ProcessIdentity;
        let mut r = run(LEADER, LEADER, &[]);
        assert_eq!(
            former_leader(&r),
            "restarted",
            "CRI did not answer: the count decides"
        );
        let frozen = r.freeze.identity.clone();
        let other = ProcessIdentity {
            container_id: "d".into(),
            ..frozen.clone()
        };
        for (after, count, word) in [
            (&other, 1, "restarted"),
            (&frozen, 1, "restart-count:0->1,new-container:false"),
            (&frozen, 0, "kept-running"),
            (&other, 0, "restart-count:0->0,new-container:true"),
        ] {
            r.target_after.identity_after = Some(after.clone());
            r.target_after.restart_count_after = count;
            assert_eq!(
                former_leader(&r),
                word,
                "container {after:?}, count {count}"
            );
            assert_eq!(restarted(&r), word == "restarted");
        }
    }
}
