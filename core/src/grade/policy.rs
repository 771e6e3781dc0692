//! The policy's registration as this act's evidence recorded it (its webhook's name,
//! failurePolicy and `timeoutSeconds`, else act 2's), read by the audit and the metrics rules
//! alike, so that neither rule module imports the other. Read from the live registration the
//! evidence keeps, never from constants: a webhook's name differs by Kyverno version
//! ([docs/matrix.md](../../../docs/matrix.md)).

use super::G;
use crate::evidence::Evidence;

/// The policy's webhook for this act: `facts.webhook.name`, `facts.webhook_name`, else act 2's.
pub(crate) fn policy_webhook(g: &G<'_>, ev: &Evidence) -> Option<String> {
    let own = ev
        .facts
        .pointer("/webhook/name")
        .or_else(|| ev.facts.get("webhook_name"))
        .and_then(serde_json::Value::as_str);
    if let Some(h) = own {
        return Some(h.to_owned());
    }
    g.input
        .evidence
        .get(&2)?
        .as_ref()
        .ok()?
        .value
        .pointer("/facts/webhook/name")?
        .as_str()
        .map(str::to_owned)
}

/// Whether the policy's registration for this act is failurePolicy `Ignore`, read from the live
/// registration the evidence recorded (never from the webhook's name, whose form differs by
/// Kyverno version): `facts.webhook.failure_policy`, the freeze's `registration_snapshot`, else
/// act 2's.
pub(crate) fn policy_is_ignore(g: &G<'_>, ev: &Evidence) -> bool {
    let own = ev
        .facts
        .pointer("/webhook/failure_policy")
        .or_else(|| ev.facts.pointer("/registration_snapshot/failurePolicy"))
        .and_then(serde_json::Value::as_str);
    let policy = own.map(str::to_owned).or_else(|| {
        g.input
            .evidence
            .get(&2)?
            .as_ref()
            .ok()?
            .value
            .pointer("/facts/webhook/failure_policy")?
            .as_str()
            .map(str::to_owned)
    });
    policy.as_deref() == Some("Ignore")
}

/// The `timeoutSeconds` of the policy's registration for this act: `facts.timeout_seconds` (lab
/// B's freeze runs), `facts.webhook.timeout_seconds`, else act 2's.
pub(crate) fn policy_timeout_seconds(g: &G<'_>, ev: &Evidence) -> Option<u32> {
    let read = |v: &serde_json::Value| v.as_u64().and_then(|t| u32::try_from(t).ok());
    if let Some(t) = ev
        .facts
        .get("timeout_seconds")
        .or_else(|| ev.facts.pointer("/webhook/timeout_seconds"))
        .and_then(read)
    {
        return Some(t);
    }
    g.input
        .evidence
        .get(&2)?
        .as_ref()
        .ok()?
        .value
        .pointer("/facts/webhook/timeout_seconds")
        .and_then(read)
}
