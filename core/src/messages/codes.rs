//! What each finding code means, in both languages ([`code_text`], an exhaustive match whose test
//! walks `Code::iter()`), and a finding or an act's findings as the student reads them.

use crate::grade::{Code, Finding, Findings};
use crate::text::{Lang, Text, t};

/// What a finding code means, in both languages.
pub fn code_text(code: Code) -> Text {
    match code {
        Code::EvidenceMissing => t(
            "証拠ファイルがありません（先に act を実行してください）",
            "evidence file missing (run the act first)",
        ),
        Code::EvidenceInvalid => t("証拠ファイルとして読めません", "not a valid evidence file"),
        Code::EvidenceInterrupted => t(
            "このactは中断されました。結果は不確かです。生データをダウンロードし、新しいラボで再現してください",
            "this act was interrupted and its results are uncertain; download its raw data and reproduce in a fresh lab",
        ),
        Code::FactsInvalid => t(
            "facts が空か、このactの形ではありません",
            "facts is empty or not this act's shape",
        ),
        Code::InputMissing => t(
            "入力ファイルがありません（先に作業ディレクトリに書いてください）",
            "input file missing (write it in the work directory first)",
        ),
        Code::InputInvalid => t("入力ファイルが正しくありません", "input file invalid"),
        Code::InputChanged => t(
            "actが記録した後で入力ファイルが変更されています",
            "the input file changed after the act recorded it",
        ),
        Code::OutcomeUnexpected => t(
            "このactで観測すべき結果ではありません",
            "not the outcome this act must observe",
        ),
        Code::OutcomeContradictsAnswer => t(
            "記録された結果が、生の応答とGETの結果と一致しません",
            "the recorded outcome contradicts the raw answer and the GET",
        ),
        Code::StoredWithoutUid => t(
            "stored なのに、GETでUID付きのオブジェクトが見つかっていません",
            "stored, but the GET did not find the object with a UID",
        ),
        Code::DenyWithoutMarker => t(
            "explicit-deny なのに、メッセージにポリシーの目印がありません",
            "explicit-deny, but the message carries no marker of the policy",
        ),
        Code::AlreadyExistsCountedAsDeny => t(
            "409 AlreadyExists をポリシーの拒否として数えています",
            "a 409 AlreadyExists is counted as a policy deny",
        ),
        Code::RejectedButStored => t(
            "拒否（またはdry-run）なのに、GETでオブジェクトが見つかりました",
            "rejected (or dry-run), yet the GET found the object",
        ),
        Code::TimeoutTooFast => t(
            "timeoutSeconds より早く返ったタイムアウトです",
            "a timeout answered sooner than timeoutSeconds",
        ),
        Code::TimeoutTooSlow => t(
            "登録の timeoutSeconds より大幅に遅く返ったタイムアウトです（別のタイムアウトや別の webhook の可能性）",
            "a timeout answered much later than the registration's timeoutSeconds (another timeout or another webhook)",
        ),
        Code::CallFailureOtherWebhook => t(
            "呼び出しに失敗した webhook がこのポリシーの登録ではありません",
            "the failed call names another webhook than the policy's registration",
        ),
        Code::CallTimeoutMismatch => t(
            "失敗した呼び出しの URL の timeout が登録の timeoutSeconds と異なります",
            "the failed call's URL timeout differs from the registration's timeoutSeconds",
        ),
        Code::DenyOtherWebhook => t(
            "拒否した webhook がこのポリシーの登録ではありません",
            "the deny comes from another webhook than the policy's registration",
        ),
        Code::DenyIsEvaluationError => t(
            "拒否文がポリシーの判定ではなく Kyverno の評価エラーです",
            "the deny is Kyverno's evaluation error, not the policy's verdict",
        ),
        Code::RegistrationScope => t(
            "webhook 登録の適用範囲がポリシーと違います (対象の Pod が webhook を通らない、またはポリシーの対象外のリクエストも webhook を通る)",
            "the registration's scope is not the policy's: matching pods can skip the webhook, or requests the policy leaves out go through it",
        ),
        Code::RegistrationChanged => t(
            "障害中に読んだ webhook 登録が、前の幕で記録した登録と異なります",
            "the registration read during the fault differs from the one recorded earlier",
        ),
        Code::ObservationMissing => t(
            "この幕で記録できたはずの観測がありません",
            "an observation the act could have made is missing",
        ),
        Code::TimesInconsistent => t(
            "時刻が欠けているか、互いに矛盾しています",
            "timestamps missing or inconsistent",
        ),
        Code::RawMismatch => t(
            "生の応答と記録された値が一致しません",
            "the raw response disagrees with the recorded values",
        ),
        Code::PodReplaced => t(
            "既存のPodのUIDが変わっています。同じ名前の新しいPodは生存ではありません",
            "the existing pod has a new UID; a new pod with the same name is not survival",
        ),
        Code::PodNotRunning => t(
            "既存のPodがない、またはRunningではありません",
            "the existing pod is gone or not Running",
        ),
        Code::NameReused => t(
            "リクエスト名が再利用されています",
            "a request name was reused",
        ),
        Code::DigestMismatch => t(
            "ハッシュが証拠ファイルの正規のJSONハッシュと一致しません",
            "the digest does not match the evidence file's canonical digest",
        ),
        Code::UidMismatch => t(
            "UIDが観測された値と一致しません",
            "a UID does not match the observed one",
        ),
        Code::ValueMismatch => t(
            "値が観測すべきものと違います",
            "a value differs from what must be observed",
        ),
        Code::OutsideWindow => t(
            "リクエストが本来の時間帯の外で送られています",
            "the request was not sent inside its window",
        ),
        Code::RegistrationMissing => t(
            "ポリシーのwebhook登録が観測されていません",
            "the policy's webhook registration was not observed",
        ),
        Code::RegistrationClaimContradicted => t(
            "登録の有無の記録が、一緒に保存された生のリストと矛盾します",
            "the registration claim contradicts the raw list saved with it",
        ),
        Code::IdentityChanged => t(
            "停止したプロセスが事前に特定したもの (act 4、act 6 では act 5 の後に確認したもの) と違います",
            "the frozen process is not the one identified before (act 4; for act 6, the one seen after act 5)",
        ),
        Code::RestartContradicted => t(
            "再起動回数と障害後のコンテナ ID が食い違っています",
            "the restart count and the container seen after the fault contradict each other",
        ),
        Code::ProcessStillStopped => t(
            "再開後もプロセスが停止状態です",
            "the process is still stopped after resume",
        ),
        Code::TimelineOrder => t(
            "タイムラインの順序が正しくありません",
            "timeline steps out of order",
        ),
        Code::NotConfirmed => t(
            "待機の上限に達し、確認できませんでした（ツールの待機時間であり、ポリシーの判定ではありません）",
            "not confirmed before the wait ran out (the tool's bound, not a policy verdict)",
        ),
        Code::ReportContradicted => t(
            "レポートの記述が証拠と一致しません",
            "a report claim contradicts the evidence",
        ),
        Code::AdmittedUnderFail => t(
            "ポリシーが拒否するはずの Pod が、failurePolicy Fail の登録がある間に保存（または dry-run で許可）されています",
            "a pod the policy denies was admitted while the policy's failurePolicy Fail registration was in force",
        ),
        Code::CallFailureUnderIgnore => t(
            "failurePolicy Ignore の webhook の呼び出し失敗がクライアントに返されています（Ignore では API サーバーは fail open します）",
            "a webhook call failure reached the client under failurePolicy Ignore (the API server fails open)",
        ),
        Code::LeaseTenureContradicted => t(
            "Lease の読み取り同士が矛盾しています（保持者・acquireTime・leaseTransitions）",
            "two reads of the Lease contradict each other (holder, acquireTime, leaseTransitions)",
        ),
        Code::MetricsContradicted => t(
            "API サーバーの admission webhook メトリクスがリクエストの結果と一致しません",
            "the API server's admission webhook metrics contradict the request outcomes",
        ),
        Code::MetricsNotObserved => t(
            "API サーバーの admission webhook メトリクスは観測されていません（この照合は未確認です）",
            "the API server's admission webhook metrics were not observed (these cross-checks were not made)",
        ),
        Code::AuditContradicted => t(
            "API サーバーの監査ログ (audit) のイベントがリクエストの記録と一致しません",
            "the API server's audit event contradicts the request's record",
        ),
        Code::TimingNotObserved => t(
            "API サーバー自身による webhook 呼び出し時間（監査ログの latency 注釈、または admission duration メトリクス）は観測されていません（この照合は未確認です）",
            "timing not observed: the API server's own timing of the webhook calls (the audit latency annotation or the admission duration metrics) is absent (this cross-check was not made)",
        ),
        Code::AuditNotObserved => t(
            "API サーバーの監査ログ (audit) は観測されていません（この照合は未確認です）",
            "audit not observed: the API server's audit events were not read (these cross-checks were not made)",
        ),
    }
}

impl Finding {
    /// The finding as one line in `lang` ([`finding`]). Defined beside the code table rather than
    /// beside the type, so that the graders' types do not import the messages that render them.
    pub fn message(&self, lang: Lang) -> String {
        finding(lang, self)
    }
}

/// One finding as a line: `[code] subject: meaning (detail)`.
pub fn finding(lang: Lang, f: &Finding) -> String {
    let line = format!(
        "[{}] {}: {}",
        f.code.as_str(),
        f.subject,
        code_text(f.code).get(lang)
    );
    if f.detail.is_empty() {
        line
    } else {
        format!("{line} ({})", f.detail)
    }
}

/// The summary and lines of one act's grade.
pub fn findings(lang: Lang, f: &Findings) -> String {
    let lab = f.lab;
    let mut out = if f.passed() {
        match lang {
            Lang::Ja => format!("lab {lab} act {}: 合格（{} 項目を確認）", f.act, f.checks),
            Lang::En => format!("lab {lab} act {}: pass ({} checks)", f.act, f.checks),
        }
    } else {
        match lang {
            Lang::Ja => format!(
                "lab {lab} act {}: 指摘 {} 件（{} 項目を確認）",
                f.act,
                f.findings.len(),
                f.checks
            ),
            Lang::En => format!(
                "lab {lab} act {}: {} finding(s) ({} checks)",
                f.act,
                f.findings.len(),
                f.checks
            ),
        }
    };
    for x in &f.findings {
        out.push_str("\n  ");
        out.push_str(&finding(lang, x));
    }
    for x in &f.notes {
        out.push_str(match lang {
            Lang::Ja => "\n  注記 ",
            Lang::En => "\n  note ",
        });
        out.push_str(&finding(lang, x));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code (strum's `EnumIter`: no list kept by hand) has words in both languages,
    /// distinct, the Japanese ones Japanese; and one wire name, the same for `as_str` and serde.
    #[test]
    fn every_code_has_two_distinct_texts_and_one_wire_name() {
        use strum::IntoEnumIterator;
        let mut names = std::collections::BTreeSet::new();
        for c in Code::iter() {
            let x = code_text(c);
            assert!(
                !x.ja.is_empty() && !x.en.is_empty() && x.ja != x.en,
                "{c:?}"
            );
            assert!(!x.ja.is_ascii(), "{c:?} ja text must be Japanese");
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::Value::from(c.as_str()),
                "{c:?}"
            );
            assert!(names.insert(c.as_str()), "{c:?}: wire name used twice");
        }
        assert!(names.contains("timeout-too-fast"), "{names:?}");
    }
}
