//! The acts of both labs against a live cluster: `inspect`, acts 1-3 (shared, [`common`]), lab B's
//! acts 4-8 ([`b`]), lab A's acts 4-8 ([`a`]).
//!
//! An act is a function from (student inputs in the work directory, the cluster, the node) to
//! `evidence/NN.json`. Every act first checks what it needs (earlier acts completed, inputs valid
//! against the live cluster and the evidence) and writes nothing when a check fails; once it has
//! touched the cluster, it always leaves evidence: `completed`, or `interrupted` with the raw data
//! seen so far.

pub mod a;
pub mod b;
pub mod common;

pub use common::{ActSummary, Env, InspectReport, Ui};

use crate::error::LabError;
use crate::evidence::Lab;
use crate::faults::{attempt, heal};
use crate::inputs::{self, Context, InputFile};
use crate::workdir::Workdir;

/// `inspect`: heals first (see [`heal_first`]), then reports the live values a student needs to
/// write the inputs, and each act's status.
pub async fn inspect(lab: Lab, env: &Env) -> Result<InspectReport, LabError> {
    let _lock = attempt::lock_workdir(env.workdir.root(), "inspect")?;
    heal_first(env, "inspect").await;
    common::inspect(lab, env).await
}

/// `heal`: takes the work-dir lock and heals every unfinished fault attempt ([`crate::faults::heal::heal_workdir`]).
///
/// Errors: [`LabError::Busy`] when another command holds the work directory.
pub async fn heal(env: &Env) -> Result<heal::HealSummary, LabError> {
    let _lock = attempt::lock_workdir(env.workdir.root(), "heal")?;
    Ok(heal_first(env, "heal").await)
}

/// Every command heals first: unfinished attempts of the work directory are healed
/// ([`heal::heal_workdir`]) and each line is shown to the student. The cluster is reached only when
/// attempts exist. The caller holds the work-dir lock.
pub async fn heal_first(env: &Env, command: &str) -> heal::HealSummary {
    let any = heal::attempts(env.workdir.root()).map_or(true, |a| !a.is_empty());
    if !any {
        return heal::HealSummary::default();
    }
    let cluster = env.cluster().await.ok();
    let summary = heal::heal_workdir(env.workdir.root(), cluster.as_ref(), command).await;
    for line in summary.lines() {
        env.ui.step(
            &format!("以前の障害の後始末: {line}"),
            &format!("healing earlier faults: {line}"),
        );
    }
    heal::remember(&summary);
    summary
}

/// Runs act `act` (1-8) of `lab` holding the work-dir lock for the whole act, after healing
/// first ([`heal_first`]).
///
/// After the heal (which reaches the cluster only when unfinished fault attempts exist) and before
/// anything else, the act's own input files are read with the one reader and checked offline
/// ([`precheck_inputs`]), so a malformed file is refused with its file and JSON path whatever the
/// state of the cluster; the act then checks them again against the live cluster and the evidence.
///
/// Errors: [`LabError::Usage`] for an act outside 1-8; [`LabError::InputMissing`] /
/// [`LabError::InputInvalid`] from the pre-check; [`LabError::Busy`] when another command holds
/// the work directory; the act's own errors otherwise.
pub async fn run_act(lab: Lab, act: u8, env: &Env) -> Result<ActSummary, LabError> {
    let what = format!("act {act}");
    let _lock = attempt::lock_workdir(env.workdir.root(), &what)?;
    heal_first(env, &what).await;
    precheck_inputs(lab, act, &env.workdir)?;
    match (lab, act) {
        (_, 1) => common::act1(lab, env).await,
        (_, 2) => common::act2(lab, env).await,
        (_, 3) => common::act3(lab, env).await,
        (Lab::B, 4..=8) => b::run(act, env).await,
        (Lab::A, 4..=8) => a::run(act, env).await,
        _ => Err(LabError::Usage(format!("act must be 1 to 8, got {act}"))),
    }
}

/// Reads each input file that act `act` of `lab` takes ([`InputFile::act`]) with the one reader
/// ([`crate::json`]) and validates its shape and fixed values offline ([`Context::default`], as
/// `check FILE` does without evidence). No I/O besides reading those files; nothing is written.
///
/// Errors: [`LabError::InputMissing`], [`LabError::Io`], [`LabError::InputInvalid`] (file, JSON
/// path, expected, found).
pub fn precheck_inputs(lab: Lab, act: u8, workdir: &Workdir) -> Result<(), LabError> {
    for &file in InputFile::all(lab).iter().filter(|f| f.act() == act) {
        let loaded = workdir.read_input(file)?;
        inputs::validate(file, &loaded.value, &Context::default())?;
    }
    Ok(())
}
