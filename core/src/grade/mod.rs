//! Graders: pure functions from (student inputs, saved evidence) to [`Findings`].
//!
//! `grade N` never talks to the cluster, never injects a fault and never calls the webhook path; it
//! reads the work directory once ([`GradeInput::load`], the only I/O here) and checks that each act's
//! evidence is complete and agrees with itself and with the inputs: outcomes are re-derived from
//! the raw answers with [`crate::classify::classify`] (so `stored` without a UID, an `already-exists`
//! counted as a deny, or a deny without the policy's marker are caught), a `webhook-timeout` must
//! have taken at least `timeoutSeconds`, the existing pod must keep act 3's UID, digests must match.
//! It is a consistency check for learning, not tamper-proofing against root.
//!
//! Acts 1-3 are shared ([`grade`] handles them here); lab B's acts 4-8 are in [`b`], lab A's in [`a`],
//! lab C's in [`c`]; the rules of every freeze (labs B and C, acts 5-7) in `freeze.rs`.
//! Every timing bound is in [`bounds`].
//!
//! # Cross-checks: each observation held against the claim and the earlier acts
//!
//! In `docs/labs.md` terms; a missing observation the act could have made is a finding
//! (`observation-missing`, `facts-invalid`, `not-confirmed`). Lab C's acts have their own table
//! ([`c`]); the rules of every act of every lab are in [`server`], [`metrics`], [`audit`] and
//! `witness.rs` (facts against the raw records they were derived from, one UID one object).
//!
//! | lab | act | observation | held against | code |
//! |---|---|---|---|---|
//! | all | 1 | live node / namespace UIDs, lab mark | `scope.json` | uid-mismatch, value-mismatch |
//! | all | 2 | the stored policy (UID) and its live registration | `policy.json` (failurePolicy, `timeoutSeconds`); scope: empty objectSelector, no matchConditions, called for a pod CREATE in the target namespace and not in the control one (`admission::webhook_match`) | value-mismatch, registration-scope |
//! | A, B | 3 | the deny's webhook and verdict; the good pod's UID; the order of the act's observations | act 2's webhook name; `Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED`; each other | deny-other-webhook, deny-is-evaluation-error, deny-without-marker, times-inconsistent |
//! | B | 4 | node / Deployment UID, process identity, state not `T` | act 1; `freeze-plan.json` | uid-mismatch, process-still-stopped |
//! | B, C | 5-7 | every freeze (`freeze.rs`): the registration read during it, each call failure's webhook, path and `timeout=`, each timeout's `elapsed_ms`, process state and identity, the watchdog's resume, the requests after it (the last the first deny); act 6's switch to Ignore | act 2's (act 6: act 6's) registration and scope; `[T, T + 1 s)` and the other [`bounds`]; act 4's identity (act 6: act 5's `identity_after`) | registration-*, call-failure-other-webhook, call-timeout-mismatch, timeout-too-fast, timeout-too-slow, identity-changed, restart-contradicted, times-inconsistent, outside-window, deny-other-webhook |
//! | A | 4 | Lease holder | one of the recorded controller pods | value-mismatch |
//! | A | 5 | registration list, policy UID, target/control requests, existing pod; the violating request inside the fault (sent after the list was read, answered before the watcher's deadline = armed + `restore_after_sec`); `scaled_at`, `watcher` and `policy` re-derived ([`crate::derive`]) from raw `scale-down`, `watcher-ready`, `policy`; the policy's webhook in the raw list, when listed (`listed_policy_webhook_equals_act2`) | act 2, act 3; the watcher; the act's raw records | (see [`a`]), times-inconsistent, outside-window, raw-mismatch, observation-missing, registration-changed |
//! | A | 6 | six recovery steps confirmed, none seen before the last check without its cause (`rules::a::recovery_order`), each step's wait from one start (`at − waited_ms`, [`bounds::STEP_START_SPREAD_MS`]); Lease holder = the new pod (not an act 4 pod), which exists and is not Pending once seen Running; the restore seen no sooner than act 5's scale-down; the registration after recovery; the probes, violating dry-runs one after the other, the last the deny | each other; act 4; act 5's scale-down; act 2's registration (but the configuration object's UID) and webhook | timeline-order, times-inconsistent, value-mismatch, deny-other-webhook, registration-changed |
//! | A | 7 | dry-run echo and GET; the deny's webhook | the request; act 2's webhook | raw-mismatch, deny-other-webhook |
//! | all | every request | the record against itself (`G::request_is_its_answer`, once per record): outcome, reason, message, code and `status: Failure` re-derived from the verbatim body (`classify::answer_fields`, `classify`); the body's kind, namespace, labels, causes and named pod; the GET's uid and phase vs `exists`; `sent_at ≤ answered_at ≤ get.at`, `elapsed_ms`; its raw `request:*` record of the same name | the record's own fields | outcome-contradicts-answer, raw-mismatch, times-inconsistent, stored-without-uid, rejected-but-stored |
//! | all | later acts | the existing pod (`existing_pod_survives`); a violating pod while the Fail registration is in force (`violating_pod_never_admitted_under_fail`) | act 3's name, namespace, UID, restart count, `Running`; never admitted | pod-replaced, pod-not-running, restart-contradicted, outcome-unexpected |
//! | all | every act | every observation time of `facts` and every raw record's `at` (`times_inside_the_act`); every name of a request (`names_unique`) | the act's `[started_at, finished_at]`; every other act's requests | times-inconsistent, name-reused |
//! | all | 8 | each word of `report.json`; act 8's own record of the comparison | the acts' own rule (`rules::*::report_expectations`, `rules::a::evidence_words`); `report.json`'s fields, the evidence digests | report-contradicted, digest-mismatch |

pub mod a;
pub mod audit;
pub mod b;
pub mod bounds;
pub mod c;
mod freeze;
pub mod metrics;
mod policy;
pub mod server;
pub mod unheld;
mod witness;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde::de::DeserializeOwned;
use strum::{EnumIter, IntoStaticStr};

use crate::classify::classify;
use crate::evidence::{ActStatus, Evidence, Lab, Outcome, RequestRecord};
use crate::facts::{self, PodObservation};
use crate::inputs::{self, Context, InputFile, StudentInput};
use crate::rules::common::{CONTROL_NAMESPACE, TARGET_NAMESPACE};
use crate::workdir::Workdir;
use Code::*;

/// What makes a deny the lab policy's verdict (the same the probes classify with).
pub const MARKERS: &crate::classify::PolicyVerdict<'static> = &crate::classify::LAB_POLICY;

/// The kind of a finding; its wire name is kebab-case (e.g. `timeout-too-fast`), the same for
/// serde and [`Code::as_str`] (strum's `IntoStaticStr`); `Code::iter()` (strum's `EnumIter`) lists
/// every code, so no list of codes is kept by hand (`messages::code_text` is an exhaustive match).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, IntoStaticStr, EnumIter,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Code {
    /// An evidence file the act needs does not exist.
    EvidenceMissing,
    /// An evidence file is not JSON or not the evidence shape, or belongs to another lab/act.
    EvidenceInvalid,
    /// The act was interrupted: its results are uncertain.
    EvidenceInterrupted,
    /// `facts` is empty or not the act's facts shape.
    FactsInvalid,
    /// A student input file the act needs does not exist.
    InputMissing,
    /// A student input file is invalid (file, JSON path, expected, found in the detail).
    InputInvalid,
    /// A student input changed after the act recorded its digest.
    InputChanged,
    /// A request's outcome is not the one this act must observe.
    OutcomeUnexpected,
    /// A recorded outcome is not what the raw answer and the GET say.
    OutcomeContradictsAnswer,
    /// `stored` without the GET finding the object with a UID.
    StoredWithoutUid,
    /// `explicit-deny` whose message does not carry the policy's marker.
    DenyWithoutMarker,
    /// A 409 AlreadyExists counted as a policy decision.
    AlreadyExistsCountedAsDeny,
    /// A rejected (or dry-run) request whose object the GET found.
    RejectedButStored,
    /// A `webhook-timeout` answered sooner than `timeoutSeconds`.
    TimeoutTooFast,
    /// A `webhook-timeout` answered later than `timeoutSeconds` + [`bounds::TIMEOUT_LATE_MS`].
    TimeoutTooSlow,
    /// A call failure that names another webhook (name or URL path) than the policy's own
    /// registration recorded for this act.
    CallFailureOtherWebhook,
    /// The `timeout=` of the failed call's URL is not the registration's `timeoutSeconds`.
    CallTimeoutMismatch,
    /// An `explicit-deny` by another webhook than the policy's own registration.
    DenyOtherWebhook,
    /// A deny that is Kyverno's evaluation-error form (`Policy <name> error: …`), not a verdict.
    DenyIsEvaluationError,
    /// A registration whose `objectSelector` or `matchConditions` let matching pods skip the call.
    RegistrationScope,
    /// The registration read during a fault differs from the one the earlier act recorded.
    RegistrationChanged,
    /// An observation the act could have made is missing (never a silent pass).
    ObservationMissing,
    /// Timestamps that are missing, unparsable, or disagree with `elapsed_ms` or with each other.
    TimesInconsistent,
    /// The verbatim answer (`raw_response`) disagrees with the recorded fields.
    RawMismatch,
    /// The existing pod has another UID than act 3's (a new pod with the same name is not survival).
    PodReplaced,
    /// The existing pod is gone or not `Running`.
    PodNotRunning,
    /// A request name was used twice (every request must use a fresh name).
    NameReused,
    /// An `*_sha256` value does not match the evidence file's canonical digest.
    DigestMismatch,
    /// A UID in the inputs or facts does not match the one observed.
    UidMismatch,
    /// A recorded value differs from the one this act must observe.
    ValueMismatch,
    /// A request was not sent inside the window it belongs to (e.g. during the freeze).
    OutsideWindow,
    /// The policy's webhook registration was not observed where it must be.
    RegistrationMissing,
    /// A claim about the registration contradicts the raw list recorded with it.
    RegistrationClaimContradicted,
    /// The frozen process is not the one identified before (act 4, or for act 6 the one seen after act 5).
    IdentityChanged,
    /// The controller's restart count and the container seen after the fault contradict each
    /// other (a restart without a new container, a new container without a restart, or a count
    /// that went down). A restart itself is an observation, never a finding.
    RestartContradicted,
    /// The process was still stopped after resume.
    ProcessStillStopped,
    /// Timeline steps out of order.
    TimelineOrder,
    /// A wait ran out (a readiness bound of the tool, not a policy verdict).
    NotConfirmed,
    /// A report claim is not what the evidence shows.
    ReportContradicted,
    /// The API server's admission webhook metrics disagree with the act's request outcomes (the
    /// finding names both records); see [`metrics`].
    MetricsContradicted,
    /// The API server's admission webhook metrics were not observed for this act (the evidence
    /// predates them, or `/metrics` could not be read): reported as a note, not a failure.
    MetricsNotObserved,
    /// The API server's audit event of a request disagrees with the act's record of it (the
    /// finding names both: the request and the event's `auditID` and JSON path); see [`audit`].
    AuditContradicted,
    /// The API server's own timing of a webhook call (the audit latency annotation) was not
    /// observed on a request that called the webhook and lasted long enough to carry it (an API
    /// server without the latency tracker): a note; the audit event's own span is held instead.
    TimingNotObserved,
    /// The API server's audit events were not observed for this act (`not-configured` on a
    /// backend without an audit log, a read error, or evidence that predates them): a note.
    AuditNotObserved,
    /// A pod the policy denies was stored (or dry-run admitted) while the newest registration
    /// read before it registered the policy's webhook with failurePolicy Fail ([`server`]).
    AdmittedUnderFail,
    /// A webhook call failure returned to the client, or counted as a `calling_webhook_error`
    /// rejection, for a webhook registered with failurePolicy Ignore (the API server fails open;
    /// [`server`]).
    CallFailureUnderIgnore,
    /// Two reads of one Lease tell two stories: `leaseTransitions` fell, one tenure shows two
    /// holders or two `acquireTime`s, or a read made after a takeover does not show it ([`server`]).
    LeaseTenureContradicted,
}

impl Code {
    /// The wire name, e.g. `timeout-too-fast`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One problem a grader found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What kind of problem.
    pub code: Code,
    /// Where: a file or a facts path, e.g. `evidence/05.json facts.target_good`.
    pub subject: String,
    /// Language-neutral particulars (values, expected/found); empty when the code's text says it
    /// all (what to do is in the code's text, [`crate::messages::code_text`]).
    pub detail: String,
}

/// The result of grading one act.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Findings {
    /// The lab.
    pub lab: Lab,
    /// The act ([`crate::acts`]).
    pub act: u8,
    /// How many checks ran (a pass with 0 checks would mean nothing was checked).
    pub checks: u32,
    /// The problems found; empty when the act passes.
    pub findings: Vec<Finding>,
    /// Checks that could not be made, reported but not failing the act (e.g.
    /// [`Code::MetricsNotObserved`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Finding>,
}

impl Findings {
    /// No findings and at least one check ran.
    pub fn passed(&self) -> bool {
        self.findings.is_empty() && self.checks > 0
    }

    /// Whether a finding with `code` is present.
    pub fn has(&self, code: Code) -> bool {
        self.findings.iter().any(|f| f.code == code)
    }
}

/// An evidence file as read: its JSON; its canonical digest and its typed [`Evidence`] are
/// computed when first asked for and kept ([`EvidenceDoc::digest`], [`EvidenceDoc::evidence`]):
/// most grades never read the digest, and grading one act reads the other acts' evidence, so a
/// [`GradeInput`] graded many times (all acts of a lab, a mutation test) parses each file once.
#[derive(Debug, Clone)]
pub struct EvidenceDoc {
    value: serde_json::Value,
    digest: std::sync::OnceLock<String>,
    evidence: std::sync::OnceLock<Result<std::sync::Arc<Evidence>, String>>,
}

impl EvidenceDoc {
    /// The document of `value`.
    pub fn new(value: serde_json::Value) -> EvidenceDoc {
        EvidenceDoc {
            value,
            digest: std::sync::OnceLock::new(),
            evidence: std::sync::OnceLock::new(),
        }
    }

    /// The parsed JSON. Not changeable in place (the digest and [`Evidence`] kept would go stale):
    /// a changed document is a new [`EvidenceDoc::new`].
    pub fn value(&self) -> &serde_json::Value {
        &self.value
    }

    /// The JSON read as [`Evidence`] (parsed on the first call), or serde's message why not.
    pub fn evidence(&self) -> Result<std::sync::Arc<Evidence>, String> {
        self.evidence
            .get_or_init(|| {
                <Evidence as serde::Deserialize>::deserialize(&self.value)
                    .map(std::sync::Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// Its canonical digest ([`crate::digest::digest_value`]: lowercase hex SHA-256 of the RFC 8785
    /// form), computed on the first call.
    pub fn digest(&self) -> &str {
        self.digest
            .get_or_init(|| crate::digest::digest_value(&self.value))
    }
}

/// Two documents are equal when their JSON is (the digest is a function of it).
impl PartialEq for EvidenceDoc {
    fn eq(&self, other: &EvidenceDoc) -> bool {
        self.value == other.value
    }
}

/// Everything a grader may look at: the lab's input files and evidence files, as read.
/// `Err` holds why a file present on disk could not be read as JSON.
#[derive(Debug, Clone, Default)]
pub struct GradeInput {
    /// Student inputs present in the work directory.
    pub inputs: BTreeMap<InputFile, Result<serde_json::Value, String>>,
    /// Evidence files present (`act` → document).
    pub evidence: BTreeMap<u8, Result<EvidenceDoc, String>>,
}

impl GradeInput {
    /// Reads the lab's inputs and `evidence/NN.json` files from `workdir` (the only I/O of grading)
    /// with the one reader ([`crate::json`]), so grade refuses what `check`, the acts and `digest`
    /// refuse. Missing files are simply absent; unreadable or non-I-JSON ones are kept as `Err`
    /// (file, JSON path, expected, found) for the graders to report.
    pub fn load(workdir: &Workdir, lab: Lab) -> GradeInput {
        let mut gi = GradeInput::default();
        for file in InputFile::all(lab) {
            let path = workdir.input_path(file);
            if path.exists() {
                let v = crate::json::read_input(&path, file.file_name()).map_err(|e| e.to_string());
                gi.inputs.insert(file, v);
            }
        }
        for act in crate::acts::numbers(lab) {
            let path = workdir.evidence_path(act);
            if path.exists() {
                let v = crate::json::read(&path)
                    .map_err(|e| match e {
                        crate::json::ReadError::Invalid(p) => p.to_string(),
                        crate::json::ReadError::Io(e) => e.to_string(),
                        crate::json::ReadError::NotFound => "not found".to_owned(),
                    })
                    .map(EvidenceDoc::new);
                gi.evidence.insert(act, v);
            }
        }
        gi
    }

    /// Canonical digests of the evidence files that parsed.
    pub fn digests(&self) -> BTreeMap<u8, String> {
        self.evidence
            .iter()
            .filter_map(|(a, d)| d.as_ref().ok().map(|d| (*a, d.digest().to_owned())))
            .collect()
    }
}

/// The function of a grader the registry names ([`crate::acts::ActSpec`]'s `grader`).
pub(crate) fn grader_of(grader: crate::acts::Grader) -> fn(&mut G) {
    use crate::acts::Grader;
    match grader {
        Grader::SharedAct1 => act1,
        Grader::SharedAct2 => act2,
        Grader::SharedAct3 => act3,
        Grader::BAct4 => b::act4,
        Grader::BFreeze => b::freeze_acts,
        Grader::BAct7 => b::act7,
        Grader::BAct8 => b::act8,
        Grader::AAct4 => a::act4,
        Grader::AAct5 => a::act5,
        Grader::AAct6 => a::act6,
        Grader::AAct7 => a::act7,
        Grader::AAct8 => a::act8,
        Grader::CAct3 => c::act3,
        Grader::CAct4 => c::act4,
        Grader::CFreeze => c::freeze_acts,
        Grader::CAct7 => c::act7,
        Grader::CAct8 => c::act8,
    }
}

/// Grades act `act` of `lab` (an act the registry, [`crate::acts`], does not list has no checks
/// beyond its evidence file). Pure: reads only `input`.
pub fn grade(lab: Lab, act: u8, input: &GradeInput) -> Findings {
    let spec = crate::acts::spec(lab, act);
    let mut g = G::new(lab, act, input);
    g.audit_applies = spec.is_some_and(|s| s.audit);
    g.metrics_applies = spec.is_some_and(|s| s.metrics);
    if let Some(ev) = g.evidence(act) {
        if let Some(spec) = spec {
            grader_of(spec.grader)(&mut g);
        }
        g.names_unique();
        witness::one_uid_one_object(&mut g);
        times_inside_the_act(&mut g, &ev);
        metrics::grade(&mut g, &ev);
        audit::grade(&mut g, &ev);
        server::grade(&mut g, &ev);
    }
    g.finish()
}

/// What `check report.json` ran of act 8's rule: the words the evidence supports, field by
/// field, from the same function act 8 and its grader use (`rules::*::report_expectations`,
/// `rules::a::evidence_words`); empty when the evidence of the acts the report is about is
/// missing or unreadable (then `findings` says which).
#[derive(Debug, Clone)]
pub struct ReportCheck {
    /// (report field, the word the evidence supports), in the rule's order.
    pub words: Vec<(String, String)>,
    /// Act 8's findings on the report alone (act 8's own evidence is not read).
    pub findings: Findings,
}

/// Runs act 8's grader of `lab` on the report and the evidence of `input`, without act 8's own
/// evidence (so it answers before act 8 ran): the rule `check report.json` shares with act 8.
/// Pure: reads only `input`.
pub fn check_report(lab: Lab, input: &GradeInput) -> ReportCheck {
    let act = crate::acts::count(lab);
    let mut g = G::new(lab, act, input);
    g.report_only = true;
    if let Some(spec) = crate::acts::spec(lab, act) {
        grader_of(spec.grader)(&mut g);
    }
    let words = std::mem::take(&mut g.words);
    ReportCheck {
        words,
        findings: g.finish(),
    }
}

/// The recorded run `run` of `lab` (`lab/tests/fixtures/recorded/<run>`) as [`grade`] reads it,
/// through [`GradeInput::load`]: the unit tests' real evidence.
#[cfg(test)]
pub(crate) fn recorded_run(lab: Lab, run: &str) -> GradeInput {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/tests/fixtures/recorded");
    GradeInput::load(&Workdir::new(dir.join(run)), lab)
}

/// Grades every act of `lab` in order.
pub fn grade_all(lab: Lab, input: &GradeInput) -> Vec<Findings> {
    crate::acts::numbers(lab)
        .map(|act| grade(lab, act, input))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The grading context shared by every lab's graders.

/// Grading state of one act: counts checks and collects findings.
pub(crate) struct G<'a> {
    pub(crate) lab: Lab,
    pub(crate) act: u8,
    /// Whether the registry ([`crate::acts`]) says the act keeps the API server's audit events
    /// (`grade/audit.rs` applies); set by [`grade`], so that the rules need not read the registry.
    pub(crate) audit_applies: bool,
    /// Whether the act keeps `/metrics` deltas (`grade/metrics.rs` applies); set by [`grade`].
    pub(crate) metrics_applies: bool,
    input: &'a GradeInput,
    checks: u32,
    findings: Vec<Finding>,
    notes: Vec<Finding>,
    reported: BTreeSet<(Code, String)>,
    /// Set by [`check_report`]: act 8's graders compare the report's words only (act 8's own
    /// evidence is not needed: `check` runs before act 8 too).
    pub(crate) report_only: bool,
    /// Each report word act 8's rule compared: (field, the word the evidence supports).
    words: Vec<(String, String)>,
}

pub(crate) fn ev_name(act: u8) -> String {
    format!("evidence/{act:02}.json")
}

impl<'a> G<'a> {
    fn new(lab: Lab, act: u8, input: &'a GradeInput) -> Self {
        G {
            lab,
            act,
            audit_applies: false,
            metrics_applies: false,
            input,
            checks: 0,
            findings: Vec::new(),
            notes: Vec::new(),
            reported: BTreeSet::new(),
            report_only: false,
            words: Vec::new(),
        }
    }

    fn finish(self) -> Findings {
        Findings {
            lab: self.lab,
            act: self.act,
            checks: self.checks,
            findings: self.findings,
            notes: self.notes,
        }
    }

    /// Records a finding (once per code and subject).
    pub(crate) fn flag(
        &mut self,
        code: Code,
        subject: impl Into<String>,
        detail: impl Into<String>,
    ) {
        let subject = subject.into();
        if self.reported.insert((code, subject.clone())) {
            self.findings.push(Finding {
                code,
                subject,
                detail: detail.into(),
            });
        }
    }

    /// Counts a check that could not be made (its witness absent) and says so in a note, which
    /// does not fail the act (e.g. [`Code::MetricsNotObserved`]).
    pub(crate) fn note(&mut self, code: Code, subject: impl Into<String>, detail: String) {
        self.checks += 1;
        let subject = subject.into();
        self.notes.push(Finding {
            code,
            subject,
            detail,
        });
    }

    /// Counts a check; flags `code` when `ok` is false. Returns `ok`.
    pub(crate) fn check(
        &mut self,
        ok: bool,
        code: Code,
        subject: impl Into<String>,
        detail: impl FnOnce() -> String,
    ) -> bool {
        self.checks += 1;
        if !ok {
            self.flag(code, subject, detail());
        }
        ok
    }

    /// Checks `found == expected` (value-mismatch or `code`).
    pub(crate) fn expect_eq<T: PartialEq + std::fmt::Debug>(
        &mut self,
        code: Code,
        subject: impl Into<String>,
        expected: T,
        found: T,
    ) -> bool {
        self.check(expected == found, code, subject, || {
            format!("expected {expected:?}, found {found:?}")
        })
    }

    /// The evidence of `act` (checked: present, parsable, this lab and act, completed, inputs unchanged).
    pub(crate) fn evidence(&mut self, act: u8) -> Option<std::sync::Arc<Evidence>> {
        let name = ev_name(act);
        self.checks += 1;
        let found = match self.input.evidence.get(&act) {
            None => Err((EvidenceMissing, String::new())),
            Some(Err(e)) => Err((EvidenceInvalid, e.clone())),
            Some(Ok(doc)) => doc.evidence().map_err(|e| (EvidenceInvalid, e)),
        };
        let found = found.and_then(|ev| match (ev.lab, ev.act, self.lab) {
            (lab, its_act, expected) if lab != expected || its_act != act => Err((
                EvidenceInvalid,
                format!("holds lab {lab:?} act {its_act}, expected lab {expected:?} act {act}"),
            )),
            _ => Ok(ev),
        });
        let ev = match found {
            Ok(ev) => ev,
            Err((code, why)) => {
                self.flag(code, name, why);
                return None;
            }
        };
        let interrupted = ev.status == ActStatus::Interrupted;
        self.check(!interrupted, EvidenceInterrupted, name.clone(), || {
            ev.interruption.clone().unwrap_or_default()
        });
        if act == self.act {
            let sub = format!("{name} started_at/finished_at");
            self.times_ordered(&sub, &ev.started_at, &ev.finished_at);
            for (file_name, recorded) in &ev.inputs {
                let current =
                    InputFile::from_name(self.lab, file_name).map(|f| self.input.inputs.get(&f));
                if current.is_some_and(|c| c.is_none()) {
                    // A missing file is input-missing, not also a changed one.
                    self.check(false, InputMissing, file_name.clone(), String::new);
                    continue;
                }
                let current = current.flatten().and_then(|v| v.as_ref().ok());
                let now = current.map(crate::digest::digest_value);
                let ok = now.as_deref() == Some(recorded.as_str());
                self.check(ok, InputChanged, file_name.clone(), || {
                    let now = now.clone().unwrap_or_else(|| "no readable content".into());
                    format!("{name} recorded digest {recorded}, the file now has {now}")
                });
            }
        }
        if interrupted { None } else { Some(ev) }
    }

    /// The typed facts of `act` (flags facts-invalid when empty or of another shape).
    pub(crate) fn facts<T: DeserializeOwned>(&mut self, act: u8) -> Option<T> {
        let ev = self.evidence(act)?;
        self.checks += 1;
        let e = match serde_json::from_value::<T>(ev.facts.clone()) {
            Ok(f) => return Some(f),
            Err(e) => e.to_string(),
        };
        let empty = ev.facts.is_null() || ev.facts.as_object().is_some_and(|o| o.is_empty());
        let detail = if empty {
            format!("facts is empty ({e})")
        } else {
            e
        };
        self.flag(FactsInvalid, format!("{} facts", ev_name(act)), detail);
        None
    }

    /// A student input validated against `ctx` (flags input-missing / input-invalid).
    pub(crate) fn input<T: StudentInput>(&mut self, ctx: &Context) -> Option<T> {
        let value = self.required_input_value(T::FILE)?;
        self.input_of(&value, ctx)
    }

    /// [`G::input`] of the file's JSON `v`, already read with [`G::required_input_value`].
    fn input_of<T: StudentInput>(&mut self, v: &serde_json::Value, ctx: &Context) -> Option<T> {
        match inputs::parse::<T>(v, ctx) {
            Ok(t) => Some(t),
            Err(crate::error::LabError::InputInvalid { issues }) => {
                for i in issues {
                    // Only a well-formed value that differs from the live one or the evidence's
                    // is a mismatch; a missing, unknown or malformed field is invalid input.
                    let code = match i.mismatch {
                        Some(inputs::Source::Digest(_)) => DigestMismatch,
                        Some(_) => UidMismatch,
                        None => InputInvalid,
                    };
                    let (at, why) = (format!("{} {}", i.file, i.json_path), i.found);
                    self.flag(code, at, format!("expected {}, found {why}", i.expected));
                }
                None
            }
            Err(e) => {
                self.flag(InputInvalid, T::FILE.file_name(), e.to_string());
                None
            }
        }
    }

    /// The raw JSON of a student input that a check of this act compares against (flags
    /// input-missing / input-invalid when it is absent or not I-JSON, so the comparison is never
    /// skipped silently).
    pub(crate) fn required_input_value(&mut self, file: InputFile) -> Option<serde_json::Value> {
        let name = file.file_name();
        self.checks += 1;
        let (code, why) = match self.input.inputs.get(&file) {
            Some(Ok(v)) => return Some(v.clone()),
            Some(Err(e)) => (InputInvalid, e.clone()),
            None => (InputMissing, String::new()),
        };
        self.flag(code, name, why);
        None
    }

    /// The input context of a file that quotes the evidence of `acts` (a lab report, act 8; a plan,
    /// act 4's act 3): their canonical digests; an act of `acts` without readable evidence is
    /// reported through [`G::evidence`] (missing or unreadable), once.
    pub(crate) fn report_context(&mut self, acts: std::ops::RangeInclusive<u8>) -> Context {
        let digests = self.input.digests().into_iter();
        let ctx = Context {
            evidence_digests: digests.filter(|(a, _)| acts.contains(a)).collect(),
            ..Default::default()
        };
        for a in acts {
            if !ctx.evidence_digests.contains_key(&a) {
                self.evidence(a);
            }
        }
        ctx
    }

    /// Checks `a <= b` for two timestamps (flags times-inconsistent). Returns whether both parse and hold.
    pub(crate) fn times_ordered(&mut self, subject: &str, a: &str, b: &str) -> bool {
        let (ta, tb) = (facts::parse_rfc3339(a), facts::parse_rfc3339(b));
        let ok = matches!((ta, tb), (Some(x), Some(y)) if x <= y);
        self.check(ok, TimesInconsistent, subject, || {
            format!("expected {a:?} <= {b:?}")
        })
    }

    /// Checks that `t` lies in `[from, to]` (flags outside-window).
    pub(crate) fn within(
        &mut self,
        subject: &str,
        what: &str,
        t: &str,
        from: &str,
        to: &str,
    ) -> bool {
        let p = facts::parse_rfc3339;
        let ok = matches!((p(t), p(from), p(to)), (Some(x), Some(f), Some(u)) if f <= x && x <= u);
        self.check(ok, OutsideWindow, subject, || {
            format!("{what} {t:?} not within [{from:?}, {to:?}]")
        })
    }

    /// Checks the act's expectation of one request record: its outcome is one of `expect` (flags
    /// [`Code::OutcomeUnexpected`]). The record against itself is held once, for every record of
    /// every act, by [`server::every_request_is_its_answer`] ([`G::request_is_its_answer`]).
    pub(crate) fn request(&mut self, subject: &str, r: &RequestRecord, expect: &[Outcome]) {
        let ok = expect.contains(&r.outcome);
        self.check(ok, OutcomeUnexpected, subject, || {
            let e: Vec<_> = expect.iter().map(|o| o.as_str()).collect();
            format!("expected {}, found {}", e.join(" or "), r.outcome.as_str())
        });
    }

    /// Checks one request record against itself: the recorded outcome is what its raw answer
    /// says, its times agree, a rejected request was not stored, the raw body agrees, its name
    /// and labels are a pod the tool sends.
    pub(crate) fn request_is_its_answer(&mut self, subject: &str, r: &RequestRecord) {
        self.outcome_is_the_answers(subject, r);
        self.request_times_agree(subject, r);
        self.raw_answer_is_the_record(subject, r);
        witness::request_name_is_a_pod_name(self, subject, r);
        witness::request_labels_are_the_tools_two_pods(self, subject, r);
    }

    /// Part of the record-against-itself rule: the recorded outcome is what the raw answer and
    /// the GET say (re-derived with [`classify`], its special cases named: stored without a UID,
    /// an AlreadyExists counted as a deny, Kyverno's evaluation error, a deny without the
    /// policy's verdict).
    fn outcome_is_the_answers(&mut self, subject: &str, r: &RequestRecord) {
        let (reason, msg) = (r.reason.as_deref(), r.message.as_deref());
        let derived = classify(r.http_status, reason, msg, &r.get, r.dry_run, MARKERS);
        let (msg, verdict) = (msg.unwrap_or(""), MARKERS.text());
        // A deny the answer does not make a verdict of the policy's.
        let not_a_verdict = r.outcome == Outcome::ExplicitDeny && derived != Outcome::ExplicitDeny;
        let (code, why) = if r.outcome == Outcome::Stored
            && !(r.get.exists && r.get.uid.as_deref().is_some_and(|u| !u.is_empty()))
        {
            let why = format!("get.exists={}, get.uid={:?}", r.get.exists, r.get.uid);
            (StoredWithoutUid, why)
        } else if not_a_verdict && derived == Outcome::AlreadyExists {
            let why = format!("HTTP {} {:?}: {msg}", r.http_status, r.reason);
            (AlreadyExistsCountedAsDeny, why)
        } else if not_a_verdict
            && crate::classify::parse_deny(msg)
                .is_some_and(|d| d.verdict.contains(&MARKERS.error_prefix()))
        {
            let why = format!(
                "message {msg:?} is Kyverno's evaluation error, not the verdict {verdict:?}"
            );
            (DenyIsEvaluationError, why)
        } else if not_a_verdict && msg.contains("denied the request") {
            let why = format!("message {msg:?} does not carry the policy's verdict {verdict:?}");
            (DenyWithoutMarker, why)
        } else {
            self.check(derived == r.outcome, OutcomeContradictsAnswer, subject, || {
                let (was, status, exists, is) = (r.outcome.as_str(), r.http_status, r.get.exists, derived.as_str());
                format!("recorded {was}, but HTTP {status} {reason:?} {msg:?} with get.exists={exists} says {is}")
            });
            return;
        };
        self.check(false, code, subject, || why);
    }

    /// Part of the record-against-itself rule: `sent_at ≤ answered_at` and their difference is
    /// `elapsed_ms` ([`bounds::CLOCK_SKEW_MS`]); the GET follows the answer, at once
    /// ([`bounds::GET_AFTER_ANSWER_MS`]). Flags [`Code::TimesInconsistent`].
    fn request_times_agree(&mut self, subject: &str, r: &RequestRecord) {
        let (sent, answered, ms) = (&r.sent_at, &r.answered_at, r.elapsed_ms);
        let (s, a) = (facts::parse_rfc3339(sent), facts::parse_rfc3339(answered));
        let skew = bounds::CLOCK_SKEW_MS as i64;
        let ok = s
            .zip(a)
            .is_some_and(|(s, a)| a >= s && ((a - s).num_milliseconds() - ms as i64).abs() <= skew);
        self.check(ok, TimesInconsistent, subject, || {
            format!("sent_at {sent:?}, answered_at {answered:?}, elapsed_ms {ms}")
        });
        // The GET that says stored or not stored must come after the answer: a GET answered
        // before the create was answered can miss an object stored later (rule: never infer
        // "stored" or "not stored" without a GET after the answer).
        let get_at = &r.get.at;
        let (g_at, sub) = (facts::parse_rfc3339(get_at), format!("{subject}.get.at"));
        let ok = matches!((g_at, a), (Some(g), Some(a)) if g >= a);
        self.check(ok, TimesInconsistent, &sub, || {
            format!("the GET was answered at {get_at:?}, the request at {answered:?}: the GET must follow the answer")
        });
        // ... and at once: the GET is the probe's next API call ([`bounds::GET_AFTER_ANSWER_MS`]).
        let most = bounds::GET_AFTER_ANSWER_MS;
        let ok = matches!((g_at, a), (Some(g), Some(a)) if (g - a).num_milliseconds() <= most);
        self.check(ok, TimesInconsistent, sub, || {
            format!("the GET was answered at {get_at:?}, more than {most} ms after the request's answer at {answered:?}")
        });
    }

    /// Part of the record-against-itself rule, the answer and the GET against the record:
    /// - a request not admitted (a dry-run too) does not exist afterwards
    ///   ([`Code::RejectedButStored`]);
    /// - the verbatim answer agrees with the recorded name, UID, reason, message and code
    ///   ([`Code::RawMismatch`] on `subject`);
    /// - it is the API server's answer about the record's object ([`Code::RawMismatch`] on
    ///   `<subject>.raw_response`): a 2xx body is a `v1` `Pod` in the record's namespace with the
    ///   record's labels; a refusal's body, when an object, is a `v1` `Status` whose
    ///   `details.causes` (an `InternalError`'s cause) is its message after `Internal error
    ///   occurred: `, and whose `pods "<name>" is forbidden` prefix, when present, names the
    ///   record's pod;
    /// - a GET that found the object carries its UID and phase (the API server sets `Pending` on
    ///   create), one that did not neither ([`Code::RawMismatch`] on `<subject>.get`).
    fn raw_answer_is_the_record(&mut self, subject: &str, r: &RequestRecord) {
        // A request that was not admitted must not exist afterwards; a dry-run never stores.
        let admitted = matches!(r.outcome, Outcome::Stored);
        if !admitted {
            self.check(!r.get.exists, RejectedButStored, subject, || {
                let (outcome, uid) = (r.outcome.as_str(), &r.get.uid);
                format!("outcome {outcome} but the GET found uid {uid:?}")
            });
        }
        // Raw first: the verbatim body must agree with the recorded fields (`raw_ok`), and be the
        // API server's answer about the record's object (`problems`).
        let (raw, status) = (&r.raw_response, r.http_status);
        let text = |p: &str| raw.pointer(p).and_then(|v| v.as_str());
        let fields =
            crate::classify::answer_fields(status, raw) == (r.reason.clone(), r.message.clone());
        let (version, kind) = (text("/apiVersion"), text("/kind"));
        let mut problems: Vec<String> = Vec::new();
        macro_rules! problem {
            ($($why:tt)*) => { problems.push(format!($($why)*)) };
        }
        let raw_ok = if (200..300).contains(&status) {
            if (version, kind) != (Some("v1"), Some("Pod")) {
                problem!("a 2xx body is a v1 Pod, found {version:?} {kind:?}");
            }
            let namespace = text("/metadata/namespace");
            if namespace != Some(r.namespace.as_str()) {
                let ours = &r.namespace;
                problem!("metadata.namespace {namespace:?}, the record's namespace {ours:?}");
            }
            let labels: BTreeMap<String, String> = raw
                .pointer("/metadata/labels")
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default();
            if labels != r.labels {
                let ours = &r.labels;
                problem!("metadata.labels {labels:?}, the record's labels {ours:?}");
            }
            let name_ok = text("/metadata/name") == Some(r.name.as_str());
            // Every created object the API server answers with has a uid, a server-side
            // dry-run's too (assigned before admission, then not persisted; kubernetes.md
            // "dry-run"); a stored one's is the uid its GET found.
            let raw_uid = text("/metadata/uid").filter(|u| !u.is_empty());
            let uid_ok = raw_uid.is_some() && (!admitted || raw_uid == r.get.uid.as_deref());
            // A create is answered 201 Created, a server-side dry-run too; a success carries no
            // Status reason or message (`classify::answer_fields`).
            name_ok && uid_ok && status == 201 && fields
        } else {
            if raw.is_object() {
                if (version, kind) != (Some("v1"), Some("Status")) {
                    problem!("a refusal's body is a v1 Status, found {version:?} {kind:?}");
                }
                let causes = raw.pointer("/details/causes").and_then(|c| c.as_array());
                let causes: Vec<&str> = causes
                    .map(|a| a.iter().filter_map(|c| c["message"].as_str()).collect())
                    .unwrap_or_default();
                // The API server answers a failed webhook call with `NewInternalError(err)`, whose
                // one cause is `err` (apimachinery `pkg/api/errors`): no cause is a changed answer.
                let internal = format!("Internal error occurred: {}", causes.join(", "));
                if text("/reason") == Some("InternalError")
                    && (causes.is_empty() || r.message.as_deref() != Some(internal.as_str()))
                {
                    let msg = &r.message;
                    problem!("details.causes {causes:?} are not the message {msg:?}");
                }
                let msg = r.message.as_deref().and_then(|m| m.strip_prefix("pods \""));
                if let Some((named, _)) = msg.and_then(|m| m.split_once("\" is forbidden"))
                    && named != r.name
                {
                    let ours = &r.name;
                    problem!("the message names pod {named:?}, the record {ours:?}");
                }
            }
            // A refusal's body is a `Status` with `status: Failure` (metav1.Status); its reason
            // and message (read as the probe reads them), and its code, are the record's.
            let code = raw.get("code").and_then(|v| v.as_u64());
            fields
                && code.is_none_or(|c| c == u64::from(status))
                && text("/status").is_none_or(|s| s == "Failure")
        };
        self.check(raw_ok, RawMismatch, subject, || {
            let raw = abbreviate(raw);
            format!("raw_response does not match name/uid/message/code of the record: {raw}")
        });
        let ok = problems.is_empty();
        self.check(ok, RawMismatch, format!("{subject}.raw_response"), || {
            problems.join("; ")
        });
        let g = &r.get;
        let ok = if g.exists {
            g.uid.as_deref().is_some_and(is_uid)
                && g.phase.as_deref().is_some_and(|p| !p.is_empty())
        } else {
            g.uid.is_none() && g.phase.is_none()
        };
        self.check(ok, RawMismatch, format!("{subject}.get"), || {
            format!("exists={}, uid={:?}, phase={:?}", g.exists, g.uid, g.phase)
        });
    }

    /// As [`Self::request`], and a `webhook-timeout` (or a request admitted after a failed call
    /// under Ignore, `waited_for_timeout`) must have taken `t` seconds (the live registration's
    /// `timeoutSeconds`), within [`bounds::timeout_window_ms`]: not sooner, and not so much later
    /// that another timeout could have fired.
    pub(crate) fn request_timed(
        &mut self,
        subject: &str,
        r: &RequestRecord,
        expect: &[Outcome],
        t: u32,
        waited_for_timeout: bool,
    ) {
        self.request(subject, r, expect);
        if r.outcome == Outcome::WebhookTimeout || waited_for_timeout {
            let ((lo, hi), ms) = (bounds::timeout_window_ms(t), r.elapsed_ms);
            self.check(ms >= lo, TimeoutTooFast, subject, || {
                format!("answered after {ms} ms; timeoutSeconds is {t} (at least {lo} ms)")
            });
            self.check(ms < hi, TimeoutTooSlow, subject, || {
                format!("answered after {ms} ms; timeoutSeconds is {t}, so the answer must come before {hi} ms (bounds::TIMEOUT_LATE_MS)")
            });
        }
    }

    /// Checks which webhook a request's answer names against `hook`, the policy's registration
    /// the act relies on: a call failure must name `hook.name`, post to its service path, and
    /// carry `timeout=<hook.timeout_seconds>s` (the API server writes the registration's
    /// `timeoutSeconds` into the URL); an `explicit-deny` must come from `hook.name`.
    /// Answers that name no webhook (stored, already-exists, …) are not checked here.
    pub(crate) fn named_webhook(
        &mut self,
        subject: &str,
        r: &RequestRecord,
        hook: &facts::WebhookFacts,
    ) {
        let msg = r.message.as_deref().unwrap_or("");
        if let Some(call) = crate::classify::parse_call_failure(msg) {
            let url_path = |u: &str| url::Url::parse(u).ok().map(|u| u.path().to_owned());
            let service_path = hook.service.as_ref().and_then(|s| s.path.clone());
            let path = service_path.or_else(|| hook.url.as_deref().and_then(url_path));
            let same = call.webhook == hook.name && (call.path.is_none() || call.path == path);
            let (name, t) = (&hook.name, hook.timeout_seconds);
            self.check(same, CallFailureOtherWebhook, subject, || {
                let (webhook, at) = (&call.webhook, &call.path);
                format!("the failed call names webhook {webhook:?} at {at:?}; the policy's registration is {name:?} at {path:?}")
            });
            if call.url.is_some() {
                let ok = call.timeout_seconds == Some(t);
                self.check(ok, CallTimeoutMismatch, subject, || {
                    let query = call.timeout_query.as_deref().unwrap_or("(none)");
                    format!("the failed call's URL says timeout={query}, the registration's timeoutSeconds is {t}")
                });
            }
        } else if r.outcome == Outcome::ExplicitDeny
            && let Some(deny) = crate::classify::parse_deny(msg)
        {
            self.check(deny.webhook == hook.name, DenyOtherWebhook, subject, || {
                let (by, name) = (&deny.webhook, &hook.name);
                format!("denied by webhook {by:?}; the policy's registration is {name:?}")
            });
        }
    }

    /// Checks the existing pod: same UID as act 3's and `Running`.
    pub(crate) fn existing(&mut self, subject: &str, pod: &PodObservation, baseline_uid: &str) {
        witness::pod_observation_agrees_with_itself(self, subject, pod);
        let ok = pod.exists && pod.phase.as_deref() == Some("Running");
        self.check(ok, PodNotRunning, subject, || {
            format!("exists={}, phase={:?}", pod.exists, pod.phase)
        });
        self.check(pod.uid.as_deref() == Some(baseline_uid), PodReplaced, subject, || {
            format!("act 3 recorded uid {baseline_uid:?}, now {:?} (a new pod with the same name is not survival)", pod.uid)
        });
    }

    /// Every request name in this act's evidence is fresh: not used by another request of this
    /// act or of any other act of the lab.
    fn names_unique(&mut self) {
        self.checks += 1;
        let (mut seen, input) = (BTreeMap::<&str, (u8, &str)>::new(), self.input);
        for (act, doc) in &input.evidence {
            let Ok(doc) = doc else { continue };
            let mut recs = Vec::new();
            request_values(&doc.value["facts"], "", &mut recs);
            for (_, x) in recs {
                let text = |f: &str| x.get(f).and_then(|v| v.as_str());
                let (Some(name), Some(sent)) = (text("name"), text("sent_at")) else {
                    continue;
                };
                let (a, s) = seen.entry(name).or_insert((*act, sent));
                if *s != sent && (*a == self.act || *act == self.act) {
                    let why = format!("used in {} and {}", ev_name(*a), ev_name(*act));
                    self.flag(NameReused, format!("request {name}"), why);
                }
            }
        }
    }
}

/// The keys under which an act's `facts` record when the act itself observed something (a
/// request sent or answered, a GET, a read of the registration, the node, a Lease, a process).
const OBSERVATION_TIMES: &[&str] = &[
    "sent_at",
    "answered_at",
    "at",
    "observed_at",
    "checked_at",
    "investigated_at",
    "watchdog_armed_at",
    "frozen_at",
    "resumed_at",
    "registration_checked_at",
    "registrations_checked_at",
    "scaled_at",
    "pods_gone_at",
    "armed_at",
];

/// Subtrees of `facts` whose times are not the act's observations: verbatim API objects
/// (their own timestamps: creation, Lease renewals), and the audit and metrics records (held by
/// their own rules, [`audit`], [`metrics`]).
const NOT_OBSERVATION_SUBTREES: &[&str] = &[
    "raw_response",
    "policy",
    "registration_snapshot",
    "webhook_configurations",
    "admission_audit",
    "admission_metrics",
];

/// Every observation time of the act's `facts` ([`OBSERVATION_TIMES`], outside
/// [`NOT_OBSERVATION_SUBTREES`]) and every raw record's `at` (when the tool received it) lies
/// inside the act, `[started_at, finished_at]` of its evidence (± [`bounds::CLOCK_SKEW_MS`]): the
/// act observed it while it ran. One exception: lab A act 6's `replicas_restored.at`, the
/// restorer's own record of the restore, which may predate act 6 (the watcher restores at its
/// deadline whether or not act 6 runs). Nothing when the span does not parse ([`G::evidence`]
/// flagged the act's own times). Flags [`Code::TimesInconsistent`] on the field's path.
fn times_inside_the_act(g: &mut G, ev: &Evidence) {
    let (from, to, parse) = (&ev.started_at, &ev.finished_at, facts::parse_rfc3339);
    let (Some(start), Some(end)) = (parse(from), parse(to)) else {
        return;
    };
    let (mut found, mut path) = (Vec::new(), "facts".to_owned());
    walk(&ev.facts, &mut path, None, (), &mut |p, k, x, ()| {
        let k = k.unwrap_or_default();
        if NOT_OBSERVATION_SUBTREES.contains(&k) {
            // The tool's own read time of a verbatim object (`policy.at`) is an observation of
            // the act, unlike the object's timestamps.
            let at = x.get("at").and_then(|t| t.as_str());
            found.extend(at.map(|t| (format!("{p}.at"), t)));
            return None;
        }
        let t = x.as_str().filter(|_| OBSERVATION_TIMES.contains(&k));
        found.extend(t.map(|t| (p.to_owned(), t)));
        Some(())
    });
    let raw = ev.raw.iter().enumerate();
    found.extend(raw.filter_map(|(i, r)| Some((format!("raw[{i}].at"), r.get("at")?.as_str()?))));
    let skew = chrono::Duration::milliseconds(bounds::CLOCK_SKEW_MS as i64);
    for (path, t) in found {
        if g.lab == Lab::A && g.act == 6 && path == "facts.replicas_restored.at" {
            continue;
        }
        let ok = parse(t).is_some_and(|x| x >= start - skew && x <= end + skew);
        let sub = format!("{} {path}", ev_name(g.act));
        g.check(ok, TimesInconsistent, sub, || {
            format!("{t:?} is not inside the act ({from} .. {to})")
        });
    }
}

/// Walks `v` depth first, itself first, then an object's values in key order and an array's
/// items in order: `visit(path, key, value, c)` with each value's path (`path` for `v`, then
/// `<path>.<key>`, `<path>[<i>]`), its key in its object (`key` for `v`, `None` for an array's
/// item) and what its parent passed down (`c` for `v`); `visit` returns what to pass to the
/// values below, or `None` not to walk below the value. `path` is one buffer, grown and cut back
/// on the way down (the rules that read the whole lab's evidence walk it on every grade).
pub(crate) fn walk<'v, C: Copy>(
    v: &'v serde_json::Value,
    path: &mut String,
    key: Option<&str>,
    c: C,
    visit: &mut impl FnMut(&str, Option<&str>, &'v serde_json::Value, C) -> Option<C>,
) {
    let Some(c) = visit(path, key, v, c) else {
        return;
    };
    let len = path.len();
    for (k, x) in v.as_object().into_iter().flatten() {
        path.push('.');
        path.push_str(k);
        walk(x, path, Some(k), c, visit);
        path.truncate(len);
    }
    for (i, x) in v.as_array().into_iter().flatten().enumerate() {
        let _ = std::fmt::Write::write_fmt(path, format_args!("[{i}]"));
        walk(x, path, None, c, visit);
        path.truncate(len);
    }
}

/// Whether `key` holds the audit or the metrics record of an act's facts (held by their own
/// rules, [`audit`], [`metrics`]).
pub(crate) fn is_witness_record(key: &str) -> bool {
    key == crate::audit::FACTS_KEY || key == crate::metrics::FACTS_KEY
}

/// Collects (path, value) of every request record under `v` (an object with `outcome` and
/// `raw_response`, as [`crate::evidence::request_records`] finds them), outside the audit and
/// metrics records.
pub(super) fn request_values<'v>(
    v: &'v serde_json::Value,
    path: &str,
    out: &mut Vec<(String, &'v serde_json::Value)>,
) {
    walk(v, &mut path.to_owned(), None, (), &mut |p, k, x, ()| {
        let record = x.get("outcome").is_some() && x.get("raw_response").is_some();
        let witness = k.is_some_and(is_witness_record);
        if record && !witness {
            out.push((p.to_owned(), x));
        }
        (!record && !witness).then_some(())
    });
}

/// Checks `expected == found` for each `(field, expected, found)`, flagging `code` on
/// `s.<field>`: the rows of a rule that holds several fields to their values.
pub(crate) fn fields_are<F: std::fmt::Display, T: PartialEq + std::fmt::Debug>(
    g: &mut G,
    code: Code,
    s: &str,
    rows: impl IntoIterator<Item = (F, T, T)>,
) {
    for (field, expected, found) in rows {
        g.expect_eq(code, format!("{s}.{field}"), expected, found);
    }
}

/// Checks `a <= b` for each `(field, a, b)` of timestamps, flagging times-inconsistent on
/// `s.<field>`.
pub(crate) fn times_are_ordered<'t>(
    g: &mut G,
    s: &str,
    rows: impl IntoIterator<Item = (&'t str, &'t str, &'t str)>,
) {
    for (field, a, b) in rows {
        g.times_ordered(&format!("{s}.{field}"), a, b);
    }
}

/// A registration's service reference, `(namespace, name, path, port)`: of a raw `webhooks[]`
/// entry (camelCase, [`raw_service`]) or of a recorded registration ([`fact_service`]), so the
/// two compare.
pub(crate) type ServiceRef<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<i64>,
);

/// The raw entry's `clientConfig.service` as a [`ServiceRef`].
pub(crate) fn raw_service(w: &serde_json::Value) -> Option<ServiceRef<'_>> {
    let x = w.pointer("/clientConfig/service")?;
    let text = |k: &str| x.get(k).and_then(|v| v.as_str());
    let port = x.get("port").and_then(|v| v.as_i64());
    Some((text("namespace"), text("name"), text("path"), port))
}

/// The recorded registration's service as a [`ServiceRef`].
pub(crate) fn fact_service(h: &facts::WebhookFacts) -> Option<ServiceRef<'_>> {
    let x = h.service.as_ref()?;
    let (ns, name, port) = (x.namespace.as_str(), x.name.as_str(), i64::from(x.port));
    Some((Some(ns), Some(name), x.path.as_deref(), Some(port)))
}

pub(crate) fn abbreviate(v: &serde_json::Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(160) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s,
    }
}

/// Whether a pod record carries the policy's required label.
pub(crate) fn has_env_label(r: &RequestRecord) -> bool {
    r.labels.contains_key(crate::rules::common::GOOD_LABEL.0)
}

/// The pod a request was meant to send: (its namespace, whether it carries the policy's label,
/// whether it is a server dry-run); `None` where the act leaves it open.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meant(Option<&'static str>, Option<bool>, Option<bool>);

impl Meant {
    /// A pod created in the target namespace, with the policy's label or without it.
    pub(crate) const fn target(labelled: bool) -> Meant {
        Meant(Some(TARGET_NAMESPACE), Some(labelled), Some(false))
    }
    /// A pod in the control namespace (the policy leaves it out).
    pub(crate) const CONTROL: Meant = Meant(Some(CONTROL_NAMESPACE), None, None);
    /// A pod without the policy's label in the target namespace.
    pub(crate) const VIOLATING: Meant = Meant(Some(TARGET_NAMESPACE), Some(false), None);
    /// A server dry-run of a violating pod in the target namespace (lab A's deny probes).
    pub(crate) const PROBE: Meant = Meant(Some(TARGET_NAMESPACE), Some(false), Some(true));
    /// A server dry-run of a pod with the policy's label or without it, in the namespace the
    /// act chose.
    pub(crate) const fn dry_run(labelled: bool) -> Meant {
        Meant(None, Some(labelled), Some(true))
    }
}

/// The request sent the pod its act meant to send ([`Meant`]). Flags [`Code::ValueMismatch`] on
/// `<sub>.namespace`, `<sub>.labels`, `<sub>.dry_run`.
pub(crate) fn request_is_the_pod_meant(g: &mut G, sub: &str, r: &RequestRecord, meant: Meant) {
    let Meant(namespace, labelled, dry_run) = meant;
    if let Some(ns) = namespace {
        let found = r.namespace.as_str();
        g.expect_eq(ValueMismatch, format!("{sub}.namespace"), ns, found);
    }
    let (label, dry) = (has_env_label(r), r.dry_run);
    let rows = [("labels", labelled, label), ("dry_run", dry_run, dry)];
    let rows = rows.into_iter().filter_map(|(f, e, x)| Some((f, e?, x)));
    fields_are(g, ValueMismatch, sub, rows);
}

/// The act's own rule for a violating pod under failurePolicy Fail (`docs/labs.md`: acts 3, 5,
/// 7): while the policy's Fail registration is in force, a pod without the policy's label in the
/// target namespace is never admitted, whatever state the webhook is in: a healthy webhook
/// denies it and a failed call rejects it. So such a request recorded `stored` (or
/// `dry-run-admitted`) contradicts the act itself, and is flagged here, not only by the metrics
/// or audit rules (a second witness that may be absent, e.g. `/metrics` refused). Flags
/// [`Code::OutcomeUnexpected`] on `subject`. Requests with the label or in another namespace
/// are not this rule's.
pub(crate) fn violating_pod_never_admitted_under_fail(g: &mut G, subject: &str, r: &RequestRecord) {
    if has_env_label(r) || r.namespace != TARGET_NAMESPACE {
        return;
    }
    let admitted = matches!(r.outcome, Outcome::Stored | Outcome::DryRunAdmitted);
    g.check(!admitted, OutcomeUnexpected, subject, || {
        let (ns, was) = (&r.namespace, r.outcome.as_str());
        let label = crate::rules::common::GOOD_LABEL.0;
        format!("a pod without the {label:?} label in {ns} was {was} while the policy's failurePolicy Fail registration was in force: it is denied (healthy webhook) or rejected (failed call), never admitted")
    });
}

// ---------------------------------------------------------------------------------------------
// Acts 1 and 2 of every lab, act 3 of labs A and B (lab C's is `c::act3`).

pub(crate) fn act1(g: &mut G) {
    let Some(f) = g.facts::<facts::Act1Facts>(1) else {
        return;
    };
    let ctx = Context {
        node_uid: Some(f.node.uid.clone()),
        namespaces: Some(f.namespaces.clone()),
        ..Default::default()
    };
    g.input::<inputs::Scope>(&ctx);
    use crate::rules::common::{ADMISSION_DEPLOYMENT, KYVERNO_NAMESPACE};
    let s = "evidence/01.json facts";
    // The controller Deployment is the one the tool reads by name: Kyverno's admission
    // controller (its UID is held by `witness::one_uid_one_object` and by act 4).
    let d = &f.controller_deployment;
    let deployment = format!("{}/{}", d.namespace.as_deref().unwrap_or_default(), d.name);
    let kyverno = format!("{KYVERNO_NAMESPACE}/{ADMISSION_DEPLOYMENT}");
    let rows = [
        ("target", "kca-webhook-target", f.target.as_str()),
        ("control", "kca-webhook-control", f.control.as_str()),
        ("controller_deployment", &kyverno, &deployment),
    ];
    fields_are(g, ValueMismatch, s, rows);
    for ns in ["kca-webhook-target", "kca-webhook-control"] {
        let uid = f.namespaces.get(ns);
        let ok = uid.is_some_and(|u| is_uid(u));
        g.check(ok, UidMismatch, format!("{s}.namespaces[{ns:?}]"), || {
            format!("expected the namespace's UID, found {uid:?}")
        });
    }
    let uids = [
        ("node", &f.node.uid),
        ("controller_deployment", &f.controller_deployment.uid),
    ];
    for (key, uid) in uids {
        g.check(is_uid(uid), UidMismatch, format!("{s}.{key}.uid"), || {
            format!("expected a UID, found {uid:?}")
        });
    }
    let (ok, sub) = (f.lab_mark.is_some(), format!("{s}.lab_mark"));
    g.check(ok, ValueMismatch, sub, || {
        "the cluster carries no lab mark: faults will be refused".to_owned()
    });
    if let Some(ev) = g.evidence(1) {
        witness::lab_mark_is_the_marks_configmap(g, &ev, &f);
    }
}

pub(crate) fn is_uid(s: &str) -> bool {
    serde_json::from_value::<inputs::Uid>(serde_json::Value::String(s.to_owned())).is_ok()
}

/// The policy's UID recorded by act 2 (`facts.policy.metadata.uid`).
pub(crate) fn policy_uid(f: &facts::Act2Facts) -> Option<String> {
    f.policy
        .pointer("/metadata/uid")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Whether a webhook's `objectSelector` / `matchConditions` let every pod through to the call:
/// an empty selector (`{}` as the API server stores a nil one, or absent) and no match
/// conditions (absent, null or `[]`). The lab's policy has neither an objectSelector nor
/// matchConditions, and Kyverno adds none for it (kyverno v1.19.1 `pkg/controllers/webhook`; the recorded run's act 2:
/// `objectSelector: {}`, no `matchConditions`), so anything else is a registration that lets
/// matching pods skip the webhook (e.g. an opt-out label, gatekeeper#2034), not the lab's.
pub(crate) fn scope_is_open(
    object_selector: &serde_json::Value,
    match_conditions: &serde_json::Value,
) -> bool {
    let empty_selector = object_selector.is_null()
        || object_selector.as_object().is_some_and(|o| {
            o.values().all(|v| {
                v.is_null()
                    || v.as_object().is_some_and(|m| m.is_empty())
                    || v.as_array().is_some_and(|a| a.is_empty())
            })
        });
    let no_conditions =
        match_conditions.is_null() || match_conditions.as_array().is_some_and(|a| a.is_empty());
    empty_selector && no_conditions
}

/// A webhook registration's scope fields, verbatim: from act 2/6/7's [`facts::WebhookFacts`]
/// or from a raw `webhooks[]` entry read during a freeze (camelCase); equal when every field is.
#[derive(PartialEq)]
pub(crate) struct Scope<'a> {
    pub object_selector: &'a serde_json::Value,
    pub match_conditions: &'a serde_json::Value,
    pub rules: &'a serde_json::Value,
    pub namespace_selector: &'a serde_json::Value,
}

impl<'a> Scope<'a> {
    pub(crate) fn of_facts(w: &'a facts::WebhookFacts) -> Scope<'a> {
        Scope {
            object_selector: &w.object_selector,
            match_conditions: &w.match_conditions,
            rules: &w.rules,
            namespace_selector: &w.namespace_selector,
        }
    }

    /// From a raw `webhooks[]` entry; absent fields read as `null`.
    pub(crate) fn of_raw(v: &'a serde_json::Value) -> Scope<'a> {
        const NULL: &serde_json::Value = &serde_json::Value::Null;
        let f = |k: &str| v.get(k).unwrap_or(NULL);
        Scope {
            object_selector: f("objectSelector"),
            match_conditions: f("matchConditions"),
            rules: f("rules"),
            namespace_selector: f("namespaceSelector"),
        }
    }
}

/// Flags a registration whose scope does not guard the lab's pods as taught, all under
/// [`Code::RegistrationScope`]:
/// - its `objectSelector` / `matchConditions` let matching pods skip the call
///   ([`scope_is_open`]);
/// - by the API server's matching rules ([`crate::admission::webhook_match`]) it is not called
///   for `CREATE` of a v1 pod in the target namespace (a rule for other operations, resources or
///   scope; a namespaceSelector that does not select it);
/// - or it is also called for requests the policy leaves out: pods in the control namespace
///   (act 5/6's requests there must be stored without a call), or other operations on pods in
///   the target namespace (`policy.json` matches `CREATE` only, and Kyverno registers the
///   policy's `resourceRules`).
pub(crate) fn registration_scope(g: &mut G, subject: &str, name: &str, w: &Scope<'_>) {
    use crate::admission::{Match, Request, webhook_match};
    let (rules, selector) = (abbreviate(w.rules), abbreviate(w.namespace_selector));
    let open = scope_is_open(w.object_selector, w.match_conditions);
    let sub = format!("{subject}.object_selector/match_conditions");
    g.check(open, RegistrationScope, sub, || {
        let (objects, conditions) = (abbreviate(w.object_selector), abbreviate(w.match_conditions));
        format!("objectSelector {objects} and matchConditions {conditions} let matching pods skip webhook {name:?}; the lab's registration has an empty objectSelector and no matchConditions")
    });
    // Called for a pod CREATE in the target namespace (the first request), and for none the
    // policy leaves out.
    let sub = format!("{subject}.rules/namespace_selector");
    let requests = [
        Request::create_pod(TARGET_NAMESPACE),
        Request::create_pod(CONTROL_NAMESPACE),
        Request::pod("UPDATE", TARGET_NAMESPACE),
        Request::pod("DELETE", TARGET_NAMESPACE),
        Request::pod("CONNECT", TARGET_NAMESPACE),
    ];
    for (i, req) in requests.iter().enumerate() {
        let m = webhook_match(w.rules, w.namespace_selector, req);
        let ok = matches!((&m, i), (Match::Called, 0) | (Match::NotCalled(_), 1..));
        let ns = req.namespace_labels.values().next().map_or("", |n| n);
        g.check(ok, RegistrationScope, &sub, || match (&m, i) {
            (Match::NotCalled(why) | Match::Unreadable(why), 0) => format!(
                "webhook {name:?} is not called for CREATE of a v1 pod in {TARGET_NAMESPACE}: {why} (rules {rules}, namespaceSelector {selector})"
            ),
            (Match::Unreadable(why), _) => format!("webhook {name:?}: {why}"),
            _ => format!(
                "webhook {name:?} is also called for {} of a pod in {ns}, which the policy leaves out (rules {rules}, namespaceSelector {selector})",
                req.operation
            ),
        });
    }
}

/// How a registration read later relates to the one it is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SameRegistration {
    /// The same configuration object, unchanged (lab B act 7 vs act 6): its UID too.
    Identical,
    /// The same webhook registered again, possibly in a new configuration object (lab A act 6
    /// vs act 2: Kyverno re-registers after its recovery), so the object's UID is not compared.
    NewConfigurationObject,
    /// The same policy's webhook switched to failurePolicy Ignore (lab B act 6 vs act 2): the
    /// webhook's name is the live registration's when it serves the same policy (the same
    /// service path), because Kyverno's naming follows the failure policy in a way that differs
    /// by version (v1.19.1: `vpol.validate.kyverno.svc-{fail,ignore}-finegrained-<policy>`, as the
    /// recorded runs show for acts 2 and 6); everything else stays.
    SwitchedToIgnore,
}

/// Holds a registration read later (`found`) against the one an earlier act recorded
/// (`earlier`): every field of the webhook (configuration, name, client config, failurePolicy,
/// timeoutSeconds, selectors, match conditions, rules, sideEffects, matchPolicy) is the same,
/// but for what `how` allows to differ. Flags [`Code::RegistrationChanged`] on
/// `<subject>.<field>`.
pub(crate) fn registration_equals(
    g: &mut G,
    subject: &str,
    found: &facts::WebhookFacts,
    earlier: &facts::WebhookFacts,
    how: SameRegistration,
) {
    let mut expected = earlier.clone();
    expected.observed_at = found.observed_at.clone();
    match how {
        SameRegistration::Identical => {}
        SameRegistration::NewConfigurationObject => {
            expected.configuration_uid = found.configuration_uid.clone();
        }
        SameRegistration::SwitchedToIgnore => {
            expected.failure_policy = "Ignore".into();
            let path = |w: &facts::WebhookFacts| w.service.as_ref().and_then(|s| s.path.clone());
            if path(found).is_some() && path(found) == path(earlier) {
                expected.name = found.name.clone();
            }
        }
    }
    let (Ok(serde_json::Value::Object(e)), Ok(serde_json::Value::Object(f))) =
        (serde_json::to_value(&expected), serde_json::to_value(found))
    else {
        return;
    };
    let keys: BTreeSet<&String> = e.keys().chain(f.keys()).collect();
    let shown = |v: Option<&serde_json::Value>| v.map_or("nothing".into(), abbreviate);
    for k in keys {
        let (x, y, sub) = (e.get(k), f.get(k), format!("{subject}.{k}"));
        g.check(x == y, RegistrationChanged, sub, || {
            let (x, y) = (shown(x), shown(y));
            format!("expected {x} (the earlier act's registration), found {y}")
        });
    }
}

/// Checks a registered webhook against what the policy asks for.
pub(crate) fn check_webhook(
    g: &mut G,
    subject: &str,
    w: &facts::WebhookFacts,
    failure_policy: &str,
) {
    let rows = [("failure_policy", failure_policy, w.failure_policy.as_str())];
    fields_are(g, ValueMismatch, subject, rows);
    // T comes from the student's policy (`spec.webhookConfiguration.timeoutSeconds`, which makes
    // Kyverno register a fine-grained webhook with that timeout, kyverno v1.19.1
    // `pkg/controllers/webhook`), never a constant.
    // Without a readable policy.json there is nothing to compare: `required_input_value` has
    // already flagged it input-missing or input-invalid.
    if let Some(policy) = g.required_input_value(InputFile::Policy) {
        let planned = policy.pointer("/spec/webhookConfiguration/timeoutSeconds");
        let (planned, t) = (planned.and_then(|v| v.as_u64()), w.timeout_seconds);
        let sub = format!("{subject}.timeout_seconds");
        g.check(planned == Some(u64::from(t)), ValueMismatch, sub, || {
            let planned = planned.map_or_else(|| "absent".to_owned(), |t| t.to_string());
            format!("expected policy.json's spec.webhookConfiguration.timeoutSeconds {planned}, found {t}")
        });
    }
    registration_scope(g, subject, &w.name, &Scope::of_facts(w));
    let (effects, name) = (&w.side_effects, &w.name);
    let ok = matches!(effects.as_str(), "None" | "NoneOnDryRun");
    g.check(ok, ValueMismatch, format!("{subject}.side_effects"), || {
        format!("expected None or NoneOnDryRun, found {effects:?}")
    });
    let path = w.service.as_ref().and_then(|s| s.path.as_deref());
    let serves_policy =
        name.contains("kca-webhook-label") || path.is_some_and(|p| p.contains("kca-webhook-label"));
    let sub = format!("{subject}.name");
    g.check(serves_policy, RegistrationMissing, sub, || {
        format!("webhook {name:?} does not serve kca-webhook-label (name or path)")
    });
}

/// Whether every leaf of `asked` is in `stored` with the same value (objects: each key of
/// `asked` compared recursively; arrays: the same length, item by item): what the API server
/// stores is the applied object plus defaults, never other values.
fn applied_within(asked: &serde_json::Value, stored: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (asked, stored) {
        (Value::Object(a), Value::Object(s)) => a
            .iter()
            .all(|(k, v)| s.get(k).is_some_and(|x| applied_within(v, x))),
        (Value::Array(a), Value::Array(s)) => {
            a.len() == s.len() && a.iter().zip(s).all(|(x, y)| applied_within(x, y))
        }
        _ => asked == stored,
    }
}

/// The stored policy an act recorded is the student's input as applied: its `apiVersion`,
/// `kind`, `metadata.name` and every leaf of its `spec` have the input's values (the API server
/// adds defaults, never changes what was applied). Flags [`Code::ValueMismatch`].
pub(crate) fn stored_policy_is_the_applied_input(
    g: &mut G,
    subject: &str,
    stored: &serde_json::Value,
    input: InputFile,
) {
    let Some(asked) = g.required_input_value(input) else {
        return;
    };
    let rows = ["apiVersion", "kind", "metadata.name"].map(|field| {
        let at = format!("/{}", field.replace('.', "/"));
        (field, asked.pointer(&at), stored.pointer(&at))
    });
    fields_are(g, ValueMismatch, subject, rows);
    let spec = |v: &serde_json::Value| v.get("spec").cloned().unwrap_or_default();
    let (a, s) = (spec(&asked), spec(stored));
    let (ok, sub) = (applied_within(&a, &s), format!("{subject}.spec"));
    g.check(ok, ValueMismatch, sub, || {
        let (s, file, a) = (abbreviate(&s), input.file_name(), abbreviate(&a));
        format!("the stored spec {s} is not {file}'s spec {a} (plus defaults)")
    });
}

pub(crate) fn act2(g: &mut G) {
    let Some(f) = g.facts::<facts::Act2Facts>(2) else {
        return;
    };
    g.input::<inputs::Policy>(&Context::default());
    let (uid, policy) = (policy_uid(&f), "evidence/02.json facts.policy");
    let ok = uid.as_deref().is_some_and(is_uid);
    let sub = format!("{policy}.metadata.uid");
    g.check(ok, StoredWithoutUid, sub, || {
        format!("the stored policy must have a UID, found {uid:?}")
    });
    for (at, expected) in [
        ("/metadata/name", "kca-webhook-label"),
        ("/spec/failurePolicy", "Fail"),
    ] {
        let found = f.policy.pointer(at).and_then(|v| v.as_str());
        let sub = format!("{policy}{}", at.replace('/', "."));
        g.expect_eq(ValueMismatch, sub, Some(expected), found);
    }
    let hook = "evidence/02.json facts.webhook";
    check_webhook(g, hook, &f.webhook, "Fail");
    if let Some(ev) = g.evidence(2) {
        witness::registration_is_derived_from(g, &ev, "webhook-configuration", hook, &f.webhook);
        witness::stored_policy_is_the_raw_read(g, &ev, policy, &f.policy);
    }
    stored_policy_is_the_applied_input(g, policy, &f.policy, InputFile::Policy);
}

pub(crate) fn act3(g: &mut G) {
    let Some(f) = g.facts::<facts::Act3Facts>(3) else {
        return;
    };
    let s = "evidence/03.json facts";
    g.request(&format!("{s}.good"), &f.good, &[Outcome::Stored]);
    // Explicitly denied, so never admitted under the Fail registration (the rule
    // `violating_pod_never_admitted_under_fail` holds for acts that allow other outcomes).
    g.request(&format!("{s}.bad"), &f.bad, &[Outcome::ExplicitDeny]);
    // The deny must come from the registration act 2 recorded.
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        g.named_webhook(&format!("{s}.bad"), &f.bad, &a2.webhook);
    }
    for (sub, r, label) in [("good", &f.good, true), ("bad", &f.bad, false)] {
        request_is_the_pod_meant(g, &format!("{s}.{sub}"), r, Meant::target(label));
    }
    // The existing pod is the good pod, read after it was stored.
    let (good, existing) = (&f.good, &f.existing);
    let names = (
        (&good.name, &good.namespace),
        (&existing.name, &existing.namespace),
    );
    fields_are(g, ValueMismatch, s, [("existing.name", names.0, names.1)]);
    // Act 3 observes one thing after the other (the act in `lab/src/labs/common.rs`): the good
    // pod's create and GET, the violating pod's create and GET, then the existing pod's read.
    let (good, bad) = (f.good.get.at.as_str(), f.bad.get.at.as_str());
    let rows = [
        ("existing.at", good, f.existing.at.as_str()),
        ("bad.sent_at", good, &f.bad.sent_at),
        ("existing.at", bad, &f.existing.at),
    ];
    times_are_ordered(g, s, rows);
    if let Some(uid) = f.good.get.uid.clone() {
        g.existing(&format!("{s}.existing"), &f.existing, &uid);
    }
}

/// An act 4 investigation held against its plan `T` (lab B's or lab C's `freeze-plan.json`): the
/// plan's bound values (the node and Deployment UIDs the act found, act 3's digest, read with
/// [`G::input`]) and act 1's UIDs (flags [`Code::UidMismatch`]). Returns act 1's facts for the
/// act's own checks.
pub(crate) fn investigation_against_its_plan<T: StudentInput>(
    g: &mut G,
    s: &str,
    node_uid: &str,
    deployment_uid: &str,
) -> Option<facts::Act1Facts> {
    let ctx = Context {
        node_uid: Some(node_uid.to_owned()),
        deployment_uid: Some(deployment_uid.to_owned()),
        ..g.report_context(3..=3)
    };
    g.input::<T>(&ctx);
    let a1 = g.facts::<facts::Act1Facts>(1)?;
    let (node, deployment) = (a1.node.uid.as_str(), a1.controller_deployment.uid.as_str());
    let rows = [
        ("node_uid", node, node_uid),
        ("deployment_uid", deployment, deployment_uid),
    ];
    fields_are(g, UidMismatch, s, rows);
    Some(a1)
}

/// `<namespace>/<name>` is a pod of act 1's controller Deployment `d`: in its namespace, named
/// `<deployment>-<replicaset hash>-<suffix>`. Flags [`Code::ValueMismatch`] on `subject`.
pub(crate) fn pod_of_the_deployment(
    g: &mut G,
    subject: String,
    (namespace, name): (&str, &str),
    d: &facts::ObjectRef,
) {
    let ok = Some(namespace) == d.namespace.as_deref() && name.starts_with(&format!("{}-", d.name));
    g.check(ok, ValueMismatch, subject, || {
        let (dns, dn) = (&d.namespace, &d.name);
        format!("pod {namespace}/{name} is not a pod of act 1's Deployment {dns:?}/{dn}")
    });
}

/// The existing pod a later act observed is act 3's, alive: the same name, namespace and UID
/// (a new pod with the same name is not survival), `Running`, its restart count never lower
/// than act 3's (kubelet's count only grows), and read after act 3 read it. Flags when act 3's
/// evidence is unusable (through [`G::facts`]).
pub(crate) fn existing_pod_survives(g: &mut G, subject: &str, pod: &PodObservation) {
    if let Some(a3) = g.facts::<facts::Act3Facts>(3) {
        existing_pod_survives_since(g, subject, &a3.existing, pod);
    }
}

/// [`existing_pod_survives`] against a given act-3 observation `base` (lab C's act 3 has its own
/// facts type).
pub(crate) fn existing_pod_survives_since(
    g: &mut G,
    subject: &str,
    base: &PodObservation,
    pod: &PodObservation,
) {
    let names = ((&base.name, &base.namespace), (&pod.name, &pod.namespace));
    fields_are(g, PodReplaced, subject, [("name", names.0, names.1)]);
    if let Some(uid) = &base.uid {
        g.existing(subject, pod, uid);
    }
    let (was, now) = (base.restart_count, pod.restart_count);
    let ok = now.unwrap_or(0) >= was.unwrap_or(0);
    let sub = format!("{subject}.restart_count");
    g.check(ok, RestartContradicted, sub, || {
        format!("act 3 recorded {was:?}, now {now:?}: a restart count never goes down")
    });
    g.times_ordered(&format!("{subject}.at"), &base.at, &pod.at);
}

/// Act 8 of a lab (its report, `T`): act 8's own record ([`act8_facts`]), `report.json` with the
/// digests of acts 5-7, and each of its claims (`$.<field>`, a string) against the word `words`
/// derives from the evidence: the one rule act 8 also records its checks with
/// (`rules::*::report_expectations`, `rules::a::evidence_words`), so the act and its grader
/// cannot disagree (flags [`Code::ReportContradicted`]). The claims are compared even when the
/// report's digests are off (both are findings); `words` is `None` when an act it reads has no
/// usable facts (flagged by [`G::facts`]). `report.json` is read once
/// ([`G::required_input_value`]) for all of them.
pub(crate) fn report_claims_are_the_evidence_words<T, W>(
    g: &mut G,
    words: impl FnOnce(&mut G) -> Option<W>,
) where
    T: StudentInput,
    W: IntoIterator<Item = (&'static str, String)>,
{
    let report = g.required_input_value(T::FILE);
    act8_facts(g, report.as_ref());
    let ctx = g.report_context(5..=7);
    if let Some(report) = &report {
        g.input_of::<T>(report, &ctx);
    }
    let (Some(report), Some(words)) = (report, words(g)) else {
        return;
    };
    for (field, expected) in words {
        let found = report.get(field);
        let ok = found.and_then(|v| v.as_str()) == Some(expected.as_str());
        let sub = format!("report.json $.{field}");
        g.check(ok, ReportContradicted, sub, || {
            let found = found.map_or_else(|| "nothing".to_owned(), |v| v.to_string());
            format!("the report says {found}, the evidence shows {expected:?}")
        });
        g.words.push((field.to_owned(), expected));
    }
}

/// Act 8's own record (not read by [`check_report`]): its checks all agree, and its record of
/// the comparison is the comparison itself: each check's `report` is the value `report` (the
/// lab's `report.json`) holds for its field and `agrees` says whether it is the `evidence` value;
/// the checks name each of the report's fields once, and nothing else (a claim left out of the
/// comparison is a claim nobody held); `evidence_digests` are the canonical digests of the
/// evidence files as they are. Flags [`Code::FactsInvalid`], [`Code::ReportContradicted`] and
/// [`Code::DigestMismatch`].
fn act8_facts(g: &mut G, report: Option<&serde_json::Value>) {
    if g.report_only {
        return;
    }
    let Some(f) = g.facts::<facts::Act8Facts>(8) else {
        return;
    };
    let s = "evidence/08.json facts.checks";
    g.check(!f.checks.is_empty(), FactsInvalid, s, || {
        "no check recorded".into()
    });
    for c in &f.checks {
        let sub = format!("{s}[{}]", c.field);
        g.check(c.agrees, ReportContradicted, &sub, || {
            format!("report {} vs evidence {}", c.report, c.evidence)
        });
        let Some(report) = report else { continue };
        let in_report = report.get(&c.field).cloned().unwrap_or_default();
        let ok = in_report == c.report && c.agrees == (c.report == c.evidence);
        g.check(ok, ReportContradicted, format!("{sub}.report"), || {
            let (recorded, agrees, evidence) = (&c.report, c.agrees, &c.evidence);
            format!("recorded report {recorded} (agrees {agrees}), report.json has {in_report}; evidence {evidence}")
        });
    }
    if let Some(report) = report {
        let in_report: BTreeSet<&str> = (report.as_object().into_iter())
            .flat_map(|m| m.keys().map(String::as_str))
            .collect();
        let compared: Vec<&str> = f.checks.iter().map(|c| c.field.as_str()).collect();
        let once: BTreeSet<&str> = compared.iter().copied().collect();
        let ok = once == in_report && once.len() == compared.len();
        g.check(ok, ReportContradicted, s, || {
            format!("compared {compared:?}; report.json holds {in_report:?}")
        });
    }
    let now = g.input.digests();
    for (k, d) in &f.evidence_digests {
        let act = k.parse::<u8>().ok();
        let current = act.and_then(|a| now.get(&a));
        let sub = format!("evidence/08.json facts.evidence_digests.{k}");
        g.check(current == Some(d), DigestMismatch, sub, || {
            format!("recorded {d}, the file's canonical digest is {current:?}")
        });
    }
}
