//! What the audit and the metrics rules read alike, so that neither rule module imports the
//! other: the act's requests and the policy's registration as this act's evidence recorded it (its webhook's name,
//! failurePolicy and `timeoutSeconds`, else act 2's). Read from the live registration the
//! evidence keeps, never from constants: a webhook's name differs by Kyverno version
//! ([docs/matrix.md](../../../docs/matrix.md)).

use std::collections::BTreeMap;

use super::G;
use crate::evidence::{Evidence, RequestRecord};
use serde_json::Value;

/// Every request record of the act, once per name: in `facts` and in `raw` (a `request:*`
/// entry's `data`), at any depth ([`crate::evidence::request_records`]).
pub(crate) fn act_requests(ev: &Evidence) -> BTreeMap<String, RequestRecord> {
    let roots: Vec<&Value> = std::iter::once(&ev.facts).chain(&ev.raw).collect();
    crate::evidence::request_records(&roots)
}

/// The first of `own` (JSON pointers below this act's `facts`) that is present, read with `read`;
/// else (absent, or not what `read` reads) act 2's `facts` at `act2`.
fn own_else_act2<'v, T>(
    g: &'v G<'_>,
    ev: &'v Evidence,
    own: &[&str],
    act2: &str,
    read: impl Fn(&'v Value) -> Option<T>,
) -> Option<T> {
    let mine = own.iter().find_map(|p| ev.facts.pointer(p));
    mine.and_then(&read).or_else(|| {
        let doc = g.input.evidence.get(&2)?.as_ref().ok()?;
        read(doc.value.pointer("/facts")?.pointer(act2)?)
    })
}

/// The policy's webhook for this act: `facts.webhook.name`, `facts.webhook_name`, else act 2's.
pub(crate) fn policy_webhook(g: &G<'_>, ev: &Evidence) -> Option<String> {
    let own = ["/webhook/name", "/webhook_name"];
    let name = own_else_act2(g, ev, &own, "/webhook/name", Value::as_str);
    name.map(str::to_owned)
}

/// Whether the policy's registration for this act is failurePolicy `Ignore`, read from the live
/// registration the evidence recorded (never from the webhook's name, whose form differs by
/// Kyverno version): `facts.webhook.failure_policy`, the freeze's `registration_snapshot`, else
/// act 2's.
pub(crate) fn policy_is_ignore(g: &G<'_>, ev: &Evidence) -> bool {
    let snapshot = "/registration_snapshot/failurePolicy";
    let own = ["/webhook/failure_policy", snapshot];
    let policy = own_else_act2(g, ev, &own, "/webhook/failure_policy", Value::as_str);
    policy == Some("Ignore")
}

/// The `timeoutSeconds` of the policy's registration for this act: `facts.timeout_seconds` (lab
/// B's freeze runs), `facts.webhook.timeout_seconds`, else act 2's.
pub(crate) fn policy_timeout_seconds(g: &G<'_>, ev: &Evidence) -> Option<u32> {
    let read = |v: &Value| v.as_u64().and_then(|t| u32::try_from(t).ok());
    let own = ["/timeout_seconds", "/webhook/timeout_seconds"];
    own_else_act2(g, ev, &own, "/webhook/timeout_seconds", read)
}
