//! The API server's `/metrics` read through the kube client: [`read`], the [`Window`] an act
//! brackets its requests with, and [`current`] (what `inspect --metrics` prints). The series kept,
//! the parsing and the deltas are pure and live in [`lab_core::metrics`], re-exported here.
//!
//! Acts 3, 5, 6 and 7 of every lab read `GET /metrics` (the act's own credential) before their
//! first request and after their last; the admission webhook lines are kept verbatim (no
//! `_bucket`) under `facts.admission_metrics`, and a failed read is kept with its reason.

use std::collections::BTreeMap;

pub use lab_core::metrics::*;

use crate::cluster::Cluster;
use crate::facts::now_rfc3339;

/// Reads `/metrics` once and keeps the admission webhook lines.
pub async fn read(cluster: &Cluster) -> Result<MetricsRead, Unavailable> {
    match cluster.get_text_raw(METRICS_PATH).await {
        Ok((200, text)) => Ok(MetricsRead {
            at: now_rfc3339(),
            lines: admission_lines(&text),
        }),
        Ok((status, text)) => Err(Unavailable {
            at: now_rfc3339(),
            http_status: Some(status),
            reason: format!(
                "GET {METRICS_PATH} answered {status}: {}",
                text.chars().take(500).collect::<String>()
            ),
        }),
        Err(e) => Err(Unavailable {
            at: now_rfc3339(),
            http_status: None,
            reason: format!("GET {METRICS_PATH}: {e}"),
        }),
    }
}

/// A group of requests bracketed by two `/metrics` reads: [`Window::begin`] before the first
/// request, [`Window::end`] after the last.
#[derive(Debug)]
pub struct Window {
    before: Result<MetricsRead, Unavailable>,
}

impl Window {
    /// Reads `/metrics` before the group's first request (a failed read is kept, not raised).
    pub async fn begin(cluster: &Cluster) -> Window {
        Window {
            before: read(cluster).await,
        }
    }

    /// Reads `/metrics` after the group's last request and returns the deltas.
    pub async fn end(self, cluster: &Cluster) -> AdmissionMetrics {
        let after = read(cluster).await;
        AdmissionMetrics::from_reads(self.before, after)
    }
}

/// The current admission webhook series of the webhooks whose name contains `name_part` (e.g. the
/// policy's name), as (sample name, labels, value), sorted: what `inspect --metrics` prints.
pub async fn current(
    cluster: &Cluster,
    name_part: &str,
) -> Result<Vec<(String, BTreeMap<String, String>, f64)>, Unavailable> {
    let r = read(cluster).await?;
    Ok(parse(&r.lines)
        .into_iter()
        .filter(|((_, l), _)| l.get("name").is_some_and(|n| n.contains(name_part)))
        .map(|((m, l), v)| (m, l, v))
        .collect())
}
