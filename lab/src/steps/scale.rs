//! [`acts::Fault::Scale`](crate::acts::Fault::Scale): what a scale act shares beyond its fault
//! (`faults/scale.rs`): the healer's kubeconfig and the runner's own restore when the act fails
//! (lab A's scale to 0, lab C's scale to three).

use std::path::PathBuf;

use crate::cluster::Cluster;
use crate::error::LabError;
use crate::faults::scale::{self, LedgerEvent, ScaleFault};
use crate::labs::common::{ActRecorder, ActSummary};

/// The kubeconfig file the healer reads: the one the runner uses
/// ([`cluster::resolve_kubeconfig`]), never another.
pub(crate) fn healer_kubeconfig(cl: &Cluster) -> Result<PathBuf, LabError> {
    cl.kubeconfig().map(std::path::Path::to_path_buf).ok_or_else(|| LabError::FaultRefused {
        reason: "the healer needs one kubeconfig file (KUBECONFIG names several, or none exists); pass --kubeconfig".into(),
    })
}

/// The runner's own exit path of a scale act that failed or was interrupted: if the scale was asked
/// for (`scaling-down` in the ledger, lab A's 0 or lab C's 3), put the original count back now and
/// record the answer as `runner-restore` (the healer stays armed as the safety net).
pub(crate) async fn restore_after_a_failed_act(fault: &mut ScaleFault, rec: &mut ActRecorder) {
    let asked = fault.ledger().last(LedgerEvent::ScalingDown).is_some();
    if asked {
        runner_restore(fault, rec, "runner-restore").await;
    }
}

/// The runner puts the original count back now ([`ScaleFault::restore`]) and records the answer
/// (or its error) as `what`.
pub(crate) async fn runner_restore(fault: &mut ScaleFault, rec: &mut ActRecorder, what: &str) {
    let restored = fault.restore(scale::UndoneBy::Runner).await;
    rec.raw(what, restored.as_ref().map_err(|e| e.to_string()));
}

/// The end of a scale act whose scale stays on for the later acts: on success the fault is handed
/// over (a later heal leaves it to them and the healer; a failure to record that is kept raw as
/// `hand-over-record-error`) and the evidence completed; on failure the runner restores
/// ([`restore_after_a_failed_act`]) and the evidence keeps `partial`.
pub(crate) async fn hand_over_or_restore(
    mut fault: ScaleFault,
    mut rec: ActRecorder,
    partial: serde_json::Value,
    result: Result<(serde_json::Value, Vec<String>), LabError>,
) -> Result<ActSummary, LabError> {
    match result {
        Ok((facts, lines)) => {
            if let Err(e) = fault.hand_over() {
                rec.raw("hand-over-record-error", e.to_string());
            }
            rec.complete(facts, lines)
        }
        Err(e) => {
            restore_after_a_failed_act(&mut fault, &mut rec).await;
            rec.interrupt(partial, e.to_string())?;
            Err(e)
        }
    }
}
