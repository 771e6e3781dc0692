//! `audit`'s words (`lab/src/audit_cmd.rs`): the table's column names, each finding's meaning and
//! the closing line. Values (names, policies, selectors, requests) stay as the API writes them.

use crate::policy_audit::PolicyFindingCode;
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

/// What a finding on an admission policy binding means ([`crate::policy_audit`]).
pub fn policy_finding_text(code: PolicyFindingCode) -> Text {
    match code {
        PolicyFindingCode::BindingPolicyMissing => t(
            "binding が存在しないポリシーを指しています。この binding は何も検査せず、守られているように見えて守られていません",
            "the binding names a policy that does not exist: it checks nothing, and looks like protection that is not there",
        ),
        PolicyFindingCode::FailParamsMissing => t(
            "failurePolicy Fail のポリシーのパラメーター (paramKind/paramRef) が見つかりません。binding は設定不備とされ、一致するリクエストはすべて拒否されます",
            "the params of a failurePolicy Fail policy (paramKind/paramRef) are missing: the binding is misconfigured and every request it matches is refused",
        ),
        PolicyFindingCode::AuditOnlyActions => t(
            "validationActions に Deny がありません (Audit/Warn のみ)。違反するリクエストも受け入れられ、監査ログか警告に残るだけです",
            "validationActions have no Deny (Audit/Warn only): a violating request is admitted, only recorded in the audit log or returned as a warning",
        ),
    }
}

/// A kind of admission policy the API server does not serve.
pub const NOT_SERVED: Text = t(
    "この API サーバーでは提供されていません",
    "not served by this API server",
);
/// Heading of the admission policies' findings.
pub const POLICY_FINDINGS: Text = t("admission ポリシーの所見", "admission policy findings");

line!(
    /// The heading of one kind of admission policy: kind, version, counts.
    policy_heading(kind: &str, version: &str, policies: usize, bindings: usize) => "{kind} ({version}): ポリシー {policies} 個、binding {bindings} 個", "{kind} ({version}): {policies} policies, {bindings} bindings");
line!(
    /// A kind of admission policy that is not served.
    policy_not_served(kind: &str, not_served: &str) => "{kind}: {not_served}", "{kind}: {not_served}");
line!(
    /// One policy: name, failurePolicy, paramKind, its bindings.
    policy_line(name: &str, failure: &str, param_kind: &str, bindings: &str) => "  ポリシー {name}  failurePolicy={failure}  paramKind={param_kind}  binding: {bindings}", "  policy {name}  failurePolicy={failure}  paramKind={param_kind}  bindings: {bindings}");
line!(
    /// One binding: name, its policy, actions, paramRef and what was found of its params.
    binding_line(name: &str, policy: &str, actions: &str, param_ref: &str, params: &str) => "  binding {name} → {policy}  validationActions={actions}  paramRef={param_ref}  パラメーター: {params}", "  binding {name} → {policy}  validationActions={actions}  paramRef={param_ref}  params: {params}");
line!(
    /// The params cell: how many objects match the paramRef.
    params_found(count: u64) => "{count} 個", "{count} found");
/// The params cell: the paramKind is not served.
pub const PARAMS_KIND_NOT_SERVED: Text =
    t("paramKind が提供されていません", "paramKind not served");
line!(
    /// The closing line of the admission policies: how many, and their findings.
    policy_summary(policies: usize, bindings: usize, findings: usize) => "admission ポリシー {policies} 個、binding {bindings} 個、所見 {findings} 件", "{policies} admission policies, {bindings} bindings, {findings} findings");
line!(
    /// One finding on a binding: code, kind, binding → policy, facts, meaning.
    policy_finding(code: &str, kind: &str, binding: &str, policy: &str, facts: &str, meaning: &str) => "[{code}] {kind} binding {binding} → {policy}: {facts}\n    {meaning}", "[{code}] {kind} binding {binding} → {policy}: {facts}\n    {meaning}");
