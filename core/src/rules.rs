//! The lab's shared rules: pure facts and functions that both the acts (`labs/`) and their
//! graders (`grade/`) use, so an act and its grader cannot disagree. No I/O here: the graders
//! may depend on this module (`xtask/tests/tidy.rs` keeps `grade/` away from `labs/`).
//!
//! - [`common`]: the lab namespaces.
//! - [`a`]: lab A's recovery bound, the recovery timeline's order, the report words.
//! - [`b`]: lab B's bounds around the freeze, the report words.

/// Both labs.
pub mod common {
    /// Label key and value the lab's policy requires (`'environment' in object.metadata.?labels…`):
    /// probes carry it when they must be admitted, graders read it to tell good from bad requests.
    pub const GOOD_LABEL: (&str, &str) = ("environment", "lab");
    /// Namespace inside the policy's selector.
    pub const TARGET_NAMESPACE: &str = "kca-webhook-target";

    /// Namespace outside it.
    pub const CONTROL_NAMESPACE: &str = "kca-webhook-control";
}

/// Lab A (scale-down).
pub mod a {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use crate::evidence::Outcome;
    use crate::facts::a::{Act5Facts, Act6Facts, Act7Facts, StepStatus};
    use crate::facts::{self, Act2Facts, Act3Facts, PodObservation};

    /// Bound on the whole recovery timeline of act 6 (a trial took about 32 s to the first deny).
    pub const RECOVERY_BOUND: Duration = Duration::from_secs(180);

    /// Whether the six timeline steps are all confirmed and in order (each at or after the previous):
    /// replicas restored ≤ pod created ≤ Running ≤ Lease ≤ registration ≤ first explicit deny.
    pub fn timeline_in_order(f: &Act6Facts) -> bool {
        let steps = [
            &f.replicas_restored,
            &f.pod_created,
            &f.pod_running,
            &f.lease_acquired,
            &f.webhook_registered,
            &f.first_explicit_deny,
        ];
        let mut prev = None;
        for s in steps {
            if s.status != StepStatus::Confirmed {
                return false;
            }
            let Some(t) = s.at.as_deref().and_then(facts::parse_rfc3339) else {
                return false;
            };
            if prev.is_some_and(|p| t < p) {
                return false;
            }
            prev = Some(t);
        }
        true
    }

    /// What the evidence supports for each word of lab A's `report.json` (pure).
    ///
    /// - `scale_down`: `registration-absent` when act 5 found no webhook for the policy, else
    ///   `registration-kept`.
    /// - `policy`: `present` when act 5's GET found the policy with act 2's UID, else `absent`.
    /// - `request`: `admitted-without-webhook` when the registration was absent and act 5's violating
    ///   request was `stored`; `rejected-webhook-unreachable` when it was kept and the request failed
    ///   calling the webhook; otherwise the request's outcome.
    /// - `recovery`: `lease-then-registration-then-deny` when all six act-6 steps are confirmed and in
    ///   order ([`timeline_in_order`]), else `not-confirmed`.
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
        let mut w = BTreeMap::new();
        w.insert(
            "scale_down",
            if f5.policy_webhook_present {
                "registration-kept"
            } else {
                "registration-absent"
            }
            .to_owned(),
        );
        let uid2 = f2.policy.pointer("/metadata/uid").and_then(|u| u.as_str());
        w.insert(
            "policy",
            if f5.policy.exists && f5.policy.uid.is_some() && f5.policy.uid.as_deref() == uid2 {
                "present"
            } else {
                "absent"
            }
            .to_owned(),
        );
        let request = match (f5.policy_webhook_present, f5.target_bad.outcome) {
            (false, Outcome::Stored) if f5.target_bad.get.uid.is_some() => {
                "admitted-without-webhook".to_owned()
            }
            (
                true,
                Outcome::ConnectionRefused
                | Outcome::NoEndpoints
                | Outcome::WebhookTimeout
                | Outcome::DnsError,
            ) => "rejected-webhook-unreachable".to_owned(),
            (_, o) => o.as_str().to_owned(),
        };
        w.insert("request", request);
        w.insert(
            "recovery",
            if timeline_in_order(f6) {
                "lease-then-registration-then-deny"
            } else {
                "not-confirmed"
            }
            .to_owned(),
        );
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
        w.insert(
            "dry_run",
            if dry {
                "validated-not-stored"
            } else {
                "not-shown"
            }
            .to_owned(),
        );
        let same = |p: Option<&PodObservation>| {
            p.is_some_and(|p| {
                p.exists
                    && p.uid.is_some()
                    && p.uid == f3.existing.uid
                    && p.phase.as_deref() == Some("Running")
            })
        };
        w.insert(
            "existing",
            if same(Some(&f5.existing)) && same(f6.existing.as_ref()) {
                "same-uid-running"
            } else {
                "not-same-uid-running"
            }
            .to_owned(),
        );
        w
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

    /// What the evidence supports for each conclusion of the report (lab B), as the word the report
    /// should hold, or a description of what the evidence shows instead.
    pub fn report_expectations(
        act3: &Act3Facts,
        act5: &Act5Facts,
        act6: &Act6Facts,
        act7: &Act7Facts,
    ) -> Vec<(&'static str, String)> {
        let outcome = |r: &RequestRecord| r.outcome.as_str().to_owned();
        let fail = if act5.target_good.outcome == Outcome::WebhookTimeout
            && act5.target_bad.outcome == Outcome::WebhookTimeout
        {
            "matching-requests-timeout".to_owned()
        } else {
            format!(
                "target-good:{},target-bad:{}",
                outcome(&act5.target_good),
                outcome(&act5.target_bad)
            )
        };
        let ignore = if act6.run.target_bad.outcome == Outcome::Stored {
            "unvalidated-request-stored".to_owned()
        } else {
            format!("target-bad:{}", outcome(&act6.run.target_bad))
        };
        let healthy_ignore = outcome(&act6.healthy_bad);
        let control = if act5.control.outcome == Outcome::Stored {
            "outside-selector".to_owned()
        } else {
            format!("control:{}", outcome(&act5.control))
        };
        let same = act7.existing.exists
            && act7.existing.uid.is_some()
            && act7.existing.uid == act3.existing.uid
            && act7.existing.phase.as_deref() == Some("Running");
        let existing = if same {
            "same-uid-running".to_owned()
        } else {
            format!(
                "uid:{},phase:{}",
                act7.existing.uid.as_deref().unwrap_or("none"),
                act7.existing.phase.as_deref().unwrap_or("none")
            )
        };
        vec![
            ("fail", fail),
            ("ignore", ignore),
            ("healthy_ignore", healthy_ignore),
            ("control", control),
            ("existing", existing),
        ]
    }
}
