//! [`acts::Step::Samples`](crate::acts::Step::Samples): the Lease `kyverno` and the admission
//! Service's EndpointSlices read about each second while a fault lasts, every answer kept raw.

use crate::cluster::{self, Cluster};
use crate::derive;
use crate::error::LabError;
use crate::facts;
use crate::facts::c::{EndpointFacts, EndpointSample, LeaseSample};
use crate::steps::observe::leader_lease;

/// The Service in front of the admission controller (chart 3.9.1).
pub const SERVICE: &str = "kyverno-svc";

/// [`SERVICE`]'s endpoints, [`derive::endpoints`] of its EndpointSlices as the API server sent
/// them (the raw slices returned too, the record the grader re-derives them from).
///
/// Errors: [`LabError::Kube`] when the list cannot be read, or does not serialize or derive.
pub(crate) async fn endpoints(
    cl: &Cluster,
) -> Result<(Vec<EndpointFacts>, serde_json::Value), LabError> {
    let slices = cl
        .endpoint_slices(cluster::KYVERNO_NAMESPACE, SERVICE)
        .await?;
    let raw = cluster::to_json(&slices)?;
    Ok((cluster::derived(derive::endpoints(&raw))?, raw))
}

/// The Lease and EndpointSlice reads of [`each_second`], and their raw answers (the raw record
/// `freeze-samples`).
#[derive(Default)]
pub(crate) struct Samples {
    /// The Lease's holder, renew time and transitions at each read.
    pub lease: Vec<LeaseSample>,
    /// [`SERVICE`]'s endpoints at each read.
    pub endpoints: Vec<EndpointSample>,
    /// Every answer, verbatim, with its time.
    pub raw: Vec<serde_json::Value>,
}

/// A running sampler ([`each_second`] on its own task) and the switch that stops it.
pub(crate) struct Sampler {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<Samples>,
}

impl Sampler {
    /// Starts reading each second.
    pub(crate) fn start(cl: &Cluster) -> Sampler {
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(each_second(cl.clone(), stop_rx));
        Sampler { stop, task }
    }

    /// Stops the reads and returns them.
    ///
    /// Errors: [`LabError::Kube`] when the sampler's task failed.
    pub(crate) async fn stop(self) -> Result<Samples, LabError> {
        let _ = self.stop.send(true);
        self.task
            .await
            .map_err(|e| LabError::Kube(format!("the Lease and EndpointSlice sampler: {e}")))
    }
}

/// Reads the Lease `kyverno` and [`SERVICE`]'s EndpointSlices about each second
/// ([`lab_core::rules::c::SAMPLE_PERIOD`]) until `stop` says so; every answer is kept raw.
async fn each_second(cl: Cluster, stop: tokio::sync::watch::Receiver<bool>) -> Samples {
    let mut out = Samples::default();
    let mut tick = tokio::time::interval(lab_core::rules::c::SAMPLE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // Stopped, or its switch gone (the act ended on an error).
        if *stop.borrow() || stop.has_changed().is_err() {
            break;
        }
        let (lease, slices) = tokio::join!(leader_lease(&cl), endpoints(&cl));
        let at = facts::now_rfc3339();
        // Each answer kept raw, its sample derived from it (the grader re-derives it); a read
        // that failed is a sample with its error and no raw answer.
        let lease = lease.and_then(|l| {
            let raw =
                serde_json::json!({"what": "lease", "at": at, "lease": cluster::to_json(&l)?});
            Ok((cluster::derived(derive::lease_sample(&raw))?, raw))
        });
        let lease_sample = match lease {
            Ok((sample, raw)) => {
                out.raw.push(raw);
                sample
            }
            Err(e) => LeaseSample {
                at: at.clone(),
                holder: None,
                renew_time: None,
                lease_transitions: None,
                error: Some(e.to_string()),
            },
        };
        out.lease.push(lease_sample);
        let slices = slices.and_then(|(_, slices)| {
            let raw = serde_json::json!({"what": "endpoint-slices", "at": at, "slices": slices});
            Ok((cluster::derived(derive::endpoint_sample(&raw))?, raw))
        });
        let endpoint_sample = match slices {
            Ok((sample, raw)) => {
                out.raw.push(raw);
                sample
            }
            Err(e) => EndpointSample {
                at,
                endpoints: vec![],
                error: Some(e.to_string()),
            },
        };
        out.endpoints.push(endpoint_sample);
    }
    out
}
