//! `cargo xtask lab run [--lab <lab>|all]`: reproduces a lab from nothing on a fresh embedded cluster.
//!
//! For each lab: bring a fresh cluster up (`xtask::cluster`), write the reference student inputs
//! the way a student would (from `inspect` and from the digests of earlier evidence), run every act
//! of the registry ([`lab::acts`]) in order with the lab crate's own code, grade every act, copy inputs, evidence, fault
//! ledgers, component logs and webhook snapshots to `target/lab-artifacts/<run-id>/<lab>/`, tear
//! the cluster down, and print where the artifacts are.
//!
//! The reference inputs (the answer keys, [`mod@reference`]) are written by [`LabRun::write_inputs`]:
//! given the act about to run, it writes the files the registry says that act reads.
//! The tests in `tests/` drive the same [`LabRun`] one act at a time.
//!
//! The run's last line is [`verdict_line`]: PASS/FAIL, each lab's acts completed and grades passed
//! out of its act count, and the run's `index.html`. A failed act ([`LabRun::act`]), wait or
//! `cluster up` (`up_with_diagnostics`, also used by the test fixture) leaves
//! `<artifacts>/diagnostics/` ([`diagnostics`]); `drive_with` takes a `before_act` hook (the
//! forced act failure of `tests/tests/labs/lab_a/forced_failure.rs`).
//!
//! Signals: `lab run` installs the lab's one handler (`lab::signals`) first. SIGINT, SIGTERM or
//! SIGHUP then fails the cluster-lock wait and `Cluster::up`'s next bounded wait (`up` tears down
//! what it started), stops before the next act, or makes the running act return `Interrupted`
//! (`signals::until_signal`; an act with a live fault undoes it first); then the work dir is
//! healed (`labs::heal`), artifacts and report pages written, the cluster torn down, one line says
//! what was done, exit 130. Teardown never checks signals and runs crictl in its own process
//! group, so a second Ctrl-C cannot cut it short.

pub mod diagnostics;
pub mod reference;
pub mod report;
pub mod versions;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use lab::evidence::Lab;
use lab::grade::{self, Findings, GradeInput};
use lab::inputs::InputFile;
use lab::labs::{ActSummary, Env, InspectReport, Ui};
use lab::workdir::Workdir;

use crate::backend::copy_into;
use crate::flags::{LabCmd, LabSub};
use crate::status::{self, Step};

/// Log collection, re-exported under the path the cluster tests name.
pub use crate::backend::collect_cluster_logs;
/// The machine lock, re-exported under the path the cluster tests name.
pub use crate::lock::ClusterLock;

impl LabCmd {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self.cmd {
            LabSub::Summary { dir } => {
                print!("{}", crate::backend::summary::markdown(&dir)?);
                Ok(())
            }
            LabSub::JunitSummary { dir } => {
                print!("{}", report::junit_markdown(&dir)?);
                Ok(())
            }
            LabSub::Run(args) => {
                // From here on SIGINT, SIGTERM and SIGHUP no longer end the process: they stop the
                // run at the next act (or the running act, healing its fault), then the work dir is
                // healed, artifacts collected, the cluster torn down, and the process exits 130.
                lab::signals::install();
                let backend = args.backend.backend()?;
                if args.versions.given() && backend != crate::backend::Backend::Embedded {
                    bail!(
                        "--kubernetes/--kyverno choose what the embedded backend builds; the {} backend runs the versions its cluster has (see --allow-other-versions)",
                        backend.name()
                    );
                }
                let versions = args.versions.resolve()?;
                backend.preflight()?;
                let labs = args
                    .lab
                    .clone()
                    .unwrap_or_else(crate::flags::LabChoice::all)
                    .labs();
                if labs.len() > 1 && matches!(backend, crate::backend::Backend::Kubeconfig(_)) {
                    bail!(
                        "the kubeconfig backend runs one lab per existing cluster (each lab needs a fresh cluster): pass --lab a, b or c"
                    );
                }
                let run_id = args.run_id.clone().unwrap_or_else(run_id);
                let mut failed = Vec::new();
                let mut outcomes = Vec::new();
                let base = RunOptions {
                    run_id: run_id.clone(),
                    retain: args.retain,
                    backend: backend.clone(),
                    versions: versions.clone(),
                    ..RunOptions::new(Lab::A)
                };
                let at_once = !args.one_at_a_time
                    && labs.len() > 1
                    && backend == crate::backend::Backend::Embedded
                    && memory_for_at_once(labs.len());
                if args.at_once && !at_once {
                    crate::status_line!(
                        "--at-once: one lab, or the {} backend: the labs run one after another",
                        backend.name()
                    );
                }
                let mut done = match at_once {
                    true => start_labs_at_once(&labs, &base)?,
                    false => Vec::new(),
                }
                .into_iter();
                for lab in labs {
                    if let Some(signal) = lab::signals::pending()
                        && !at_once
                    {
                        exit_interrupted(signal, &format!("before lab {}", lab_name(lab)));
                    }
                    let opts = RunOptions {
                        lab,
                        ..base.clone()
                    };
                    let result = match at_once {
                        true => done.next().map(|(_, r)| r).unwrap_or_else(|| {
                            Err(anyhow::anyhow!(
                                "lab {}: its thread gave no result",
                                lab_name(lab)
                            ))
                        }),
                        false => run_lab(&opts),
                    };
                    let (outcome, passed) = lab_result(lab, result, &run_id);
                    outcomes.push(outcome);
                    if !passed {
                        failed.push(lab_name(lab));
                    }
                }
                let index = artifacts_dir(&run_id, Lab::A)
                    .parent()
                    .map(|d| d.join("index.html"))
                    .unwrap_or_default();
                crate::status_line!("{}", verdict_line(&run_id, &outcomes, &index));
                if !failed.is_empty() {
                    bail!("lab run {run_id}: failed: {}", failed.join(", "));
                }
                Ok(())
            }
        }
    }
}

/// `lab run` of several labs on the embedded backend (unless `--one-at-a-time`): says so, turns the progress lines off and runs the labs
/// ([`run_labs_at_once`]); a signal that ended the lock wait exits 130 as one lab's run does.
///
/// # Errors
/// The machine lock could not be taken (no signal pending).
fn start_labs_at_once(labs: &[Lab], base: &RunOptions) -> Result<Vec<(Lab, Result<RunReport>)>> {
    crate::status_line!(
        "lab run {}: labs {} at once, each on its own cluster (--one-at-a-time: one after another)",
        base.run_id,
        labs.iter()
            .map(|l| lab_name(*l))
            .collect::<Vec<_>>()
            .join(", ")
    );
    status::no_progress_lines();
    run_labs_at_once(labs, base).or_else(|e| match lab::signals::pending() {
        Some(signal) => exit_interrupted(signal, &format!("before the labs ({e:#})")),
        None => Err(e),
    })
}

/// Memory each lab's cluster is given room for when the labs run at once: one embedded node with
/// Kyverno (lab C's three replicas included) used about 1 GiB on this project's 2-core machine
/// (`free -m` each 5 s through `cargo xtask lab run`, 2026-12-03: 2.1 GiB before, 5.3 GiB at the
/// peak with three clusters), with half as much again for a margin.
const MEMORY_PER_LAB_KIB: u64 = 1536 * 1024;

/// Whether the machine has the memory for `labs` clusters at once (`MemAvailable` in
/// `/proc/meminfo` ≥ [`MEMORY_PER_LAB_KIB`] each); when not, or when it cannot be read, says so
/// and the labs run one after another.
fn memory_for_at_once(labs: usize) -> bool {
    let need = MEMORY_PER_LAB_KIB * labs as u64;
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| mem_available_kib(&m));
    match available {
        Some(kib) if kib >= need => true,
        found => {
            crate::status_line!(
                "lab run: the labs at once want {} MiB of available memory ({} MiB a lab); {}: one after another",
                need / 1024,
                MEMORY_PER_LAB_KIB / 1024,
                found.map_or(
                    "/proc/meminfo's MemAvailable could not be read".to_owned(),
                    |k| { format!("{} MiB available", k / 1024) }
                )
            );
            false
        }
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in KiB.
fn mem_available_kib(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
}

/// Prints one lab's result of `lab run` (its summary, or its error) and returns its outcome and
/// whether it passed; exits 130 ([`exit_interrupted`]) when a signal stopped it.
fn lab_result(lab: Lab, result: Result<RunReport>, run_id: &str) -> (LabOutcome, bool) {
    match result {
        Ok(report) => {
            crate::status_line!("{}", report.summary());
            if let Some(i) = &report.interrupted {
                exit_interrupted(&i.signal, &i.describe(&report.artifacts));
            }
            (LabOutcome::of(&report), report.passed())
        }
        Err(e) => {
            crate::status_line!("lab {}: {e:#}", lab_name(lab));
            if let Some(signal) = lab::signals::pending() {
                exit_interrupted(
                    signal,
                    &format!(
                        "lab {} stopped before its acts ran (what was started was torn down; artifacts in {})",
                        lab_name(lab),
                        artifacts_dir(run_id, lab).display()
                    ),
                );
            }
            (LabOutcome { lab, counts: None }, false)
        }
    }
}

/// One lab's result in the run's last line ([`verdict_line`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabOutcome {
    /// The lab.
    pub lab: Lab,
    /// `(acts completed, grades passed)`, each out of the lab's act count; `None` when the lab
    /// stopped before its acts (its error is printed above).
    pub counts: Option<(usize, usize)>,
}

impl LabOutcome {
    /// Counts a finished lab run: acts whose evidence is `completed`, grades that pass.
    pub fn of(report: &RunReport) -> LabOutcome {
        let completed = report
            .acts
            .iter()
            .filter(|(_, r)| {
                r.as_ref()
                    .is_ok_and(|s| s.status == lab::evidence::ActStatus::Completed)
            })
            .count();
        let passed = report.grades.iter().filter(|g| g.passed()).count();
        LabOutcome {
            lab: report.lab,
            counts: Some((completed, passed)),
        }
    }

    fn passed(&self) -> bool {
        let n = usize::from(lab::acts::count(self.lab));
        self.counts == Some((n, n))
    }
}

/// The last line of `lab run`: `PASS` or `FAIL`, each lab's acts completed and grades passed out
/// of its act count, and the run's `index.html` (or that it was not written).
pub fn verdict_line(run_id: &str, outcomes: &[LabOutcome], index: &Path) -> String {
    let all = !outcomes.is_empty() && outcomes.iter().all(LabOutcome::passed);
    let labs: Vec<String> = outcomes
        .iter()
        .map(|o| {
            let n = lab::acts::count(o.lab);
            match o.counts {
                Some((acts, grades)) => format!(
                    "lab {}: {acts}/{n} acts completed, {grades}/{n} grades pass",
                    lab_name(o.lab)
                ),
                None => format!(
                    "lab {}: stopped before its acts (error above)",
                    lab_name(o.lab)
                ),
            }
        })
        .collect();
    let page = if index.is_file() {
        index.display().to_string()
    } else {
        format!("{} (not written)", index.display())
    };
    format!(
        "lab run {run_id}: {} — {}; report: {page}",
        if all { "PASS" } else { "FAIL" },
        labs.join("; ")
    )
}

/// Prints what an interrupted `lab run` did and exits with 130 (128 + SIGINT, the shell's
/// convention, whatever the signal; as the lab tool does).
fn exit_interrupted(signal: &str, what: &str) -> ! {
    crate::status_line!("interrupted by {signal}: {what}; exit 130");
    std::process::exit(130)
}

/// `a` or `b`.
pub fn lab_name(lab: Lab) -> &'static str {
    lab.as_str()
}

/// A run id: the UTC time, e.g. `20261129T151500Z`.
pub fn run_id() -> String {
    chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string()
}

/// The artifacts directory of one lab of one run: `<repo>/target/lab-artifacts/<run-id>/<lab>/`.
pub fn artifacts_dir(run_id: &str, lab: Lab) -> PathBuf {
    crate::cluster::config::repo_root()
        .join("target")
        .join("lab-artifacts")
        .join(run_id)
        .join(lab_name(lab))
}

/// Builds `kca-webhook-lab` (`cargo build -p xtask -p lab --bin kca-webhook-lab` through [`build_bin`]),
/// registers it for this process (`lab::faults::attempt::set_lab_program`: the freeze healer and
/// the scale watcher re-execute it) and returns its path.
///
/// The nested cargo runs without the variables cargo sets for the program it runs
/// ([`CARGO_RUN_VARS`]): `ring`'s build script declares `rerun-if-env-changed=CARGO_MANIFEST_DIR`,
/// so inheriting `CARGO_MANIFEST_DIR=<repo>/xtask` made this build and the next plain
/// `cargo xtask` rebuild ring, rustls, kube and everything above them, every time (about 100 s
/// a warm run, issue 16).
pub fn ensure_lab_binary() -> Result<PathBuf> {
    let bin = build_bin("lab", lab::faults::attempt::LAB_BIN_NAME)?;
    lab::faults::attempt::set_lab_program(bin.clone());
    Ok(bin)
}

/// Builds binary `bin` of package `package` (`cargo build --bin BIN` from the workspace root, dev
/// profile) without the variables cargo sets for the program it runs ([`CARGO_RUN_VARS`], see
/// [`ensure_lab_binary`]) and returns `<target dir>/debug/<bin>`.
///
/// Errors: cargo cannot be started, the build fails, or the binary is missing after it.
pub fn build_bin(package: &str, bin: &str) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = crate::cluster::config::repo_root();
    let mut cmd = std::process::Command::new(cargo);
    // No `-p`: cargo resolves dependency features over the packages a command selects, and with
    // none named it selects the whole workspace, as the `cargo xtask` and `cargo lab` aliases do
    // (`.cargo/config.toml`). So all three link the same dependency builds; `-p lab` alone
    // resolved other features and compiled the whole dependency graph a second time (252.8 s on
    // a fresh target dir, 2026-11-30).
    cmd.args(["build", "--bin", bin]);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_cargo_run_var) {
            cmd.env_remove(&name);
        }
    }
    cmd.current_dir(&root);
    crate::command::run_inherited(cmd)
        .with_context(|| format!("building {bin} of package {package}"))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let path = target.join("debug").join(bin);
    anyhow::ensure!(path.is_file(), "{} missing after the build", path.display());
    Ok(path)
}

/// Variables cargo sets for a program it runs (`cargo run`, test binaries), by name or prefix
/// (ending in `_`); the Cargo book's "Environment variables Cargo sets for crates".
pub const CARGO_RUN_VARS: &[&str] = &[
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_PKG_",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_BIN_EXE_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
];

/// Whether `name` is one of [`CARGO_RUN_VARS`] (and so must not leak into a nested build).
pub fn is_cargo_run_var(name: &str) -> bool {
    CARGO_RUN_VARS.iter().any(|v| {
        if v.ends_with('_') {
            name.starts_with(v)
        } else {
            name == *v
        }
    })
}

/// One lab being driven on one cluster: the work directory, how to reach the cluster, and a
/// runtime for the lab crate's async acts.
pub struct LabRun {
    /// The lab.
    pub lab: Lab,
    /// Environment passed to the acts.
    pub env: Env,
    rt: tokio::runtime::Runtime,
    /// Where a failed act's diagnostics go (`None`: `<workdir>/diagnostics/act-NN/`) and the
    /// embedded cluster's daemon log directory to tail ([`LabRun::set_diagnostics`]).
    diagnostics: (Option<PathBuf>, Option<PathBuf>),
}

impl LabRun {
    /// A run of `lab` in `workdir` (created) against the cluster behind `kubeconfig` and
    /// `cri_endpoint` (a path or `unix://…`).
    pub fn new(lab: Lab, workdir: &Path, kubeconfig: &Path, cri_endpoint: &str) -> Result<LabRun> {
        std::fs::create_dir_all(workdir)
            .with_context(|| format!("creating {}", workdir.display()))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("starting a tokio runtime")?;
        let endpoint = cri_endpoint.strip_prefix("unix://").unwrap_or(cri_endpoint);
        Ok(LabRun {
            lab,
            env: Env {
                workdir: Workdir::new(workdir),
                kubeconfig: Some(kubeconfig.to_path_buf()),
                cri_endpoint: Some(PathBuf::from(endpoint)),
                audit: lab::audit::AuditSource::NotConfigured,
                ui: Ui {
                    en: true,
                    quiet: false,
                    label: None,
                },
                registration_bound: lab::labs::common::REGISTRATION_BOUND,
            },
            rt,
            diagnostics: (None, None),
        })
    }

    /// The work directory.
    pub fn workdir(&self) -> &Workdir {
        &self.env.workdir
    }

    /// `inspect`.
    pub fn inspect(&self) -> Result<InspectReport> {
        self.rt
            .block_on(lab::labs::inspect(self.lab, &self.env))
            .context("inspect")
    }

    /// Writes the reference inputs act `act` reads ([`lab::acts::ActSpec::inputs`]; nothing for
    /// acts that read none) the way a student writes them, and returns the paths written: values
    /// from `inspect` and the digests of earlier evidence ([`LabRun::student_context`]), lab A's
    /// `report.json` from what act 5 observed (the `scale_down`/`request` words follow act 5's
    /// registration: `registration-absent` on Kyverno v1.19.1, but another version may keep it, and
    /// the report must say what was seen). Inputs are only ever written before the act that reads
    /// them.
    pub fn write_inputs(&self, act: u8) -> Result<Vec<PathBuf>> {
        self.write_reference_inputs(act)
            .with_context(|| format!("writing the reference inputs of act {act}"))
    }

    fn write_reference_inputs(&self, act: u8) -> Result<Vec<PathBuf>> {
        let files = lab::acts::spec(self.lab, act).map_or(&[][..], |s| s.inputs);
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let ctx = self.student_context()?;
        let mut written = Vec::new();
        for &file in files {
            let value = match file {
                InputFile::ReportA => {
                    let five = self
                        .workdir()
                        .read_evidence(5)
                        .context("report.json quotes act 5's evidence")?;
                    let f5: lab::facts::a::Act5Facts =
                        serde_json::from_value(five.evidence.facts.clone()).with_context(|| {
                            format!("reading the facts of {}", five.path.display())
                        })?;
                    reference::report_a(&ctx, f5.policy_webhook_present)
                }
                InputFile::ReportC => {
                    let facts = |act: u8| -> Result<serde_json::Value> {
                        let ev = self
                            .workdir()
                            .read_evidence(act)
                            .with_context(|| format!("report.json quotes act {act}'s evidence"))?;
                        Ok(ev.evidence.facts)
                    };
                    let words = lab::rules::c::report_expectations(
                        &serde_json::from_value(facts(3)?)?,
                        &serde_json::from_value(facts(5)?)?,
                        &serde_json::from_value(facts(6)?)?,
                        &serde_json::from_value(facts(7)?)?,
                    );
                    reference::report_c(&ctx, &words)
                }
                _ => reference::value(file, &ctx),
            }
            .with_context(|| {
                format!(
                    "the values {} needs are not known yet (inspect or earlier evidence)",
                    file.file_name()
                )
            })?;
            written.push(self.write_input(file, &value)?);
        }
        Ok(written)
    }

    /// Failed acts' diagnostics go to `dir` (instead of `<workdir>/diagnostics/act-NN/`), with
    /// the tails of the daemon logs in `daemon_logs` (an embedded cluster's `<state dir>/logs`).
    pub fn set_diagnostics(&mut self, dir: PathBuf, daemon_logs: Option<PathBuf>) {
        self.diagnostics = (Some(dir), daemon_logs);
    }

    /// Writes act `act`'s inputs, then runs it under the process-wide signal handler
    /// ([`lab::signals::until_signal`]): a SIGINT, SIGTERM or SIGHUP makes it return
    /// [`lab::error::LabError::Interrupted`] (an act with a live fault first undoes it and writes
    /// `interrupted` evidence), as the lab tool's `act N` does. When the act fails on the
    /// cluster otherwise ([`lab::diagnostics::worth_collecting`]) its diagnostics are collected
    /// and printed ([`diagnostics`]) and the error names their directory.
    pub fn act(&self, act: u8) -> Result<ActSummary> {
        self.write_inputs(act)?;
        let what = format!("lab {} act {act}", lab_name(self.lab));
        match self.rt.block_on(lab::signals::until_signal(
            lab::labs::run_act(self.lab, act, &self.env),
            act,
        )) {
            Ok(s) => Ok(s),
            // An unreachable API server too: the daemons' log tails say why.
            Err(e)
                if !matches!(e, lab::error::LabError::Interrupted { .. })
                    && (lab::diagnostics::worth_collecting(&e)
                        || matches!(e, lab::error::LabError::ClusterUnreachable { .. })) =>
            {
                let dir = self
                    .diagnostics
                    .0
                    .clone()
                    .unwrap_or_else(|| lab::diagnostics::act_dir(self.env.workdir.root(), act));
                let req = lab::diagnostics::act_request(
                    self.lab,
                    act,
                    &e,
                    dir.clone(),
                    self.diagnostics.1.clone(),
                );
                let summary = self.rt.block_on(lab::diagnostics::collect(
                    self.env.kubeconfig.as_deref(),
                    &req,
                ));
                diagnostics::print(&summary, &dir);
                Err(anyhow::Error::from(e)
                    .context(format!("{what} (diagnostics: {})", dir.display())))
            }
            Err(e) => Err(anyhow::Error::from(e).context(what)),
        }
    }

    /// `kca-webhook-lab heal`: heals every unfinished fault attempt of the work directory
    /// ([`lab::labs::heal`], the same code the lab tool runs) and returns what it did, one line
    /// per attempt. Not cut short by signals (it is what runs after one).
    pub fn heal(&self) -> Result<Vec<String>> {
        let summary = self
            .rt
            .block_on(lab::labs::heal(&self.env))
            .context("heal")?;
        Ok(summary.lines())
    }

    /// Grades act `act` from the work directory (pure; no cluster).
    pub fn grade(&self, act: u8) -> Findings {
        grade::grade(
            self.lab,
            act,
            &GradeInput::load(&self.env.workdir, self.lab),
        )
    }

    /// Runs `f` on this run's tokio runtime (for callers that need the lab crate's async API).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Writes one student input file (pretty JSON) and returns its path.
    pub fn write_input(
        &self,
        file: lab::inputs::InputFile,
        value: &serde_json::Value,
    ) -> Result<PathBuf> {
        let path = self.env.workdir.input_path(file);
        let mut text = serde_json::to_string_pretty(value)?;
        text.push('\n');
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// The context a student has when writing inputs: `inspect`'s live values, the digests of the
    /// evidence written so far, act 2's policy UID, and `policy.json`.
    pub fn student_context(&self) -> Result<lab::inputs::Context> {
        let report = self.inspect()?;
        let mut ctx = lab::inputs::Context {
            node_uid: Some(report.vm.node_uid.clone()),
            namespaces: Some(
                report
                    .namespaces
                    .iter()
                    .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
                    .collect(),
            ),
            deployment_uid: Some(report.controller.deployment_uid.clone()),
            evidence_digests: report.evidence_sha256.clone(),
            ..Default::default()
        };
        if let Ok(two) = self.env.workdir.read_evidence(2) {
            ctx.policy_uid = two
                .evidence
                .facts
                .pointer("/policy/metadata/uid")
                .and_then(|v| v.as_str())
                .map(str::to_owned);
        }
        if let Ok(p) = self.env.workdir.read_input(lab::inputs::InputFile::Policy) {
            ctx.policy = Some(p.value);
        }
        Ok(ctx)
    }

    /// Writes the logs of every pod in the `kyverno` namespace into `dir` as
    /// `<pod>.<container>[.previous].log` (the last [`KYVERNO_LOG_LINES`] lines with the API
    /// server's timestamps; `.previous` for a container that restarted, which is how a freeze
    /// that got the controller killed shows). Returns the files written; a log that cannot be
    /// read is skipped and named in the returned error list.
    pub fn save_kyverno_logs(&self, dir: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
        let env = &self.env;
        self.rt.block_on(async {
            let cl = env.cluster().await?;
            let pods = cl.pods(lab::cluster::KYVERNO_NAMESPACE).await?;
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let (mut written, mut failed) = (Vec::new(), Vec::new());
            for p in &pods {
                let name = p.metadata.name.clone().unwrap_or_default();
                let statuses = p
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.clone())
                    .unwrap_or_default();
                for c in statuses {
                    let runs: &[bool] = if c.restart_count > 0 {
                        &[false, true]
                    } else {
                        &[false]
                    };
                    for &previous in runs {
                        let file = dir.join(format!(
                            "{name}.{}{}.log",
                            c.name,
                            if previous { ".previous" } else { "" }
                        ));
                        match cl
                            .pod_log_tail(
                                lab::cluster::KYVERNO_NAMESPACE,
                                &name,
                                &c.name,
                                KYVERNO_LOG_LINES,
                                previous,
                            )
                            .await
                        {
                            Ok(text) => {
                                std::fs::write(&file, text)
                                    .with_context(|| format!("writing {}", file.display()))?;
                                written.push(file);
                            }
                            Err(e) => failed.push(format!("{}: {e}", file.display())),
                        }
                    }
                }
            }
            Ok((written, failed))
        })
    }

    /// A snapshot of every ValidatingWebhookConfiguration, verbatim, as a JSON list.
    pub fn webhook_snapshot(&self) -> Result<serde_json::Value> {
        let env = &self.env;
        self.rt
            .block_on(async {
                let c = env.cluster().await?;
                let cfgs = c.webhook_configurations().await?;
                lab::cluster::to_json(&cfgs)
            })
            .context("reading ValidatingWebhookConfigurations")
    }
}

/// Options of [`run_lab`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The lab.
    pub lab: Lab,
    /// The run id (artifacts go to `target/lab-artifacts/<run-id>/<lab>/`).
    pub run_id: String,
    /// Keep the cluster running afterwards.
    pub retain: bool,
    /// Where the cluster comes from (default [`crate::backend::Backend::Embedded`]).
    pub backend: crate::backend::Backend,
    /// Embedded backend: the Kubernetes × Kyverno pair to build and run (default the pinned
    /// pair); the versions found running go to `<artifacts>/versions.json` ([`versions::record`]).
    pub versions: crate::upstream::Versions,
    /// The machine lock when the caller holds it for several labs that run at once
    /// ([`run_labs_at_once`]); `None`: [`run_lab`] takes it itself.
    pub lock: Option<std::sync::Arc<ClusterLock>>,
    /// Whether [`run_lab`] writes the run's `index.html` and `junit.xml` from every lab in the run
    /// directory (false when several labs run at once: the caller writes them once all ended).
    pub run_files: bool,
}

impl RunOptions {
    /// Defaults for `lab`: a new run id, cluster torn down afterwards.
    pub fn new(lab: Lab) -> RunOptions {
        RunOptions {
            lab,
            run_id: run_id(),
            retain: false,
            backend: crate::backend::Backend::Embedded,
            versions: crate::upstream::Versions::pinned(),
            lock: None,
            run_files: true,
        }
    }
}

/// What one lab run produced.
#[derive(Debug)]
pub struct RunReport {
    /// The lab.
    pub lab: Lab,
    /// Each act's result (in order; stops at the first act that failed).
    pub acts: Vec<(u8, std::result::Result<ActSummary, String>)>,
    /// `grade all` after the last act that ran.
    pub grades: Vec<Findings>,
    /// Where the artifacts are.
    pub artifacts: PathBuf,
    /// The diagnostics directory, when a failure left one (`<artifacts>/diagnostics/`).
    pub diagnostics: Option<PathBuf>,
    /// Set when a SIGINT, SIGTERM or SIGHUP stopped the run.
    pub interrupted: Option<Interruption>,
}

/// How a signal stopped a lab run, and what was done about it.
#[derive(Debug, Clone)]
pub struct Interruption {
    /// `SIGINT`, `SIGTERM` or `SIGHUP`.
    pub signal: String,
    /// The act that was running or about to run.
    pub act: u8,
    /// Whether the act had started (it then returned `Interrupted`).
    pub during_act: bool,
    /// What the work-dir heal did (`kca-webhook-lab heal`'s lines), or why it failed.
    pub healed: Vec<String>,
}

impl Interruption {
    /// One line for the person who pressed Ctrl-C.
    pub fn describe(&self, artifacts: &Path) -> String {
        format!(
            "act {} {}; work dir healed: {}; artifacts collected in {}; cluster torn down unless --retain",
            self.act,
            if self.during_act {
                "was interrupted"
            } else {
                "was not started"
            },
            if self.healed.is_empty() {
                "nothing left to heal".to_owned()
            } else {
                self.healed.join(" | ")
            },
            artifacts.display()
        )
    }
}

impl RunReport {
    /// Every act completed and every grade passed.
    pub fn passed(&self) -> bool {
        let count = usize::from(lab::acts::count(self.lab));
        self.acts.len() == count
            && self.acts.iter().all(|(_, r)| {
                r.as_ref()
                    .is_ok_and(|s| s.status == lab::evidence::ActStatus::Completed)
            })
            && self.grades.len() == count
            && self.grades.iter().all(Findings::passed)
    }

    /// A readable summary.
    pub fn summary(&self) -> String {
        let mut s = format!("lab {}:\n", lab_name(self.lab));
        for (act, r) in &self.acts {
            match r {
                Ok(sum) => {
                    s.push_str(&format!("  act {act}: {:?}\n", sum.status));
                    for l in &sum.lines {
                        s.push_str(&format!("      {l}\n"));
                    }
                }
                Err(e) => s.push_str(&format!("  act {act}: FAILED: {e}\n")),
            }
        }
        for g in &self.grades {
            s.push_str(&format!(
                "  grade {}: {} ({} checks){}\n",
                g.act,
                if g.passed() { "pass" } else { "FAIL" },
                g.checks,
                g.findings
                    .iter()
                    .map(|f| format!("\n      {}", f.message(lab::text::Lang::En)))
                    .collect::<String>()
            ));
        }
        if let Some(d) = &self.diagnostics {
            if let Some(sum) = lab::diagnostics::read_summary(d) {
                s.push_str(&format!("  diagnostics of {}:\n", sum.failed_step));
                for l in &sum.telling {
                    s.push_str(&format!("      {l}\n"));
                }
            }
            s.push_str(&format!("  diagnostics: {}\n", d.display()));
        }
        s.push_str(&format!("  artifacts: {}\n", self.artifacts.display()));
        s
    }
}

/// Runs `labs` at the same time on the embedded backend, each on a fresh cluster of its own (one
/// thread per lab; [`run_lab`] with `base`'s run id, versions and `retain`), under one machine
/// lock taken here; what each cluster's `up` and teardown change host-wide runs one at a time
/// (`cluster::host_steps`: `up` until its node is Ready; Kyverno's start runs beside the others).
/// Every line a lab's thread prints, its acts' own included, starts with `[lab b]`
/// ([`status::label_lines`], the lab's `Ui::label`). Then writes the run's `index.html` and
/// `junit.xml` once. Returns each lab's result in `labs`' order.
///
/// # Errors
/// The machine lock could not be taken (its bound passed, naming the holder).
pub fn run_labs_at_once(labs: &[Lab], base: &RunOptions) -> Result<Vec<(Lab, Result<RunReport>)>> {
    let root = crate::cluster::config::default_state_root();
    let lock = std::sync::Arc::new(ClusterLock::acquire(&root)?);
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = labs
            .iter()
            .map(|&lab| {
                let opts = RunOptions {
                    lab,
                    lock: Some(lock.clone()),
                    run_files: false,
                    ..base.clone()
                };
                (
                    lab,
                    s.spawn(move || {
                        status::label_lines(lab_name(lab));
                        run_lab(&opts)
                    }),
                )
            })
            .collect();
        handles
            .into_iter()
            .map(|(lab, h)| {
                let r = h.join().unwrap_or_else(|_| {
                    Err(anyhow::anyhow!("lab {}'s thread panicked", lab_name(lab)))
                });
                (lab, r)
            })
            .collect::<Vec<_>>()
    });
    let dir = artifacts_dir(&base.run_id, Lab::A);
    let dir = dir.parent().unwrap_or(&dir);
    let step = Step::start("writing the run's index.html and junit.xml");
    match report::write_run_files(dir) {
        Ok(()) => step.ok(),
        Err(e) => {
            drop(step);
            crate::status_line!("writing the run's index.html and junit.xml failed: {e:#}");
        }
    }
    Ok(results)
}

/// Runs one lab from nothing: fresh cluster, acts 1-8 with reference inputs, grades, artifacts,
/// teardown (unless `retain`).
pub fn run_lab(opts: &RunOptions) -> Result<RunReport> {
    let artifacts = artifacts_dir(&opts.run_id, opts.lab);
    let result = run_lab_inner(opts, &artifacts);
    // The pages people read, whatever happened (a lab that failed early gets a failing junit case).
    let step = Step::start("writing the report pages");
    let pages = report::write_acts(&artifacts, result.as_ref())
        .and_then(|()| report::write_lab_pages(&artifacts, opts.lab))
        .and_then(|_| match opts.run_files {
            true => report::write_run_files(artifacts.parent().unwrap_or(&artifacts)),
            false => Ok(()),
        });
    if pages.is_ok() {
        step.ok();
    } else {
        drop(step);
    }
    match &pages {
        Ok(()) => crate::status_line!(
            "report of lab {}: {} (run index and junit.xml beside it: {})",
            lab_name(opts.lab),
            artifacts.join("report.html").display(),
            artifacts.parent().unwrap_or(&artifacts).display()
        ),
        Err(e) => crate::status_line!("writing the report pages failed: {e:#}"),
    }
    let report = result?;
    pages?;
    Ok(report)
}

fn run_lab_inner(opts: &RunOptions, artifacts: &Path) -> Result<RunReport> {
    let name = format!("lab{}", lab_name(opts.lab));
    let artifacts = artifacts.to_path_buf();
    std::fs::create_dir_all(&artifacts)
        .with_context(|| format!("creating {}", artifacts.display()))?;
    let step = Step::start("building kca-webhook-lab");
    ensure_lab_binary()?;
    step.ok();
    bail_if_interrupted("after building kca-webhook-lab")?;
    if opts.backend != crate::backend::Backend::Embedded {
        return run_lab_on_backend(opts, &name, &artifacts);
    }
    let mut up = crate::cluster::UpOptions::new(&name);
    up.versions = opts.versions.clone();
    let _lock = match &opts.lock {
        Some(held) => held.clone(),
        None => std::sync::Arc::new(ClusterLock::acquire(&up.state_root)?),
    };
    bail_if_interrupted("after taking the cluster lock")?;
    let cluster = {
        let step = Step::start(format!("bringing up a fresh cluster {name}"));
        let cluster = diagnostics::up_with_diagnostics(up, &diagnostics::dir(&artifacts))
            .with_context(|| format!("bringing up cluster {name}"))?;
        step.ok();
        cluster
    };
    // What runs, from the live cluster (run metadata; a failure to read it is a failed run).
    let recorded = versions::record(&cluster.kubeconfig(), &opts.versions, &artifacts);
    let result = recorded.and_then(|_| {
        drive(Drive {
            lab: opts.lab,
            kubeconfig: &cluster.kubeconfig(),
            cri_endpoint: &cluster.cri_endpoint(),
            audit: lab::audit::AuditSource::Log(cluster.audit_log()),
            artifacts: &artifacts,
            daemon_logs: Some(cluster.state_dir().join("logs")),
            registration_bound: lab::labs::common::REGISTRATION_BOUND,
        })
    });
    let step = Step::start("collecting the cluster's logs");
    let collected = collect_cluster_logs(cluster.state_dir(), &artifacts);
    step.ok();
    if opts.retain {
        crate::status_line!(
            "cluster {name} retained: kubeconfig {}, cri {}",
            cluster.kubeconfig().display(),
            cluster.cri_endpoint()
        );
    } else {
        let step = Step::start(format!("tearing down cluster {name}"));
        cluster.down()?;
        step.ok();
    }
    collected?;
    let report = result?;
    crate::status_line!(
        "artifacts of lab {}: {}",
        lab_name(opts.lab),
        artifacts.display()
    );
    Ok(report)
}

/// [`run_lab`] on a kubeconfig or k3s backend: the backend provides the cluster (its checks and
/// versions go to `<artifacts>/backend.json`), then the same acts, grades and artifacts as on the
/// embedded backend.
fn run_lab_on_backend(opts: &RunOptions, name: &str, artifacts: &Path) -> Result<RunReport> {
    let step = Step::start(format!(
        "{} backend: preparing the cluster",
        opts.backend.name()
    ));
    let handle = opts
        .backend
        .acquire(name)
        .with_context(|| format!("{} backend", opts.backend.name()))?;
    step.ok();
    crate::backend::write_facts(&artifacts.join("backend.json"), &handle.facts)?;
    // No audit log on these backends: the evidence says `not-configured`.
    let result = drive(Drive {
        lab: opts.lab,
        kubeconfig: &handle.kubeconfig,
        cri_endpoint: &handle.cri_endpoint,
        audit: lab::audit::AuditSource::NotConfigured,
        artifacts,
        daemon_logs: None,
        registration_bound: lab::labs::common::REGISTRATION_BOUND,
    });
    let collected = handle.collect_logs(artifacts);
    if opts.retain {
        handle.retain();
    } else {
        handle.teardown()?;
    }
    collected?;
    let report = result?;
    crate::status_line!(
        "artifacts of lab {}: {}",
        lab_name(opts.lab),
        artifacts.display()
    );
    Ok(report)
}

/// Errors when a SIGINT, SIGTERM or SIGHUP is pending ([`lab::signals::pending`]).
fn bail_if_interrupted(when: &str) -> Result<()> {
    match lab::signals::pending() {
        Some(signal) => bail!("interrupted by {signal} {when}"),
        None => Ok(()),
    }
}

/// Where one lab's acts run: the lab, the cluster's two handles, its audit log, where the artifacts
/// go, and the daemon logs diagnostics quote.
pub struct Drive<'a> {
    /// The lab.
    pub lab: Lab,
    /// The cluster's kubeconfig.
    pub kubeconfig: &'a Path,
    /// The node's CRI endpoint (a socket path).
    pub cri_endpoint: &'a str,
    /// Where the acts read the API server's audit log (the embedded node's; else
    /// [`lab::audit::AuditSource::NotConfigured`]).
    pub audit: lab::audit::AuditSource,
    /// `target/lab-artifacts/<run-id>/<lab>/` (the work dir is its `workdir/`).
    pub artifacts: &'a Path,
    /// An embedded cluster's `<state dir>/logs` (tails quoted by diagnostics), else `None`.
    pub daemon_logs: Option<PathBuf>,
    /// The acts' [`lab::labs::Env::registration_bound`] (the student tool's
    /// `--registration-bound`); `cargo xtask lab run` keeps the default
    /// [`lab::labs::common::REGISTRATION_BOUND`].
    pub registration_bound: std::time::Duration,
}

/// Runs every act of the registry in order, stopping at the first that fails or at a signal (checked before each
/// act, and inside it by [`LabRun::act`]); after a signal the work dir is healed
/// ([`LabRun::heal`]). Then grades and copies the work dir's files ([`save_artifacts`]).
fn drive(d: Drive<'_>) -> Result<RunReport> {
    drive_with(d, &|_, _| Ok(()))
}

/// `drive` (the acts of a lab run) with `before_act(run, act)` called before each act (a test's forced failure, e.g.
/// scaling the admission controller to 0 before act 2); an error from it fails that act.
pub fn drive_with(
    d: Drive<'_>,
    before_act: &dyn Fn(&LabRun, u8) -> Result<()>,
) -> Result<RunReport> {
    let Drive {
        lab,
        kubeconfig,
        cri_endpoint,
        audit,
        artifacts,
        daemon_logs,
        registration_bound,
    } = d;
    let workdir = artifacts.join("workdir");
    let mut run = LabRun::new(lab, &workdir, kubeconfig, cri_endpoint)?;
    run.env.audit = audit;
    run.env.registration_bound = registration_bound;
    run.env.ui.label = status::line_label();
    run.set_diagnostics(diagnostics::dir(artifacts), daemon_logs);
    let mut acts = Vec::new();
    let mut interrupted = None;
    for act in lab::acts::numbers(lab) {
        if let Some(signal) = lab::signals::pending() {
            interrupted = Some(Interruption {
                signal: signal.to_owned(),
                act,
                during_act: false,
                healed: vec![],
            });
            break;
        }
        let step = Step::start(format!("lab {} act {act}", lab_name(lab)));
        let r = before_act(&run, act).and_then(|()| run.act(act));
        if let Ok(snap) = run.webhook_snapshot() {
            let _ = write_json(
                &artifacts
                    .join("webhooks")
                    .join(format!("after-act-{act:02}.json")),
                &snap,
            );
        }
        match r {
            Ok(summary) => {
                status::details(&summary.lines);
                step.ok();
                acts.push((act, Ok(summary)));
            }
            Err(e) => {
                status::details(&[format!("{e:#}")]);
                acts.push((act, Err(format!("{e:#}"))));
                if let Some(signal) = lab::signals::pending() {
                    interrupted = Some(Interruption {
                        signal: signal.to_owned(),
                        act,
                        during_act: true,
                        healed: vec![],
                    });
                }
                break;
            }
        }
    }
    heal_after_acts(&run, &mut interrupted);
    let step = Step::start("grading and collecting the artifacts");
    let grades = save_artifacts(&run, artifacts)?;
    step.ok();
    let diag = diagnostics::dir(artifacts);
    Ok(RunReport {
        lab,
        acts,
        grades,
        artifacts: artifacts.to_path_buf(),
        diagnostics: diag
            .join(lab::diagnostics::SUMMARY_FILE)
            .is_file()
            .then_some(diag),
        interrupted,
    })
}

/// Heals the work dir after the acts (`kca-webhook-lab heal`), with its lines shown. After an
/// interruption it undoes what the signal left (the lines, or the failure, are kept in
/// `interrupted`); else a lab that stopped at a failed act may leave a fault handed over to the
/// acts after it (lab C's three replicas, acts 4-7), healed as a student who abandons the lab
/// would, so no healer outlives the run (after a complete run there is nothing left to heal).
fn heal_after_acts(run: &LabRun, interrupted: &mut Option<Interruption>) {
    let label = match interrupted {
        Some(i) => format!(
            "interrupted by {}: healing the work dir (kca-webhook-lab heal)",
            i.signal
        ),
        None => "healing the work dir (kca-webhook-lab heal)".to_owned(),
    };
    let step = Step::start(label);
    match (run.heal(), interrupted) {
        (Ok(lines), interrupted) => {
            status::details(&lines);
            if let Some(i) = interrupted {
                i.healed = lines;
            }
            step.ok();
        }
        (Err(e), Some(i)) => {
            status::details(&[format!("{e:#}")]);
            i.healed = vec![format!("heal failed: {e:#}")];
        }
        (Err(e), None) => status::details(&[format!("heal failed: {e:#}")]),
    }
}

/// Copies the inputs (`*.json` at the root) to `inputs/`, `evidence/` and `faults/` to the
/// artifacts directory.
fn copy_workdir(root: &Path, artifacts: &Path) -> Result<()> {
    for entry in std::fs::read_dir(root).with_context(|| format!("reading {}", root.display()))? {
        let p = entry?.path();
        if p.is_file() && p.extension().is_some_and(|e| e == "json") {
            copy_into(&p, &artifacts.join("inputs"))?;
        }
    }
    for sub in ["evidence", "faults"] {
        let dir = root.join(sub);
        if dir.is_dir() {
            for entry in std::fs::read_dir(&dir)? {
                let p = entry?.path();
                if p.is_file() {
                    copy_into(&p, &artifacts.join(sub))?;
                } else if p.is_dir() {
                    // A scale-down fault keeps its plan, ledger, watcher record and log in
                    // `faults/scale-<time>/`.
                    let name = p.file_name().context("a directory name")?;
                    for inner in std::fs::read_dir(&p)? {
                        let f = inner?.path();
                        if f.is_file() {
                            copy_into(&f, &artifacts.join(sub).join(name))?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(path, serde_json::to_string_pretty(v)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Grades every act, then writes `grades.json`, the final webhook snapshot, and copies inputs,
/// evidence and fault files of `run` to `artifacts`. Returns the grades.
pub fn save_artifacts(run: &LabRun, artifacts: &Path) -> Result<Vec<Findings>> {
    let grades = grade::grade_all(run.lab, &GradeInput::load(run.workdir(), run.lab));
    write_json(
        &artifacts.join("grades.json"),
        &serde_json::to_value(&grades)?,
    )?;
    if let Ok(snap) = run.webhook_snapshot() {
        write_json(&artifacts.join("webhooks").join("final.json"), &snap)?;
    }
    // Kyverno's own account of the run, whether or not it went well.
    match run.save_kyverno_logs(&artifacts.join("kyverno-logs")) {
        Ok((_, failed)) => {
            for f in failed {
                crate::status_line!("      a Kyverno log could not be read: {f}");
            }
        }
        Err(e) => crate::status_line!("      Kyverno's logs were not saved: {e:#}"),
    }
    copy_workdir(run.workdir().root(), artifacts)?;
    Ok(grades)
}

/// How many of each Kyverno container's last log lines a lab run keeps (`kyverno-logs/`).
pub const KYVERNO_LOG_LINES: i64 = 20_000;

#[cfg(test)]
mod cargo_env_tests {
    use super::is_cargo_run_var;

    #[test]
    fn variables_cargo_sets_for_a_run_are_stripped_and_user_settings_kept() {
        for v in [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_BIN_EXE_kca-webhook-lab",
            "CARGO_CRATE_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
        ] {
            assert!(is_cargo_run_var(v), "{v} must not reach the nested build");
        }
        for v in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_JOBS",
            "CARGO_MANIFEST_DIRECTORY",
            "PATH",
        ] {
            assert!(
                !is_cargo_run_var(v),
                "{v} is the user's setting and is kept"
            );
        }
    }
}

#[cfg(test)]
mod summary_tests {
    use super::RunReport;
    use lab::evidence::Lab;
    use lab::grade::{Code, Finding, Findings};

    /// A finding without particulars (`evidence-missing`) says what its code means, and the one with
    /// particulars keeps them: no line ends in an empty detail.
    #[test]
    fn each_finding_says_what_its_code_means() {
        let finding = |code, detail: &str| Finding {
            code,
            subject: "evidence/05.json".into(),
            detail: detail.into(),
        };
        let report = RunReport {
            lab: Lab::B,
            acts: Vec::new(),
            grades: vec![Findings {
                lab: Lab::B,
                act: 5,
                checks: 2,
                findings: vec![
                    finding(Code::EvidenceMissing, ""),
                    finding(Code::InputInvalid, "expected 20, found \"20\""),
                ],
                notes: Vec::new(),
            }],
            artifacts: "/tmp/a".into(),
            diagnostics: None,
            interrupted: None,
        };
        let s = report.summary();
        assert!(
            s.contains(
                "\n      [evidence-missing] evidence/05.json: evidence file missing (run the act first)\n"
            ),
            "{s}"
        );
        assert!(
            s.contains(
                "[input-invalid] evidence/05.json: input file invalid (expected 20, found \"20\")"
            ),
            "{s}"
        );
        assert!(
            s.lines().all(|l| !l.ends_with(": ") && !l.ends_with("()")),
            "{s}"
        );
    }
}

#[cfg(test)]
mod verdict_tests {
    use super::{LabOutcome, verdict_line};
    use lab::evidence::Lab;

    #[test]
    fn the_last_line_counts_each_lab_and_names_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("index.html");
        let n = usize::from(lab::acts::count(Lab::A));
        let m = usize::from(lab::acts::count(Lab::B));
        let all = [
            LabOutcome {
                lab: Lab::A,
                counts: Some((n, n)),
            },
            LabOutcome {
                lab: Lab::B,
                counts: Some((m, m)),
            },
        ];
        let line = verdict_line("r1", &all, &index);
        assert_eq!(
            line,
            format!(
                "lab run r1: PASS — lab a: {n}/{n} acts completed, {n}/{n} grades pass; lab b: {m}/{m} acts completed, {m}/{m} grades pass; report: {} (not written)",
                index.display()
            )
        );
        std::fs::write(&index, "<html>").unwrap();
        let line = verdict_line("r1", &all, &index);
        assert!(line.starts_with("lab run r1: PASS — "), "{line}");
        assert!(
            line.ends_with(&format!("report: {}", index.display())),
            "{line}"
        );
        // One act short, one grade short, a lab that never ran its acts: FAIL.
        for bad in [
            LabOutcome {
                lab: Lab::B,
                counts: Some((m - 1, m - 1)),
            },
            LabOutcome {
                lab: Lab::B,
                counts: Some((m, m - 1)),
            },
            LabOutcome {
                lab: Lab::B,
                counts: None,
            },
        ] {
            let line = verdict_line("r1", &[all[0].clone(), bad.clone()], &index);
            assert!(line.starts_with("lab run r1: FAIL — "), "{bad:?}: {line}");
        }
        assert!(
            verdict_line(
                "r1",
                &[
                    all[0].clone(),
                    LabOutcome {
                        lab: Lab::B,
                        counts: None
                    }
                ],
                &index
            )
            .contains("lab b: stopped before its acts (error above)")
        );
    }
}

#[cfg(test)]
mod memory_tests {
    use super::mem_available_kib;

    #[test]
    fn mem_available_is_read_in_kib_and_a_text_without_it_gives_none() {
        let meminfo = "MemTotal:       24684076 kB\nMemFree:          612000 kB\nMemAvailable:   22455520 kB\nBuffers:            1234 kB\n";
        assert_eq!(mem_available_kib(meminfo), Some(22_455_520));
        assert_eq!(mem_available_kib("MemTotal: 1 kB\n"), None);
        assert_eq!(mem_available_kib("MemAvailable: lots\n"), None);
    }
}
