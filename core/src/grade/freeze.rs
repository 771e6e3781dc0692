//! The freeze rules, written once for N replicas: lab B freezes its one controller process
//! (`facts::b::FreezeRun`), lab C one of three replicas, the leader or a follower
//! (`facts::c::ReplicaFreezeRun`); acts 5 (failurePolicy Fail) and 6 (Ignore) of both. Each
//! lab's run gives one view, [`Freeze`], and each rule here is a function over it named after
//! what it holds; [`freeze_rules`] runs them all. What only one lab records (lab B's three
//! single requests during the freeze, lab C's waves, samples, Leases and replica counters) stays
//! in `grade/b.rs` and `grade/c.rs`; each pod either sends into the target namespace is held by
//! the one rule [`target_pod`].
//!
//! Also here, the same in labs B and C: act 6's switch of the policy to Ignore before its freeze
//! ([`policy_switched_to_ignore`]) and act 7's recovery under it ([`recovered_under_ignore`]).

use serde_json::Value;

use super::{Code, Code::*, G, Meant, bounds, ev_name};
use crate::evidence::{Evidence, Lab, Outcome, RequestRecord};
use crate::facts::b::{FreezeRun, FreezeWindow, ProcessIdentity, Resumer};
use crate::facts::c::ReplicaFreezeRun;
use crate::facts::{self, WebhookFacts};
use crate::inputs::{self, Context, InputFile};

/// One freeze of one replica as labs B and C record it, borrowed from the lab's facts.
pub(crate) struct Freeze<'a> {
    /// The act (5: failurePolicy Fail, frozen for the planned 20 s; 6: Ignore).
    pub act: u8,
    /// The act's facts as a finding's subject (`evidence/05.json facts`).
    pub s: String,
    /// failurePolicy Ignore (act 6, the act that switches the policy: a request that meets the
    /// frozen replica is stored after the timeout) instead of Fail (it times out).
    pub ignore: bool,
    /// What a request that meets the frozen replica records: a `webhook-timeout` under Fail,
    /// `stored` (after the timeout) under Ignore.
    pub met: Outcome,
    /// The registration the act relies on (act 2's for act 5, act 6's own for act 6).
    pub hook: Option<&'a WebhookFacts>,
    /// The freeze window.
    pub freeze: &'a FreezeWindow,
    /// Whether the policy's webhook was registered during the freeze (observed).
    pub registration_present_during_freeze: bool,
    /// The webhook entry read during the freeze, verbatim (null if absent).
    pub registration_snapshot: &'a Value,
    /// When that read was answered, RFC 3339 UTC (ms).
    pub registration_checked_at: &'a str,
    /// `timeoutSeconds` of the registered webhook at the time (seconds).
    pub timeout_seconds: u32,
    /// Violating requests sent after the resume, in order, until the first explicit deny.
    pub after_resume: &'a [RequestRecord],
    /// The first `explicit-deny` after the resume (the last of `after_resume`).
    pub first_explicit_deny: Option<&'a RequestRecord>,
    /// `first_explicit_deny.answered_at - freeze.resumed_at`, milliseconds.
    pub first_deny_after_resume_ms: Option<u64>,
    /// The facts' path of the frozen replica's restart counts and container after the resume
    /// (`""` in lab B, `target_after.` in lab C).
    pub restart_at: &'static str,
    /// The restart count before the freeze and after the resume.
    pub restart_counts: (u32, u32),
    /// The container (its main process) after the resume, if CRI answered.
    pub identity_after: Option<&'a ProcessIdentity>,
    /// The code of the same container found with another process: lab B's
    /// [`Code::IdentityChanged`] (the process it froze), lab C's [`Code::RestartContradicted`]
    /// (the restart its report words read), as each lab's evidence has always been graded.
    pub same_container_other_process: Code,
    /// Whether the act always kept the fault ledger (raw `fault-ledger-resumed`): lab C's acts
    /// did; lab B's generated fixture has no raw records.
    pub ledger_kept: bool,
}

/// A [`Freeze`] of `$run`, a lab's freeze run: the fields lab B's `FreezeRun` and lab C's
/// `ReplicaFreezeRun` share (same names, same types), then the lab's own restart and ledger
/// fields (`{ field: value, … }`).
macro_rules! freeze_view {
    ($lab:expr, $act:expr, $run:expr, $hook:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        let ignore = crate::acts::switches_policy($lab, $act);
        Freeze {
            act: $act,
            s: format!("{} facts", ev_name($act)),
            ignore,
            met: if ignore { Outcome::Stored } else { Outcome::WebhookTimeout },
            hook: $hook,
            freeze: &$run.freeze,
            registration_present_during_freeze: $run.registration_present_during_freeze,
            registration_snapshot: &$run.registration_snapshot,
            registration_checked_at: &$run.registration_checked_at,
            timeout_seconds: $run.timeout_seconds,
            after_resume: &$run.after_resume,
            first_explicit_deny: $run.first_explicit_deny.as_ref(),
            first_deny_after_resume_ms: $run.first_deny_after_resume_ms,
            $($field: $value),*
        }
    }};
}

impl<'a> Freeze<'a> {
    /// Lab B's one-replica freeze of act `act`.
    pub(crate) fn of_b(act: u8, run: &'a FreezeRun, hook: Option<&'a WebhookFacts>) -> Self {
        freeze_view!(Lab::B, act, run, hook, {
            restart_at: "",
            restart_counts: (run.restart_count_before, run.restart_count_after),
            identity_after: run.identity_after.as_ref(),
            same_container_other_process: IdentityChanged,
            ledger_kept: false,
        })
    }

    /// Lab C's freeze of one of its replicas in act `act`.
    pub(crate) fn of_c(act: u8, run: &'a ReplicaFreezeRun, hook: Option<&'a WebhookFacts>) -> Self {
        let t = &run.target_after;
        freeze_view!(Lab::C, act, run, hook, {
            restart_at: "target_after.",
            restart_counts: (t.restart_count_before, t.restart_count_after),
            identity_after: t.identity_after.as_ref(),
            same_container_other_process: RestartContradicted,
            ledger_kept: true,
        })
    }
}

/// Act 5 (failurePolicy Fail, relying on act 2's registration) or act 6 (the policy switched to
/// Ignore first, [`policy_switched_to_ignore`]) of labs B and C, one grader for the four: the
/// lab's freeze run `R` read from the act's facts, held by the lab's `rules` and every freeze's
/// ([`freeze_rules`]) through its [`Freeze`] view (`view`: [`Freeze::of_b`], [`Freeze::of_c`]).
pub(crate) fn freeze_act<R: serde::de::DeserializeOwned>(
    g: &mut G,
    view: for<'a> fn(u8, &'a R, Option<&'a WebhookFacts>) -> Freeze<'a>,
    rules: fn(&mut G, &Freeze<'_>, &R),
) {
    let act = g.act;
    if crate::acts::switches_policy(g.lab, act) {
        let Some(f) = g.facts::<facts::PolicySwitch<R>>(act) else {
            return;
        };
        let v = view(act, &f.run, Some(&f.webhook));
        policy_switched_to_ignore(g, &f, &v.freeze.frozen_at);
        rules(g, &v, &f.run);
        freeze_rules(g, &v);
    } else if let Some(run) = g.facts::<R>(act) {
        let hook = g.facts::<facts::Act2Facts>(2).map(|a2| a2.webhook);
        let v = view(act, &run, hook.as_ref());
        rules(g, &v, &run);
        freeze_rules(g, &v);
    }
}

/// Every rule of this module over one freeze (the rows "B 5, 6" and "C 5, 6" of the tables in
/// [`super`] and [`super::c`]).
fn freeze_rules(g: &mut G, v: &Freeze<'_>) {
    freeze_window_is_the_planned_one(g, v);
    process_stopped_only_during_freeze(g, v);
    if let Some(ev) = g.evidence(v.act) {
        freeze_window_is_the_ledger(g, v, &ev);
    }
    registration_during_freeze_is_the_recorded_one(g, v);
    requests_after_resume_end_in_the_first_deny(g, v);
    first_deny_after_resume_is_timed_from_the_resume(g, v);
    restart_count_agrees_with_the_container(g, v);
}

/// The freeze's times are ordered (armed ≤ frozen ≤ resumed), act 5 froze for the planned 20 s,
/// and the watchdog resumed at its deadline, `watchdog_armed_at + resume_after_sec`
/// ([`bounds::watchdog_window_ms`]): not before (a shorter freeze than planned), not after the
/// runner's grace. A resume by the runner itself only has the upper bound.
fn freeze_window_is_the_planned_one(g: &mut G, v: &Freeze<'_>) {
    let (s, w) = (&v.s, v.freeze);
    let (armed, frozen) = (w.watchdog_armed_at.as_str(), w.frozen_at.as_str());
    let rows = [
        ("freeze.watchdog_armed_at", armed, frozen),
        ("freeze.frozen_at", frozen, w.resumed_at.as_str()),
    ];
    super::times_are_ordered(g, s, rows);
    if v.act == 5 {
        let rows = [("freeze.resume_after_sec", &20u32, &w.resume_after_sec)];
        super::fields_are(g, ValueMismatch, s, rows);
    }
    if let Some(ms) = facts::ms_between(Some(&w.watchdog_armed_at), Some(&w.resumed_at)) {
        let (lo, hi) = bounds::watchdog_window_ms(w.resume_after_sec);
        let by_watchdog = w.resumed_by == Resumer::Watchdog;
        let lo = if by_watchdog { lo } else { i64::MIN };
        let (ok, sub) = (lo <= ms && ms <= hi, format!("{s}.freeze.resumed_at"));
        g.check(ok, TimesInconsistent, sub, || {
            let (after, by) = (w.resume_after_sec, &w.resumed_by);
            format!("resumed {ms} ms after the watchdog was armed; its {after} s deadline allows [{lo}, {hi}] ms (resumed by {by:?})")
        });
    }
}

/// The process state read during the freeze is the observation that the process was stopped
/// (`T` during, not `T` after): missing is a finding, not a pass.
fn process_stopped_only_during_freeze(g: &mut G, v: &Freeze<'_>) {
    let (s, w) = (&v.s, v.freeze);
    let sub = format!("{s}.freeze.state_during");
    match &w.state_during {
        Some(st) => g.expect_eq(ValueMismatch, sub, "T", st.as_str()),
        None => g.check(false, ObservationMissing, sub, || {
            "the process state was not read during the freeze".into()
        }),
    };
    let (after, sub) = (&w.state_after, format!("{s}.freeze.state_after"));
    process_runs(g, &sub, after, &format!("state after resume is {after:?}"));
}

/// A process read when it must run (`sub`; act 4's, a freeze's after the resume): its state
/// `state` is a `/proc` state ([`super::witness::process_state_is_a_proc_state`]) and not
/// stopped (`T`, flags process-still-stopped with `why`).
fn process_runs(g: &mut G, sub: &str, state: &str, why: &str) {
    g.check(state != "T", ProcessStillStopped, sub, || why.into());
    super::witness::process_state_is_a_proc_state(g, sub, state);
}

/// A process act 4 found (at `s`: lab B's one, each of lab C's) is live: a PID > 1, its start
/// time (`/proc/<pid>/stat`), a CRI container ID (value-mismatch each) and a pod UID
/// (uid-mismatch), and not stopped ([`process_runs`]).
pub(crate) fn investigated_process_runs(g: &mut G, s: &str, id: &ProcessIdentity, state: &str) {
    let (ticks, container) = (id.pid_start_time_ticks > 0, !id.container_id.is_empty());
    let stat = "the start time from /proc/<pid>/stat";
    let (cri, nothing) = ("the CRI container ID", String::from("nothing"));
    for (ok, field, expected, found) in [
        (id.pid > 1, "pid", "a PID > 1", id.pid.to_string()),
        (ticks, "pid_start_time_ticks", stat, "0".into()),
        (container, "container_id", cri, nothing),
    ] {
        g.check(ok, ValueMismatch, format!("{s}.identity.{field}"), || {
            format!("expected {expected}, found {found}")
        });
    }
    let (ok, sub) = (super::is_uid(&id.pod_uid), format!("{s}.identity.pod_uid"));
    g.check(ok, UidMismatch, sub, || {
        format!("expected a pod UID, found {:?}", id.pod_uid)
    });
    let why = "act 4 only investigates; the process was found stopped";
    process_runs(g, &format!("{s}.process_state"), state, why);
}

/// The freeze window is the fault ledger the runner kept after the resume (raw
/// `fault-ledger-resumed`, [`crate::evidence`]'s raw records): `frozen_at`, `resumed_at` and the
/// process state after the resume (the ledger's `state_after_resume`; `gone` when it has none)
/// are the ledger's. Flags raw-mismatch; without the record, observation-missing when the act
/// always kept it ([`Freeze::ledger_kept`]), else nothing.
fn freeze_window_is_the_ledger(g: &mut G, v: &Freeze<'_>, ev: &Evidence) {
    let subject = format!("{}.freeze", v.s);
    let ledger = if v.ledger_kept {
        super::witness::required_raw(g, ev, "fault-ledger-resumed", &subject)
    } else {
        super::witness::raw_record(ev, "fault-ledger-resumed")
    };
    let Some(l) = ledger else {
        return;
    };
    let text = |k: &str| l.get(k).and_then(|v| v.as_str());
    let (w, gone) = (v.freeze, Some(text("state_after_resume").unwrap_or("gone")));
    for (field, recorded, found) in [
        ("frozen_at", text("frozen_at"), w.frozen_at.as_str()),
        ("resumed_at", text("resumed_at"), w.resumed_at.as_str()),
        ("state_after", gone, w.state_after.as_str()),
    ] {
        let sub = format!("{subject}.{field}");
        g.check(recorded == Some(found), RawMismatch, sub, || {
            format!("the fault ledger kept after the resume says {recorded:?}, the facts {found:?}")
        });
    }
}

/// The registration read during the freeze is present, its claim agrees with the snapshot, its
/// scope guards the lab's pods, it is the one the earlier act recorded (act 2 for act 5, act 6's
/// own after the switch: [`snapshot_is_the_recorded_registration`]) with the act's failurePolicy,
/// `timeout_seconds` (T, never a constant) is the snapshot's and the recorded registration's, and
/// it was read inside the freeze.
fn registration_during_freeze_is_the_recorded_one(g: &mut G, v: &Freeze<'_>) {
    let (s, snap) = (&v.s, v.registration_snapshot);
    let present = v.registration_present_during_freeze;
    let sub = format!("{s}.registration_present_during_freeze");
    g.check(present, RegistrationMissing, sub, || {
        "the webhook registration must stay during a freeze".into()
    });
    let sub = format!("{s}.registration_snapshot");
    let ok = present != snap.is_null();
    g.check(ok, RegistrationClaimContradicted, &sub, || {
        let snapshot = super::abbreviate(snap);
        format!("present={present} but the snapshot is {snapshot}")
    });
    if !snap.is_null() {
        let field = |k: &str| snap.get(k).and_then(|x| x.as_str());
        let name = field("name").unwrap_or("");
        super::registration_scope(g, &sub, name, &super::Scope::of_raw(snap));
        if let Some(h) = v.hook {
            snapshot_is_the_recorded_registration(g, s, snap, h);
        }
        let policy = Some(if v.ignore { "Ignore" } else { "Fail" });
        let rows = [("failurePolicy", policy, field("failurePolicy"))];
        super::fields_are(g, ValueMismatch, &sub, rows);
        let (t, recorded) = (snapshot_timeout(snap), v.timeout_seconds);
        let sub = format!("{s}.timeout_seconds");
        let ok = t == Some(recorded);
        g.check(ok, RegistrationClaimContradicted, sub, || {
            format!("recorded {recorded}, the snapshot read during the freeze says {t:?}")
        });
    }
    if let Some(h) = v.hook {
        let rows = [("timeout_seconds", &h.timeout_seconds, &v.timeout_seconds)];
        super::fields_are(g, RegistrationChanged, s, rows);
    }
    let at = format!("{s}.registration_checked_at");
    g.times_ordered(&at, &v.freeze.frozen_at, v.registration_checked_at);
    g.times_ordered(&at, v.registration_checked_at, &v.freeze.resumed_at);
}

/// `timeoutSeconds` of a webhook entry read verbatim (a `u32`; else `None`).
fn snapshot_timeout(snap: &Value) -> Option<u32> {
    let t = snap.get("timeoutSeconds").and_then(Value::as_u64);
    t.and_then(|x| u32::try_from(x).ok())
}

/// The registration snapshot read during the freeze (raw, camelCase) is `h`, the registration
/// the earlier act recorded: the same name, failure policy, timeout, client config, selectors,
/// match conditions, rules, sideEffects and matchPolicy. Flags [`Code::RegistrationChanged`].
fn snapshot_is_the_recorded_registration(g: &mut G, s: &str, snap: &Value, h: &WebhookFacts) {
    let text = |k: &str| snap.get(k).and_then(Value::as_str);
    let (name, policy) = (text("name").unwrap_or(""), text("failurePolicy"));
    let effects = (Some(h.side_effects.as_str()), h.match_policy.as_deref());
    let same = (h.name.as_str(), h.failure_policy.as_str()) == (name, policy.unwrap_or(""))
        && Some(h.timeout_seconds) == snapshot_timeout(snap)
        && super::fact_service(h) == super::raw_service(snap)
        && super::Scope::of_facts(h) == super::Scope::of_raw(snap)
        && effects == (text("sideEffects"), text("matchPolicy"));
    let sub = format!("{s}.registration_snapshot");
    g.check(same, RegistrationChanged, sub, || {
        let (snap, h) = (snap, serde_json::to_value(h).unwrap_or_default());
        let (during, before) = (super::abbreviate(snap), super::abbreviate(&h));
        format!("during the freeze: {during}; recorded before: {before}")
    });
}

/// What a violating pod sent after the resume may meet while Kyverno recovers; the last,
/// `stored`, only under Ignore.
const AFTER_RESUME: [Outcome; 7] = [
    Outcome::ExplicitDeny,
    Outcome::WebhookTimeout,
    Outcome::ConnectionRefused,
    Outcome::NoEndpoints,
    Outcome::DnsError,
    Outcome::OtherError,
    Outcome::Stored,
];

/// After the resume the act sends violating pods until the first explicit deny: intermediate
/// outcomes while Kyverno recovers, each sent after the resume and naming the registration's
/// webhook; under Fail none is admitted (outcome-unexpected, whatever the metrics say); the last
/// one is the first explicit deny, itself a violating pod; none within the bound is
/// [`Code::NotConfirmed`].
fn requests_after_resume_end_in_the_first_deny(g: &mut G, v: &Freeze<'_>) {
    let s = &v.s;
    for (i, r) in v.after_resume.iter().enumerate() {
        let sub = format!("{s}.after_resume[{i}]");
        let expect = &AFTER_RESUME[..AFTER_RESUME.len() - usize::from(!v.ignore)];
        target_pod(g, &sub, r, false, expect, v.hook, None);
        g.times_ordered(&format!("{sub}.sent_at"), &v.freeze.resumed_at, &r.sent_at);
    }
    let sub = format!("{s}.first_explicit_deny");
    let Some(d) = v.first_explicit_deny else {
        g.check(false, NotConfirmed, sub, || {
            "no explicit deny after resume within the bound".into()
        });
        return;
    };
    target_pod(g, &sub, d, false, DENIED, v.hook, None);
    g.times_ordered(&sub, &v.freeze.resumed_at, &d.sent_at);
    let last = v.after_resume.last();
    g.check(last == Some(d), ValueMismatch, format!("{sub}.name"), || {
        let (name, last) = (&d.name, last.map(|r| r.name.as_str()));
        format!("the first explicit deny {name} is not the last request sent after the resume ({last:?})")
    });
}

/// An explicit deny, what a violating pod meets from a healthy webhook.
pub(crate) const DENIED: &[Outcome] = &[Outcome::ExplicitDeny];

/// A pod the act sends into the target namespace (`sub`): a real create with the policy's label
/// or without it (`labelled`, [`Meant::target`]), its record one of `expect` ([`G::request`]) and,
/// for a request sent while a freeze lasts (`timed`: the registration's `timeoutSeconds`, and
/// whether the request waited for the timeout), timed against it ([`G::request_timed`]); the
/// webhook its answer names is `hook`'s when the act knows it ([`G::named_webhook`]).
pub(crate) fn target_pod(
    g: &mut G,
    sub: &str,
    r: &RequestRecord,
    labelled: bool,
    expect: &[Outcome],
    hook: Option<&WebhookFacts>,
    timed: Option<(u32, bool)>,
) {
    match timed {
        Some((t, waited)) => g.request_timed(sub, r, expect, t, waited),
        None => g.request(sub, r, expect),
    }
    super::request_is_the_pod_meant(g, sub, r, Meant::target(labelled));
    if let Some(h) = hook {
        g.named_webhook(sub, r, h);
    }
}

/// `first_deny_after_resume_ms` is the difference of its two timestamps (both in ms, so exactly)
/// and inside the act's bounded wait ([`bounds::DENY_AFTER_RESUME_MS`]).
fn first_deny_after_resume_is_timed_from_the_resume(g: &mut G, v: &Freeze<'_>) {
    let Some(d) = v.first_explicit_deny else {
        return;
    };
    let sub = format!("{}.first_deny_after_resume_ms", v.s);
    let measured = facts::ms_between(Some(&v.freeze.resumed_at), Some(&d.answered_at));
    let measured = measured.and_then(|ms| u64::try_from(ms).ok());
    let recorded = v.first_deny_after_resume_ms;
    g.expect_eq(TimesInconsistent, &sub, measured, recorded);
    let most = bounds::DENY_AFTER_RESUME_MS;
    let ok = measured.is_some_and(|m| m <= most);
    g.check(ok, OutsideWindow, sub, || {
        format!("first deny {measured:?} ms after resume; the act waits [0, {most}] ms (bounds::DENY_AFTER_RESUME_MS)")
    });
}

/// Whether the frozen replica restarted is an observation, recorded either way; what must hold
/// is that its restart count never goes down and agrees with the container seen after the fault:
/// a new container ID exactly when the count went up (kubelet starts a new container for every
/// restart). The same container is the same process: the frozen process is the container's main
/// process, which cannot be replaced without the container ending, so the same container ID
/// with another PID, start time or pod contradicts itself.
fn restart_count_agrees_with_the_container(g: &mut G, v: &Freeze<'_>) {
    let ((before, after), frozen) = (v.restart_counts, &v.freeze.identity);
    let s = format!("{}.{}", v.s, v.restart_at);
    let sub = format!("{s}restart_count_after");
    g.check(after >= before, RestartContradicted, sub, || {
        format!("{before} before the freeze, {after} after: a restart count never goes down")
    });
    let Some(id) = v.identity_after else {
        return;
    };
    let new_container = id.container_id != frozen.container_id;
    let ok = (after > before) == new_container;
    let sub = format!("{s}identity_after.container_id");
    g.check(ok, RestartContradicted, sub, || {
        let (was, is) = (&frozen.container_id, &id.container_id);
        format!("restart count {before} -> {after}, container {was} -> {is}: a restart is a new container, and a new container a restart")
    });
    let (ok, sub) = (new_container || id == frozen, format!("{s}identity_after"));
    g.check(ok, v.same_container_other_process, sub, || {
        let json = |x| super::abbreviate(&serde_json::to_value(x).unwrap_or_default());
        let (c, is, was) = (&id.container_id, json(id), json(frozen));
        format!("container {c} is the frozen one, but the process after the fault is {is} (frozen: {was})")
    });
}

/// The frozen process is the one `expected`: act 4's (lab B act 5, lab C's leader), or the one last
/// seen in its pod (act 5's after the resume when act 5 froze it, which may have restarted).
/// Flags [`Code::IdentityChanged`].
pub(crate) fn frozen_process_is_the_expected_one(
    g: &mut G,
    v: &Freeze<'_>,
    expected: Option<ProcessIdentity>,
) {
    if let Some(expected) = expected {
        let rows = [("freeze.identity", &expected, &v.freeze.identity)];
        super::fields_are(g, IdentityChanged, &v.s, rows);
    }
}

/// Act 6's switch of the policy to Ignore before its freeze, the same in labs B and C: the input
/// `policy-ignore.json` (checked against `policy.json`); the stored policy keeps act 2's UID
/// (`policy_uid_before` and the stored object's), says Ignore, is the applied input and the raw
/// read (`policy-stored`); the registration is act 2's switched to Ignore, in scope, derived
/// from its raw read (`webhook-configuration-ignore`); a violating pod is then explicitly
/// denied by it before the freeze. `f`: act 6's facts; `frozen_at`: the freeze's start.
pub(crate) fn policy_switched_to_ignore<R>(g: &mut G, f: &facts::PolicySwitch<R>, frozen_at: &str) {
    let (s, policy, webhook) = ("evidence/06.json facts", &f.policy, &f.webhook);
    let hook = format!("{s}.webhook");
    let text = |p: &str| policy.pointer(p).and_then(Value::as_str);
    let input = g.required_input_value(InputFile::Policy);
    g.input::<inputs::PolicyIgnore>(&Context {
        policy: input,
        ..Default::default()
    });
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        let (uid, before) = (super::policy_uid(&a2), Some(&*f.policy_uid_before));
        let rows = [
            ("policy_uid_before", uid.as_deref(), before),
            ("policy.metadata.uid", uid.as_deref(), text("/metadata/uid")),
        ];
        super::fields_are(g, UidMismatch, s, rows);
        let to_ignore = super::SameRegistration::SwitchedToIgnore;
        super::registration_equals(g, &hook, webhook, &a2.webhook, to_ignore);
    }
    let policy_says = text("/spec/failurePolicy");
    let rows = [("policy.spec.failurePolicy", Some("Ignore"), policy_says)];
    super::fields_are(g, ValueMismatch, s, rows);
    super::check_webhook(g, &hook, webhook, "Ignore");
    let sub = format!("{s}.policy");
    super::stored_policy_is_the_applied_input(g, &sub, policy, InputFile::PolicyIgnore);
    if let Some(ev) = g.evidence(6) {
        super::witness::stored_policy_is_the_raw_read(g, &ev, &sub, policy);
        let what = "webhook-configuration-ignore";
        super::witness::registration_is_derived_from(g, &ev, what, &hook, webhook);
    }
    let sub = format!("{s}.healthy_bad");
    target_pod(g, &sub, &f.healthy_bad, false, DENIED, Some(webhook), None);
    g.times_ordered(&sub, &f.healthy_bad.answered_at, frozen_at);
}

/// Act 7 of labs B and C, after the recovery, one rule for both: the lab's recovery input `T`
/// (with act 2's policy UID and act 6's digest); the policy is act 2's (`policy_uid`), the
/// registration act 6's Ignore one unchanged (act 6's run `R`), in scope and derived from its
/// raw read (`webhook-configuration`); a violating pod is explicitly denied by it
/// (`healthy_bad`). Returns act 7's evidence for the lab's own checks.
pub(crate) fn recovered_under_ignore<T: inputs::StudentInput, R: serde::de::DeserializeOwned>(
    g: &mut G,
    policy_uid: &str,
    webhook: &WebhookFacts,
    healthy_bad: &RequestRecord,
) -> Option<std::sync::Arc<Evidence>> {
    let s = "evidence/07.json facts";
    let a2 = g.facts::<facts::Act2Facts>(2);
    let uid = a2.and_then(|a2| super::policy_uid(&a2));
    let ctx = Context {
        policy_uid: uid.clone(),
        ..g.report_context(6..=6)
    };
    g.input::<T>(&ctx);
    let a6_webhook = g.facts::<facts::PolicySwitch<R>>(6).map(|a6| a6.webhook);
    let rows = [("policy_uid", uid.as_deref(), Some(policy_uid))];
    super::fields_are(g, UidMismatch, s, rows);
    let registered = webhook.failure_policy.as_str();
    let rows = [("webhook.failure_policy", "Ignore", registered)];
    super::fields_are(g, ValueMismatch, s, rows);
    let sub = format!("{s}.healthy_bad");
    target_pod(g, &sub, healthy_bad, false, DENIED, Some(webhook), None);
    let sub = format!("{s}.webhook");
    super::registration_scope(g, &sub, &webhook.name, &super::Scope::of_facts(webhook));
    if let Some(a6) = a6_webhook {
        let same = super::SameRegistration::Identical;
        super::registration_equals(g, &sub, webhook, &a6, same);
    }
    let ev = g.evidence(7)?;
    let what = "webhook-configuration";
    super::witness::registration_is_derived_from(g, &ev, what, &sub, webhook);
    Some(ev)
}
