//! The one-page lab record: a self-contained HTML file (no scripts, no network, no external
//! fonts; it opens from a USB stick years later) rendered as a pure function of (inputs,
//! evidence, grades): [`render`].
//!
//! The page shows, in Japanese or English: per act the status, the grade verdict and every finding
//! (code, file, JSON path, message), the canonical digests of inputs and evidence; the fault
//! timeline as inline SVG ([`timeline`]); the key facts table ([`key_facts`], the nightly summary's
//! columns); the four observations (policy exists / webhook registered / webhook answers / existing
//! pod same UID) per phase; and every evidence file verbatim in a collapsed `<details>`.
//!
//! Every value from the evidence is untrusted text: the page is built with `maud`, which escapes
//! every interpolated string; nothing from the evidence is ever inserted unescaped.
//!
//! `kca-webhook-lab report` writes it on the student's VM; `cargo xtask lab run` writes it per lab
//! as `target/lab-artifacts/<run-id>/<lab>/report.html` with an index per run ([`index`]).

pub mod class;
pub mod grades;
pub mod junit;
pub(crate) mod text;
pub mod timeline;

use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use crate::acts;
use crate::evidence::Lab;
use crate::grade::{Findings, GradeInput};
use crate::text::{Lang, Text};
use text as tx;

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans JP","Hiragino Sans",sans-serif;margin:1.5em auto;max-width:1180px;color:#1d1d1f;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0;width:100%}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top;font-size:.9em}
th{background:#f2f2f2}code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em;word-break:break-all}.ts{white-space:nowrap;word-break:normal}
.pass{color:#1b5e20;font-weight:bold}.fail{color:#b71c1c;font-weight:bold}.none{color:#777}
.yes{background:#e8f5e9}.no{background:#ffebee}.unk{background:#fafafa;color:#777}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.5em;overflow:auto;max-height:40em;font-size:.8em}
details{margin:.3em 0}summary{cursor:pointer}
svg.timeline{max-width:100%;height:auto;font-size:11px;font-family:system-ui,sans-serif;background:#fff;border:1px solid #ddd}
.tick{stroke:#e3e3e3}.ticklabel{fill:#666}.vline{stroke:#444;stroke-dasharray:4 3;fill:#444}
.deadline{stroke:#b71c1c;fill:#b71c1c}.window{fill:#9e9e9e;fill-opacity:.45}
.step{fill:#37474f}.missing{fill:#b71c1c}.rowlabel{fill:#333}.barlabel{fill:#333}
.o-deny{fill:#2e7d32}.o-timeout{fill:#ef6c00}.o-stored{fill:#1565c0}.o-dryrun{fill:#6a1b9a}.o-callfail{fill:#c62828}.o-other{fill:#757575}
.badge{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:baseline}
.badge.o-deny{background:#2e7d32}.badge.o-timeout{background:#ef6c00}.badge.o-stored{background:#1565c0}.badge.o-dryrun{background:#6a1b9a}.badge.o-callfail{background:#c62828}.badge.o-other{background:#757575}
.holder{fill:#00695c}.ep-ready{fill:#a5d6a7}.ep-not-ready{fill:#e53935}.ep-absent{fill:#e0e0e0}.lane{stroke:#eee}.vline.lease{stroke:#00695c;fill:#00695c}
table.metrics{width:auto}
.legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:1em;height:.8em;margin-right:.3em}
.legend .o-deny{background:#2e7d32}.legend .o-timeout{background:#ef6c00}.legend .o-stored{background:#1565c0}.legend .o-dryrun{background:#6a1b9a}.legend .o-callfail{background:#c62828}.legend .o-other{background:#757575}
"#;

/// The `facts` of act `act`'s evidence, when it parsed (else JSON null).
fn facts(input: &GradeInput, act: u8) -> &Value {
    static NULL: Value = Value::Null;
    let doc = input.evidence.get(&act).and_then(|d| d.as_ref().ok());
    doc.map_or(&NULL, |d| &d.value()["facts"])
}

/// Headers of the key facts columns, the nightly summary's (`cargo xtask lab summary`).
pub const KEY_FACT_HEADERS: [&str; 3] = [
    "scale-down (A) / Fail freeze (B) / leader freeze, Fail (C)",
    "lease takeover (A) / Ignore freeze (B) / Lease and former leader (C)",
    "first explicit deny after recovery (A, B) / follower freeze, Ignore (C)",
];

/// The string at the JSON pointer `ptr` of `v` (also the timeline's).
fn s<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

/// The string at the JSON pointer `ptr` of `v`, or `?` (also the timeline's).
fn sq<'a>(v: &'a Value, ptr: &str) -> &'a str {
    s(v, ptr).unwrap_or("?")
}

/// A duration for people: `30 ms` below one second (a deny 30 ms after resume is not `0.0 s`),
/// else seconds with one decimal (`32.1 s`); `—` when absent.
fn secs(ms: Option<i64>) -> String {
    match ms {
        Some(m) if m.abs() < 1000 => format!("{m} ms"),
        Some(m) => format!("{:.1} s", m as f64 / 1000.0),
        None => "—".into(),
    }
}

/// `outcome (elapsed)` of the request record at `ptr`.
fn request(v: &Value, ptr: &str) -> String {
    v.pointer(ptr).map_or("—".into(), |r| {
        let outcome = r["outcome"].as_str().unwrap_or("?");
        format!("{outcome} ({})", secs(r["elapsed_ms"].as_i64()))
    })
}

/// The key facts of one lab run from its acts 5 and 6 `facts` (JSON null when absent), one string
/// per [`KEY_FACT_HEADERS`] column, in English: lab A's scale-down ([`key_facts_scale_down`]), lab
/// B's freezes ([`key_facts_freeze`]), lab C's replica freezes ([`key_facts_replica_freeze`]).
pub fn key_facts(lab: Lab, f5: &Value, f6: &Value) -> [String; 3] {
    key_facts_in(lab, f5, f6, Lang::En)
}

/// Whether `lab`'s acts freeze a replica of several by its role, leader or follower (lab C: one
/// timeline row per replica, waves of requests), not the one replica (lab B).
fn by_role(lab: Lab) -> bool {
    acts::freezes(lab)
        .iter()
        .any(|(_, t)| *t != acts::Target::One)
}

/// [`key_facts`] in `lang` (the page's words; values as the evidence writes them), by what the
/// lab's fault steps are (the registry's [`acts::Fault`]): a scale to 0 first, else a freeze of a
/// replica by its role, else the one replica's freeze.
fn key_facts_in(lab: Lab, f5: &Value, f6: &Value, lang: Lang) -> [String; 3] {
    if acts::scale_down(lab).is_some() {
        key_facts_scale_down(f5, f6, lang)
    } else if by_role(lab) {
        key_facts_replica_freeze(f5, f6, lang)
    } else {
        key_facts_freeze(f5, f6, lang)
    }
}

/// The scale-down's key facts (lab A): the registration after the scale-down and the violating
/// request's outcome (act 5), the Lease taken after restore, the first explicit deny after
/// restore (act 6).
fn key_facts_scale_down(f5: &Value, f6: &Value, lang: Lang) -> [String; 3] {
    let w = |t: Text| t.get(lang);
    let reg = match f5.get("policy_webhook_present").and_then(Value::as_bool) {
        Some(true) => w(tx::KF_KEPT),
        Some(false) => w(tx::ABSENT),
        None => "—",
    };
    let restored = s(f6, "/replicas_restored/at");
    let deny = s(f6, "/first_explicit_deny/at");
    let between = secs(crate::facts::ms_between(restored, deny));
    let (registration, violating) = (w(tx::KF_REGISTRATION), w(tx::KF_VIOLATING));
    let (bad, after) = (request(f5, "/target_bad"), w(tx::KF_AFTER_RESTORE));
    let (lease, first) = (w(tx::KF_LEASE), w(tx::KF_FIRST_DENY_RESTORE));
    let lease_ms = secs(f6["lease_after_restore_ms"].as_i64());
    [
        format!("{registration}: {reg}; {violating} {bad}"),
        format!("{lease} {lease_ms} {after}"),
        format!("{first} {between} {after}"),
    ]
}

/// The one replica's freezes' key facts (lab B): the target requests' outcomes and latencies
/// under the Fail (act 5) and the Ignore (act 6) freezes, the first explicit deny after each
/// resume.
fn key_facts_freeze(f5: &Value, f6: &Value, lang: Lang) -> [String; 3] {
    let w = |t: Text| t.get(lang);
    let targets = |policy: &str, f: &Value| {
        let (good, bad) = (request(f, "/target_good"), request(f, "/target_bad"));
        let (good_w, bad_w) = (w(tx::KF_GOOD), w(tx::KF_BAD));
        format!("{policy}: {good_w} {good}, {bad_w} {bad}")
    };
    let deny = |f: &Value| secs(f["first_deny_after_resume_ms"].as_i64());
    let (first, after) = (w(tx::KF_FIRST_DENY_RESUME), w(tx::KF_AFTER_RESUME));
    [
        targets("Fail", f5),
        targets("Ignore", f6),
        format!("{first} {} / {} {after}", deny(f5), deny(f6)),
    ]
}

/// The replica freezes' key facts (lab C) from acts 5 and 6, with the rules act 8 words the report by
/// ([`crate::rules::c::freeze_counts`], [`crate::rules::c::takeover`],
/// [`crate::rules::c::former_leader`]): how many of the waves' violating requests timed out (and
/// were denied) during the leader's freeze; who took the Lease over and when it was first read so,
/// or who kept it, and whether the former leader restarted; how many were stored unvalidated (and
/// denied) during the follower's freeze. `—` for an act whose facts do not parse.
fn key_facts_replica_freeze(f5: &Value, f6: &Value, lang: Lang) -> [String; 3] {
    use crate::evidence::Outcome;
    use crate::facts::c::{Act5Facts, Act6Facts, ReplicaFreezeRun};
    use crate::rules::c::{former_leader, freeze_counts, takeover};
    let a5 = serde_json::from_value::<Act5Facts>(f5.clone()).ok();
    let a6 = serde_json::from_value::<Act6Facts>(f6.clone()).ok();
    let counts = |run: Option<&ReplicaFreezeRun>, met: Outcome, note: Option<&str>| {
        run.map_or("—".to_owned(), |run| {
            let ((m, d, o), n) = (freeze_counts(run, met), run.bad.len());
            let note = note.map(|note| format!(" ({note})")).unwrap_or_default();
            let met = met.as_str();
            let mut out = format!("{met} {m}/{n}{note}, explicit-deny {d}/{n}");
            if o > 0 {
                out += &format!(", other {o}/{n}");
            }
            out
        })
    };
    let leader = counts(a5.as_ref(), Outcome::WebhookTimeout, None);
    let lease = a5.as_ref().map_or("—".into(), |r| {
        let lease = match takeover(r) {
            Some((holder, at)) => {
                let after = crate::facts::ms_between(Some(&r.freeze.frozen_at), Some(at));
                tx::kf_takeover(holder, &secs(after))
            }
            None => match r.lease_samples.iter().find_map(|s| s.holder.as_deref()) {
                Some(h) => tx::kf_lease_kept(h),
                None => tx::KF_LEASE_NOT_OBSERVED.into(),
            },
        };
        let (word, t) = (former_leader(r), &r.target_after);
        let (before, after) = (t.restart_count_before, t.restart_count_after);
        let former = tx::kf_former_leader(tx::evidence_word(&word, lang), before, after);
        format!("{}; {}", lease.get(lang), former.get(lang))
    });
    let unvalidated = Some(tx::KF_UNVALIDATED.get(lang));
    let follower = counts(a6.as_ref().map(|a| &a.run), Outcome::Stored, unvalidated);
    [leader, lease, follower]
}

/// One of the four observations in one phase: whether it held, with its detail either way;
/// `None`: not observed.
type Obs = Option<(bool, String)>;

fn obs_cell(o: &Obs) -> Markup {
    let (class, mark, d) = match o {
        Some((true, d)) => ("yes", "✓ ", d),
        Some((false, d)) => ("no", "✗ ", d),
        None => return html! { td class="unk" { "—" } },
    };
    html! { td class=(class) { (mark) span class="mono" { (d) } } }
}

/// "existing pod, same UID": exists, act 3's UID, `Running`.
fn existing(obs: &Value, reference: Option<&str>, lang: Lang) -> Obs {
    if !obs.is_object() {
        return None;
    }
    let uid = obs["uid"].as_str();
    let phase = obs["phase"].as_str().unwrap_or("?");
    if obs["exists"] != true {
        return Some((false, tx::GONE.get(lang).into()));
    }
    let d = format!("uid {} · {phase}", uid.unwrap_or("—"));
    Some((uid.is_some() && uid == reference && phase == "Running", d))
}

/// "webhook answers": the violating request's outcome is `explicit-deny`; for a list of them
/// (lab C's waves), yes when every one was explicitly denied, else how many were.
fn answers(r: &Value) -> Obs {
    if let Some(bad) = r.as_array().filter(|b| !b.is_empty()) {
        let denied = bad.iter().filter(|r| r["outcome"] == "explicit-deny");
        let (denied, n) = (denied.count(), bad.len());
        return Some((denied == n, format!("explicit-deny {denied}/{n}")));
    }
    let name = r["name"].as_str().unwrap_or("?");
    let answer = |o: &str| (o == "explicit-deny", format!("{name} → {o}"));
    r["outcome"].as_str().map(answer)
}

fn flag(b: Option<bool>, yes: String, no: String) -> Obs {
    b.map(|b| (b, if b { yes } else { no }))
}

fn uid_obs(uid: Option<&str>) -> Obs {
    uid.map(|u| (true, format!("uid {u}")))
}

/// The four observations per phase: `(phase, [policy, registered, answers, existing])`; the
/// phases after the baseline (acts 5, 6, 7) are named by the registry ([`acts::Page::phases`]),
/// their first three columns drawn by what the lab's faults are (a scale to 0, else freezes),
/// the existing pod read alike in every act that recorded it.
fn observations(lab: Lab, input: &GradeInput, lang: Lang) -> Vec<(Text, [Obs; 4])> {
    let f = [5, 6, 7].map(|act| facts(input, act));
    let three = match acts::scale_down(lab) {
        Some(_) => scale_observations(f, lang),
        None => freeze_observations(f, lang),
    };
    let existing = |f: &Value| existing(&f["existing"], reference_uid(input), lang);
    let after = three
        .into_iter()
        .zip(f)
        .map(|([p, r, a], f)| [p, r, a, existing(f)]);
    let baseline = (tx::PHASE_BASELINE, baseline_observations(input));
    let phases = acts::page(lab).phases.into_iter().zip(after);
    std::iter::once(baseline).chain(phases).collect()
}

/// The existing pod's UID as act 3 recorded it: the later acts' existing pod is held against it.
fn reference_uid(input: &GradeInput) -> Option<&str> {
    s(facts(input, 3), "/existing/uid")
}

/// The policy's webhook named at `ptr` of `f`, with its failurePolicy.
fn webhook_obs(f: &Value, ptr: &str) -> Obs {
    let policy = sq(f, "/webhook/failure_policy");
    s(f, ptr).map(|n| (true, format!("{n} ({policy})")))
}

/// The healthy baseline, the same in every lab: act 2's policy and webhook, act 3's answers and
/// existing pod.
fn baseline_observations(input: &GradeInput) -> [Obs; 4] {
    let (f2, f3) = (facts(input, 2), facts(input, 3));
    let phase = sq(f3, "/existing/phase");
    [
        uid_obs(s(f2, "/policy/metadata/uid")),
        webhook_obs(f2, "/webhook/name"),
        // Lab C's baseline sends waves (a list).
        answers(&f3["bad"]),
        reference_uid(input).map(|u| (true, format!("uid {u} · {phase}"))),
    ]
}

/// Lab B's and lab C's phases after the baseline: the freeze under Fail (act 5), under Ignore
/// (act 6), the recovery (act 7); whether the webhook answered the violating requests sent during
/// a freeze: the one target request (lab B) or the waves (lab C, `bad`).
fn freeze_observations([f5, f6, f7]: [&Value; 3], lang: Lang) -> [[Obs; 3]; 3] {
    let w = |t: Text| t.get(lang);
    let during = |f: &Value| {
        let name = sq(f, "/registration_snapshot/name");
        let policy = sq(f, "/registration_snapshot/failurePolicy");
        let present = f["registration_present_during_freeze"].as_bool();
        flag(present, format!("{name} ({policy})"), w(tx::ABSENT).into())
    };
    let uid_before = s(f6, "/policy_uid_before");
    let before = format!("{}: {}", w(tx::BEFORE), sq(f6, "/policy_uid_before"));
    let same_policy = match s(f6, "/policy/metadata/uid") {
        Some(now) if Some(now) == uid_before => Some((true, format!("uid {now}"))),
        Some(now) => Some((false, format!("uid {now} ({before})"))),
        None => None,
    };
    // A freeze's phase: the policy as `policy` says, then what act `f` saw during its freeze.
    let freeze = |policy: Obs, f: &Value| {
        let bad = f.get("target_bad").unwrap_or(&f["bad"]);
        [policy, during(f), answers(bad)]
    };
    let policy7 = uid_obs(s(f7, "/policy_uid"));
    let registered7 = webhook_obs(f7, "/webhook/name");
    [
        freeze(None, f5),
        freeze(same_policy, f6),
        [policy7, registered7, answers(&f7["healthy_bad"])],
    ]
}

/// Lab A's phases after the baseline: scaled to zero (act 5), the recovery (act 6), the
/// server-side dry-run (act 7).
fn scale_observations([f5, f6, f7]: [&Value; 3], lang: Lang) -> [[Obs; 3]; 3] {
    let w = |t: Text| t.get(lang);
    let uid5 = format!("uid {}", sq(f5, "/policy/uid"));
    let policy5 = flag(f5["policy"]["exists"].as_bool(), uid5, w(tx::GONE).into());
    let (name, at) = (sq(f6, "/webhook/name"), sq(f6, "/webhook_registered/at"));
    let (at_w, last_seen) = (w(tx::AT), sq(f6, "/webhook_registered/last_seen"));
    let registered6 = match s(f6, "/webhook_registered/status") {
        Some("confirmed") => Some((true, format!("{name} ({at_w} {at})"))),
        Some(_) => Some((false, format!("{}: {last_seen}", w(tx::NOT_CONFIRMED)))),
        None => None,
    };
    let last_probe = f6["deny_probes"].as_array().and_then(|p| p.last());
    let answers6 = last_probe.and_then(answers);
    let checked = sq(f5, "/registrations_checked_at");
    let absent5 = format!("{} ({} {checked})", w(tx::ABSENT), w(tx::LIST_READ));
    let present5 = f5["policy_webhook_present"].as_bool();
    let registered5 = flag(present5, w(tx::PRESENT).into(), absent5);
    let side_effects = format!("(sideEffects {})", sq(f7, "/side_effects"));
    let registered7 = s(f7, "/webhook_name").map(|n| (true, format!("{n} {side_effects}")));
    let (answers5, answers7) = (answers(&f5["target_bad"]), answers(&f7["bad"]));
    [
        [policy5, registered5, answers5],
        [None, registered6, answers6],
        [None, registered7, answers7],
    ]
}

/// One cell of the condition table: the request recorded at `path` (a JSON pointer into
/// `facts`) of act `act`, when there is one.
struct Cell<'a> {
    act: u8,
    path: String,
    request: &'a Value,
}

/// A JSON pointer into `facts` as the page writes JSON paths: `/deny_probes/57` →
/// `facts.deny_probes[57]`.
fn json_path(ptr: &str) -> String {
    let mut out = "facts".to_owned();
    for seg in ptr.split('/').skip(1) {
        let index = !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit());
        let (open, close) = if index { ("[", "]") } else { (".", "") };
        out += &format!("{open}{seg}{close}");
    }
    out
}

/// The lab's condition table (the course's summary: condition × target good / target bad /
/// control), each cell the request observed under that condition, as the registry declares it
/// ([`acts::Page::conditions`]).
fn conditions(lab: Lab, input: &GradeInput) -> Vec<(Text, [Option<Cell<'_>>; 3])> {
    let cells = |c: &acts::Condition| c.requests.map(|r| r.and_then(|r| request_cell(input, r)));
    let conditions = &acts::page(lab).conditions;
    conditions.iter().map(|c| (c.name, cells(c))).collect()
}

/// The request `r` names, as a [`Cell`] (`None` when it was not recorded).
fn request_cell(input: &GradeInput, r: acts::Request) -> Option<Cell<'_>> {
    let (act, ptr) = match r {
        acts::Request::At { act, ptr } => (act, ptr.to_owned()),
        acts::Request::First {
            act,
            list,
            outcome,
            or_first,
        } => {
            let items = facts(input, act).pointer(list)?.as_array()?;
            let first = items.iter().position(|r| r["outcome"] == outcome.as_str());
            let i = first.or((or_first && !items.is_empty()).then_some(0))?;
            (act, format!("{list}/{i}"))
        }
    };
    let request = facts(input, act).pointer(&ptr)?;
    let path = json_path(&ptr);
    request["outcome"]
        .is_string()
        .then_some(Cell { act, path, request })
}

/// The anchor of act `act`'s raw evidence on the page.
fn evidence_anchor(act: u8) -> String {
    format!("evidence-{act:02}")
}

fn condition_cell(c: &Option<Cell<'_>>) -> Markup {
    match c {
        None => html! { td class="unk" { "—" } },
        Some(c) => {
            let outcome = c.request["outcome"].as_str().unwrap_or("?");
            html! {
                td data-cell=(format!("{:02}:{}", c.act, c.path)) {
                    span class=(format!("badge {}", timeline::outcome_class(outcome))) {}
                    span class="mono" { (outcome) } " · " (secs(c.request["elapsed_ms"].as_i64()))
                    br;
                    a class="mono" href=(format!("#{}", evidence_anchor(c.act))) {
                        "evidence/" (format!("{:02}", c.act)) ".json " (c.path)
                    }
                }
            }
        }
    }
}

/// The API server's admission webhook counters of act `act` (`facts.admission_metrics`) as a
/// table: webhook × counter (the metric without its `apiserver_admission_webhook_` prefix and
/// with its other labels) × change (`_sum` in seconds); `None` when the act has no metrics record.
fn act_metrics(input: &GradeInput, act: u8, lang: Lang) -> Option<Markup> {
    let v = facts(input, act).get(crate::metrics::FACTS_KEY)?;
    let m: crate::metrics::AdmissionMetrics = serde_json::from_value(v.clone()).ok()?;
    if let Some(u) = &m.unavailable {
        return Some(html! {
            span class="none" { (tx::METRICS_NOT_OBSERVED.get(lang)) } " " span class="mono" { (u.reason) }
        });
    }
    if m.deltas.is_empty() {
        return Some(html! { span class="none" { (tx::METRICS_NO_CHANGE.get(lang)) } });
    }
    let mut rows = Vec::new();
    for d in &m.deltas {
        let webhook = d.labels.get("name").cloned().unwrap_or_default();
        let labels = d.labels.iter().filter(|(k, _)| *k != "name");
        let labels: Vec<String> = labels.map(|(k, v)| format!("{k}={v}")).collect();
        let short = d.metric.trim_start_matches("apiserver_admission_webhook_");
        let change = if d.metric.ends_with("_sum") {
            format!("{:+.3} s", d.delta)
        } else {
            format!("{:+}", d.delta)
        };
        rows.push((webhook, format!("{short}{{{}}}", labels.join(",")), change));
    }
    rows.sort();
    Some(html! {
        table class="metrics" {
            tr { th { "webhook" } th { (tx::COUNTER.get(lang)) } th { (tx::CHANGE.get(lang)) } }
            @for (w, c, d) in &rows {
                tr data-counter=(c) { td class="mono" { (w) } td class="mono" { (c) } td class="mono" { (d) } }
            }
        }
    })
}

/// The audit record of act `act` (`facts.admission_audit`), short: one line per request
/// ([`crate::audit::request_summary`]), or why audit was not observed; `None` when the act has
/// no audit record (acts 1, 2, 4, 8, or evidence that predates audit).
fn act_audit(input: &GradeInput, act: u8, lang: Lang) -> Option<Result<Vec<String>, String>> {
    use crate::audit::{self, AuditStatus};
    let v = facts(input, act).get(audit::FACTS_KEY)?;
    let a: audit::AdmissionAudit = serde_json::from_value(v.clone()).ok()?;
    let file = format!("evidence/{act:02}.json");
    Some(match a.status {
        AuditStatus::Observed => Ok(a.requests.iter().map(audit::request_summary).collect()),
        _ => Err(audit::summary_line(&a, &file).get(lang).to_owned()),
    })
}

/// Splits a finding's subject (`evidence/05.json facts.target_good`) into file and JSON path.
pub(crate) fn split_subject(subject: &str) -> (&str, &str) {
    subject.split_once(' ').unwrap_or((subject, ""))
}

fn verdict(g: &Findings, lang: Lang) -> Markup {
    html! {
        @if g.passed() {
            span class="pass" { (tx::PASS.get(lang)) }
        } @else {
            span class="fail" { (g.findings.len()) " " (tx::FINDINGS.get(lang)) }
        }
        " (" (g.checks) " " (tx::CHECKS.get(lang)) ")"
    }
}

fn legend(lang: Lang) -> Markup {
    html! {
        p class="legend" {
            (tx::LEGEND.get(lang)) ": "
            @for o in timeline::LEGEND {
                span { i class=(timeline::outcome_class(o)) {} (o) }
            }
            span { i style="background:#9e9e9e" {} (tx::FREEZE_WINDOW.get(lang)) }
        }
    }
}

/// Lab C's marks on the replica rows: the Lease band and the endpoint strip.
fn legend_c(lang: Lang) -> Markup {
    html! {
        p class="legend" {
            span { i style="background:#00695c" {} (tx::LEASE_HOLDER.get(lang)) }
            span { i style="background:#a5d6a7" {} (tx::EP_READY.get(lang)) }
            span { i style="background:#e53935" {} (tx::EP_NOT_READY.get(lang)) }
            span { i style="background:#e0e0e0" {} (tx::EP_ABSENT.get(lang)) }
        }
    }
}

/// Renders the lab record page of `lab` in `lang` from the work directory as read by
/// [`GradeInput::load`] and `grades` (pure; deterministic: the same arguments give the same bytes,
/// no clock is read).
///
/// The page has one row per act of `grades`, in their order, and counts "passed / `grades.len()`":
/// the tool passes [`crate::grade::grade_all`], so every act of the registry ([`crate::acts`]) is
/// on it and an act not run yet shows "no evidence" with its `evidence-missing` finding; a test of
/// a recording passes the grades of the acts the recording has (`lab/tests/common/recorded.rs`).
pub fn render(lab: Lab, input: &GradeInput, grades: &[Findings], lang: Lang) -> String {
    render_with_diagnostics(lab, input, grades, lang, None)
}

/// A failure's diagnostics as the report page shows them: the summary
/// ([`crate::diagnostics::Summary`]) and the link to the rest (relative to the page, or absolute).
#[derive(Debug, Clone, Copy)]
pub struct DiagnosticsLink<'a> {
    /// The summary.
    pub summary: &'a crate::diagnostics::Summary,
    /// Where the rest is (e.g. `diagnostics/summary.txt`).
    pub href: &'a str,
}

/// [`render`] with the diagnostics of a failure shown under the grade count (`None`: same bytes as
/// [`render`]). Pure. The page's sections, in order: the grade count and diagnostics, the
/// conditions table, the timeline, the acts, the inputs, the key facts, the observations, the raw
/// files.
pub fn render_with_diagnostics(
    lab: Lab,
    input: &GradeInput,
    grades: &[Findings],
    lang: Lang,
    diagnostics: Option<DiagnosticsLink<'_>>,
) -> String {
    let title = acts::page(lab).title.get(lang);
    let lang_attr = if lang == Lang::Ja { "ja" } else { "en" };
    let page = html! {
        (DOCTYPE)
        html lang=(lang_attr) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(CSS)) }
            }
            body data-lab=(lab.as_str()) {
                h1 { (title) }
                p { (tx::INTRO.get(lang)) }
                (grade_count(grades, diagnostics, lang))
                (conditions_section(lab, input, lang))
                (timeline_section(lab, input, lang))
                (acts_section(input, grades, lang))
                (key_facts_section(lab, input, lang))
                (observations_section(lab, input, lang))
                (raw_section(input, lang))
            }
        }
    };
    page.into_string()
}

/// How many acts' grades pass, and a failure's diagnostics under it.
fn grade_count(
    grades: &[Findings],
    diagnostics: Option<DiagnosticsLink<'_>>,
    lang: Lang,
) -> Markup {
    let passed = grades.iter().filter(|g| g.passed()).count();
    let all_passed = !grades.is_empty() && passed == grades.len();
    html! {
        p { (tx::GRADES_PASS.get(lang)) ": "
            span class=(if all_passed { "pass" } else { "fail" }) data-grades-passed=(passed) { (passed) " / " (grades.len()) } }
        @if let Some(d) = diagnostics {
            section data-diagnostics=(d.summary.failed_step) {
                h2 class="fail" { (tx::DIAGNOSTICS.get(lang)) ": " (d.summary.failed_step) }
                ul { @for l in &d.summary.telling { li class="mono" data-telling { (l) } } }
                p { (tx::DIAGNOSTICS_NOTE.get(lang)) " " a href=(d.href) class="mono" { (d.href) } }
            }
        }
    }
}

/// The conditions table: each condition × the target's good and bad requests and the control's.
fn conditions_section(lab: Lab, input: &GradeInput, lang: Lang) -> Markup {
    html! {
        h2 { (tx::CONDITIONS.get(lang)) }
        p { (tx::CONDITIONS_NOTE.get(lang)) }
        table class="conditions" {
            tr { th { (tx::CONDITION.get(lang)) } th { (tx::COL_TARGET_GOOD.get(lang)) }
                 th { (tx::COL_TARGET_BAD.get(lang)) } th { (tx::COL_CONTROL.get(lang)) } }
            @for (i, (condition, cells)) in conditions(lab, input).into_iter().enumerate() {
                tr data-condition=(i + 1) { th { (condition.get(lang)) } @for c in &cells { (condition_cell(c)) } }
            }
        }
    }
}

/// The timeline charts, one per fault step of the lab's acts (the registry's [`acts::Fault`]):
/// a freeze of one replica of N (labs B and C, [`timeline::freeze`]), the scale to 0 and the
/// recovery after it (lab A, [`timeline::scale`]). A scale to more replicas (lab C's act 3) is
/// the stage of the freezes, not a chart of its own.
fn timeline_section(lab: Lab, input: &GradeInput, lang: Lang) -> Markup {
    let (freezes, replicas) = (acts::freezes(lab), by_role(lab));
    let pods = if replicas {
        replica_pods(input)
    } else {
        vec![]
    };
    html! {
        h2 { (tx::TIMELINE.get(lang)) }
        (legend(lang))
        @if let Some(act) = acts::scale_down(lab) {
            p { (tx::TIMELINE_A.get(lang)) }
            h3 { (tx::SCALE_RECOVERY.get(lang)) }
            @match timeline::scale(facts(input, act), facts(input, act + 1), lang) {
                Some(svg) => div class="chart" data-timeline=(format!("{act}-{}", act + 1)) { (svg) },
                None => p class="none" { (tx::NO_SCALE.get(lang)) },
            }
        }
        @if !freezes.is_empty() {
            @if replicas {
                p { (tx::TIMELINE_C.get(lang)) }
                (legend_c(lang))
            } @else {
                p { (tx::TIMELINE_B.get(lang)) }
            }
            @for (act, target) in &freezes {
                h3 { (freeze_head(lab, *target, *act).get(lang)) }
                @match timeline::freeze(facts(input, *act), &pods, lang) {
                    Some(svg) => div class="chart" data-timeline=(act) { (svg) },
                    None => p class="none" { (tx::NO_FREEZE.get(lang)) },
                }
            }
        }
    }
}

/// The heading of a freeze's chart: the leader's or a follower's freeze, or the one replica's
/// under the failurePolicy of its act (Ignore once an act before it switched the policy).
fn freeze_head(lab: Lab, target: acts::Target, act: u8) -> Text {
    match target {
        acts::Target::Leader => tx::LEADER_FREEZE,
        acts::Target::Follower => tx::FOLLOWER_FREEZE,
        acts::Target::One => {
            let mut up_to_act = acts::numbers(lab).take_while(|n| *n <= act);
            match up_to_act.any(|n| acts::switches_policy(lab, n)) {
                true => tx::IGNORE_FREEZE,
                false => tx::FAIL_FREEZE,
            }
        }
    }
}

/// Lab C's replicas, one timeline row each: act 4's leader then its followers, else act 3's
/// replicas.
fn replica_pods(input: &GradeInput) -> Vec<String> {
    let names = |list: &Value, ptr: &str| -> Vec<String> {
        let items = list.as_array().into_iter().flatten();
        items.filter_map(|i| s(i, ptr).map(str::to_owned)).collect()
    };
    let f4 = facts(input, 4);
    let leader = s(f4, "/leader/pod_name").map(str::to_owned);
    let mut pods: Vec<String> = leader.into_iter().collect();
    pods.extend(names(&f4["followers"], "/pod_name"));
    if pods.is_empty() {
        pods = names(&facts(input, 3)["replicas"], "/pod/name");
    }
    pods
}

/// The acts table (one row per grade, with its metrics, audit and findings) and the inputs table.
fn acts_section(input: &GradeInput, grades: &[Findings], lang: Lang) -> Markup {
    html! {
        h2 { (tx::ACTS.get(lang)) }
        table {
            tr { th { (tx::ACT.get(lang)) } th { (tx::STATUS.get(lang)) } th { (tx::TIME.get(lang)) }
                 th { (tx::VERDICT.get(lang)) } th { (tx::DIGESTS.get(lang)) } }
            @for g in grades { (act_rows(input, g, lang)) }
        }
        h3 { (tx::INPUTS.get(lang)) }
        table {
            @for (file, v) in &input.inputs {
                tr { td class="mono" { (file.file_name()) }
                     td class="mono" { @match v { Ok(v) => (crate::digest::digest_value(v)), Err(e) => span class="fail" { (e) } } } }
            }
        }
    }
}

/// One act's rows of the acts table: status, time, verdict, digests; then its metrics, audit events
/// and findings when it has them.
fn act_rows(input: &GradeInput, g: &Findings, lang: Lang) -> Markup {
    html! {
        @let act = g.act;
        tr data-act=(act) {
            td { (act) }
            @match input.evidence.get(&act) {
                None => { td class="none" { (tx::MISSING.get(lang)) } td {} }
                Some(Err(e)) => { td class="fail" { (tx::UNREADABLE.get(lang)) ": " (e) } td {} }
                Some(Ok(doc)) => {
                    td { (tx::evidence_word(doc.value()["status"].as_str().unwrap_or("?"), lang))
                         @if let Some(i) = doc.value()["interruption"].as_str() { br; span class="fail" { (i) } } }
                    td class="mono ts" { (doc.value()["started_at"].as_str().unwrap_or("?")) br; (doc.value()["finished_at"].as_str().unwrap_or("?")) }
                }
            }
            td { (verdict(g, lang)) }
            td class="mono" {
                @if let Some(Ok(doc)) = input.evidence.get(&act) {
                    "evidence/" (format!("{act:02}")) ".json " (doc.digest())
                    @if let Some(m) = doc.value()["inputs"].as_object() {
                        @for (file, d) in m { br; (file) " " (d.as_str().unwrap_or("?")) }
                    }
                }
            }
        }
        @if let Some(m) = act_metrics(input, act, lang) {
            tr data-metrics=(act) { td {} td colspan="4" {
                (tx::METRICS.get(lang)) (m)
            } }
        }
        @if let Some(a) = act_audit(input, act, lang) {
            tr data-audit=(act) { td {} td colspan="4" {
                (tx::AUDIT.get(lang)) ": "
                @match &a {
                    Ok(lines) => { @for l in lines { br; span class="mono" { (l) } } }
                    Err(why) => { span class="none" { (tx::AUDIT_NOT_OBSERVED.get(lang)) } " " span class="mono" { (why) } }
                }
            } }
        }
        @if !g.findings.is_empty() {
            tr { td {} td colspan="4" {
                table class="findings" {
                    tr { th { (tx::CODE.get(lang)) } th { (tx::FILE.get(lang)) } th { (tx::PATH.get(lang)) } th { (tx::MESSAGE.get(lang)) } }
                    @for f in &g.findings {
                        @let (file, path) = split_subject(&f.subject);
                        tr data-finding=(f.code.as_str()) {
                            td class="mono" { (f.code.as_str()) } td class="mono" { (file) } td class="mono" { (path) }
                            td { (crate::messages::codes::code_text(f.code).get(lang)) br; span class="mono" { (f.detail) } }
                        }
                    }
                }
            } }
        }
    }
}

/// The key facts of the lab (the same three as the run's index page, [`key_facts`]).
fn key_facts_section(lab: Lab, input: &GradeInput, lang: Lang) -> Markup {
    let kf = key_facts_in(lab, facts(input, 5), facts(input, 6), lang);
    html! {
        h2 { (tx::KEY_FACTS.get(lang)) }
        table {
            tr { @for h in &acts::page(lab).key_fact_headers { th { (h.get(lang)) } } }
            tr { @for c in &kf { td class="mono" { (c) } } }
        }
    }
}

/// The observations table: each phase × policy, registration, answers, existing pod.
fn observations_section(lab: Lab, input: &GradeInput, lang: Lang) -> Markup {
    html! {
        h2 { (tx::OBSERVATIONS.get(lang)) }
        p { (tx::OBSERVATIONS_NOTE.get(lang)) }
        table {
            tr { th { (tx::PHASE.get(lang)) } th { (tx::OBS_POLICY.get(lang)) } th { (tx::OBS_REGISTERED.get(lang)) }
                 th { (tx::OBS_ANSWERS.get(lang)) } th { (tx::OBS_EXISTING.get(lang)) } }
            @for (phase, cells) in observations(lab, input, lang) {
                tr { th { (phase.get(lang)) } @for c in &cells { (obs_cell(c)) } }
            }
        }
    }
}

/// Bound on the text of one file the page embeds (pretty-printed JSON): 256 KiB. The largest
/// recorded evidence file pretty-prints to about 0.5 MB of which the start is enough on the page;
/// the file itself holds all of it. So the page stays bounded whatever the 8 MiB read bound
/// lets in (a deeply nested array grows ×127 when indented).
pub const RAW_EMBED_BOUND: usize = 256 << 10;

/// One embedded file: `v` pretty-printed up to [`RAW_EMBED_BOUND`] bytes (memory bounded too: the
/// serializer writes into a buffer of the bound and stops when it is full, the only error it can
/// meet) and, when cut, the note naming the whole file; a file that could not be read, why.
fn embedded(v: Result<&Value, &String>, name: &str, lang: Lang) -> Markup {
    let v = match v {
        Ok(v) => v,
        Err(e) => return html! { (e) },
    };
    let mut buf = vec![0; RAW_EMBED_BOUND];
    let mut room = &mut buf[..];
    let cut = serde_json::to_writer_pretty(&mut room, v).is_err();
    let len = RAW_EMBED_BOUND - room.len();
    let text = String::from_utf8_lossy(&buf[..len]);
    html! {
        (text)
        @if cut {
            "\n" (tx::raw_cut(RAW_EMBED_BOUND, name).get(lang))
        }
    }
}

/// Every evidence and input file, verbatim up to [`RAW_EMBED_BOUND`] each, folded.
fn raw_section(input: &GradeInput, lang: Lang) -> Markup {
    html! {
        h2 { (tx::RAW.get(lang)) }
        @for (act, doc) in &input.evidence {
            details data-raw=(act) id=(evidence_anchor(*act)) {
                summary class="mono" { "evidence/" (format!("{act:02}")) ".json"
                    @if let Ok(d) = doc { " · " (d.digest()) } }
                pre { (embedded(doc.as_ref().map(|d| d.value()), &format!("evidence/{act:02}.json"), lang)) }
            }
        }
        @for (file, v) in &input.inputs {
            details {
                summary class="mono" { (file.file_name()) }
                pre { (embedded(v.as_ref(), file.file_name(), lang)) }
            }
        }
    }
}

/// One lab's line in a run's index page.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// The lab.
    pub lab: Lab,
    /// Relative link to its report (e.g. `b/report.html`).
    pub href: String,
    /// Acts whose grade passes (of [`crate::acts::count`]).
    pub grades_passed: usize,
    /// The key facts ([`key_facts`]).
    pub key_facts: [String; 3],
    /// Extra links (e.g. `b/diagnostics/`), with their text.
    pub links: Vec<(String, String)>,
}

/// The index page of one run (`target/lab-artifacts/<run-id>/index.html`): one row per lab with its
/// grade count, key facts and a link to its report. English (maintainers' page).
pub fn index(run_id: &str, entries: &[IndexEntry]) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { "lab run " (run_id) } style { (PreEscaped(CSS)) } }
            body {
                h1 { "lab run " (run_id) }
                table {
                    tr { th { "lab" } th { "grades" } @for h in KEY_FACT_HEADERS { th { (h) } } th { "files" } }
                    @for e in entries {
                        tr data-lab=(e.lab.as_str()) {
                            td { a href=(e.href) { "lab " (e.lab.as_str()) } }
                            td class=(if e.grades_passed == usize::from(crate::acts::count(e.lab)) { "pass" } else { "fail" }) { (e.grades_passed) " / " (crate::acts::count(e.lab)) }
                            @for c in &e.key_facts { td class="mono" { (c) } }
                            td { @for (href, text) in &e.links { a href=(href) { (text) } " " } }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

/// Writes `bytes` to `path` atomically and by descriptor, so a reader never sees half a page and
/// no other user can steer the write: the directory is opened by the trusted walk
/// ([`crate::files::TrustedDir::open`] with [`crate::files::Owner::Output`]: no link on the way,
/// every ancestor root's or ours and not writable by others unless sticky and root's; the
/// directory ours, `sudo`'s user's, or sticky and root's; created `0755` when missing), and the
/// page is an unnamed file of mode `0644` named into place relative to its fd
/// ([`crate::files::TrustedDir::write_file`]; no chmod, nothing left by a signal).
///
/// Errors: [`crate::error::LabError::UntrustedDir`] naming the directory refused and why,
/// [`crate::error::LabError::Io`] naming the path.
pub fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), crate::error::LabError> {
    use crate::error::LabError;
    use crate::files::{Owner, TrustedDir};
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = parent.unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| LabError::io(path)(std::io::ErrorKind::InvalidInput.into()))?;
    let opened =
        TrustedDir::open(dir, Some(0o755), Owner::Output).map_err(crate::workdir::refused)?;
    opened
        .write_file(name, bytes, 0o644, true)
        .map_err(LabError::io(path))
}
