//! `audit`'s words (`lab/src/audit_cmd.rs`): the table's column names, each finding's meaning and
//! the closing line. Values (names, policies, selectors, requests) stay as the API writes them.

use crate::text::{Line, Text, line, t};
use crate::webhook_audit::FindingCode;

/// The table's columns, in order.
pub const COLUMNS: [Text; 9] = [
    t("種類", "KIND"),
    t("設定/webhook", "CONFIGURATION/WEBHOOK"),
    t("failurePolicy", "FAILURE-POLICY"),
    t("タイムアウト", "TIMEOUT"),
    t("準備済みエンドポイント", "READY-ENDPOINTS"),
    t("sideEffects", "SIDE-EFFECTS"),
    t("介入先", "INTERCEPTS"),
    t("最悪の待ち時間", "WORST-WAIT"),
    t("セレクターと条件", "SELECTORS"),
];
/// The endpoints cell of a webhook called by URL.
pub const URL_BACKEND: Text = t("URL (不明)", "url (unknown)");
/// The endpoints cell when the EndpointSlices could not be read.
pub const NOT_READ: Text = t("読めず", "not read");
/// The intercepts cell when it intercepts none of them.
pub const NONE: Text = t("なし", "none");
/// The worst-wait cell of a webhook called for no request there is now.
pub const NOT_CALLED: Text = t("呼ばれない", "not called");
/// Heading of the rules lines under the table.
pub const RULES: Text = t("ルール", "rules");
/// Heading of the findings.
pub const FINDINGS: Text = t("所見", "findings");

/// What a finding means and what it does to a request.
pub fn finding_text(code: FindingCode) -> Text {
    match code {
        FindingCode::FailNoReadyEndpoints => t(
            "failurePolicy Fail なのに、Service に準備のできたエンドポイントがありません。この webhook が呼ばれるリクエストは、いまはすべて拒否されます",
            "failurePolicy Fail with no ready endpoint behind its Service: every request it is called for is refused now",
        ),
        FindingCode::IgnoreLongTimeout => t(
            "failurePolicy Ignore でタイムアウトが長すぎます。webhook が応答しないと、リクエストはその秒数だけ待たされ、検査されないまま受け入れられます",
            "failurePolicy Ignore with a long timeout: while the webhook hangs, each request waits that long and is then admitted unchecked",
        ),
        FindingCode::OptOutObjectSelector => t(
            "objectSelector が NotIn/DoesNotExist で、オブジェクト自身のラベルで webhook を避けられます",
            "the objectSelector lets an object opt out of the webhook by its own labels (NotIn/DoesNotExist)",
        ),
        FindingCode::FailOnBootstrapResources => t(
            "failurePolicy Fail で Node、CSR または Lease を捕まえます。webhook のバックエンドが動く前にクラスターを再起動すると、ノードが登録できず行き詰まります (kyverno#16177)",
            "failurePolicy Fail on Nodes, CSRs or Leases: a cluster restarted before the webhook's backend runs cannot register its nodes (kyverno#16177)",
        ),
    }
}

line!(
    /// The closing line: how many webhooks and findings.
    summary(webhooks: usize, findings: usize) => "webhook {webhooks} 個、所見 {findings} 件", "{webhooks} webhooks, {findings} findings");
line!(
    /// One finding: code, webhook, facts, meaning.
    finding(code: &str, kind: &str, webhook: &str, facts: &str, meaning: &str) => "[{code}] {kind} {webhook}: {facts}\n    {meaning}", "[{code}] {kind} {webhook}: {facts}\n    {meaning}");
line!(
    /// The worst wait cell: seconds and the request it is reached for.
    worst_wait(seconds: u64, request: &str) => "{seconds} 秒 ({request})", "{seconds} s ({request})");
