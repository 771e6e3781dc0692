//! [`acts::Fault::Scale`](crate::acts::Fault::Scale): what a scale act shares beyond its fault
//! (`faults/scale.rs`): the healer's kubeconfig and the runner's own restore when the act fails
//! (lab A's scale to 0, lab C's scale to three).

use std::path::PathBuf;

use crate::cluster::Cluster;
use crate::error::LabError;
use crate::faults::scale::{self, ScaleFault};
use crate::labs::common::ActRecorder;

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
    if fault
        .ledger()
        .last(scale::LedgerEvent::ScalingDown)
        .is_some()
    {
        let restored = fault.restore(scale::UndoneBy::Runner).await;
        rec.raw(
            "runner-restore",
            restored.as_ref().map_err(|e| e.to_string()),
        );
    }
}
