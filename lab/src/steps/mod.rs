//! The runners of the registry's step kinds ([`crate::acts::Step`]), one module per kind, shared
//! by every lab whose acts list that kind: an act's body (`labs/{a,b,c}.rs`) calls them in its
//! steps' order, so no lab reaches into another's file. What a step's parameters say (a freeze's
//! target and length, the waves of its traffic) is read from the registry here ([`freeze_of`],
//! [`waves_of`]), not written again beside the body.
//!
//! - [`investigate`]: `Investigate` (the one replica, the leader, a follower) and the checks
//!   before any fault;
//! - [`freeze`]: `Fault(Freeze)` and its acts' flow (labs B and C, each lab giving its part,
//!   `freeze::Shape`), `AwaitDeny` after it, and the outcome as facts;
//! - [`policy`]: `SwitchPolicy` (in place, to Ignore) and its healthy deny;
//! - [`scale`]: `Fault(Scale)`'s shared parts (the healer's kubeconfig, the runner's restore);
//! - [`traffic`]: `Traffic` (and a baseline's parallel waves), each replica's counter around it;
//! - [`samples`]: `Samples`, the Lease and the Service's endpoints each second;
//! - [`settle`]: `Settle`, the frozen replica after the resume;
//! - [`restore`]: `Restore`, a scale attempt healed and the original count awaited;
//! - [`observe`]: the objects the acts read back, as facts (Deployment, pod, Lease, webhooks).

pub mod freeze;
pub mod investigate;
pub mod observe;
pub mod policy;
pub mod restore;
pub mod samples;
pub mod scale;
pub mod settle;
pub mod traffic;

use crate::acts::{self, Fault, Target};
use crate::error::LabError;
use crate::evidence::Lab;

/// The freeze act `act` of `lab` puts on the admission controller (the registry's
/// [`Fault::Freeze`]): its target and the seconds until the healer resumes it, `plan_sec` (the
/// student's `freeze-plan.json` `resume_after_sec`) when the registry leaves it to the plan.
///
/// Errors: [`LabError::Usage`] when the registry gives the act no freeze (a runner called for
/// the wrong act).
pub fn freeze_of(lab: Lab, act: u8, plan_sec: u64) -> Result<(Target, u64), LabError> {
    match acts::fault(lab, act) {
        Some(Fault::Freeze {
            target,
            resume_after_sec,
        }) => Ok((target, resume_after_sec.unwrap_or(plan_sec))),
        _ => Err(no_step(lab, act, "a freeze")),
    }
}

/// The scale act `act` of `lab` asks for (the registry's [`Fault::Scale`]): the replica count and
/// the seconds until the healer puts the original count back, `plan_sec` when the registry
/// leaves it to the plan.
///
/// Errors: [`LabError::Usage`] when the registry gives the act no scale.
pub fn scale_of(lab: Lab, act: u8, plan_sec: u64) -> Result<(u32, u64), LabError> {
    match acts::fault(lab, act) {
        Some(Fault::Scale {
            to,
            restore_after_sec,
        }) => Ok((to, restore_after_sec.unwrap_or(plan_sec))),
        _ => Err(no_step(lab, act, "a scale")),
    }
}

/// The parallel waves act `act` of `lab` sends, `(waves, size)`: its traffic during the fault,
/// else its baseline ([`acts::traffic`], [`acts::baseline`]).
///
/// Errors: [`LabError::Usage`] when the registry gives the act neither.
pub fn waves_of(lab: Lab, act: u8) -> Result<(u32, u32), LabError> {
    acts::traffic(lab, act)
        .or_else(|| acts::baseline(lab, act))
        .ok_or_else(|| no_step(lab, act, "requests"))
}

fn no_step(lab: Lab, act: u8, what: &str) -> LabError {
    LabError::Usage(format!(
        "act {act} of lab {} has no step with {what} in the acts registry",
        lab.as_str()
    ))
}
