//! The documented boundary of what the graders promise: the few `facts` fields no grader rule
//! holds, each with the sentence that says why it cannot contradict anything.
//!
//! Every other leaf of every act's `facts` is held by some rule: the mutation test
//! (`lab/tests/grade_mutation.rs`) changes each leaf of each recorded run and generated passing
//! fixture one at a time (a number scaled or shifted, a string swapped for a sibling value or
//! emptied, a timestamp moved 40 s, a boolean flipped, a list item dropped) and requires the
//! act's grader to flag the mutant unless its path matches an entry here. Keep this list short:
//! an entry is a promise *not* made.
//!
//! Paths are `facts.`-rooted, object keys joined by `.`, array items written `[]`; in a pattern
//! `*` is one segment and `**` any number (zero or more) of segments.
//!
//! The mutation test mutates the leaves of each act's `raw[]` records too (issue 35). A raw
//! leaf's path is rooted at its record and the record's kind, its `what` up to any `:`
//! (`raw[lease-after].data.spec.holderIdentity`, `raw[request].data.http_status`); raw records
//! of every kind share the shape `{at, what, data}`, so the kind is what tells one path from
//! another. [`UNREAD_RAW`] is the second, separate list: the parts of raw records that no rule
//! reads, because nothing the lab observes is derived from them. The same field of a request
//! record's raw copy (`raw[request].data` is the facts record verbatim) is covered by the
//! `**`-rooted entries of [`UNHELD`].

/// One field the graders do not hold, and why it cannot contradict anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unheld {
    /// The path pattern ([module docs](self)).
    pub path: &'static str,
    /// Why no observation can contradict it (one sentence).
    pub why: &'static str,
}

/// The fields no grader rule holds.
pub const UNHELD: &[Unheld] = &[
    Unheld {
        path: "**.raw_response.spec.**",
        why: "the API's echo of the pod spec the tool sent (image, ports, defaults); the lab's policy and every rule decide on the labels and namespace only",
    },
    Unheld {
        path: "**.raw_response.status.*.**",
        why: "the status of a pod just created (phase Pending, qosClass) as echoed in the create answer; the follow-up GET is the observation of the pod, and this echo is older than it",
    },
    Unheld {
        path: "**.raw_response.metadata.creationTimestamp",
        why: "stamped by the API server's clock at one-second resolution, which is not the tool's clock on every backend (kubeconfig), so held against sent_at/answered_at it would flag an honest cluster with a skewed clock; the GET and the answer's uid are the observation",
    },
    Unheld {
        path: "**.raw_response.metadata.resourceVersion",
        why: "an opaque version string clients must not interpret (Kubernetes API conventions): only compared for equality (server::one_resource_version_one_object: two reads of an object at one resourceVersion show one content), so a value no other read shares cannot contradict anything",
    },
    Unheld {
        path: "policy.metadata.resourceVersion",
        why: "an opaque version string clients must not interpret (Kubernetes API conventions): only compared for equality (server::one_resource_version_one_object: two reads of an object at one resourceVersion show one content), so a value no other read shares cannot contradict anything",
    },
    Unheld {
        path: "policy.metadata.generation",
        why: "the stored policy's spec generation, Kyverno's and the API server's bookkeeping; the spec itself is held against the input",
    },
    Unheld {
        path: "policy.metadata.creationTimestamp",
        why: "stamped by the API server's clock, not the tool's on every backend; the policy's identity is its uid, which is held across acts",
    },
    Unheld {
        path: "*.watchdog_pid",
        why: "the PID of the tool's own watchdog process, the tool's plumbing (it is addressed through a pidfd), not an observation of the cluster",
    },
    Unheld {
        path: "watcher.fault_dir",
        why: "the directory of the tool's own fault ledger on this machine, a pointer for heal, not an observation of the cluster",
    },
    Unheld {
        path: "policy.status.**",
        why: "Kyverno's readiness conditions of the stored policy, written by its controller after the fact; the act observes the registration itself instead",
    },
    Unheld {
        path: "policy.metadata.managedFields.**",
        why: "the API server's field-ownership bookkeeping of the stored policy; no rule of admission reads it",
    },
    Unheld {
        path: "registration_snapshot.clientConfig.caBundle",
        why: "the CA bundle the API server verifies the webhook's certificate with, which Kyverno rotates; a wrong one shows only as failed calls, and those are the requests' own records",
    },
    Unheld {
        path: "registration_snapshot.admissionReviewVersions.**",
        why: "the AdmissionReview versions the API server may send; no observation records which one it sent",
    },
    Unheld {
        path: "webhook_configurations.**",
        why: "the raw list lab A act 5 read; the act's claim from it (whether the policy's webhook is listed, and then that entry) is held, while the other entries are other Kyverno components' webhooks (cleanup, TTL) that no request of the lab calls",
    },
    Unheld {
        path: "*.source",
        why: "the text saying what was read (the audit log's path, `GET /metrics` with the act's credential), a description rather than an observation",
    },
    Unheld {
        path: "admission_audit.log",
        why: "the audit log's path on the node, a pointer to where the lines came from; the lines themselves are held",
    },
    Unheld {
        path: "admission_audit.offset",
        why: "the log's byte size when the act began, where reading started; the API server rotates the log (--audit-log-maxsize), and no observation records a rotation, so two acts' offsets are not ordered",
    },
    Unheld {
        path: "*.get.phase",
        why: "the phase of a pod the follow-up GET found just after its create (Pending, or Running on a fast node): the kubelet's progress, which admission does not decide; the GET's existence and UID are the observation, and a phase without them is held",
    },
    Unheld {
        path: "*.restart_count",
        why: "the container restart count of a pod the lab only reads (act 3's pod, act 5's admitted pod, the new controller pod): the kubelet's count, which admission never changes; a count lower than an earlier read of the same pod UID, in any act, is held (value-mismatch, server::restart_count_never_falls_for_one_pod), a higher one is a restart the lab allows",
    },
    Unheld {
        path: "identity.pid_start_time_ticks",
        why: "the process's start time in clock ticks after boot (/proc/<pid>/stat field 22), read once in act 4 to pin the process with its PID; act 4 has no second reading of it (the CRI record gives wall-clock times), and acts 5 and 6 hold it against theirs (identity-changed)",
    },
    Unheld {
        path: "leader.identity.pid_start_time_ticks",
        why: "lab C act 4: the leader's start time in clock ticks after boot, read once to pin the process with its PID (as lab B's act 4); act 4 has no second reading of it, and act 5 holds it against the process it froze (identity-changed)",
    },
    Unheld {
        path: "followers[].identity.pid_start_time_ticks",
        why: "lab C act 4: a follower's start time in clock ticks after boot, read once to pin the process with its PID; act 4 has no second reading of it, and act 6 holds it against the follower it froze (identity-changed)",
    },
    Unheld {
        path: "target_after.identity_after.pid_start_time_ticks",
        why: "lab C acts 5 and 6: the start time in clock ticks of the frozen replica's new process after a restart, read once after the settle (CRI gives no ticks to compare); without a restart the same container must be the same process (restart-contradicted), and act 6 holds act 5's when it freezes that replica (identity-changed)",
    },
    Unheld {
        path: "replicas[].pod.restart_count",
        why: "lab C act 7: the restart count of the replica the scale back kept, a pod the lab only reads: the kubelet's count, which the scale back does not change; the former leader's restart in act 5 is act 5's observation (restart-contradicted there)",
    },
    Unheld {
        path: "scale.fault_id",
        why: "lab C act 3: the name of the tool's own fault attempt directory on this machine, a pointer for heal, not an observation of the cluster",
    },
    Unheld {
        path: "admission_audit.waited_ms",
        why: "how long the tool polled the log for final events, a bound of the tool that observes nothing of the cluster",
    },
];

/// The parts of the acts' raw records no rule reads ([module docs](self)): `raw[<kind>]`-rooted
/// path patterns, each with the sentence that says why nothing the lab observes is derived from
/// it. Kept short by patterns; an entry is a promise *not* made, as in [`UNHELD`].
pub const UNREAD_RAW: &[Unheld] = &[
    Unheld {
        path: "**.metadata.managedFields.**",
        why: "the API server's field-ownership bookkeeping of an object (which manager set which field, and when); no rule reads it and no fact is derived from it",
    },
    Unheld {
        path: "**.metadata.resourceVersion",
        why: "an opaque version string clients must not interpret (Kubernetes API conventions): only compared for equality (server::one_resource_version_one_object: two reads of an object at one resourceVersion show one content), so a value no other read shares cannot contradict anything",
    },
    Unheld {
        path: "**.metadata.generation",
        why: "the API server's count of an object's spec changes, its own bookkeeping; the spec fields the lab reads are held where they are read",
    },
    Unheld {
        path: "**.metadata.creationTimestamp",
        why: "stamped by the API server's clock at one-second resolution, which is not the tool's clock on every backend (as the facts' raw_response.metadata.creationTimestamp); no rule reads it, the object's UID is its identity",
    },
    Unheld {
        path: "**.metadata.ownerReferences.**",
        why: "the owner chain (ReplicaSet, Deployment) the API server keeps for garbage collection; the lab names a pod by its name, UID and labels, none of which is derived from it",
    },
];

/// Whether the normalized path `path` (`facts.`- or `raw[<kind>]`-rooted) matches the pattern
/// `pattern` ([module docs](self)). Pure.
pub fn matches(pattern: &str, path: &str) -> bool {
    fn go(p: &[String], s: &[String]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((seg, rest)) if seg == "**" => (0..=s.len()).any(|k| go(rest, &s[k..])),
            Some((seg, rest)) => {
                s.first().is_some_and(|x| seg == "*" || x == seg) && go(rest, &s[1..])
            }
        }
    }
    go(&segments(pattern), &segments(path))
}

/// The segments of a normalized path after its `facts.` root, array items as `[]` segments.
fn segments(path: &str) -> Vec<String> {
    let path = path.strip_prefix("facts.").unwrap_or(path);
    let segments = path.replace("[]", ".[]");
    let segments = segments.split('.').filter(|s| !s.is_empty());
    segments.map(str::to_owned).collect()
}

/// The first entry of [`UNHELD`] that `path` matches.
pub fn unheld(path: &str) -> Option<&'static Unheld> {
    UNHELD.iter().find(|u| matches(u.path, path))
}

/// The entry that allows the raw leaf `path` (`raw[<kind>]`-rooted) to change unflagged: the
/// first entry of [`UNREAD_RAW`] it matches, else the first `**`-rooted entry of [`UNHELD`] (the
/// same field in a request record's raw copy).
pub fn unread_raw(path: &str) -> Option<&'static Unheld> {
    let raw_copies = UNHELD.iter().filter(|u| u.path.starts_with("**."));
    let mut entries = UNREAD_RAW.iter().chain(raw_copies);
    entries.find(|u| matches(u.path, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `<pattern> <path>` pairs that match: raw paths are rooted at the record's kind.
    const MATCH: &[&str] = &[
        "**.raw_response.spec.** facts.deny_probes[].raw_response.spec.containers[].image",
        "**.raw_response.status.*.** facts.good.raw_response.status.phase",
        "policy.status.** facts.policy.status.conditions[].type",
        "*.uid facts.existing.uid",
        "**.managedFields.** raw[freeze-samples].data[].lease.metadata.managedFields[].time",
        "raw[healer-report].** raw[healer-report].data.pid",
    ];

    /// `<pattern> <path>` pairs that do not: a refusal's `status: Failure` is held
    /// (raw-mismatch), not covered.
    const NO_MATCH: &[&str] = &[
        "**.raw_response.status.*.** facts.bad.raw_response.status",
        "policy.status.** facts.policy.spec.failurePolicy",
        "raw[healer-report].** raw[lease-after].data.pid",
        "*.uid facts.existing.get.uid",
    ];

    #[test]
    fn patterns_match_by_segment_and_every_entry_says_why() {
        for (cases, expected) in [(MATCH, true), (NO_MATCH, false)] {
            for case in cases {
                let (pattern, path) = case.split_once(' ').unwrap();
                assert_eq!(matches(pattern, path), expected, "{case}");
            }
        }
        // A request record's raw copy meets the `**` entries.
        let image = unread_raw("raw[request].data.raw_response.spec.containers[].image");
        assert_eq!(image.map(|u| u.path), Some("**.raw_response.spec.**"));
        assert!(unread_raw("raw[request].data.http_status").is_none());
        // Every entry says why in a sentence.
        for u in UNHELD.iter().chain(UNREAD_RAW) {
            assert!(u.why.len() > 40 && !u.why.ends_with('.'), "{u:?}");
        }
    }
}
