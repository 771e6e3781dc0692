//! Every student-facing string of the tool, in Japanese (default) and English (`--lang en`).
//!
//! Values inside messages (paths, UIDs, outcomes, JSON) are not translated: they are the words the
//! evidence and the inputs use.

use crate::error::LabError;
use crate::evidence::ActStatus;
use crate::grade::{Code, Finding, Findings};

/// Language of student-facing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Lang {
    /// 日本語 (default).
    #[default]
    Ja,
    /// English.
    En,
}

/// A text in both languages.
#[derive(Debug, Clone, Copy)]
pub struct Text {
    /// Japanese.
    pub ja: &'static str,
    /// English.
    pub en: &'static str,
}

impl Text {
    /// The text in `lang`.
    pub fn get(self, lang: Lang) -> &'static str {
        match lang {
            Lang::Ja => self.ja,
            Lang::En => self.en,
        }
    }
}

const fn t(ja: &'static str, en: &'static str) -> Text {
    Text { ja, en }
}

/// What a finding code means, in both languages.
pub fn code_text(code: Code) -> Text {
    match code {
        Code::EvidenceMissing => t("証拠ファイルがありません", "evidence file missing"),
        Code::EvidenceInvalid => t("証拠ファイルとして読めません", "not a valid evidence file"),
        Code::EvidenceInterrupted => t(
            "このactは中断されました。結果は不確かです。生データをダウンロードし、新しいラボで再現してください",
            "this act was interrupted and its results are uncertain; download its raw data and reproduce in a fresh lab",
        ),
        Code::FactsInvalid => t(
            "facts が空か、このactの形ではありません",
            "facts is empty or not this act's shape",
        ),
        Code::InputMissing => t("入力ファイルがありません", "input file missing"),
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
            "登録の objectSelector または matchConditions により、対象の Pod が webhook を通らない場合があります",
            "the registration's objectSelector or matchConditions let matching pods skip the webhook",
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
        Code::AuditNotObserved => t(
            "API サーバーの監査ログ (audit) は観測されていません（この照合は未確認です）",
            "audit not observed: the API server's audit events were not read (these cross-checks were not made)",
        ),
    }
}

/// One finding as a line: `[code] subject: meaning (detail)`.
pub fn finding(lang: Lang, f: &Finding) -> String {
    format!(
        "[{}] {}: {} ({})",
        f.code.as_str(),
        f.subject,
        code_text(f.code).get(lang),
        f.detail
    )
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

fn status_word(lang: Lang, s: ActStatus) -> &'static str {
    match (lang, s) {
        (Lang::Ja, ActStatus::Completed) => "完了",
        (Lang::Ja, ActStatus::Interrupted) => "中断",
        (Lang::En, ActStatus::Completed) => "completed",
        (Lang::En, ActStatus::Interrupted) => "interrupted",
    }
}

/// A [`LabError`] as the student sees it.
pub fn error_text(lang: Lang, e: &LabError) -> String {
    match (lang, e) {
        (Lang::Ja, LabError::InputInvalid { issues }) => {
            let mut s = String::from("入力ファイルが正しくありません。何も書き込んでいません:");
            for i in issues {
                s.push_str(&format!(
                    "\n  {}: {}: 期待値 {}, 実際 {}",
                    i.file, i.json_path, i.expected, i.found
                ));
            }
            s
        }
        (Lang::En, LabError::InputInvalid { issues }) => {
            let mut s = String::from("invalid input; nothing was written:");
            for i in issues {
                s.push_str(&format!(
                    "\n  {}: {}: expected {}, found {}",
                    i.file, i.json_path, i.expected, i.found
                ));
            }
            s
        }
        (Lang::Ja, LabError::InputMissing { path }) => {
            format!("入力ファイルがありません: {}", path.display())
        }
        (
            Lang::Ja,
            LabError::EvidenceExists {
                path,
                status: ActStatus::Completed,
            },
        ) => format!(
            "{} は{}済みです。完了したactの証拠とリソースは保存され、actは再実行されません",
            path.display(),
            status_word(lang, ActStatus::Completed)
        ),
        (
            Lang::Ja,
            LabError::EvidenceExists {
                path,
                status: ActStatus::Interrupted,
            },
        ) => format!(
            "{} は中断されたactの証拠です。結果は不確かなので再実行しません。生データをダウンロードし、新しいラボで再現してください",
            path.display()
        ),
        (
            Lang::En,
            LabError::EvidenceExists {
                path,
                status: ActStatus::Interrupted,
            },
        ) => format!(
            "{} holds an interrupted act's evidence; its results are uncertain, so the act does not run again: download the raw data and reproduce in a fresh lab",
            path.display()
        ),
        (Lang::Ja, LabError::EvidenceMissing { path }) => {
            format!(
                "証拠ファイルがありません（先にactを実行してください）: {}",
                path.display()
            )
        }
        (Lang::Ja, LabError::EvidenceInvalid { path, detail }) => {
            format!("証拠ファイルとして読めません: {}: {detail}", path.display())
        }
        (Lang::Ja, LabError::ClusterUnreachable { detail, .. }) => {
            format!("クラスタに接続できません: {detail}")
        }
        (Lang::Ja, LabError::Kube(d)) => format!("Kubernetes APIのエラー: {d}"),
        (Lang::Ja, LabError::Cri { endpoint, detail }) => {
            format!("CRI ({}) のエラー: {detail}", endpoint.display())
        }
        (
            Lang::Ja,
            LabError::ClusterMismatch {
                what,
                expected,
                found,
            },
        ) => {
            format!("{what} がクラスタと一致しません: 期待値 {expected}, 実際 {found}")
        }
        (Lang::Ja, LabError::FaultRefused { reason }) => {
            format!("安全のため障害を注入しませんでした: {reason}")
        }
        (
            Lang::Ja,
            LabError::WaitTimedOut {
                what,
                waited_ms,
                last_state,
            },
        ) => {
            format!(
                "{what} を {waited_ms} ms 待ちましたが確認できませんでした。最後の状態: {last_state}"
            )
        }
        (Lang::Ja, LabError::Busy { what, holder }) => {
            format!("{what} は使用中です ({holder})。その処理が終わってから実行してください")
        }
        (
            Lang::Ja,
            LabError::Interrupted {
                signal,
                act,
                healed,
            },
        ) => format!(
            "act {act} は {signal} で中断されました。障害は元に戻しました ({healed})。ここまでの記録は interrupted として残しています"
        ),
        (Lang::Ja, LabError::NotAvailable { what }) => format!("まだ利用できません: {what}"),
        (Lang::Ja, LabError::Usage(d)) => format!("使い方が正しくありません: {d}"),
        (Lang::Ja, LabError::Io { path, source }) => format!("{}: {source}", path.display()),
        (Lang::En, other) => other.to_string(),
    }
}

/// `digest PATH` prints the digest followed by this note on stderr.
pub fn digest_note(lang: Lang) -> &'static str {
    t(
        "（RFC 8785 正規形のSHA-256です。ファイルのバイト列の sha256sum とは異なります）",
        "(SHA-256 of the RFC 8785 canonical form; differs from sha256sum of the file's bytes)",
    )
    .get(lang)
}

/// `check FILE` success line.
pub fn check_ok(lang: Lang, file: &str, offline: bool) -> String {
    match (lang, offline) {
        (Lang::Ja, true) => format!(
            "{file}: 形式と固定値は正しいです（クラスタや証拠に依存する値は act の実行時に確認します）"
        ),
        (Lang::Ja, false) => format!("{file}: 正しいです"),
        (Lang::En, true) => format!(
            "{file}: shape and fixed values are valid (values that depend on the cluster or the evidence are checked when the act runs)"
        ),
        (Lang::En, false) => format!("{file}: valid"),
    }
}

/// `inspect --metrics`: the header line, or the line when no series of the lab's webhooks exists.
pub fn metrics_header(lang: Lang, count: usize) -> String {
    match (lang, count) {
        (Lang::Ja, 0) => "ラボの webhook の admission webhook メトリクスはまだありません（まだ一度も呼ばれていません）".into(),
        (Lang::En, 0) => "no admission webhook series for the lab's webhooks yet (never called so far)".into(),
        (Lang::Ja, n) => format!("API サーバーの admission webhook カウンタ（ラボの webhook、{n} 系列、API サーバー起動からの累積）:"),
        (Lang::En, n) => format!("the API server's admission webhook counters (the lab's webhooks, {n} series, cumulative since the API server started):"),
    }
}

/// `inspect --metrics` when `/metrics` could not be read.
pub fn metrics_unavailable(lang: Lang, reason: &str) -> String {
    match lang {
        Lang::Ja => format!("API サーバーの /metrics を読めませんでした: {reason}"),
        Lang::En => format!("could not read the API server's /metrics: {reason}"),
    }
}

/// Label before the error text on stderr.
pub fn error_prefix(lang: Lang) -> &'static str {
    t("エラー", "error").get(lang)
}

/// Printed when an act failed on the cluster, before the three lines of its diagnostics
/// (`lab::diagnostics::telling_lines`; they stay in the words of the cluster).
pub fn diagnostics_header(lang: Lang) -> &'static str {
    t(
        "クラスター上で失敗しました。手がかりになりそうな行:",
        "the act failed on the cluster; the most telling lines:",
    )
    .get(lang)
}

/// Where the diagnostics of a failed act were written.
pub fn diagnostics_written(lang: Lang, dir: &std::path::Path) -> String {
    match lang {
        Lang::Ja => format!(
            "診断情報 (イベント、Kyverno のログと再起動回数、Webhook 設定、ノードの状態) を保存しました: {}",
            dir.display()
        ),
        Lang::En => format!(
            "diagnostics (events, Kyverno's logs and restart counts, webhook configurations, node conditions) saved in {}",
            dir.display()
        ),
    }
}

/// Some diagnostics could not be collected (the act's own error is printed as well).
pub fn diagnostics_incomplete(lang: Lang, count: usize) -> String {
    match lang {
        Lang::Ja => {
            format!("診断情報の一部 ({count} 件) は集められませんでした (summary.txt を参照)")
        }
        Lang::En => format!("{count} diagnostics steps failed (see summary.txt)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_two_distinct_texts() {
        use Code::*;
        for c in [
            EvidenceMissing,
            EvidenceInvalid,
            EvidenceInterrupted,
            FactsInvalid,
            InputMissing,
            InputInvalid,
            InputChanged,
            OutcomeUnexpected,
            OutcomeContradictsAnswer,
            StoredWithoutUid,
            DenyWithoutMarker,
            AlreadyExistsCountedAsDeny,
            RejectedButStored,
            TimeoutTooFast,
            TimeoutTooSlow,
            CallFailureOtherWebhook,
            CallTimeoutMismatch,
            DenyOtherWebhook,
            DenyIsEvaluationError,
            RegistrationScope,
            RegistrationChanged,
            ObservationMissing,
            TimesInconsistent,
            RawMismatch,
            PodReplaced,
            PodNotRunning,
            NameReused,
            DigestMismatch,
            UidMismatch,
            ValueMismatch,
            OutsideWindow,
            RegistrationMissing,
            RegistrationClaimContradicted,
            IdentityChanged,
            RestartContradicted,
            ProcessStillStopped,
            TimelineOrder,
            NotConfirmed,
            ReportContradicted,
            MetricsContradicted,
            MetricsNotObserved,
            AuditContradicted,
            AuditNotObserved,
        ] {
            let x = code_text(c);
            assert!(
                !x.ja.is_empty() && !x.en.is_empty() && x.ja != x.en,
                "{c:?}"
            );
            assert!(!x.ja.is_ascii(), "{c:?} ja text must be Japanese");
        }
    }

    #[test]
    fn input_error_lists_file_path_expected_found_in_both_languages() {
        let e = LabError::input(
            "scope.json",
            "$.node_uid",
            "a UID",
            "\"kca-webhook-target\"",
        );
        let ja = error_text(Lang::Ja, &e);
        let en = error_text(Lang::En, &e);
        assert!(
            ja.contains("scope.json: $.node_uid: 期待値 a UID, 実際 \"kca-webhook-target\""),
            "{ja}"
        );
        assert!(
            en.contains("scope.json: $.node_uid: expected a UID, found \"kca-webhook-target\""),
            "{en}"
        );
    }
}
