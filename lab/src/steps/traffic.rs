//! [`acts::Step::Traffic`](crate::acts::Step::Traffic) and the parallel waves of a
//! [`Step::Baseline`](crate::acts::Step::Baseline): violating pods sent at once, one of each kind
//! during a freeze of the one replica (lab B) or waves with a control pod each (lab C); and each
//! replica's own admission counter read around them.

use crate::cluster::{self, Cluster};
use crate::error::LabError;
use crate::evidence::{Outcome, RequestRecord};
use crate::facts::c::ReplicaRequests;
use crate::labs::common::{
    ActRecorder, CONTROL_NAMESPACE, TARGET_NAMESPACE, Ui, describe_indented,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};

/// Kyverno's metrics port on each replica (chart 3.9.1, `metricsService.port`).
const METRICS_PORT: u16 = 8000;

/// Sends `n` violating pods at once (each its own task) and returns their records in send order.
///
/// The tasks are released together by a barrier once all `n` are running: spawned and sent one
/// by one, a loaded machine (load above 9, lab-c.md) let a healthy webhook answer each request
/// before the next task had started, and the wave was not parallel.
pub(crate) async fn parallel_wave(
    cl: &Cluster,
    purpose: &str,
    n: u32,
) -> Result<Vec<RequestRecord>, LabError> {
    let mut set = tokio::task::JoinSet::new();
    let together = std::sync::Arc::new(tokio::sync::Barrier::new(n as usize));
    for i in 0..n {
        let cl = cl.clone();
        let purpose = format!("{purpose}-{i}");
        let together = together.clone();
        set.spawn(async move {
            together.wait().await;
            let r = probe::send_pod(&cl, &purpose, TARGET_NAMESPACE, PodKind::Bad, false).await;
            (i, r)
        });
    }
    let mut out = Vec::new();
    while let Some(joined) = set.join_next().await {
        let (i, r) =
            joined.map_err(|e| LabError::Kube(format!("a parallel request's task: {e}")))?;
        out.push((i, r?));
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

/// The requests of a freeze's traffic with 0 waves: one good and one violating target pod and a
/// violating control pod, sent at once.
pub(crate) struct OneEach {
    /// The good target pod.
    pub good: RequestRecord,
    /// The violating target pod.
    pub bad: RequestRecord,
    /// The violating control pod (outside the webhook's namespace selector).
    pub control: RequestRecord,
}

/// During a freeze of the one replica: one good, one violating target pod and a control pod at
/// once (request names `<tag>-frozen-…`), each recorded and shown.
pub(crate) async fn one_of_each(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    tag: &str,
) -> Result<OneEach, LabError> {
    ui.step(m::DURING_FREEZE);
    let p_good = format!("{tag}-frozen-good");
    let p_bad = format!("{tag}-frozen-bad");
    let p_control = format!("{tag}-frozen-control");
    let (good, bad, control) = tokio::join!(
        probe::send_pod(cl, &p_good, TARGET_NAMESPACE, PodKind::Good, false),
        probe::send_pod(cl, &p_bad, TARGET_NAMESPACE, PodKind::Bad, false),
        probe::send_pod(cl, &p_control, CONTROL_NAMESPACE, PodKind::Bad, false),
    );
    let (good, bad, control) = (good?, bad?, control?);
    rec.request("frozen-target-good", &good);
    rec.request("frozen-target-bad", &bad);
    rec.request("frozen-control", &control);
    for (label, r) in [
        (m::req::TARGET_GOOD_FROZEN, &good),
        (m::req::TARGET_BAD_FROZEN, &bad),
        (m::req::CONTROL_FROZEN, &control),
    ] {
        ui.say(describe_indented(ui, label, r));
    }
    Ok(OneEach { good, bad, control })
}

/// The requests of a freeze's traffic in waves: every violating pod, and one control pod a wave.
#[derive(Default)]
pub(crate) struct Waves {
    /// The violating target pods, wave after wave, in send order.
    pub bad: Vec<RequestRecord>,
    /// The control pods, one a wave.
    pub control: Vec<RequestRecord>,
}

/// During a freeze of act `act`: `waves` parallel waves of `size` violating pods
/// ([`parallel_wave`], names `<tag>-frozen-bad-w<N>-<i>`), each sent together with a control pod;
/// each wave's outcome is shown as it ends.
pub(crate) async fn waves(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    (act, tag): (u8, &str),
    (waves, size): (u32, u32),
) -> Result<Waves, LabError> {
    ui.step(m::during_freeze_waves(waves, size));
    let (met_word, met) = met_frozen(act);
    let mut out = Waves::default();
    for w in 0..waves {
        let (bad_name, control_name) = (
            format!("{tag}-frozen-bad-w{w}"),
            format!("{tag}-frozen-control-w{w}"),
        );
        let (wave, ctl) = tokio::join!(
            parallel_wave(cl, &bad_name, size),
            probe::send_pod(cl, &control_name, CONTROL_NAMESPACE, PodKind::Bad, false),
        );
        let (wave, ctl) = (wave?, ctl?);
        for r in &wave {
            rec.request("frozen-bad", r);
        }
        rec.request("frozen-control", &ctl);
        let count = |o: Outcome| wave.iter().filter(|r| r.outcome == o).count();
        let (n_met, denied) = (count(met), count(Outcome::ExplicitDeny));
        ui.say(ui.text(m::freeze_wave(w + 1, n_met, met_word, denied, wave.len())));
        out.bad.extend(wave);
        out.control.push(ctl);
    }
    Ok(out)
}

/// What a violating request that reached the frozen replica ends as in act `act`: under Fail
/// (act 5) a `webhook-timeout`, under Ignore (act 6) `stored` after the timeout.
pub(crate) fn met_frozen(act: u8) -> (&'static str, Outcome) {
    if act == 5 {
        ("webhook-timeout", Outcome::WebhookTimeout)
    } else {
        ("stored", Outcome::Stored)
    }
}

/// Each replica's pod admission counter (`None` with the reason recorded in `raw` when
/// unreadable), read through the API server's pod proxy; recorded as
/// `replica-metrics-<when>:<pod>`.
pub(crate) async fn replica_counters(
    cl: &Cluster,
    pods: &[String],
    rec: &mut ActRecorder,
    when: &str,
) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    for pod in pods {
        let ns = cluster::KYVERNO_NAMESPACE;
        let path = format!("/api/v1/namespaces/{ns}/pods/{pod}:{METRICS_PORT}/proxy/metrics");
        let read = cl.get_text_raw(&path).await;
        let value = match &read {
            Ok((200, text)) => lab_core::metrics::kyverno_pod_requests(text),
            _ => None,
        };
        let kept = match read {
            Ok((status, text)) => serde_json::json!({
                "status": status,
                "lines": text.lines().filter(|l| l.starts_with(lab_core::metrics::KYVERNO_REQUESTS)).collect::<Vec<_>>(),
            }),
            Err(e) => serde_json::json!({"error": e.to_string()}),
        };
        rec.raw(&format!("replica-metrics-{when}:{pod}"), kept);
        out.push(value);
    }
    out
}

/// Each replica's admission counter before and after an act's requests, by pod.
pub(crate) fn replica_requests(
    pods: &[String],
    before: Vec<Option<u64>>,
    after: Vec<Option<u64>>,
) -> Vec<ReplicaRequests> {
    pods.iter()
        .zip(before.into_iter().zip(after))
        .map(|(pod, (before, after))| ReplicaRequests {
            pod: pod.clone(),
            before,
            after,
        })
        .collect()
}

/// A summary line per replica: how far its counter moved (`?` when a read failed).
pub(crate) fn replica_request_lines(ui: &Ui, counts: &[ReplicaRequests]) -> Vec<String> {
    counts
        .iter()
        .map(|r| {
            let delta = match (r.before, r.after) {
                (Some(b), Some(a)) if a >= b => format!("{}", a - b),
                (Some(b), Some(a)) => format!("? ({b} → {a})"),
                _ => "?".into(),
            };
            ui.text(m::replica_requests(&r.pod, &delta))
        })
        .collect()
}
