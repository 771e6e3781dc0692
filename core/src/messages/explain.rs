//! The words of `explain` ([`crate::explain`]).

use crate::evidence::{Lab, Outcome};
use crate::text::{Text, t};

/// Label of the classifier's outcome line (the outcome itself is the evidence's word).
pub const OUTCOME: Text = t("判定結果", "outcome");
/// Label of the classifier's rule line.
pub const RULE: Text = t("判定規則", "rule");
/// Rule 1: a 2xx confirmed by the follow-up GET.
pub const RULE_2XX_GET: Text = t("2xx + 続く GET", "2xx + follow-up GET");
/// Rule 1 when the GET does not confirm.
pub const RULE_2XX_UNCONFIRMED: Text = t(
    "続く GET で確認できない 2xx",
    "2xx that the follow-up GET does not confirm",
);
/// Rule 2.
pub const RULE_CONFLICT: Text = t("409 / AlreadyExists", "409 / AlreadyExists");
/// Rule 3: the policy's deny.
pub const RULE_DENY: Text = t(
    "4xx `admission webhook \"…\" denied the request` + ポリシーのマーカー",
    "4xx `admission webhook \"…\" denied the request` + the policy's marker",
);
/// Rule 3 without the marker.
pub const RULE_DENY_UNMARKED: Text = t(
    "ポリシーのマーカーがない拒否",
    "a deny without the policy's marker",
);
/// Rule 4: a webhook call failure with a known cause.
pub const RULE_CALL_FAILED: Text = t(
    "`failed calling webhook` + その原因",
    "`failed calling webhook` + its cause",
);
/// Rule 4 with another cause.
pub const RULE_CALL_FAILED_OTHER: Text = t(
    "別の原因の `failed calling webhook`",
    "`failed calling webhook` with another cause",
);
/// Rule 5.
pub const RULE_OTHER: Text = t("上の規則のどれにも当たらないもの", "anything else");
/// Label of the lab's meaning line.
pub const LAB: Text = t("ラボ", "lab");
/// A pasted 2xx without the follow-up GET.
pub const NOTE_2XX: Text = t(
    "注意: 2xx だけでは stored ではありません。続くGETでUID付きのオブジェクトが見つかる必要があります (actは記録します。貼り付けたテキストにはありません)",
    "note: a 2xx alone is not `stored`: a follow-up GET must find the object with its UID (an act records it; pasted text has none)",
);
/// The evidence recorded another outcome than the classifier's.
pub const RECORDED_OTHER: Text = t(
    "証拠に記録された結果が違います (grade は outcome-contradicts-answer を報告します)",
    "the evidence recorded another outcome (grade reports outcome-contradicts-answer)",
);

/// What outcome `o` means in `lab`.
pub fn meaning(lab: Lab, o: Outcome) -> Text {
    match o {
        Outcome::Stored => t(
            "リクエストは受け入れられ、GETでUID付きのオブジェクトが確認されました (stored)。違反するPodなら、webhookが判定していないことを意味します (ラボA: 登録が消えた、ラボB: failurePolicy Ignore で呼び出しが失敗した)。",
            "The request was admitted and the GET found the object with a UID (stored). For a violating pod this means no webhook decided (lab A: the registration was gone; lab B: the call failed under failurePolicy Ignore).",
        ),
        Outcome::ExplicitDeny => t(
            "ポリシーのwebhookが応答して拒否しました。webhookが登録され、動いている証拠です。",
            "The policy's webhook answered and denied: evidence that it is registered and working.",
        ),
        // The lab's own words, in the registry (`acts::LabSpec::webhook_timeout`).
        Outcome::WebhookTimeout => crate::acts::lab_spec(lab).webhook_timeout,
        Outcome::ConnectionRefused | Outcome::NoEndpoints | Outcome::DnsError => t(
            "webhookを呼べませんでした (接続拒否・エンドポイントなし・DNS)。登録は残っているのにサービスの先にPodがいない状態です。failurePolicy Fail なら拒否されます。",
            "The webhook could not be called (refused, no endpoints, DNS): the registration is there but nothing serves behind the service. Under failurePolicy Fail the request is rejected.",
        ),
        Outcome::AlreadyExists => t(
            "同じ名前のオブジェクトがすでにあります。ポリシーの判定ではありません。毎回新しい名前を使ってください。",
            "An object with that name already exists. This is never a policy decision; use a fresh name every time.",
        ),
        Outcome::DryRunAdmitted => t(
            "サーバー側 dry-run がアドミッションを通過し、保存はされていません (GETで見つからない)。",
            "The server-side dry-run passed admission and nothing was stored (the GET finds nothing).",
        ),
        Outcome::OtherError => t(
            "ラボの判定に数えない応答です (他のwebhookの拒否、目印のない拒否、GETで確認できない成功、その他のエラー)。生の応答をそのまま記録してください。",
            "An answer the lab does not count (another webhook's deny, a deny without the policy's marker, a success the GET does not confirm, any other error). Keep the raw answer verbatim.",
        ),
    }
}
