//! What every lab shares: the environment of a run ([`Env`]), the evidence recorder
//! ([`ActRecorder`]), helpers for inputs, webhooks and bounded waits, `inspect`, and acts 1-3 (lab C
//! has its own act 3).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingWebhook, ValidatingWebhookConfiguration,
};
use serde::Serialize;

use crate::cluster::{self, Cluster};
use crate::cri::{self, CriClient};
use crate::error::LabError;
use crate::evidence::{
    ActStatus, Evidence, Lab, Outcome, RequestRecord, RunningVersions, SCHEMA_VERSION,
};
use crate::facts::{
    self, Act1Facts, Act2Facts, Act3Facts, NodeFacts, ObjectRef, PodObservation, WebhookFacts,
};
use crate::inputs::{self, Context, InputFile, StudentInput};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::text::{Lang, Line, Text};
use crate::wait::{Check, Wait, WaitError};
use crate::workdir::{LoadedInput, Workdir};

pub use crate::rules::common::{CONTROL_NAMESPACE, TARGET_NAMESPACE};

/// The lab's two namespaces: the webhook's target and the control outside its selector.
const NAMESPACES: [&str; 2] = [TARGET_NAMESPACE, CONTROL_NAMESPACE];

/// Default of [`Env::registration_bound`]: how long act 2 (every lab) and act 6 of labs B and C
/// wait for Kyverno to register the policy's webhook, or to change it. Kyverno's own start on the embedded
/// node took 11-19 s (README, bench table), its registration a few seconds after that.
pub const REGISTRATION_BOUND: Duration = Duration::from_secs(90);
/// Bound on waiting for the webhook to answer with an explicit deny in a healthy state.
pub const ANSWER_BOUND: Duration = Duration::from_secs(90);
/// Bound on waiting for the act-3 pod to be `Running`.
pub const RUNNING_BOUND: Duration = Duration::from_secs(120);

/// Student-facing output: Japanese by default, English with `--lang en`. Everything goes to
/// stderr (stdout is kept for machine-readable output such as `inspect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ui {
    /// English instead of Japanese.
    pub en: bool,
    /// No progress output at all (tests that only want evidence).
    pub quiet: bool,
    /// The lab to name at the start of every line (`[lab b] • …`), when several labs print to
    /// the same stderr at once (`cargo xtask lab run --at-once`); `None`: no label.
    pub label: Option<&'static str>,
}

impl Ui {
    /// The language of the output.
    pub fn lang(&self) -> Lang {
        if self.en { Lang::En } else { Lang::Ja }
    }

    /// `line` in the output's language (the words are in [`crate::messages`]).
    pub fn text(&self, line: impl Into<Line>) -> String {
        line.into().get(self.lang()).to_owned()
    }

    /// Prints `text` after the label (`[lab b]`, when [`Ui::label`] is set), unless quiet.
    fn print(&self, text: std::fmt::Arguments) {
        if !self.quiet {
            let prefix = self.label.map_or(String::new(), |l| format!("[lab {l}]"));
            eprintln!("{prefix}{text}");
        }
    }

    /// Prints one line.
    pub fn say(&self, line: impl Into<Line>) {
        let sep = if self.label.is_some() { " " } else { "" };
        self.print(format_args!("{sep}{}", self.text(line)));
    }

    /// Prints a step line ` • …`.
    pub fn step(&self, line: impl Into<Line>) {
        self.print(format_args!(" • {}", self.text(line)));
    }

    /// Prints a progress line `   … (12s/90s)`.
    pub fn progress(&self, line: impl Into<Line>, elapsed_s: u64, bound_s: u64) {
        let line = self.text(line);
        self.print(format_args!("   {line} ({elapsed_s}s/{bound_s}s)"));
    }
}

/// Everything an act needs from its caller: the work directory and how to reach the cluster and
/// the node.
#[derive(Debug, Clone)]
pub struct Env {
    /// The student's work directory.
    pub workdir: Workdir,
    /// `--kubeconfig` (`None`: k3s's when present, else kube-rs's inference).
    pub kubeconfig: Option<PathBuf>,
    /// `--cri-endpoint` (`None`: k3s's containerd socket when present).
    pub cri_endpoint: Option<PathBuf>,
    /// The API server's audit log (`--audit-log` / `KCA_AUDIT_LOG`; the embedded backend's
    /// `<state>/audit/audit.log`), or [`crate::audit::AuditSource::NotConfigured`].
    pub audit: crate::audit::AuditSource,
    /// Output language and verbosity.
    pub ui: Ui,
    /// Bound on waiting for Kyverno to register the policy's webhook (act 2) or to change it to
    /// failurePolicy Ignore (act 6 of labs B and C): `--registration-bound` in seconds, default
    /// [`REGISTRATION_BOUND`]; when it runs out the act fails (its diagnostics name the cause).
    /// Only this wait; every other bound is fixed.
    pub registration_bound: Duration,
}

impl Env {
    /// Connects to the cluster.
    pub async fn cluster(&self) -> Result<Cluster, LabError> {
        Cluster::connect(self.kubeconfig.as_deref()).await
    }

    /// Connects to the node's CRI endpoint.
    ///
    /// Errors: [`LabError::NotAvailable`] when no endpoint is given and k3s's socket is absent.
    pub async fn cri(&self) -> Result<CriClient, LabError> {
        let absent = cri::K3S_CRI_ENDPOINT;
        let what = format!("a CRI endpoint: {absent} does not exist; pass --cri-endpoint");
        let endpoint = cri::resolve_endpoint(self.cri_endpoint.as_deref());
        CriClient::connect(&endpoint.ok_or(LabError::NotAvailable { what })?).await
    }

    /// Starts recording act `act` of `lab` ([`ActRecorder::begin`]) with its audit window open
    /// ([`ActRecorder::with_audit`]).
    pub fn begin_audited(&self, lab: Lab, act: u8) -> Result<ActRecorder, LabError> {
        Ok(ActRecorder::begin(&self.workdir, lab, act)?.with_audit(self))
    }
}

/// What an act run produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActSummary {
    /// The lab.
    pub lab: Lab,
    /// The act.
    pub act: u8,
    /// The evidence file written.
    pub evidence: PathBuf,
    /// `completed` or `interrupted`.
    pub status: ActStatus,
    /// The observations worth printing, one per line, already in the chosen language.
    pub lines: Vec<String>,
}

/// Collects an act's evidence: inputs' digests, raw material in the order received, progress
/// saves, and the final write.
#[derive(Debug)]
pub struct ActRecorder {
    workdir: Workdir,
    lab: Lab,
    act: u8,
    started_at: String,
    inputs: BTreeMap<String, String>,
    raw: Vec<serde_json::Value>,
    audit: Option<crate::audit::Cursor>,
    /// The language of the audit summary line ([`Self::with_audit`]).
    lang: crate::text::Lang,
    /// What the act runs on ([`with_running_versions`]), copied into every evidence write.
    versions: Option<RunningVersions>,
}

tokio::task_local! {
    /// The versions [`with_running_versions`] read for the act it runs.
    static RUNNING: RunningVersions;
}

/// Reads what the cluster runs ([`read_running_versions`]) and runs `act` with it in scope, so
/// that every evidence file the act writes ([`ActRecorder`]) carries it as `versions`.
pub async fn with_running_versions<F: Future>(env: &Env, act: F) -> F::Output {
    RUNNING.scope(read_running_versions(env).await, act).await
}

/// One `GET /version` (kept verbatim) and one GET of the admission controller's Deployment (its
/// `kyverno` container's image and `helm.sh/chart` label). A failed read is kept in `errors`;
/// the act then meets the same failure and says so itself.
pub async fn read_running_versions(env: &Env) -> RunningVersions {
    let mut errors = Vec::new();
    let mut apiserver_version = serde_json::Value::Null;
    let (mut kyverno_image, mut kyverno_chart) = (None, None);
    match env.cluster().await {
        Err(e) => errors.push(e.to_string()),
        Ok(cluster) => {
            match cluster.get_text_raw("/version").await {
                Ok((200, text)) => match serde_json::from_str(&text) {
                    Ok(v) => apiserver_version = v,
                    Err(e) => errors.push(format!("GET /version: not JSON ({e}): {text}")),
                },
                Ok((status, text)) => errors.push(format!("GET /version: HTTP {status}: {text}")),
                Err(e) => errors.push(format!("GET /version: {e}")),
            }
            match cluster.admission_deployment().await {
                Ok(d) => {
                    let pod = d.spec.and_then(|s| s.template.spec);
                    let mut containers = pod.into_iter().flat_map(|p| p.containers);
                    let kyverno = containers.find(|c| c.name == cri::ADMISSION_CONTAINER);
                    kyverno_image = kyverno.and_then(|c| c.image);
                    let labels = d.metadata.labels;
                    kyverno_chart = labels.and_then(|mut l| l.remove("helm.sh/chart"));
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
    }
    RunningVersions {
        apiserver_version,
        kyverno_image,
        kyverno_chart,
        read_at: facts::now_rfc3339(),
        errors,
    }
}

impl ActRecorder {
    /// Starts recording act `act` after [`Workdir::check_can_run`] (which refuses when the act
    /// already has evidence).
    pub fn begin(workdir: &Workdir, lab: Lab, act: u8) -> Result<ActRecorder, LabError> {
        workdir.check_can_run(lab, act)?;
        Ok(ActRecorder {
            workdir: workdir.clone(),
            lab,
            act,
            started_at: facts::now_rfc3339(),
            inputs: BTreeMap::new(),
            raw: Vec::new(),
            audit: None,
            lang: crate::text::Lang::Ja,
            versions: RUNNING.try_with(Clone::clone).ok(),
        })
    }

    /// Records an input file's canonical digest.
    pub fn input(&mut self, loaded: &LoadedInput) {
        self.inputs
            .insert(loaded.file.file_name().to_owned(), loaded.digest.clone());
    }

    /// [`Self::input`] while the recorder is built (`begin(…)?.with_input(&loaded)`).
    pub fn with_input(mut self, loaded: &LoadedInput) -> ActRecorder {
        self.input(loaded);
        self
    }

    /// Opens the act's audit window now ([`crate::audit::Cursor::begin`]): when the act writes
    /// its final evidence (completed or interrupted) the audit events of every request it
    /// recorded are put under `facts.admission_audit` (or a raw `admission-audit` entry when the
    /// partial facts are not an object). Acts 3, 5, 6 and 7 of every lab call it before their
    /// first request.
    pub fn with_audit(mut self, env: &Env) -> ActRecorder {
        self.audit = Some(crate::audit::Cursor::begin(&env.audit));
        self.lang = env.ui.lang();
        self
    }

    /// Records the audit events of the act's requests into `facts` ([`Self::with_audit`]);
    /// returns the summary line, or `None` without an audit window.
    fn finish_audit(&mut self, facts: &mut serde_json::Value) -> Option<String> {
        let cursor = self.audit.take()?;
        let raw = serde_json::Value::Array(self.raw.clone());
        let audit = cursor.finish(&[facts, &raw]);
        if facts.is_object() {
            audit.attach(facts);
        } else {
            self.raw(crate::audit::FACTS_KEY, &audit);
        }
        let line = crate::audit::summary_line(&audit, &format!("evidence/{:02}.json", self.act));
        Some(line.get(self.lang).to_owned())
    }

    /// Appends raw material: `{"what": what, "at": now, "data": data}`.
    pub fn raw(&mut self, what: &str, data: impl Serialize) {
        let data = serde_json::to_value(data)
            .unwrap_or_else(|e| serde_json::json!({"encoding_error": e.to_string()}));
        self.raw
            .push(serde_json::json!({"what": what, "at": facts::now_rfc3339(), "data": data}));
    }

    /// Appends a request record as raw material (`what` = `request:<label>`).
    pub fn request(&mut self, label: &str, r: &RequestRecord) {
        self.raw(&format!("request:{label}"), r);
    }

    /// The evidence so far: `interrupted` with `interruption`, else `completed`.
    fn evidence(&self, facts: serde_json::Value, interruption: Option<String>) -> Evidence {
        Evidence {
            schema_version: SCHEMA_VERSION,
            lab: self.lab,
            act: self.act,
            status: match interruption {
                Some(_) => ActStatus::Interrupted,
                None => ActStatus::Completed,
            },
            started_at: self.started_at.clone(),
            finished_at: facts::now_rfc3339(),
            inputs: self.inputs.clone(),
            facts,
            raw: self.raw.clone(),
            interruption,
            versions: self.versions.clone(),
        }
    }

    /// Saves progress (`NN.partial.json`, status `interrupted`), so a runner that dies leaves its
    /// raw data. `facts` are the partial facts known so far.
    pub fn save_progress(&self, facts: serde_json::Value) -> Result<(), LabError> {
        self.workdir.save_progress(&self.evidence(facts, None))?;
        Ok(())
    }

    /// Writes the final `completed` evidence.
    pub fn complete(
        mut self,
        facts: impl Serialize,
        mut lines: Vec<String>,
    ) -> Result<ActSummary, LabError> {
        let mut facts = to_value(&facts)?;
        if let Some(line) = self.finish_audit(&mut facts) {
            lines.push(line);
        }
        let path = self.workdir.write_evidence(&self.evidence(facts, None))?;
        Ok(ActSummary {
            lab: self.lab,
            act: self.act,
            evidence: path,
            status: ActStatus::Completed,
            lines,
        })
    }

    /// Writes the final `interrupted` evidence with `why` and the partial `facts`.
    ///
    /// Errors: the evidence could not be written (e.g. a full disk); a [`LabError::Io`] then ends
    /// with `why`, so the act's own error (which may say that a fault was undone) still reaches
    /// the student.
    pub fn interrupt(
        mut self,
        mut facts: serde_json::Value,
        why: String,
    ) -> Result<PathBuf, LabError> {
        self.finish_audit(&mut facts);
        self.workdir
            .write_evidence(&self.evidence(facts, Some(why.clone())))
            .map_err(|e| match e {
                LabError::Io { path, source } => LabError::Io {
                    path,
                    source: std::io::Error::new(
                        source.kind(),
                        format!("{source}; the act had stopped with: {why}"),
                    ),
                },
                other => other,
            })
    }
}

/// Serialises facts.
pub fn to_value(v: &impl Serialize) -> Result<serde_json::Value, LabError> {
    serde_json::to_value(v).map_err(|e| LabError::Kube(format!("encoding facts: {e}")))
}

/// An act body's outcome ([`Done`]) with the act's admission metrics: its facts ([`to_value`])
/// with them attached ([`lab_core::metrics::AdmissionMetrics::attach`]), and `lines` with their
/// summary line last. Errors: as [`to_value`].
pub(crate) fn with_admission(
    ui: &Ui,
    facts: &impl Serialize,
    admission: &lab_core::metrics::AdmissionMetrics,
    mut lines: Vec<String>,
) -> Done {
    lines.push(ui.text(crate::metrics::summary_line(admission)));
    let mut value = to_value(facts)?;
    admission.attach(&mut value);
    Ok((value, lines))
}

/// Requires acts `acts` of `lab` to have `completed` evidence.
///
/// Errors: [`LabError::EvidenceMissing`] for a missing one; [`LabError::EvidenceInvalid`] for an
/// interrupted one (its results are uncertain: reproduce in a fresh lab).
pub fn require_completed(
    workdir: &Workdir,
    lab: Lab,
    acts: impl IntoIterator<Item = u8>,
) -> Result<(), LabError> {
    for act in acts {
        let loaded = workdir.read_evidence(act)?;
        let (of, path) = (loaded.evidence.lab, loaded.path);
        let detail = if of != lab {
            format!("belongs to lab {of:?}, this is lab {lab:?}")
        } else if loaded.evidence.status != ActStatus::Completed {
            "the act was interrupted; download the evidence and reproduce in a fresh lab".into()
        } else {
            continue;
        };
        return Err(LabError::EvidenceInvalid { path, detail });
    }
    Ok(())
}

/// Reads act `act`'s facts as `T`.
pub fn read_facts<T: serde::de::DeserializeOwned>(w: &Workdir, act: u8) -> Result<T, LabError> {
    let loaded = w.read_evidence(act)?;
    serde_json::from_value(loaded.evidence.facts.clone()).map_err(|e| LabError::EvidenceInvalid {
        path: loaded.path,
        detail: format!("facts: {e}"),
    })
}

/// The live values and evidence digests the inputs are checked against.
pub async fn live_context(cluster: &Cluster, workdir: &Workdir) -> Result<Context, LabError> {
    let node = cluster.node().await?;
    let ns = cluster.namespace_uids(&NAMESPACES).await?;
    let deployment = cluster.admission_deployment().await?;
    let namespaces = ns.into_iter().filter_map(|(k, v)| v.map(|v| (k, v)));
    let mut ctx = Context {
        node_uid: Some(node.uid),
        namespaces: Some(namespaces.collect()),
        deployment_uid: deployment.metadata.uid,
        ..Context::default()
    };
    for act in 1..=crate::acts::max_count() {
        if workdir.evidence_path(act).exists() {
            let loaded = workdir.read_evidence(act)?;
            if act == 2 {
                let policy = loaded.evidence.facts.get("policy");
                ctx.policy_uid = uid_of(policy).map(str::to_owned);
            }
            ctx.evidence_digests.insert(act, loaded.digest);
        }
    }
    if workdir.input_path(InputFile::Policy).exists() {
        ctx.policy = Some(workdir.read_input(InputFile::Policy)?.value);
    }
    Ok(ctx)
}

/// `Ok` when the live value `found` is `want`, else [`LabError::ClusterMismatch`] naming
/// `what`.
pub(crate) fn expect_same(
    what: impl Into<String>,
    want: &str,
    found: &str,
) -> Result<(), LabError> {
    if found == want {
        return Ok(());
    }
    Err(LabError::ClusterMismatch {
        what: what.into(),
        expected: want.to_owned(),
        found: found.to_owned(),
    })
}

/// The cluster, the live values and evidence digests inputs are checked against
/// ([`live_context`]), and input `T` read and checked against them ([`read_input`]).
pub(crate) async fn read_live<T: StudentInput>(
    env: &Env,
) -> Result<(Cluster, Context, T, LoadedInput), LabError> {
    let cluster = env.cluster().await?;
    let ctx = live_context(&cluster, &env.workdir).await?;
    let (typed, loaded) = read_input::<T>(&env.workdir, &ctx)?;
    Ok((cluster, ctx, typed, loaded))
}

/// `metadata.uid` of an object as the API server sent it (`None`: no object, or no UID).
pub(crate) fn uid_of(object: Option<&serde_json::Value>) -> Option<&str> {
    object?.pointer("/metadata/uid")?.as_str()
}

/// Reads and validates input `T` against `ctx`.
pub fn read_input<T: StudentInput>(
    workdir: &Workdir,
    ctx: &Context,
) -> Result<(T, LoadedInput), LabError> {
    let loaded = workdir.read_input(T::FILE)?;
    let typed = inputs::parse::<T>(&loaded.value, ctx)?;
    Ok((typed, loaded))
}

/// The facts of one registered webhook `wh` of the configuration `cfg`,
/// [`crate::derive::registration`] of the configuration as the API server sent it (the one
/// mapping the grader recomputes).
///
/// Errors: [`LabError::Kube`] when the configuration does not serialize or derive.
pub fn webhook_facts(
    cfg: &ValidatingWebhookConfiguration,
    wh: &ValidatingWebhook,
) -> Result<WebhookFacts, LabError> {
    let cfg = cluster::to_json(cfg)?;
    cluster::derived(crate::derive::registration(
        &cfg,
        &wh.name,
        facts::now_rfc3339(),
    ))
}

/// Waits (bounded, with progress) until the webhook `name` is registered and `ok(webhook)` holds.
/// Returns the configuration and webhook seen, plus every configuration list read (the last one).
///
/// Errors: [`LabError::WaitTimedOut`] with the last state seen.
pub async fn wait_for_webhook(
    cluster: &Cluster,
    ui: &Ui,
    name: &str,
    bound: Duration,
    ok: impl Fn(&ValidatingWebhook) -> bool,
) -> Result<(ValidatingWebhookConfiguration, ValidatingWebhook), LabError> {
    let check = || async {
        let configs = cluster.webhook_configurations().await?;
        let found = cluster::find_webhook_in(&configs, name);
        let last_state = match &found {
            Some((_, wh)) if ok(wh) => return Ok(Check::Done(found.expect("matched above"))),
            Some((c, wh)) => format!(
                "{name} in {} with failurePolicy {:?}, timeoutSeconds {:?}",
                c.metadata.name.as_deref().unwrap_or(""),
                wh.failure_policy,
                wh.timeout_seconds
            ),
            None => {
                let all = configs.iter().flat_map(|c| c.webhooks.iter().flatten());
                let names: Vec<String> = all.map(|w| w.name.clone()).collect();
                format!("no webhook {name}; webhooks: {}", names.join(", "))
            }
        };
        Ok::<_, LabError>(Check::NotYet(last_state))
    };
    let every = (bound, Duration::from_millis(500));
    let progress = |_: &String| m::waiting_for_webhook(name);
    let got = wait_with_progress(ui, format!("webhook {name}"), every, progress, check).await;
    got.map_err(LabError::from)
}

/// The step line of the webhook `wh` as registered: its name, failurePolicy and timeout.
pub(crate) fn step_registered(ui: &Ui, wh: &WebhookFacts) {
    let timeout = wh.timeout_seconds.to_string();
    let line = m::webhook_registered(&wh.name, &wh.failure_policy, &timeout);
    ui.step(line);
}

/// A bounded wait's progress ([`Wait::run`]'s `on_pending`): `line(state)` at most once a second,
/// with the seconds waited of `bound`.
pub(crate) fn progress_each_second<S, L: Into<Line>>(
    ui: &Ui,
    bound: Duration,
    line: impl Fn(&S) -> L,
) -> impl FnMut(&S, Duration) {
    let mut last_tick = 0;
    move |state, elapsed| {
        let secs = elapsed.as_secs();
        if secs > last_tick {
            last_tick = secs;
            ui.progress(line(state), secs, bound.as_secs());
        }
    }
}

/// Appends `state` to a wait's change log with the time `at`, unless it is the last state logged
/// (the log keeps every check whose state differed from the one before: the raw record the
/// graders re-derive a wait's times from).
pub(crate) fn log_change(log: &mut Vec<serde_json::Value>, mut state: serde_json::Value, at: &str) {
    let last = log.last().map(|l| {
        let mut l = l.clone();
        l.as_object_mut().map(|o| o.remove("at"));
        l
    });
    if last.as_ref() != Some(&state) {
        state["at"] = at.into();
        log.push(state);
    }
}

/// Runs `check` each second until it is done or `bound` runs out, showing `progress(state)` once
/// a second with the seconds waited of `bound` ([`wait_with_progress`]).
///
/// Errors: [`LabError::WaitTimedOut`] when `bound` runs out; a check's own error at once.
pub(crate) async fn wait_each_second<T, F, Fut>(
    ui: &Ui,
    what: String,
    bound: Duration,
    progress: fn(&str) -> Line,
    check: F,
) -> Result<T, LabError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Check<T, String>, LabError>>,
{
    let every = (bound, Duration::from_secs(1));
    let progress = |state: &String| progress(state);
    let got = wait_with_progress(ui, what, every, progress, check).await;
    got.map_err(LabError::from)
}

/// Runs `check` every `interval` until it is done or `bound` runs out, showing `progress(state)`
/// at most once a second with the seconds waited of `bound` ([`crate::wait::Wait`]: the error
/// says what was waited for and the last state seen).
///
/// Errors: [`WaitError::TimedOut`] when `bound` runs out; a check's own error at once.
pub(crate) async fn wait_with_progress<T, S, L, F, Fut>(
    ui: &Ui,
    what: String,
    (bound, interval): (Duration, Duration),
    progress: impl Fn(&S) -> L,
    check: F,
) -> Result<T, WaitError<S, LabError>>
where
    L: Into<Line>,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Check<T, S>, LabError>>,
{
    let progress = progress_each_second(ui, bound, progress);
    Wait::new(what, bound, interval)
        .run(check, progress, tokio::time::sleep)
        .await
}

/// Sends violating (unlabelled) pod creates in `namespace` one after another (1 s apart) until one
/// is an `explicit-deny` or `bound` runs out; every request is kept, in order. `on_request` sees
/// each one as it arrives (for progress and raw evidence).
pub async fn until_explicit_deny(
    cluster: &Cluster,
    purpose: &str,
    namespace: &str,
    dry_run: bool,
    bound: Duration,
    on_request: impl FnMut(&RequestRecord, u64),
) -> Result<Vec<RequestRecord>, LabError> {
    let t0 = Instant::now();
    let all = std::cell::RefCell::new(Vec::new());
    let on_request = std::cell::RefCell::new(on_request);
    let check = || async {
        let r = probe::send_pod(cluster, purpose, namespace, PodKind::Bad, dry_run).await?;
        let denied = r.outcome == Outcome::ExplicitDeny;
        (on_request.borrow_mut())(&r, t0.elapsed().as_secs());
        all.borrow_mut().push(r);
        Ok::<_, LabError>(if denied {
            Check::Done(())
        } else {
            Check::NotYet(())
        })
    };
    let every = Duration::from_secs(1);
    let wait = Wait::new(format!("an explicit deny in {namespace}"), bound, every);
    let sent = wait.run(check, |_, _| {}, tokio::time::sleep).await;
    match sent {
        // Denied, or the bound ran out: either way every request sent is the answer.
        Ok(()) | Err(WaitError::TimedOut(_)) => Ok(all.into_inner()),
        Err(WaitError::Failed(e)) => Err(e),
    }
}

/// Violating pods named `name` in the target namespace until an explicit deny
/// ([`until_explicit_deny`] within `bound`), each shown as it is answered (seconds of `shown`),
/// then each recorded as `request:<label>`.
pub(crate) async fn violating_until_deny(
    cluster: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    (name, label): (&str, &str),
    (bound, shown): (Duration, Duration),
) -> Result<Vec<RequestRecord>, LabError> {
    let shown = shown.as_secs();
    let sent = until_explicit_deny(cluster, name, TARGET_NAMESPACE, false, bound, |r, s| {
        ui.progress(describe(ui, m::req::VIOLATING, r), s, shown)
    })
    .await?;
    for r in &sent {
        rec.request(label, r);
    }
    Ok(sent)
}

/// The last by name of the entries under `root` whose names `take` (`None`: no such entry).
///
/// Errors: the directory cannot be read.
pub(crate) fn last_entry(
    root: &std::path::Path,
    take: impl Fn(&str) -> bool,
) -> std::io::Result<Option<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&take))
        .collect();
    found.sort();
    Ok(found.pop())
}

/// `v`, or `none` when absent (in the student lines: `?` not seen, `-` not set).
pub(crate) fn or<'a>(v: &'a Option<String>, none: &'a str) -> &'a str {
    v.as_deref().unwrap_or(none)
}

/// The line of an existing pod: its name, UID and phase (`?`: not seen).
pub fn existing_line(ui: &Ui, p: &facts::PodObservation) -> String {
    ui.text(m::existing(&p.name, or(&p.uid, "?"), or(&p.phase, "?")))
}

/// The line of act 3's pod read again (`p`) beside the UID act 3 recorded (`act3`).
pub fn existing_vs_act3_line(ui: &Ui, p: &PodObservation, act3: &PodObservation) -> String {
    let (uid, phase, was) = (p.uid.as_deref(), p.phase.as_deref(), act3.uid.as_deref());
    let [uid, phase, was] = [uid, phase, was].map(|v| v.unwrap_or("?"));
    ui.text(m::existing_vs_act3(&p.name, uid, phase, was))
}

/// One line describing a request's outcome for the student, in the output's language
/// ([`crate::messages::act::request`]; `label` from [`crate::messages::act::req`]).
pub fn describe(ui: &Ui, label: Text, r: &RequestRecord) -> String {
    let uid = r.get.exists.then(|| or(&r.get.uid, "?"));
    let (outcome, status, ms) = (r.outcome.as_str(), r.http_status, r.elapsed_ms);
    m::request(ui.lang(), label, outcome, status, ms, uid)
}

/// [`describe`] indented under a step line.
pub fn describe_indented(ui: &Ui, label: Text, r: &RequestRecord) -> String {
    format!("  {}", describe(ui, label, r))
}

/// Runs `fut` unless a SIGINT, SIGTERM or SIGHUP arrives first ([`crate::signals`]); then returns
/// the signal's name and `fut` is dropped (a live [`Freeze`] resumes in its `Drop`). The caller is
/// marked as handling signals itself ([`crate::signals::Guard`]) until the act ends
/// ([`crate::signals::keep_until_act_ends`]), so the command's outer handler never cuts short the
/// act's exit path (the undo, the evidence).
///
/// [`Freeze`]: crate::faults::freeze::Freeze
pub async fn or_signal<T>(fut: impl Future<Output = T>) -> Result<T, &'static str> {
    let guard = crate::signals::Guard::new();
    crate::signals::install();
    let r = match crate::signals::pending() {
        Some(s) => Err(s),
        None => tokio::select! {
            v = fut => Ok(v),
            s = crate::signals::received() => Err(s),
        },
    };
    crate::signals::keep_until_act_ends(guard);
    r
}

/// [`or_signal`] for act `act`: a signal ends it with [`LabError::Interrupted`], saying what the
/// act's exit path undoes (`healed`).
pub(crate) async fn unless_signalled<T>(
    act: u8,
    healed: &str,
    fut: impl Future<Output = Result<T, LabError>>,
) -> Result<T, LabError> {
    or_signal(fut).await.unwrap_or_else(|sig| {
        Err(LabError::Interrupted {
            signal: sig.into(),
            act,
            healed: healed.into(),
        })
    })
}

/// `inspect`'s report (printed as JSON on stdout).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectReport {
    /// The lab.
    pub lab: Lab,
    /// The node (`vm.node_uid` is what `scope.json` and the plans need).
    pub vm: InspectVm,
    /// Namespace name → UID (`null` when it does not exist).
    pub namespaces: BTreeMap<String, Option<String>>,
    /// The admission controller Deployment.
    pub controller: InspectController,
    /// Whether the cluster carries the lab mark (faults are refused without it).
    pub lab_mark: bool,
    /// Act number → `completed`, `interrupted` or `not-run`.
    pub acts: BTreeMap<u8, String>,
    /// Canonical digests of the existing evidence files (act → digest), for the inputs that quote them.
    pub evidence_sha256: BTreeMap<u8, String>,
}

/// `inspect`'s node part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectVm {
    /// Node name.
    pub node_name: String,
    /// Node UID.
    pub node_uid: String,
}

/// `inspect`'s controller part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectController {
    /// `kyverno/kyverno-admission-controller`.
    pub deployment: String,
    /// Its UID.
    pub deployment_uid: String,
    /// `spec.replicas`.
    pub replicas: Option<i32>,
}

/// `inspect`: reads the live values and the work directory; changes nothing.
pub async fn inspect(lab: Lab, env: &Env) -> Result<InspectReport, LabError> {
    use cluster::{ADMISSION_DEPLOYMENT, KYVERNO_NAMESPACE};
    let cluster = env.cluster().await?;
    let node = cluster.node().await?;
    let namespaces = cluster.namespace_uids(&NAMESPACES).await?;
    let dep = cluster.admission_deployment().await?;
    let lab_mark = cluster.lab_mark().await.is_ok();
    let mut acts = BTreeMap::new();
    let mut digests = BTreeMap::new();
    for act in crate::acts::numbers(lab) {
        let status = match env.workdir.evidence_status(act)? {
            Some(ActStatus::Completed) => "completed",
            Some(ActStatus::Interrupted) => "interrupted",
            None => "not-run",
        };
        if status != "not-run" {
            digests.insert(act, env.workdir.read_evidence(act)?.digest);
        }
        acts.insert(act, status.to_owned());
    }
    Ok(InspectReport {
        lab,
        vm: InspectVm {
            node_name: node.name,
            node_uid: node.uid,
        },
        namespaces,
        controller: InspectController {
            deployment: format!("{KYVERNO_NAMESPACE}/{ADMISSION_DEPLOYMENT}"),
            deployment_uid: dep.metadata.uid.clone().unwrap_or_default(),
            replicas: dep.spec.as_ref().and_then(|s| s.replicas),
        },
        lab_mark,
        acts,
        evidence_sha256: digests,
    })
}

/// The future an act's runner returns (acts run on the caller's runtime with `block_on`, so it
/// need not be `Send`).
pub type ActFuture<'a> = std::pin::Pin<Box<dyn Future<Output = Result<ActSummary, LabError>> + 'a>>;

/// The prefix of act `act`'s request names in `lab` (`c3` for lab C's act 3: `c3-bad-w0`,
/// `c3-good`), so a request's name says which lab and act sent it.
pub fn request_tag(lab: Lab, act: u8) -> String {
    format!("{}{act}", lab.as_str())
}

/// Runs one act of a lab against the cluster reached through `env` ([`crate::labs::run_act`] takes the
/// work-dir lock, heals and checks the act's inputs and earlier acts first).
pub type Runner = for<'a> fn(&'a Env, Lab) -> ActFuture<'a>;

/// The runners of acts 1-3, shared by every lab (lab C has its own act 3) (see [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, Runner)] = &[
    (1, |env, lab| Box::pin(act1(lab, env))),
    (2, |env, lab| Box::pin(act2(lab, env))),
    (3, |env, lab| Box::pin(act3(lab, env))),
];

/// Act 1: `scope.json` checked against the live cluster (names are not UIDs), then saved.
pub async fn act1(lab: Lab, env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let (cluster, ctx, _scope, loaded) = read_live::<inputs::Scope>(env).await?;
    let mut rec = ActRecorder::begin(&env.workdir, lab, 1)?.with_input(&loaded);
    ui.step(m::SCOPE_MATCHES);
    let node = cluster.node().await?;
    let dep = cluster.admission_deployment().await?;
    let mark = cluster.lab_mark().await;
    rec.raw("scope.json", &loaded.value);
    let mark = cluster::to_json(&mark.as_ref().map_err(|e| e.to_string()))?;
    rec.raw("lab-mark", &mark);
    let facts = Act1Facts {
        node: NodeFacts {
            name: node.name,
            uid: node.uid,
        },
        namespaces: ctx.namespaces.clone().unwrap_or_default(),
        // Validated: the scope holds exactly these names.
        target: inputs::TargetNamespace::VALUE.to_owned(),
        control: inputs::ControlNamespace::VALUE.to_owned(),
        controller_deployment: ObjectRef {
            namespace: Some(cluster::KYVERNO_NAMESPACE.into()),
            name: cluster::ADMISSION_DEPLOYMENT.into(),
            uid: dep.metadata.uid.clone().unwrap_or_default(),
        },
        lab_mark: cluster::derived(crate::derive::lab_mark(&mark))?,
        checked_at: facts::now_rfc3339(),
    };
    let mut lines = vec![ui.text(m::node(&facts.node.name, &facts.node.uid))];
    lines.extend((facts.namespaces.iter()).map(|(n, u)| ui.text(m::namespace(n, u))));
    if facts.lab_mark.is_none() {
        lines.push(ui.text(m::NO_LAB_MARK));
    }
    rec.complete(facts, lines)
}

/// Act 2: applies `policy.json` unchanged and observes the real registration; then waits until
/// the webhook answers (a server dry-run violating pod is explicitly denied: nothing is stored).
pub async fn act2(lab: Lab, env: &Env) -> Result<ActSummary, LabError> {
    let (ui, registration_bound) = (&env.ui, env.registration_bound);
    let (cluster, _, _policy, loaded) = read_live::<inputs::Policy>(env).await?;
    let mut rec = ActRecorder::begin(&env.workdir, lab, 2)?.with_input(&loaded);
    let (cluster, mut partial) = (&cluster, serde_json::Value::Null);
    let result = async {
        let name = cluster::POLICY_NAME;
        ui.step(m::APPLYING_POLICY);
        let stored = match cluster.policy(name).await? {
            None => cluster.create_policy(&loaded.value).await?,
            Some(_) => cluster.replace_policy_spec(&loaded.value).await?,
        };
        rec.raw("policy-stored", &stored);
        // Until the webhook answers, the partial facts are the stored policy.
        partial = serde_json::json!({ "policy": stored });
        let at = |pointer: &str| loaded.value.pointer(pointer);
        let failure_policy = at("/spec/failurePolicy").and_then(|v| v.as_str());
        let failure_policy = failure_policy.unwrap_or("Fail");
        let webhook_name = cluster::fine_grained_webhook_name(failure_policy, name);
        let timeout = at("/spec/webhookConfiguration/timeoutSeconds");
        let timeout = timeout.and_then(|v| v.as_i64());
        let (cfg, wh) = wait_for_webhook(cluster, ui, &webhook_name, registration_bound, |wh| {
            wh.failure_policy.as_deref() == Some(failure_policy)
                && wh.timeout_seconds.map(i64::from) == timeout
        })
        .await?;
        rec.raw("webhook-configuration", &cfg);
        let webhook = webhook_facts(&cfg, &wh)?;
        step_registered(ui, &webhook);
        // The registration exists; wait until the webhook answers for this policy. Server dry-run:
        // nothing is stored, whatever the answer.
        let on_answer = |r: &RequestRecord, s| {
            let answer = m::checking_answers(r.outcome.as_str());
            ui.progress(answer, s, ANSWER_BOUND.as_secs());
        };
        let (ns, bound) = (TARGET_NAMESPACE, ANSWER_BOUND);
        let answered = until_explicit_deny(cluster, "b2-ready", ns, true, bound, on_answer).await?;
        for r in &answered {
            rec.request("ready-check-dry-run", r);
        }
        // Re-read the stored policy: Kyverno writes its status after registering it (a failed read
        // leaves no partial facts).
        partial = serde_json::Value::Null;
        let policy = cluster.policy(name).await?.unwrap_or(stored);
        let uid = uid_of(Some(&policy)).unwrap_or("?").to_owned();
        let facts = to_value(&Act2Facts { policy, webhook })?;
        let last = answered.last().map(|r| r.outcome);
        if last != Some(Outcome::ExplicitDeny) {
            partial = facts;
            return Err(LabError::WaitTimedOut {
                what: "an explicit deny from the registered webhook (server dry-run)".into(),
                waited_ms: ANSWER_BOUND.as_millis() as u64,
                last_state: last.map(|o| o.as_str().to_owned()).unwrap_or_default(),
            });
        }
        let cfg_name = cfg.metadata.name.as_deref().unwrap_or("");
        let lines = vec![
            ui.text(m::policy_uid(&uid)),
            ui.text(m::webhook_in(&webhook_name, cfg_name)),
        ];
        Ok((facts, lines))
    }
    .await;
    finish(rec, partial, result)
}

/// An act body's outcome: its facts and summary lines, or the error that ended it (the act's
/// partial facts are kept beside it).
pub(crate) type Done = Result<(serde_json::Value, Vec<String>), LabError>;

/// Writes completed evidence from `Ok((facts, lines))`, or interrupted evidence with the partial
/// facts `partial` and the error from `Err`, then returns the error.
pub fn finish(
    rec: ActRecorder,
    partial: serde_json::Value,
    result: Done,
) -> Result<ActSummary, LabError> {
    match result {
        Ok((facts, lines)) => rec.complete(facts, lines),
        Err(e) => {
            rec.interrupt(partial, e.to_string())?;
            Err(e)
        }
    }
}

/// Act 3: baseline in a healthy state: a labelled pod is stored and reaches `Running` (the
/// existing pod later acts check), an unlabelled one is explicitly denied and not stored.
pub async fn act3(lab: Lab, env: &Env) -> Result<ActSummary, LabError> {
    let cluster = env.cluster().await?;
    let mut rec = env.begin_audited(lab, 3)?;
    let (cluster, ui, mut partial) = (&cluster, &env.ui, serde_json::Value::Null);
    let result = async {
        // The request names' prefix: the lab and the act (`b3-good`).
        let tag = request_tag(lab, 3);
        let window = crate::metrics::Window::begin(cluster).await;
        ui.step(m::CREATING_GOOD_TARGET);
        let (good, bad) = (format!("{tag}-good"), format!("{tag}-bad"));
        let good = probe::send_pod(cluster, &good, TARGET_NAMESPACE, PodKind::Good, false).await?;
        rec.request("good", &good);
        ui.say(describe_indented(ui, m::req::GOOD, &good));
        ui.step(m::CREATING_BAD_TARGET);
        let bad = probe::send_pod(cluster, &bad, TARGET_NAMESPACE, PodKind::Bad, false).await?;
        rec.request("bad", &bad);
        ui.say(describe_indented(ui, m::req::BAD, &bad));
        let admission = window.end(cluster).await;
        partial = serde_json::json!({"good": good, "bad": bad});
        admission.attach(&mut partial);
        rec.save_progress(partial.clone())?;
        let existing = wait_running(cluster, ui, &good.name).await?;
        let lines = vec![
            describe(ui, m::req::GOOD, &good),
            describe(ui, m::req::BAD, &bad),
            existing_line(ui, &existing),
        ];
        let facts = Act3Facts {
            good,
            bad,
            existing,
        };
        with_admission(ui, &facts, &admission, lines)
    }
    .await;
    finish(rec, partial, result)
}

/// Waits (bounded, [`RUNNING_BOUND`], with a step line and progress) until act 3's good pod
/// `name` in the target namespace is `Running` (labs A, B and C).
pub(crate) async fn wait_running(
    cluster: &Cluster,
    ui: &Ui,
    name: &str,
) -> Result<PodObservation, LabError> {
    ui.step(m::WAITING_RUNNING);
    let bound = RUNNING_BOUND.as_secs();
    let progress = |s, phase: Option<&str>| ui.progress(m::phase(phase.unwrap_or("?")), s, bound);
    probe::wait_running(cluster, TARGET_NAMESPACE, name, RUNNING_BOUND, progress).await
}

/// Act 8 of every lab: the lab's `report.json` (`R`) read against the live cluster and the
/// evidence, its claims held against the words the evidence supports (`words`, the lab's one
/// report rule over the work directory's evidence) and its digest fields (`R`'s
/// [`InputFile::bound_fields`]: field → act) against the canonical digests of the evidence; every
/// earlier act's digest is recorded. `keep_report`: the report is also kept raw (lab A's format).
///
/// Errors: the report's ([`read_input`]), the evidence's ([`read_facts`]), the recorder's.
pub(crate) async fn act8<R: StudentInput>(
    env: &Env,
    lab: Lab,
    keep_report: bool,
    words: impl FnOnce(&Workdir) -> Result<Vec<(&'static str, String)>, LabError>,
) -> Result<ActSummary, LabError> {
    let (_, _, _report, loaded) = read_live::<R>(env).await?;
    let words = words(&env.workdir)?;
    let mut rec = ActRecorder::begin(&env.workdir, lab, 8)?.with_input(&loaded);
    if keep_report {
        rec.raw("report.json", &loaded.value);
    }
    let claim = |field: &str, evidence: String| {
        let found = loaded.value.get(field).cloned().unwrap_or_default();
        crate::facts::ReportCheck {
            field: field.to_owned(),
            agrees: found.as_str() == Some(evidence.as_str()),
            report: found,
            evidence: evidence.into(),
        }
    };
    let mut checks: Vec<_> = words.into_iter().map(|(f, w)| claim(f, w)).collect();
    let mut evidence_digests = BTreeMap::new();
    // Every earlier act's evidence (the report is the last act).
    for act in crate::acts::numbers(lab).filter(|&a| a < rec.act) {
        evidence_digests.insert(format!("{act:02}"), env.workdir.read_evidence(act)?.digest);
    }
    for &(path, source) in R::FILE.bound_fields() {
        if let (Some(field), inputs::Source::Digest(act)) = (path.strip_prefix("$."), source) {
            let digest = evidence_digests.get(&format!("{act:02}")).cloned();
            checks.push(claim(field, digest.unwrap_or_default()));
        }
    }
    let lines = m::report_summary(env.ui.lang(), &checks);
    let facts = crate::facts::Act8Facts {
        checks,
        evidence_digests,
    };
    rec.complete(facts, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> RunningVersions {
        RunningVersions {
            apiserver_version: serde_json::json!({"gitVersion": "v1.36.3", "major": "1"}),
            kyverno_image: Some("reg.kyverno.io/kyverno/kyverno:v1.19.1".into()),
            kyverno_chart: Some("kyverno-3.9.1".into()),
            read_at: "2026-12-01T18:00:00.000Z".into(),
            errors: vec![],
        }
    }

    /// Completes act 1 with an empty fact set in a fresh work dir, inside `scope` or not, and
    /// returns the evidence as read back.
    fn act1_evidence(scoped: bool) -> Evidence {
        let dir = tempfile::tempdir().unwrap();
        let workdir = Workdir::new(dir.path());
        let write = async {
            let rec = ActRecorder::begin(&workdir, Lab::A, 1).unwrap();
            rec.complete(serde_json::json!({}), vec![]).unwrap();
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        if scoped {
            rt.block_on(RUNNING.scope(running(), write));
        } else {
            rt.block_on(write);
        }
        workdir.read_evidence(1).unwrap().evidence
    }

    /// Lab A's act 6 finds act 5's scale attempt, a freeze act its own attempt, by this rule.
    #[test]
    fn last_entry_is_the_last_by_name_of_the_entries_taken() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["scale-01", "scale-03", "freeze-05-9", "scale-02"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let scale = last_entry(dir.path(), |n| n.starts_with("scale-")).unwrap();
        assert_eq!(scale, Some(dir.path().join("scale-03")));
        assert_eq!(last_entry(dir.path(), |n| n.ends_with("-7")).unwrap(), None);
        assert!(last_entry(&dir.path().join("absent"), |_| true).is_err());
    }

    #[test]
    fn expect_same_names_what_differs_and_both_values() {
        assert!(expect_same("node uid", "u1", "u1").is_ok());
        let Err(LabError::ClusterMismatch {
            what,
            expected,
            found,
        }) = expect_same("node uid", "u1", "u2")
        else {
            panic!("a mismatch");
        };
        assert_eq!([what, expected, found], ["node uid", "u1", "u2"]);
    }

    /// Evidence written inside an act's scope carries the running versions; outside it, evidence
    /// has no `versions` field.
    #[test]
    fn evidence_carries_the_running_versions_only_inside_an_acts_scope() {
        let ev = act1_evidence(true);
        assert_eq!(ev.versions, Some(running()));
        assert_eq!(ev.versions.unwrap().git_version(), Some("v1.36.3"));
        let ev = act1_evidence(false);
        assert_eq!(ev.versions, None);
        let text = serde_json::to_string(&ev).unwrap();
        assert!(!text.contains("\"versions\""), "{text}");
    }
}
