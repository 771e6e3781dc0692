//! Lab C's rows of the drift table: what the three-replica lab teaches, each a pure function of
//! one run's evidence. The acts' facts are read back into lab-core's own types
//! ([`lab::facts::c`]) and counted with the lab's own rules ([`lab::rules::c`]: `freeze_counts`,
//! `takeover`, `restarted`, `report_expectations`), so a row says what the lab's report words and
//! graders say.
//!
//! Most of them are counts that move from run to run (how many requests met the frozen replica
//! depends on which endpoint the API server picked for each call) and, from Kubernetes v1.37, from
//! version to version (`WebhookRoundTripLoadBalancing`, docs/lab-c.md): such a row carries its
//! figure ([`Observed::figure`]) so the table can show its spread over a cell's runs, and is
//! compared by the word the lab's report would use (`none-…`, `some-…`, `all-…`), never stated.
//! The stated ones are what docs/labs.md fixes for every run: a request that meets the frozen
//! leader times out and is not stored, the others are denied; the registration is kept; act 7
//! ends with an explicit deny and act 3's pod the same UID, Running.

use lab::evidence::{Outcome, RequestRecord};
use lab::facts::c::{Act3Facts, Act5Facts, Act6Facts, Act7Facts, ReplicaFreezeRun};

use super::facts::{Compare, Evidence, Fact, Figure, Observed};

/// Act `act`'s `facts`, read back into `T`; the error says which act and why.
fn typed<T: serde::de::DeserializeOwned>(ev: &Evidence, act: u8) -> Result<T, Observed> {
    let v = ev
        .get(&act)
        .map(|e| e["facts"].clone())
        .ok_or_else(|| Observed::not_seen(format!("no evidence of act {act}")))?;
    serde_json::from_value(v)
        .map_err(|e| Observed::not_seen(format!("act {act}'s facts do not read as lab C's: {e}")))
}

/// The report word the lab's own rule gives `field` (`rules::c::report_expectations`), when acts
/// 3, 5, 6 and 7 are all there.
fn report_word(ev: &Evidence, field: &str) -> Option<String> {
    let a3: Act3Facts = typed(ev, 3).ok()?;
    let a5: Act5Facts = typed(ev, 5).ok()?;
    let a6: Act6Facts = typed(ev, 6).ok()?;
    let a7: Act7Facts = typed(ev, 7).ok()?;
    lab::rules::c::report_expectations(&a3, &a5, &a6, &a7)
        .into_iter()
        .find(|(f, _)| *f == field)
        .map(|(_, w)| w)
}

/// `none`, `some` or `all` of `n` (the quantifier of the lab's report words).
fn quantifier(k: usize, n: usize) -> &'static str {
    if k == 0 {
        "none"
    } else if k == n {
        "all"
    } else {
        "some"
    }
}

/// A freeze's violating requests: the word (the lab's quantifier and `what`), `k of n` as the
/// figure, and the counts by outcome (with what the GET by name found for the ones that met the
/// frozen replica).
fn freeze_row(run: &ReplicaFreezeRun, met: Outcome, what: &str) -> Observed {
    let (k, denied, other) = lab::rules::c::freeze_counts(run, met);
    let n = run.bad.len();
    if n == 0 {
        return Observed::not_seen("no violating request recorded");
    }
    let met_found = run
        .bad
        .iter()
        .filter(|r| r.outcome == met && r.get.exists)
        .count();
    let word = if other > 0 {
        format!("{}:{k},explicit-deny:{denied},other:{other}", met.as_str())
    } else {
        format!("{}-{what}", quantifier(k, n))
    };
    let mut o = Observed::seen(
        word,
        format!(
            "{k} of {n} {} (GET found {met_found} of them), {denied} explicit-deny, {other} other; {} waves of {}",
            met.as_str(),
            run.waves,
            run.wave_size
        ),
    );
    o.figure = Some(Figure {
        n: k as i64,
        of: Some(n as i64),
    });
    o
}

/// Act 5: of the violating requests sent during the leader's freeze (Fail), how many timed out
/// (met the frozen leader).
fn c_leader_freeze_timeouts(ev: &Evidence) -> Observed {
    match typed::<Act5Facts>(ev, 5) {
        Ok(a5) => freeze_row(&a5, Outcome::WebhookTimeout, "matching-requests-timeout"),
        Err(o) => o,
    }
}

/// Act 5: every violating request either timed out and was not stored (it met the frozen
/// leader) or was denied (a running replica answered); anything else is named.
fn c_leader_freeze_outcomes(ev: &Evidence) -> Observed {
    let a5: Act5Facts = match typed(ev, 5) {
        Ok(a) => a,
        Err(o) => return o,
    };
    if a5.bad.is_empty() {
        return Observed::not_seen("act 5 recorded no violating request");
    }
    let odd: Vec<&RequestRecord> = a5
        .bad
        .iter()
        .filter(|r| {
            !(r.outcome == Outcome::ExplicitDeny
                || (r.outcome == Outcome::WebhookTimeout && !r.get.exists))
        })
        .collect();
    if odd.is_empty() {
        Observed::seen(
            "webhook-timeout (GET: not found) or explicit-deny",
            format!("all {} violating requests", a5.bad.len()),
        )
    } else {
        let mut words: Vec<String> = odd
            .iter()
            .map(|r| format!("{} (GET: {})", r.outcome.as_str(), r.get.exists))
            .collect();
        words.sort();
        words.dedup();
        Observed::seen(
            format!("also: {}", words.join(", ")),
            format!("{} of {} requests", odd.len(), a5.bad.len()),
        )
    }
}

/// Act 5: whether the frozen leader stayed a ready endpoint of `kyverno-svc` in every read of the
/// freeze.
fn c_leader_freeze_endpoint(ev: &Evidence) -> Observed {
    let a5: Act5Facts = match typed(ev, 5) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let reads: Vec<bool> = a5
        .endpoint_samples
        .iter()
        .filter(|s| s.error.is_none())
        .map(|s| {
            s.endpoints
                .iter()
                .any(|e| e.pod.as_deref() == Some(a5.target_pod.as_str()) && e.ready)
        })
        .collect();
    if reads.is_empty() {
        return Observed::not_seen("act 5 recorded no EndpointSlice read");
    }
    let ready = reads.iter().filter(|r| **r).count();
    let word = match quantifier(ready, reads.len()) {
        "all" => "ready endpoint in every read",
        "none" => "not a ready endpoint",
        _ => "ready in some reads",
    };
    Observed::seen(word, format!("{ready} of {} reads", reads.len()))
}

/// Act 5: the Lease during the leader's freeze (the lab's `lease` word).
fn c_lease_leader_freeze(ev: &Evidence) -> Observed {
    match report_word(ev, "lease") {
        Some(w) => {
            let detail = typed::<Act5Facts>(ev, 5)
                .ok()
                .and_then(|a5| {
                    lab::rules::c::takeover(&a5)
                        .map(|(h, at)| format!("{h} read as holder at {at}"))
                })
                .unwrap_or_else(|| "no other holder read during the freeze".into());
            Observed::seen(w, detail)
        }
        None => Observed::not_seen("acts 3, 5, 6 and 7 are needed for the lab's word"),
    }
}

/// Act 5: milliseconds from the SIGSTOP to the first read naming another Lease holder.
fn c_lease_takeover_ms(ev: &Evidence) -> Observed {
    let a5: Act5Facts = match typed(ev, 5) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let Some((holder, at)) = lab::rules::c::takeover(&a5) else {
        return Observed::not_seen("no takeover read during the freeze");
    };
    let (Some(t), Some(f)) = (
        lab::facts::parse_rfc3339(at),
        lab::facts::parse_rfc3339(&a5.freeze.frozen_at),
    ) else {
        return Observed::not_seen("unreadable timestamps");
    };
    let ms = (t - f).num_milliseconds();
    let mut o = Observed::seen(
        ms.to_string(),
        format!(
            "{:.1} s after the SIGSTOP, new holder {holder}",
            ms as f64 / 1000.0
        ),
    );
    o.figure = Some(Figure { n: ms, of: None });
    o
}

/// Act 5: what the former leader did after the resume (the lab's `former_leader` word), with its
/// restart count and pod UID.
fn c_former_leader(ev: &Evidence) -> Observed {
    let a5: Act5Facts = match typed(ev, 5) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let t = &a5.target_after;
    let word = if lab::rules::c::restarted(&a5) {
        "restarted"
    } else if t.pod_uid_after.as_deref() == Some(t.pod_uid_before.as_str()) {
        "kept-running"
    } else {
        "pod replaced or gone"
    };
    Observed::seen(
        word,
        format!(
            "restart count {}→{}, {} pod UID, Ready {}",
            t.restart_count_before,
            t.restart_count_after,
            if t.pod_uid_after.as_deref() == Some(t.pod_uid_before.as_str()) {
                "same"
            } else {
                "another"
            },
            t.ready_after
        ),
    )
}

/// Act 6: of the violating requests sent during a follower's freeze under Ignore, how many were
/// stored unvalidated (met the frozen follower, failed open after the timeout).
fn c_follower_freeze_stored(ev: &Evidence) -> Observed {
    match typed::<Act6Facts>(ev, 6) {
        Ok(a6) => freeze_row(&a6.run, Outcome::Stored, "unvalidated-stored"),
        Err(o) => o,
    }
}

/// One act's calls per replica from each replica's own admission counter
/// (`kyverno_admission_requests_total`), frozen replica marked: `(replicas that served ≥ 1,
/// replicas read, text)`. A counter that went down (the container restarted) served an unknown
/// number.
fn shares(run: &[lab::facts::c::ReplicaRequests], frozen: Option<&str>) -> (usize, usize, String) {
    let mut served = 0;
    let mut read = 0;
    let mut parts = Vec::new();
    for r in run {
        let tag = if Some(r.pod.as_str()) == frozen {
            " (frozen)"
        } else {
            ""
        };
        let short = r.pod.rsplit('-').next().unwrap_or(&r.pod);
        match (r.before, r.after) {
            (Some(b), Some(a)) if a >= b => {
                read += 1;
                if a > b {
                    served += 1;
                }
                parts.push(format!("{short}{tag} {}", a - b));
            }
            (Some(_), Some(_)) => parts.push(format!("{short}{tag} ? (counter restarted)")),
            _ => parts.push(format!("{short}{tag} ? (not read)")),
        }
    }
    (served, read, parts.join(", "))
}

/// Acts 3, 5 and 6: each replica's share of the calls (its own admission counter); the value is
/// how many of the replicas read served any call in each act (act 5 without the frozen leader,
/// whose counter restarts with it).
fn c_replica_share(ev: &Evidence) -> Observed {
    let a3: Act3Facts = match typed(ev, 3) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let a5: Act5Facts = match typed(ev, 5) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let a6: Act6Facts = match typed(ev, 6) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let mut value = Vec::new();
    let mut detail = Vec::new();
    for (act, rows, frozen) in [
        (3u8, &a3.replica_requests, None),
        (5, &a5.replica_requests, Some(a5.target_pod.as_str())),
        (
            6,
            &a6.run.replica_requests,
            Some(a6.run.target_pod.as_str()),
        ),
    ] {
        let (served, read, text) = shares(rows, frozen);
        value.push(format!("act {act}: {served} of {read} served"));
        detail.push(format!("act {act}: {text}"));
    }
    Observed::seen(value.join(" · "), detail.join("; "))
}

/// The registration during both freezes (the lab's `registration` word, `kept` in docs/labs.md).
fn c_registration(ev: &Evidence) -> Observed {
    match report_word(ev, "registration") {
        Some(w) => Observed::seen(w, "read during act 5's and act 6's freeze"),
        None => Observed::not_seen("acts 3, 5, 6 and 7 are needed for the lab's word"),
    }
}

/// Act 7: the scale back to the original count: the first explicit deny and act 3's pod (the
/// lab's `existing` word), the replicas left and how long the wait took.
fn c_scale_back(ev: &Evidence) -> Observed {
    let Some(existing) = report_word(ev, "existing") else {
        return Observed::not_seen("acts 3, 5, 6 and 7 are needed for the lab's word");
    };
    let a7: Act7Facts = match typed(ev, 7) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let holder = a7.lease.holder.as_deref().unwrap_or("none");
    let mut o = Observed::seen(
        format!(
            "{} replica(s), {}, existing {existing}",
            a7.scale_back.replicas,
            a7.healthy_bad.outcome.as_str()
        ),
        format!(
            "waited {:.1} s; Lease holder {}; {} deny probe(s)",
            a7.waited_ms as f64 / 1000.0,
            holder.rsplit('-').next().unwrap_or(holder),
            a7.deny_probes.len()
        ),
    );
    o.figure = Some(Figure {
        n: a7.waited_ms as i64,
        of: None,
    });
    o
}

/// Lab C's rows, in the acts' order.
pub const FACTS_C: &[Fact] = &[
    Fact {
        id: "c.leader-freeze.timeouts",
        lab: "c",
        title: "Leader frozen (Fail): violating requests that timed out (met the frozen leader) of those sent",
        stated: false,
        compare: Compare::Exact,
        observe: c_leader_freeze_timeouts,
    },
    Fact {
        id: "c.leader-freeze.outcomes",
        lab: "c",
        title: "Leader frozen (Fail): each violating request timed out (not stored) or was denied",
        stated: true,
        compare: Compare::Exact,
        observe: c_leader_freeze_outcomes,
    },
    Fact {
        id: "c.leader-freeze.endpoint",
        lab: "c",
        title: "Leader frozen: still a ready endpoint of kyverno-svc",
        stated: false,
        compare: Compare::Exact,
        observe: c_leader_freeze_endpoint,
    },
    Fact {
        id: "c.lease.leader-freeze",
        lab: "c",
        title: "The Lease during the leader's 20 s freeze",
        stated: false,
        compare: Compare::Exact,
        observe: c_lease_leader_freeze,
    },
    Fact {
        id: "c.lease.takeover-ms",
        lab: "c",
        title: "SIGSTOP → first read of another Lease holder (ms)",
        stated: false,
        compare: Compare::Millis,
        observe: c_lease_takeover_ms,
    },
    Fact {
        id: "c.former-leader",
        lab: "c",
        title: "The former leader after the resume",
        stated: false,
        compare: Compare::Exact,
        observe: c_former_leader,
    },
    Fact {
        id: "c.follower-freeze.stored",
        lab: "c",
        title: "Follower frozen (Ignore): violating requests stored unvalidated of those sent",
        stated: false,
        compare: Compare::Exact,
        observe: c_follower_freeze_stored,
    },
    Fact {
        id: "c.replica-share",
        lab: "c",
        title: "Each replica's share of the calls (its own admission counter)",
        stated: false,
        compare: Compare::Exact,
        observe: c_replica_share,
    },
    Fact {
        id: "c.registration",
        lab: "c",
        title: "The policy's registration during both freezes",
        stated: true,
        compare: Compare::Exact,
        observe: c_registration,
    },
    Fact {
        id: "c.scale-back",
        lab: "c",
        title: "Act 7: scaled back, explicit deny, act 3's pod",
        stated: true,
        compare: Compare::Exact,
        observe: c_scale_back,
    },
];
