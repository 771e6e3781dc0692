//! The acts of every lab against a live cluster: `inspect`, acts 1-3 ([`common`]; lab C has its
//! own act 3) and each lab's own acts ([`a`], [`b`], [`c`]); the freeze acts of labs B and C are
//! [`crate::steps::freeze`]'s, each lab giving its part ([`crate::steps::freeze::Shape`]).
//!
//! An act maps (student inputs in the work directory, the cluster, the node) to
//! `evidence/NN.json`. It first checks what it needs (earlier acts completed, inputs valid against
//! the live cluster and the evidence) and writes nothing when a check fails; once it has touched
//! the cluster it always leaves evidence: `completed`, or `interrupted` with the raw data seen so
//! far. Each file lists its runners in `RUNNERS`; a lab's [`Kind`] (its steps) says which file
//! runs it, and [`runner`] finds one for `run_act`.

pub mod a;
pub mod b;
pub mod c;
pub mod common;

pub use common::{ActFuture, ActSummary, Env, InspectReport, Runner, Ui};

use crate::acts::Target;
use crate::error::LabError;
use crate::evidence::Lab;
use crate::faults::{attempt, heal};
use crate::inputs::{self, Context};
use crate::workdir::Workdir;

/// The runner of act `act` of `lab` ([`runners`]); `None` when there is none (the registry,
/// [`crate::acts`], lists the acts; `every_registry_act_has_one_runner` keeps the two in step).
pub fn runner(lab: Lab, act: u8) -> Option<Runner> {
    runners(lab).find(|(n, _)| *n == act).map(|(_, r)| *r)
}

/// What a lab's own acts do, read from its steps in the registry, never from its name: it picks
/// the file that runs them ([`runners`]) and the generator of the lab's grading fixtures
/// (`lab/tests/common/fixtures.rs`). A lab made of these step kinds needs no line here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An act scales the admission controller to 0 ([`crate::acts::scale_down`]): [`a`].
    ScaleDown,
    /// The acts freeze the one replica ([`Target::One`]): [`b`].
    Freeze,
    /// A scale to several replicas, and freezes of a replica by its role, the Lease's holder or
    /// not ([`Target::Leader`], [`Target::Follower`]): [`c`].
    ReplicaFreeze,
}

impl Kind {
    /// The kind of `lab`'s steps; `None` for steps no file runs (its acts past the shared ones
    /// then have no runner: `every_registry_act_has_one_runner`).
    pub fn of(lab: Lab) -> Option<Kind> {
        let freezes = crate::acts::freezes(lab);
        let one = freezes.iter().filter(|(_, t)| *t == Target::One).count();
        let down = crate::acts::scale_down(lab);
        match (down, crate::acts::replicas(lab) > 1, freezes.len()) {
            (Some(_), false, 0) => Some(Kind::ScaleDown),
            (None, false, n) if n > 0 && one == n => Some(Kind::Freeze),
            (None, true, n) if n > 0 && one == 0 => Some(Kind::ReplicaFreeze),
            _ => None,
        }
    }
}

/// Every runner of `lab`: the shared ones (`common::RUNNERS`) for the acts it has no own runner
/// of (lab C has its own act 3), then its own (its [`Kind`]'s).
fn runners(lab: Lab) -> impl Iterator<Item = &'static (u8, Runner)> {
    let own: &[(u8, Runner)] = match Kind::of(lab) {
        Some(Kind::ScaleDown) => a::RUNNERS,
        Some(Kind::Freeze) => b::RUNNERS,
        Some(Kind::ReplicaFreeze) => c::RUNNERS,
        None => &[],
    };
    common::RUNNERS
        .iter()
        .filter(move |(n, _)| !own.iter().any(|(o, _)| o == n))
        .chain(own)
}

/// `inspect`: heals first (see [`heal_first`]), then reports the live values a student needs to
/// write the inputs, and each act's status. A work directory that does not exist is not created
/// ([`attempt::lock_workdir_if_exists`]).
pub async fn inspect(lab: Lab, env: &Env) -> Result<InspectReport, LabError> {
    let _lock = attempt::lock_workdir_if_exists(&env.workdir, "inspect")?;
    heal_first(env, "inspect").await;
    common::inspect(lab, env).await
}

/// `heal`: takes the work-dir lock and heals every unfinished fault attempt ([`crate::faults::heal::heal_workdir`]).
///
/// A work directory that does not exist has nothing to heal and is not created.
///
/// Errors: [`LabError::Busy`] when another command holds the work directory.
pub async fn heal(env: &Env) -> Result<heal::HealSummary, LabError> {
    let _lock = attempt::lock_workdir_if_exists(&env.workdir, "heal")?;
    Ok(heal_first(env, "heal").await)
}

/// Every command heals first: unfinished attempts of the work directory are healed
/// ([`heal::heal_workdir`]) and each line is shown to the student. The cluster is reached only when
/// attempts exist. The caller holds the work-dir lock.
pub async fn heal_first(env: &Env, command: &str) -> heal::HealSummary {
    let any = heal::attempts(&env.workdir.base()).map_or(true, |a| !a.is_empty());
    if !any {
        return heal::HealSummary::default();
    }
    let cluster = env.cluster().await.ok();
    let summary = heal::heal_workdir(&env.workdir, cluster.as_ref(), command).await;
    for line in summary.lines() {
        env.ui.step(crate::messages::act::healing_earlier(&line));
    }
    heal::remember(&summary);
    summary
}

/// Runs act `act` of `lab` ([`runner`]) holding the work-dir lock for the whole act: heals first
/// ([`heal_first`], reaching the cluster only when unfinished fault attempts exist), checks the
/// act's input files offline ([`precheck_inputs`]: a malformed file is refused with its file and
/// JSON path whatever the state of the cluster) and requires completed evidence of the same lab
/// for every earlier act ([`common::require_completed`]); the runner then starts with the versions
/// the cluster runs read once for its evidence ([`common::with_running_versions`]) and checks its
/// inputs again against the live cluster and the evidence.
///
/// Errors: [`LabError::Usage`] for an act the lab does not have; [`LabError::InputMissing`] /
/// [`LabError::InputInvalid`] from the pre-check; [`LabError::Busy`] when another command holds
/// the work directory; the act's own errors otherwise.
pub async fn run_act(lab: Lab, act: u8, env: &Env) -> Result<ActSummary, LabError> {
    crate::acts::check(lab, act)?;
    let run = runner(lab, act).ok_or_else(|| {
        LabError::Usage(format!("act {act} of lab {} has no runner", lab.as_str()))
    })?;
    let what = format!("act {act}");
    // Its inputs, and completed evidence of this lab for every earlier act of the registry.
    let can_start = || {
        precheck_inputs(lab, act, &env.workdir)?;
        common::require_completed(
            &env.workdir,
            lab,
            crate::acts::numbers(lab).filter(|&a| a < act),
        )
    };
    if !env.workdir.root().exists() {
        // No work directory: nothing to heal, and the act cannot have its inputs or earlier
        // evidence (act 1 reads scope.json; an act without inputs needs act 1 done). Refuse
        // before the lock, which would create the directory: a failing command creates nothing.
        can_start()?;
    }
    let _lock = attempt::lock_workdir(&env.workdir, &what)?;
    heal_first(env, &what).await;
    can_start()?;
    common::with_running_versions(env, run(env, lab)).await
}

/// Reads each input file that act `act` of `lab` takes ([`crate::acts::ActSpec::inputs`]) with the one reader
/// ([`crate::json`]) and validates its shape and fixed values offline ([`Context::default`], as
/// `check FILE` does without evidence). No I/O besides reading those files; nothing is written.
///
/// Errors: [`LabError::InputMissing`], [`LabError::Io`], [`LabError::InputInvalid`] (file, JSON
/// path, expected, found).
pub fn precheck_inputs(lab: Lab, act: u8, workdir: &Workdir) -> Result<(), LabError> {
    let files = crate::acts::spec(lab, act).map_or(&[][..], |s| s.inputs);
    for &file in files {
        let loaded = workdir.read_input(file)?;
        inputs::validate(file, &loaded.value, &Context::default())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registry_act_has_one_runner() {
        for lab in crate::acts::LABS {
            let mut numbers: Vec<u8> = runners(lab).map(|(n, _)| *n).collect();
            numbers.sort();
            let registry: Vec<u8> = crate::acts::numbers(lab).collect();
            assert_eq!(
                numbers,
                registry,
                "lab {}: runners vs the acts registry",
                lab.as_str()
            );
        }
    }
}
