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
use crate::inputs::{self, Context, InputFile};
use crate::workdir::Workdir;

/// `inspect`: the live values a student needs to write the inputs, and each act's status.
pub async fn inspect(lab: Lab, env: &Env) -> Result<InspectReport, LabError> {
    common::inspect(lab, env).await
}

/// Runs act `act` (1-8) of `lab`.
///
/// Before anything else (before the cluster is reached) the act's own input files are read with the
/// one reader and checked offline ([`precheck_inputs`]), so a malformed file is refused with its
/// file and JSON path whatever the state of the cluster; the act then checks them again against
/// the live cluster and the evidence.
///
/// Errors: [`LabError::Usage`] for an act outside 1-8; [`LabError::InputMissing`] /
/// [`LabError::InputInvalid`] from the pre-check; the act's own errors otherwise.
pub async fn run_act(lab: Lab, act: u8, env: &Env) -> Result<ActSummary, LabError> {
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
