//! Every student-facing string of the tool, in Japanese (default) and English (`--lang en`).
//!
//! Values inside messages (paths, UIDs, outcomes, JSON) are not translated: they are the words the
//! evidence and the inputs use.
//!
//! What lives here: errors ([`error_text`]), findings ([`code_text`], an exhaustive match whose
//! test walks `Code::iter()`), the words of input problems ([`said`], kept on each `InputIssue` in
//! both languages), `explain`'s words ([`explain`]), the acts' progress and summary lines ([`act`]:
//! one [`Line`] per line, built by the `line!` macro; `labs::Ui` prints it in the chosen language),
//! and the Japanese `--help` ([`localize_help`]: a table over the clap command built in
//! `lab/src/main.rs`, which reads `--lang` before clap parses; a unit test names any command or
//! argument without a Japanese text). No Japanese literal elsewhere in the tool's code but the
//! report page's `report/text.rs` and the registry's act titles (`xtask/tests/tidy.rs`).
//!
//! Terms, one spelling: the lab B **healer** (the detached freeze healer; the evidence's older
//! field names `watchdog_pid`, `watchdog_armed_at`, `resumed_by: watchdog` stay: they are the
//! evidence format, which the recorded fixtures pin), the lab A **watcher** (the scale-down recovery
//! watcher), the **start time** of a process (`/proc/<pid>/stat` field 22, clock ticks;
//! `pid_start_time_ticks` in evidence). Raw entry names (`lease-before` in lab A act 6,
//! `leader-lease-before` in lab B) are evidence too and stay as recorded.

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
            let mut s = format!(
                "入力ファイルが正しくありません（問題 {} 件、すべて表示）。何も書き込んでいません:",
                issues.len()
            );
            for i in issues {
                let (expected, found) =
                    i.ja.as_ref()
                        .map_or((&i.expected, &i.found), |(e, f)| (e, f));
                s.push_str(&format!(
                    "\n  {}: {}: 期待値 {}, 実際 {}",
                    i.file, i.json_path, expected, found
                ));
            }
            s
        }
        (Lang::En, LabError::InputInvalid { issues }) => {
            let mut s = format!(
                "invalid input ({} {}, all listed); nothing was written:",
                issues.len(),
                if issues.len() == 1 {
                    "problem"
                } else {
                    "problems"
                }
            );
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
        (Lang::Ja, LabError::ClusterUnreachable { kubeconfig, detail }) => {
            format!(
                "クラスタに接続できません (kubeconfig {}): {detail}",
                kubeconfig
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "既定の探索".to_owned())
            )
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
        ) => format!("act {act} は {signal} で中断されました: {healed}"),
        (Lang::Ja, LabError::UntrustedDir { path, why }) => format!(
            "{}: このディレクトリは使えません（{why}）。何も書き込んでいません",
            path.display()
        ),
        (Lang::Ja, LabError::NotAvailable { what }) => format!("まだ利用できません: {what}"),
        (Lang::Ja, LabError::Usage(d)) => format!("使い方が正しくありません: {d}"),
        (Lang::Ja, LabError::Io { path, source }) => format!("{}: {source}", path.display()),
        (Lang::En, other) => other.to_string(),
    }
}

/// What to do next when an input file is missing (printed after the error line): which act reads
/// it, where it goes (`workdir`), `kca-webhook-lab schema NAME` for its JSON Schema, and each
/// field bound to the cluster or the evidence with where its value comes from
/// ([`crate::inputs::InputFile::bound_fields`]). `also_tried`: another path that was looked at
/// (`check NAME` looks in the current directory, then in the work directory).
pub fn input_missing_hint(
    lang: Lang,
    file: crate::inputs::InputFile,
    workdir: &std::path::Path,
    also_tried: Option<&std::path::Path>,
) -> String {
    use crate::inputs::{InputFile, Source};
    let name = file.file_name();
    let stem = name.strip_suffix(".json").unwrap_or(name);
    let act = file.act();
    let en = lang == Lang::En;
    let mut out = Vec::new();
    if let Some(p) = also_tried {
        out.push(if en {
            format!("  also looked for {}: not there either", p.display())
        } else {
            format!("  {} も探しましたが、ありません", p.display())
        });
    }
    out.push(if en {
        format!(
            "  next: act {act} reads {name} from the work directory {}; write it there",
            workdir.display()
        )
    } else {
        format!(
            "  次にすること: act {act} は作業ディレクトリ {} の {name} を読みます。そこに作ってください",
            workdir.display()
        )
    });
    out.push(if en {
        format!("  its JSON Schema (fields, fixed values): kca-webhook-lab schema {stem}")
    } else {
        format!("  形式（JSON Schema: フィールドと固定値）: kca-webhook-lab schema {stem}")
    });
    let fields = file.bound_fields();
    if !fields.is_empty() {
        out.push(
            t(
                "  クラスタや証拠に結びついた値（ほかの値はスキーマで決まっています）:",
                "  values bound to the cluster or the evidence (the schema fixes the others):",
            )
            .get(lang)
            .to_owned(),
        );
    }
    for (path, source) in fields {
        let from = match (source, en) {
            (Source::NodeUid, false) => "ノードの UID（kca-webhook-lab inspect の vm.node_uid）".to_owned(),
            (Source::NodeUid, true) => "the node's UID (kca-webhook-lab inspect: vm.node_uid)".to_owned(),
            (Source::NamespaceUid(ns), false) => {
                format!("ネームスペース {ns} の UID（inspect の namespaces）")
            }
            (Source::NamespaceUid(ns), true) => {
                format!("the UID of namespace {ns} (inspect: namespaces)")
            }
            (Source::DeploymentUid, false) => "Deployment kyverno/kyverno-admission-controller の UID（inspect の controller.deployment_uid）".to_owned(),
            (Source::DeploymentUid, true) => "the UID of Deployment kyverno/kyverno-admission-controller (inspect: controller.deployment_uid)".to_owned(),
            (Source::PolicyUid, false) => {
                "evidence/02.json の facts.policy.metadata.uid".to_owned()
            }
            (Source::PolicyUid, true) => {
                "facts.policy.metadata.uid of evidence/02.json".to_owned()
            }
            (Source::Digest(n), false) => format!(
                "evidence/{n:02}.json の正規ダイジェスト（kca-webhook-lab digest {}、または inspect の evidence_sha256）",
                workdir.join(format!("evidence/{n:02}.json")).display()
            ),
            (Source::Digest(n), true) => format!(
                "the canonical digest of evidence/{n:02}.json (kca-webhook-lab digest {}, or inspect: evidence_sha256)",
                workdir.join(format!("evidence/{n:02}.json")).display()
            ),
        };
        out.push(format!("    {path}: {from}"));
    }
    if file == InputFile::PolicyIgnore {
        out.push(
            t(
                "  policy.json と同じ内容で、spec.failurePolicy だけを Ignore にします",
                "  the same as policy.json except spec.failurePolicy, which is Ignore",
            )
            .get(lang)
            .to_owned(),
        );
    }
    out.push(if en {
        format!("  then check it offline: kca-webhook-lab check {name}")
    } else {
        format!("  書いたらオフラインで確かめられます: kca-webhook-lab check {name}")
    });
    out.join("\n")
}

/// `report` on a work directory that does not exist (nothing is created).
pub fn workdir_missing(lang: Lang, path: &std::path::Path) -> String {
    match lang {
        Lang::Ja => format!(
            "作業ディレクトリ {} がありません。何も書き込んでいません（--workdir または KCA_WEBHOOK_DIR を確認してください）",
            path.display()
        ),
        Lang::En => format!(
            "the work directory {} does not exist; nothing was written (check --workdir or KCA_WEBHOOK_DIR)",
            path.display()
        ),
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

/// `grade N` with an act the lab does not have.
pub fn grade_usage(lang: Lang, count: u8, got: &str) -> String {
    match lang {
        Lang::Ja => format!("grade には 1 から {count} の数字か all を指定します (指定: {got:?})"),
        Lang::En => format!("grade takes 1 to {count} or all, got {got:?}"),
    }
}

/// `schema NAME` / `check FILE` with a name that is not one of the lab's inputs.
pub fn unknown_input(lang: Lang, name: &str, lab: &str, inputs: &str) -> String {
    match lang {
        Lang::Ja => {
            format!("{name:?} はラボ {lab} の入力ファイルではありません。入力ファイル: {inputs}")
        }
        Lang::En => format!("{name:?} is not an input of lab {lab}; inputs: {inputs}"),
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

/// What an input problem says was expected or found, in both languages; JSON values, JSON paths
/// and field names inside it are the file's own and not translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words {
    /// Japanese.
    pub ja: String,
    /// English (also the language-neutral text the graders' findings quote).
    pub en: String,
}

/// The words of input problems ([`crate::inputs`]: the shape check against the JSON Schema and the
/// bound-field checks).
pub mod said {
    use super::Words;
    use crate::inputs::Source;

    fn w(ja: String, en: String) -> Words {
        Words { ja, en }
    }

    /// A value as its JSON text (the same in both languages).
    pub fn json(text: impl Into<String>) -> Words {
        let t = text.into();
        w(t.clone(), t)
    }

    /// A member: `field "NAME"`.
    pub fn field(name: &str) -> Words {
        w(format!("フィールド {name:?}"), format!("field {name:?}"))
    }

    /// No member there: `nothing`.
    pub fn nothing() -> Words {
        w("なし".into(), "nothing".into())
    }

    /// A member the schema does not allow; `allowed` lists the allowed names as JSON strings.
    pub fn no_field(name: &str, allowed: &str) -> Words {
        w(
            format!("フィールド {name:?} がないこと (使えるフィールド: {allowed})"),
            format!("no field {name:?} (allowed: {allowed})"),
        )
    }

    /// An array's length: `N elements`.
    pub fn elements(n: u64) -> Words {
        w(
            format!("要素 {n} 個"),
            if n == 1 {
                "1 element".into()
            } else {
                format!("{n} elements")
            },
        )
    }

    /// The lengths an array may have (`minItems`, `maxItems`).
    pub fn length(min: Option<u64>, max: Option<u64>) -> Words {
        let en = |n| elements(n).en;
        match (min, max) {
            (Some(a), Some(b)) if a == b => w(
                format!("要素がちょうど {a} 個"),
                format!("exactly {}", en(a)),
            ),
            (Some(a), Some(b)) => w(format!("要素が {a}〜{b} 個"), format!("{a} to {}", en(b))),
            (Some(a), None) => w(format!("要素が {a} 個以上"), format!("at least {}", en(a))),
            (None, Some(b)) => w(format!("要素が {b} 個以下"), format!("at most {}", en(b))),
            (None, None) => w("別の個数の要素".into(), "another number of elements".into()),
        }
    }

    /// One of a few values, `values` as JSON texts joined by `, `.
    pub fn one_of(values: &str) -> Words {
        w(
            format!("次のいずれか: {values}"),
            format!("one of {values}"),
        )
    }

    /// A value of the JSON Schema type `ty` (`object`, `array`, `string`, …).
    pub fn json_type(ty: Option<&str>) -> Words {
        let (ja, en) = match ty {
            Some("object") => ("JSON オブジェクト", "a JSON object"),
            Some("array") => ("JSON 配列", "a JSON array"),
            Some("string") => ("文字列", "a string"),
            Some("integer") => ("整数", "an integer"),
            Some("number") => ("数値", "a number"),
            Some("boolean") => ("true または false", "true or false"),
            Some("null") => ("null", "null"),
            _ => ("正しい値", "a valid value"),
        };
        w(ja.into(), en.into())
    }

    /// A Kubernetes UID ([`crate::inputs::Uid`]).
    pub fn uid() -> Words {
        w(
            "UID (metadata.uid と同じ、8-4-4-4-12 桁の小文字 16 進数)".into(),
            crate::inputs::Uid::WHAT.into(),
        )
    }

    /// A canonical digest ([`crate::inputs::Sha256Hex`]).
    pub fn digest() -> Words {
        w(
            "正規ダイジェスト (小文字 16 進数 64 文字、kca-webhook-lab digest の出力)".into(),
            crate::inputs::Sha256Hex::WHAT.into(),
        )
    }

    /// A string matching a regular expression.
    pub fn matching(pattern: &str) -> Words {
        w(
            format!("パターン {pattern} に合う文字列"),
            format!("a string matching {pattern}"),
        )
    }

    /// The right value of a bound field (`expected`, the value itself) and where it comes from.
    pub fn bound(expected: &str, source: Source) -> Words {
        let (ja, en) = match source {
            Source::NodeUid => ("実際のノードの UID".to_owned(), "live node uid".to_owned()),
            Source::NamespaceUid(ns) => (
                format!("名前空間 {ns} の実際の UID"),
                format!("live uid of namespace {ns}"),
            ),
            Source::DeploymentUid => (
                "Deployment kyverno-admission-controller の実際の UID".to_owned(),
                "live uid of deployment kyverno-admission-controller".to_owned(),
            ),
            Source::PolicyUid => (
                "evidence/02.json の facts.policy.metadata.uid".to_owned(),
                "facts.policy.metadata.uid of evidence/02.json".to_owned(),
            ),
            Source::Digest(act) => (
                format!("evidence/{act:02}.json の正規ダイジェスト"),
                format!("canonical digest of evidence/{act:02}.json"),
            ),
        };
        w(
            format!("{expected:?} ({ja})"),
            format!("{expected:?} ({en})"),
        )
    }

    /// A namespace the live cluster must have.
    pub fn namespace_on_cluster(ns: &str) -> Words {
        w(
            format!("クラスター上の名前空間 {ns}"),
            format!("a namespace {ns} on the cluster"),
        )
    }

    /// Nothing on the cluster.
    pub fn none() -> Words {
        w("なし".into(), "none".into())
    }

    /// The value `policy.json` has there (JSON text): `policy-ignore.json` may differ only in
    /// `spec.failurePolicy`.
    pub fn as_in_policy(expected: &str) -> Words {
        w(
            format!("{expected} (policy.json と同じ。違ってよいのは spec.failurePolicy だけ)"),
            format!("{expected} (as in policy.json; only spec.failurePolicy may differ)"),
        )
    }
}

/// The Japanese `--help` of the student tool: `(command, argument id, text)`; command `""` is the
/// tool itself, argument `""` the command's own description. The English `--help` is the doc
/// comments of `lab/src/main.rs` (clap's derive); [`help_untranslated`] lists what this table
/// misses.
const HELP_JA: &[(&str, &str, &str)] = &[
    (
        "",
        "",
        "admission webhook が止まったとき (lab b: プロセスの凍結) や消えたとき (lab a: スケールダウン) に、ポリシーエンジンの webhook が何をするかを観察します",
    ),
    (
        "",
        "lab",
        "ラボ (a: スケールダウンで webhook の登録が消える、b: コントローラーのプロセスを凍結し、failurePolicy Fail と Ignore を比べる)。既定: 作業ディレクトリにある証拠のラボ、なければ b",
    ),
    ("", "workdir", "作業ディレクトリ (入力ファイルと evidence/)"),
    (
        "",
        "lang",
        "メッセージの言語 (ja: 日本語 (既定)、en: English)",
    ),
    (
        "",
        "kubeconfig",
        "ラボのクラスターの kubeconfig (既定: k3s のもの、なければ通常の探し方)",
    ),
    (
        "",
        "cri_endpoint",
        "ノードの CRI ソケット (既定: k3s の containerd ソケット)",
    ),
    (
        "",
        "audit_log",
        "API サーバーの監査ログ (JSON Lines)。act 3, 5, 6, 7 が自分のリクエストの監査イベントを記録するために読みます (embedded バックエンドだけにあります)。指定がなければ、監査は設定されていないと証拠に書きます",
    ),
    (
        "",
        "registration_bound",
        "act 2 (と lab B の act 6) が、Kyverno がポリシーの webhook を登録するのを待つ秒数。過ぎると診断情報を集めて act は失敗します。遅いマシンでは長く、Kyverno の admission controller が止まっているとわかっているときは短くします",
    ),
    ("", "help", "ヘルプを表示します"),
    ("", "version", "バージョンを表示します"),
    (
        "inspect",
        "",
        "入力ファイルに必要な実際の値 (ノード UID、名前空間 UID、Deployment UID) と各 act の状態を表示します",
    ),
    (
        "inspect",
        "metrics",
        "代わりに、ラボの webhook についての API サーバーの admission webhook カウンター (/metrics: 拒否、fail-open、リクエスト数、レイテンシーの件数と合計) を表示します",
    ),
    ("act", "", "act N をクラスターに対して実行します"),
    ("act", "n", "act の番号 (1 からラボの最後の act まで)"),
    (
        "grade",
        "",
        "act N または all を、入力ファイルと保存された証拠から採点します (クラスターには接続しません)",
    ),
    ("grade", "which", "act の番号、または all"),
    (
        "digest",
        "",
        "JSON ファイルの正規ダイジェスト (RFC 8785 の形の SHA-256) を表示します",
    ),
    ("digest", "path", "JSON ファイル"),
    (
        "schema",
        "",
        "入力ファイルの JSON Schema を表示します (例: policy.json)",
    ),
    (
        "schema",
        "name",
        "入力ファイルの名前 (.json はあってもなくてもかまいません)",
    ),
    (
        "check",
        "",
        "入力ファイルを 1 つ、オフラインで検証します (形、固定の値、保存された証拠からわかる値)。問題はすべてまとめて表示します",
    ),
    (
        "check",
        "file",
        "入力ファイル。名前でどの入力かが決まります。現在のディレクトリから読み、そこにない名前だけのもの (policy.json、policy) は作業ディレクトリから読みます",
    ),
    (
        "report",
        "",
        "1 ページのラボ記録 (自己完結の HTML: act、採点、障害のタイムライン、生の証拠) を作業ディレクトリから書き出します (クラスターには接続しません)",
    ),
    ("report", "out", "書き出す先 (既定: <workdir>/report.html)"),
    (
        "explain",
        "",
        "API の応答を説明します: 結果の分類、それを決めた規則、このラボでの意味 (採点と同じ分類器)。エラー文を引数か標準入力で渡すか、証拠ファイルとその中のリクエストの JSON パスを指定します",
    ),
    (
        "explain",
        "text",
        "API のエラー文 (kubectl の出力か Status の JSON)。なければ標準入力から読みます",
    ),
    ("explain", "evidence", "リクエストを含む証拠ファイル"),
    (
        "explain",
        "path",
        "証拠ファイルの中のリクエストの JSON パス (/facts/target_bad または facts.target_bad)",
    ),
    (
        "heal",
        "",
        "作業ディレクトリの終わっていない障害をすべて元に戻し (止まったままのプロセスを再開し、0 のままのレプリカを戻す)、何をしたかを表示します",
    ),
    (
        "audit",
        "",
        "クラスターのすべての admission webhook 登録 (Validating/MutatingWebhookConfiguration) を読み取り専用で調べ、障害時に何が起きるか (failurePolicy、timeoutSeconds、セレクター、いま準備のできたエンドポイント、kube-system・Node・Lease・CSR への介入、リクエストの最悪の待ち時間) とラボで学ぶ罠を表示します。終了コード: 0 所見なし、3 所見あり、1 エラー",
    ),
    (
        "audit",
        "output",
        "出力の形式 (table: 表 (既定)、json、yaml: JSON Schema は --schema で表示)",
    ),
    (
        "audit",
        "context",
        "使う kubeconfig のコンテキスト (既定: current-context)",
    ),
    (
        "audit",
        "schema",
        "クラスターを読まずに、-o json/yaml の JSON Schema を表示します",
    ),
    (
        "help",
        "",
        "このメッセージ、または指定したサブコマンドのヘルプを表示します",
    ),
    ("help", "subcommand", "ヘルプを表示するサブコマンド"),
];

/// The student tool's `--help` in `lang`: for [`Lang::En`] `cmd` as it is (its doc comments); for
/// [`Lang::Ja`] every description from `HELP_JA`, clap's headings and usage line in Japanese, and
/// the possible values written into the help of the arguments that have them. `cmd` is built
/// first (`Command::build`: global arguments propagated, the help flags and the `help` subcommand
/// added), so those are translated too. What clap adds in brackets (`[default: …]`, `[env: …]`)
/// stays as clap writes it.
pub fn localize_help(mut cmd: clap::Command, lang: Lang) -> clap::Command {
    if lang == Lang::En {
        return cmd;
    }
    cmd.build();
    localize_command(cmd, "")
}

fn localize_command(mut cmd: clap::Command, name: &str) -> clap::Command {
    // An argument's own text, else the tool's (global arguments and the help flag are copied into
    // every command by `build`).
    let text = |cmd: &str, arg: &str| {
        HELP_JA
            .iter()
            .find(|(c, a, _)| *c == cmd && *a == arg)
            .map(|(_, _, t)| *t)
    };
    if let Some(about) = text(name, "") {
        cmd = cmd.about(about).long_about(None);
    }
    // In place (`mut_args`, `mut_subcommands`): `mut_arg` would move the argument to the end of a
    // built command and break its short/long lookup.
    cmd.mut_args(|a| {
        let id = a.get_id().as_str().to_owned();
        let heading = if a.is_positional() {
            "引数"
        } else {
            "オプション"
        };
        let a = a.help_heading(heading);
        match text(name, &id).or_else(|| text("", &id)) {
            Some(t) => a.help(t).long_help(None).hide_possible_values(true),
            None => a,
        }
    })
    .mut_subcommands(|s| {
        let sub = s.get_name().to_owned();
        localize_command(s, &sub)
    })
    .subcommand_help_heading("コマンド")
    .help_template("{about-with-newline}\n使い方: {usage}\n\n{all-args}{after-help}")
}

/// The visible commands and arguments of `cmd` (built first, as [`localize_help`] does) that have
/// no Japanese help, as `command` or `command --arg`; empty when every one has.
pub fn help_untranslated(mut cmd: clap::Command) -> Vec<String> {
    fn walk(cmd: &clap::Command, name: &str, out: &mut Vec<String>) {
        let has = |cmd: &str, arg: &str| HELP_JA.iter().any(|(c, a, _)| *c == cmd && *a == arg);
        if !has(name, "") {
            out.push(name.to_owned());
        }
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let id = a.get_id().as_str();
            if !has(name, id) && !has("", id) {
                out.push(format!("{name} --{}", a.get_id()));
            }
        }
        for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(s, s.get_name(), out);
        }
    }
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word of an input problem has a Japanese text that is Japanese and an English one,
    /// each naming the same values; a JSON value is the same text in both.
    #[test]
    fn input_problem_words_are_in_both_languages() {
        use crate::inputs::Source;
        let words = [
            said::field("node_uid"),
            said::nothing(),
            said::no_field("comment", "\"action\""),
            said::elements(2),
            said::length(Some(1), Some(1)),
            said::length(Some(1), Some(3)),
            said::length(Some(1), None),
            said::length(None, Some(3)),
            said::one_of("\"a\", \"b\""),
            said::json_type(Some("object")),
            said::json_type(Some("array")),
            said::json_type(Some("integer")),
            said::json_type(None),
            said::uid(),
            said::digest(),
            said::matching("^x$"),
            said::bound("u", Source::NodeUid),
            said::bound("u", Source::NamespaceUid("kca-webhook-target")),
            said::bound("u", Source::DeploymentUid),
            said::bound("u", Source::PolicyUid),
            said::bound("d", Source::Digest(5)),
            said::namespace_on_cluster("kca-webhook-target"),
            said::none(),
            said::as_in_policy("3"),
        ];
        for w in &words {
            assert!(!w.ja.is_ascii() && w.en.is_ascii() && w.ja != w.en, "{w:?}");
            for value in [
                "node_uid",
                "comment",
                "\"a\"",
                "^x$",
                "kca-webhook-target",
                "05",
            ] {
                assert_eq!(w.ja.contains(value), w.en.contains(value), "{value}: {w:?}");
            }
        }
        assert_eq!(said::json("\"x\"").ja, said::json("\"x\"").en);
    }

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

// ---------------------------------------------------------------------------------------------
// The acts' words (`labs/`): the progress lines printed while an act runs and the summary lines it
// ends with (`lab::labs::ActSummary::lines`). Values (names, UIDs, times, outcomes, field
// names) are not translated: they are the words of the cluster and the evidence.

/// A line in both languages, already formatted; `lab::labs::Ui` prints the one of its
/// language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Japanese.
    pub ja: String,
    /// English.
    pub en: String,
}

impl Line {
    /// The line in `lang`.
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::Ja => &self.ja,
            Lang::En => &self.en,
        }
    }
}

impl From<String> for Line {
    /// A line already in the reader's language (e.g. one built from other lines).
    fn from(s: String) -> Line {
        Line {
            ja: s.clone(),
            en: s,
        }
    }
}

impl From<Text> for Line {
    fn from(t: Text) -> Line {
        Line {
            ja: t.ja.to_owned(),
            en: t.en.to_owned(),
        }
    }
}

/// `line!(name(arg: T, …) => "ja {arg}", "en {arg}")` defines `pub fn name(arg: T, …) -> Line`.
macro_rules! line {
    ($(#[$m:meta])* $name:ident($($arg:ident: $ty:ty),* $(,)?) => $ja:literal, $en:literal) => {
        $(#[$m])*
        pub fn $name($($arg: $ty),*) -> Line {
            Line { ja: format!($ja), en: format!($en) }
        }
    };
}

/// The act's words, one item per line it prints (see the section comment above).
pub mod act {
    use super::{Lang, Line, Text, t};

    /// Labels of the requests an act describes ([`request`]).
    pub mod req {
        use super::{Text, t};
        /// Act 3's labelled pod.
        pub const GOOD: Text = t("ラベルあり", "good");
        /// Act 3's unlabelled pod.
        pub const BAD: Text = t("ラベルなし", "bad");
        /// An unlabelled pod in the target namespace.
        pub const TARGET_BAD: Text = t("対象 ラベルなし", "target bad");
        /// An unlabelled pod in the control namespace.
        pub const CONTROL: Text = t("対照", "control");
        /// A labelled pod in the target namespace during the freeze.
        pub const TARGET_GOOD_FROZEN: Text = t("対象 ラベルあり (停止中)", "target good (frozen)");
        /// An unlabelled pod in the target namespace during the freeze.
        pub const TARGET_BAD_FROZEN: Text = t("対象 ラベルなし (停止中)", "target bad (frozen)");
        /// An unlabelled pod in the control namespace during the freeze.
        pub const CONTROL_FROZEN: Text = t("対照 (停止中)", "control (frozen)");
        /// A violating request after the resume.
        pub const AFTER_RESUME: Text = t("再開後", "after resume");
        /// A violating request while waiting for a deny.
        pub const VIOLATING: Text = t("違反リクエスト", "violating request");
        /// Lab B act 6's healthy violating request under Ignore.
        pub const HEALTHY_BAD_IGNORE: Text = t("健全時 違反 (Ignore)", "healthy bad (Ignore)");
        /// Lab A act 7's labelled server-side dry-run.
        pub const GOOD_DRY_RUN: Text = t("ラベルあり (dry-run)", "good (dry-run)");
        /// Lab A act 7's unlabelled server-side dry-run.
        pub const BAD_DRY_RUN: Text = t("ラベルなし (dry-run)", "bad (dry-run)");
    }

    /// One request's outcome: `label: outcome (HTTP status, elapsed ms; GET: uid … | not found)`.
    pub fn request(
        lang: Lang,
        label: Text,
        outcome: &str,
        http_status: u16,
        elapsed_ms: u64,
        stored_uid: Option<&str>,
    ) -> String {
        let get = match (stored_uid, lang) {
            (Some(uid), _) => format!("GET: uid {uid}"),
            (None, Lang::En) => "GET: not found".to_owned(),
            (None, Lang::Ja) => "GET: 存在しない".to_owned(),
        };
        format!(
            "{}: {outcome} (HTTP {http_status}, {elapsed_ms} ms; {get})",
            label.get(lang)
        )
    }

    line!(
        /// Every command heals first: one line per attempt healed.
        healing_earlier(line: &str) => "以前の障害の後始末: {line}", "healing earlier faults: {line}");
    line!(
        /// Waiting for a webhook registration.
        waiting_for_webhook(name: &str) => "webhook {name} の登録を待っています", "waiting for webhook {name} to be registered");

    // Act 1.
    /// Act 1: the scope was checked.
    pub const SCOPE_MATCHES: Text = t(
        "scope.json を実クラスタと照合しました",
        "scope.json matches the live cluster",
    );
    line!(
        /// Act 1 summary: the node.
        node(name: &str, uid: &str) => "ノード {name} uid {uid}", "node {name} uid {uid}");
    line!(
        /// Act 1 summary: one namespace.
        namespace(name: &str, uid: &str) => "namespace {name} uid {uid}", "namespace {name} uid {uid}");
    /// Act 1 summary: the cluster has no lab mark.
    pub const NO_LAB_MARK: Text = t(
        "このクラスタには実習環境の印がありません: act 5 と 6 は障害を注入しません",
        "no lab mark on this cluster: acts 5 and 6 will refuse to inject a fault",
    );

    // Act 2.
    /// Act 2: applying the policy.
    pub const APPLYING_POLICY: Text = t(
        "ValidatingPolicy を適用します",
        "applying the ValidatingPolicy",
    );
    line!(
        /// Act 2: the webhook was registered.
        webhook_registered(name: &str, failure_policy: &str, timeout: &str) =>
        "webhook {name} が登録されました (failurePolicy {failure_policy}, timeoutSeconds {timeout})",
        "webhook {name} registered (failurePolicy {failure_policy}, timeoutSeconds {timeout})");
    line!(
        /// Act 2: checking that the webhook answers.
        checking_answers(outcome: &str) => "webhook の応答を確認中: {outcome}", "checking the webhook answers: {outcome}");
    line!(
        /// Act 2 summary: the stored policy.
        policy_uid(uid: &str) => "ポリシー uid {uid}", "policy uid {uid}");
    line!(
        /// Act 2 summary: the webhook and its configuration.
        webhook_in(webhook: &str, configuration: &str) => "webhook {webhook} (設定 {configuration})", "webhook {webhook} in {configuration}");

    // Act 3.
    /// Act 3: creating the labelled pod.
    pub const CREATING_GOOD_TARGET: Text = t(
        "ラベル付き Pod を作成します (対象 namespace)",
        "creating a labelled pod (target namespace)",
    );
    /// Creating an unlabelled pod in the target namespace.
    pub const CREATING_BAD_TARGET: Text = t(
        "ラベルなし Pod を作成します (対象 namespace)",
        "creating an unlabelled pod (target namespace)",
    );
    /// Creating an unlabelled pod in the control namespace.
    pub const CREATING_BAD_CONTROL: Text = t(
        "ラベルなし Pod を作成します (対照 namespace)",
        "creating an unlabelled pod (control namespace)",
    );
    /// Act 3: waiting for the labelled pod.
    pub const WAITING_RUNNING: Text = t(
        "ラベル付き Pod が Running になるのを待っています",
        "waiting for the labelled pod to be Running",
    );
    line!(
        /// A pod's phase while waiting.
        phase(phase: &str) => "phase {phase}", "phase {phase}");
    line!(
        /// Summary: the pod later acts check.
        existing(name: &str, uid: &str, phase: &str) => "既存 Pod {name} uid {uid} phase {phase}", "existing {name} uid {uid} phase {phase}");

    // Lab B act 4.
    /// Lab B act 4: what is investigated.
    pub const INVESTIGATING_PROCESS: Text = t(
        "admission controller のプロセスを調べます (CRI, /proc)",
        "investigating the admission controller process (CRI, /proc)",
    );
    line!(
        /// Lab B act 4 summary: the pod.
        pod_uid(name: &str, uid: &str) => "Pod {name} uid {uid}", "pod {name} uid {uid}");
    line!(
        /// Lab B act 4 summary: the container.
        container(id: &str) => "コンテナ {id}", "container {id}");
    line!(
        /// Lab B act 4 summary: the process (`/proc/<pid>/stat` start time in clock ticks).
        process(pid: u32, start_time_ticks: u64, state: &str, restarts: u32) =>
        "pid {pid} 開始時刻 {start_time_ticks} (clock ticks) state {state} 再起動 {restarts}",
        "pid {pid} start time {start_time_ticks} (clock ticks) state {state} restarts {restarts}");

    // Lab B acts 5-6: the freeze.
    line!(
        /// Waiting before a freeze so that Kyverno's liveness probe passes once between two
        /// freezes (`rules::b::liveness_wait`).
        liveness_gap(previous_sec: u64, since_sec: u64, wait_sec: u64) =>
        "直前の停止 ({previous_sec} 秒) の再開から {since_sec} 秒しか経っていません。kubelet の liveness probe が 2 回続けて失敗すると Kyverno が再起動されるため、probe が 1 回通るまで {wait_sec} 秒待ってから停止します",
        "the previous freeze ({previous_sec} s) ended only {since_sec} s ago; two failed liveness probes in a row make kubelet restart Kyverno, so this waits {wait_sec} s for one probe to pass before freezing");
    line!(
        /// Waiting because kubelet recorded a liveness probe failure `since_sec` ago
        /// (`rules::b::liveness_failure_wait`).
        liveness_failure_gap(since_sec: u64, wait_sec: u64) =>
        "kubelet が {since_sec} 秒前に Kyverno の liveness probe の失敗を記録しています (Event Unhealthy)。次の probe が停止中に失敗すると 2 回続けての失敗で Kyverno が再起動されるため、次の probe が通るまで {wait_sec} 秒待ってから停止します",
        "kubelet recorded a failed liveness probe of Kyverno {since_sec} s ago (Event Unhealthy); if the next probe failed during the freeze, two failures in a row would make kubelet restart Kyverno, so this waits {wait_sec} s for that probe to pass before freezing");
    line!(
        /// Seconds left of that wait.
        liveness_gap_left(left: u64) => "停止まで残り {left} 秒", "{left} s until the freeze");
    line!(
        /// Starting the freeze healer.
        starting_healer(pid: i32, resume_after_sec: u64) =>
        "healer を起動し、pid {pid} を pidfd 経由で SIGSTOP させます ({resume_after_sec} 秒後に再開)",
        "starting the healer, which sends SIGSTOP to pid {pid} through a pidfd and resumes it after {resume_after_sec} s");
    line!(
        /// The process is stopped.
        frozen(at: &str) => "停止しました (state T, {at})", "frozen (state T, {at})");
    /// What happens during the freeze.
    pub const DURING_FREEZE: Text = t(
        "停止中: 登録の確認と、対象 (ラベルあり/なし) と対照の Pod 作成",
        "during the freeze: registration check, target (labelled/unlabelled) and control pod creates",
    );
    line!(
        /// Seconds until the healer resumes.
        until_resume(left: i64) => "healer の再開まで残り {left} 秒", "{left} s until the healer resumes the process");
    line!(
        /// The process was resumed.
        resumed(by: &str, at: &str, state: &str) => "再開しました: {by} が {at} に SIGCONT (state {state})", "resumed: SIGCONT by {by} at {at} (state {state})");
    /// After the resume.
    pub const AFTER_RESUME: Text = t(
        "再開後: 新しい違反リクエストが明示的に拒否されるまで待ちます",
        "after resume: new violating requests until the first explicit deny",
    );
    /// Who resumed the frozen process, as the summary says it (`lab`'s `ResumedBy`).
    pub mod resumer {
        use super::{Text, t};
        /// The detached freeze healer.
        pub const HEALER: Text = t("healer", "healer");
        /// The act's runner.
        pub const RUNNER: Text = t("ランナー", "runner");
        /// The runner on its way out (an error or a signal).
        pub const RUNNER_EXIT: Text = t("ランナー (終了時)", "runner (exit path)");
        /// A later command's heal.
        pub const LATER_COMMAND: Text = t("後のコマンド", "a later command");
    }
    line!(
        /// Freeze summary: the window.
        freeze_window(frozen_at: &str, resumed_at: &str, by: &str, state_after: &str) =>
        "停止 {frozen_at} → 再開 {resumed_at} ({by}、再開後の state {state_after})",
        "frozen {frozen_at} → resumed {resumed_at} by {by} (state after {state_after})");
    line!(
        /// Freeze summary: the registration during the freeze.
        registration_during_freeze(present: bool) => "停止中の webhook 登録: {present}", "registration present during the freeze: {present}");
    line!(
        /// Freeze summary: the first deny and the restarts.
        first_deny_after_resume(ms: &str, before: u32, after: u32) =>
        "再開から {ms} ms 後に最初の明示的拒否; 再起動回数 {before} → {after}",
        "first explicit deny {ms} ms after resume; restarts {before} → {after}");
    /// Lab B act 6: switching the policy.
    pub const UPDATING_TO_IGNORE: Text = t(
        "同じポリシー (同じ UID) を failurePolicy Ignore に更新します",
        "updating the same policy (same UID) to failurePolicy Ignore",
    );
    /// Lab B act 6: a healthy deny under Ignore.
    pub const HEALTHY_DENY_IGNORE: Text = t(
        "Ignore でも健全な webhook の拒否は拒否: 違反 Pod を送ります",
        "under Ignore a healthy webhook still denies: sending a violating pod",
    );
    line!(
        /// Lab B act 6 summary: the policy kept its UID.
        policy_unchanged(uid: &str) => "ポリシー uid {uid} (変わらず)", "policy uid {uid} (unchanged)");
    line!(
        /// Lab B act 6 summary: the webhook's failurePolicy.
        webhook_failure_policy(name: &str, failure_policy: &str) =>
        "webhook {name} failurePolicy {failure_policy}", "webhook {name} failurePolicy {failure_policy}");
    line!(
        /// Lab B act 7 summary: the pod of act 3 now.
        existing_vs_act3(name: &str, uid: &str, phase: &str, act3_uid: &str) =>
        "既存 Pod {name} uid {uid} phase {phase} (act 3 の uid {act3_uid})",
        "existing {name} uid {uid} phase {phase} (act 3 uid {act3_uid})");
    /// Lab B act 7: a new-named violating pod.
    pub const SENDING_NEW_VIOLATING: Text = t(
        "新しい名前の違反 Pod を送ります",
        "sending a new-named violating pod",
    );

    // Lab A act 4.
    /// Lab A act 4: what is investigated.
    pub const INVESTIGATING_DEPLOYMENT: Text = t(
        "admission controller の Deployment, Pod, リーダー Lease を調べます (何も変更しません)",
        "investigating the admission controller's deployment, pods and leader Lease (nothing is changed)",
    );
    line!(
        /// Lab A act 4 summary: the Deployment.
        deployment(namespace: &str, name: &str, uid: &str, replicas: u32, ready: u32) =>
        "Deployment {namespace}/{name} uid {uid} レプリカ {replicas} Ready {ready}",
        "deployment {namespace}/{name} uid {uid} replicas {replicas} ready {ready}");
    line!(
        /// Lab A act 4 summary: one pod.
        pod(name: &str, uid: &str, phase: &str) => "Pod {name} uid {uid} phase {phase}", "pod {name} uid {uid} phase {phase}");
    line!(
        /// Lab A act 4 summary: the leader Lease.
        lease(namespace: &str, name: &str, holder: &str, renew: &str, duration: &str) =>
        "Lease {namespace}/{name} 保持者 {holder} renewTime {renew} leaseDurationSeconds {duration}",
        "lease {namespace}/{name} holder {holder} renewTime {renew} leaseDurationSeconds {duration}");

    // Lab A act 5.
    /// Lab A act 5: arming the recovery watcher.
    pub const ARMING_WATCHER: Text = t(
        "復旧ウォッチャーを起動します (55 秒後に元のレプリカ数へ戻す独立プロセス)",
        "arming the recovery watcher (an independent process that restores the replicas after 55 s)",
    );
    line!(
        /// Lab A act 5: the watcher is ready.
        watcher_ready(pid: u32, armed_at: &str, deadline_at: &str) =>
        "  ウォッチャー pid {pid} 準備完了 {armed_at}, 復旧予定 {deadline_at}",
        "  watcher pid {pid} ready at {armed_at}, restores at {deadline_at}");
    line!(
        /// Lab A act 5: scaling to 0.
        scaling_to_zero(deployment: &str) => "{deployment} を 0 レプリカにスケールします", "scaling {deployment} to 0 replicas");
    line!(
        /// Lab A act 5: waiting for the pods to be gone.
        waiting_pods_gone(state: &str) => "Pod の終了を待っています: {state}", "waiting for the pods to be gone: {state}");
    line!(
        /// Lab A act 5: no pod left.
        pods_gone(at: &str) => "  Pod はすべて消えました ({at})", "  no controller pod left ({at})");
    /// Lab A act 5: the policy object now.
    pub fn policy_now(lang: Lang, exists: bool, uid: &str, same_as_act2: bool) -> String {
        match lang {
            Lang::Ja => format!(
                "  ポリシー: {} (uid {uid}、幕 2 と{})",
                if exists {
                    "存在する"
                } else {
                    "存在しない"
                },
                if same_as_act2 { "同じ" } else { "異なる" }
            ),
            Lang::En => format!(
                "  policy: {} (uid {uid}, {} act 2's)",
                if exists { "exists" } else { "absent" },
                if same_as_act2 {
                    "same as"
                } else {
                    "differs from"
                }
            ),
        }
    }
    /// Lab A act 5: the policy's webhook registration now.
    pub fn registration_now(lang: Lang, present: bool, webhooks: &str) -> String {
        match lang {
            Lang::Ja => format!(
                "  ポリシーの webhook 登録: {} (webhook 一覧: {webhooks})",
                if present {
                    "残っている"
                } else {
                    "消えた"
                }
            ),
            Lang::En => format!(
                "  the policy's webhook registration: {} (webhooks: {webhooks})",
                if present { "kept" } else { "absent" }
            ),
        }
    }
    line!(
        /// Lab A act 5 summary: the scale-down.
        scaled(scaled_at: &str, pods_gone_at: &str) =>
        "{scaled_at} に 0 へスケール、{pods_gone_at} に Pod が消えた",
        "scaled to 0 at {scaled_at}, pods gone at {pods_gone_at}");
    line!(
        /// Lab A act 5 summary: the policy.
        policy_exists(exists: bool, uid: &str) => "ポリシーの存在 {exists} uid {uid}", "policy exists {exists} uid {uid}");
    line!(
        /// Lab A act 5 summary: the registration (the report's word in parentheses).
        policy_webhook_registered(present: bool, word: &str) =>
        "ポリシーの webhook 登録: {present} ({word})",
        "policy webhook registered: {present} ({word})");
    line!(
        /// Lab A act 5 summary: the fault stays on for act 6.
        stays_at_zero(deadline_at: &str) =>
        "Deployment は 0 レプリカのままです: 幕 6 が復旧させて経過を記録します。実行しなければウォッチャーが {deadline_at} に戻します",
        "the deployment stays at 0 replicas: act 6 restores it and records the recovery; otherwise the watcher restores it at {deadline_at}");

    // Lab A act 6.
    /// Lab A act 6: step 1.
    pub const RESTORING_REPLICAS: Text = t(
        "元のレプリカ数に戻します",
        "restoring the original replicas",
    );
    /// Who restored the replicas (lab A), as the summary says it.
    pub fn restorer(lang: Lang, by: Option<crate::facts::a::Restorer>) -> &'static str {
        use crate::facts::a::Restorer;
        match (by, lang) {
            (Some(Restorer::Runner), Lang::Ja) => "ランナー",
            (Some(Restorer::Watcher), Lang::Ja) => "ウォッチャー",
            (None, Lang::Ja) => "不明",
            (Some(Restorer::Runner), Lang::En) => "runner",
            (Some(Restorer::Watcher), Lang::En) => "watcher",
            (None, Lang::En) => "unknown",
        }
    }
    line!(
        /// Lab A act 6: the replicas are back.
        replicas_restored(at: &str, by_ja: &str, by_en: &str) => "  レプリカ復旧 {at} ({by_ja})", "  replicas restored at {at} (by {by_en})");
    /// Lab A act 6: steps 2-6.
    pub const OBSERVING_RECOVERY: Text = t(
        "復旧の経過を観測します (新しい Pod, Running, Lease, webhook 登録, 最初の明示的拒否)",
        "observing the recovery (new pod, Running, Lease, webhook registration, first explicit deny)",
    );
    line!(
        /// Lab A act 6: the steps so far (✓ done, … not yet).
        recovery_progress(created: &str, running: &str, lease: &str, registered: &str, denied: &str) =>
        "Pod作成{created} Running{running} Lease{lease} 登録{registered} 拒否{denied}",
        "pod created{created} running{running} lease{lease} registered{registered} deny{denied}");
    /// Lab A act 6: the names of the timeline's steps in the summary.
    pub mod step {
        use super::{Text, t};
        /// Step 1.
        pub const REPLICAS_RESTORED: Text = t("レプリカ復旧", "replicas restored");
        /// Step 2.
        pub const POD_CREATED: Text = t("新しい Pod 作成", "new pod created");
        /// Step 3.
        pub const POD_RUNNING: Text = t("Pod Running", "pod running");
        /// Step 4.
        pub const LEASE_ACQUIRED: Text = t("Lease 取得", "lease acquired");
        /// Step 5.
        pub const WEBHOOK_REGISTERED: Text = t("webhook 再登録", "webhook registered");
        /// Step 6.
        pub const FIRST_DENY: Text = t("最初の明示的拒否", "first explicit deny");
    }
    /// A confirmed timeline step: its time, and the last check before it when there was one.
    pub fn step_confirmed(lang: Lang, label: Text, at: &str, before: Option<&str>) -> String {
        let label = label.get(lang);
        match (before, lang) {
            (Some(b), Lang::Ja) => format!("{label}: {at} (直前の確認: {b})"),
            (Some(b), Lang::En) => format!("{label}: {at} (last check before: {b})"),
            (None, _) => format!("{label}: {at}"),
        }
    }
    /// A timeline step not reached within its bound.
    pub fn step_not_confirmed(lang: Lang, label: Text, waited_ms: u64, last_seen: &str) -> String {
        let label = label.get(lang);
        match lang {
            Lang::Ja => {
                format!("{label}: not-confirmed ({waited_ms} ms 待機、最後の状態: {last_seen})")
            }
            Lang::En => {
                format!("{label}: not-confirmed after {waited_ms} ms (last seen: {last_seen})")
            }
        }
    }
    line!(
        /// Lab A act 6 summary: who restored.
        by(step: &str, who_ja: &str, who_en: &str) => "{step} ({who_ja})", "{step} (by {who_en})");
    line!(
        /// Lab A act 6 summary: the Lease's holder and acquireTime.
        lease_holder(step: &str, holder: &str, acquire_time: &str) =>
        "{step} (保持者 {holder}、Lease の acquireTime {acquire_time})",
        "{step} (holder {holder}, the Lease's acquireTime {acquire_time})");
    line!(
        /// Lab A act 6 summary: the dry-run probes.
        probes(step: &str, count: usize) => "{step} (dry-run プローブ {count} 回)", "{step} ({count} dry-run probes)");
    line!(
        /// Lab A act 6 summary: the leader takeover.
        takeover(after_running: &str, after_restore: &str) =>
        "リーダー交代: Running から {after_running} ms、復旧から {after_restore} ms",
        "leader takeover {after_running} ms after Running, {after_restore} ms after the restore");
    line!(
        /// Lab A act 6 summary: the pod admitted during the scale-down.
        admitted_pod(name: &str, exists: bool, uid: &str) =>
        "スケールダウン中に受け入れられた Pod {name}: 存在 {exists} uid {uid}",
        "pod admitted during the scale-down {name}: exists {exists} uid {uid}");
    line!(
        /// Lab A act 6 summary: steps already reached at the first check.
        already_reached(steps: &str) =>
        "幕 6 の最初の確認で既に成立していた段階 (時刻はその確認時刻で、事象の時刻ではありません): {steps}",
        "already reached at act 6's first check (their time is that check's, not the event's): {steps}");

    // Lab A act 7.
    /// Lab A act 7: the labelled dry-run.
    pub const DRY_RUN_GOOD: Text = t(
        "サーバー側 dry-run でラベル付き Pod を送ります (dryRun=All)",
        "sending a labelled pod as a server-side dry-run (dryRun=All)",
    );
    /// Lab A act 7: the unlabelled dry-run.
    pub const DRY_RUN_BAD: Text = t(
        "サーバー側 dry-run でラベルなし Pod を送ります (dryRun=All)",
        "sending an unlabelled pod as a server-side dry-run (dryRun=All)",
    );

    line!(
        /// Lab A act 7 summary: what the dry-run answer echoed.
        good_response(kind: &str, name: &str, namespace: &str, labels: &str) =>
        "ラベルあり の応答: kind {kind} name {name} namespace {namespace} labels {labels}",
        "good response: kind {kind} name {name} namespace {namespace} labels {labels}");
    line!(
        /// Lab A act 7 summary: the webhook's sideEffects.
        side_effects(webhook: &str, side_effects: &str) =>
        "webhook {webhook} sideEffects {side_effects}", "webhook {webhook} sideEffects {side_effects}");

    // Act 8.
    line!(
        /// Act 8 summary: one report field against the evidence (`✓` agrees, `✗` not).
        report_check(mark: &str, field: &str, report: &str, evidence: &str) =>
        "{mark} {field}: 報告 {report} / 証拠 {evidence}",
        "{mark} {field}: report {report} / evidence {evidence}");
    line!(
        /// Lab A act 8 summary: how many fields disagree.
        report_disagrees(count: usize) =>
        "report.json のうち証拠と食い違う項目: {count}",
        "{count} field(s) of report.json disagree with the evidence");

    // The admission webhook metrics of acts 3, 5, 6, 7 ([`crate::metrics::summary_line`]).
    line!(
        /// The act's counter deltas (`metric{labels} +N; …`, metric names and labels verbatim).
        metrics_changed(deltas: &str) =>
        "admission webhook メトリクス: {deltas}", "admission webhook metrics: {deltas}");
    /// No counter of the act's webhooks moved.
    pub const METRICS_NO_CHANGE: Text = t(
        "admission webhook メトリクス: 変化なし",
        "admission webhook metrics: no change",
    );
    line!(
        /// The audit events of the act's requests (`name code [annotations]; …`, verbatim).
        audit_observed(requests: &str) => "監査ログ: {requests}", "audit: {requests}");
    line!(
        /// The audit log was not read for the act (`not-configured` or `read-error`, verbatim).
        audit_not_observed(status: &str, reason: &str) =>
        "監査ログは観測できませんでした ({status}): {reason}",
        "audit not observed ({status}): {reason}");
    line!(
        /// `/metrics` could not be read for the act.
        metrics_not_observed(reason: &str) =>
        "admission webhook メトリクスは観測できませんでした: {reason}",
        "admission webhook metrics not observed: {reason}");
}

/// The words of `explain` ([`crate::explain`]).
pub mod explain {
    use super::{Text, t};
    use crate::evidence::{Lab, Outcome};

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
        match (o, lab) {
            (Outcome::Stored, _) => t(
                "リクエストは受け入れられ、GETでUID付きのオブジェクトが確認されました (stored)。違反するPodなら、webhookが判定していないことを意味します (ラボA: 登録が消えた、ラボB: failurePolicy Ignore で呼び出しが失敗した)。",
                "The request was admitted and the GET found the object with a UID (stored). For a violating pod this means no webhook decided (lab A: the registration was gone; lab B: the call failed under failurePolicy Ignore).",
            ),
            (Outcome::ExplicitDeny, _) => t(
                "ポリシーのwebhookが応答して拒否しました。webhookが登録され、動いている証拠です。",
                "The policy's webhook answered and denied: evidence that it is registered and working.",
            ),
            (Outcome::WebhookTimeout, Lab::B) => t(
                "webhookの呼び出しが timeoutSeconds で打ち切られました。ラボBでは凍結したプロセスが応答しないためで、failurePolicy Fail なので拒否されました (ポリシーの判定ではありません)。",
                "The webhook call was cut off at timeoutSeconds. In lab B the frozen process cannot answer; under failurePolicy Fail the request is rejected (not a policy decision).",
            ),
            (Outcome::WebhookTimeout, Lab::A) => t(
                "webhookの呼び出しが timeoutSeconds で打ち切られました。ラボAでは登録が残っているのにコントローラーが応答しない状態を示し、想定の経過 (登録が消える) とは違います。",
                "The webhook call was cut off at timeoutSeconds. In lab A this means the registration was still there while the controller did not answer, which is not the expected path (the registration disappears).",
            ),
            (Outcome::ConnectionRefused | Outcome::NoEndpoints | Outcome::DnsError, _) => t(
                "webhookを呼べませんでした (接続拒否・エンドポイントなし・DNS)。登録は残っているのにサービスの先にPodがいない状態です。failurePolicy Fail なら拒否されます。",
                "The webhook could not be called (refused, no endpoints, DNS): the registration is there but nothing serves behind the service. Under failurePolicy Fail the request is rejected.",
            ),
            (Outcome::AlreadyExists, _) => t(
                "同じ名前のオブジェクトがすでにあります。ポリシーの判定ではありません。毎回新しい名前を使ってください。",
                "An object with that name already exists. This is never a policy decision; use a fresh name every time.",
            ),
            (Outcome::DryRunAdmitted, _) => t(
                "サーバー側 dry-run がアドミッションを通過し、保存はされていません (GETで見つからない)。",
                "The server-side dry-run passed admission and nothing was stored (the GET finds nothing).",
            ),
            (Outcome::OtherError, _) => t(
                "ラボの判定に数えない応答です (他のwebhookの拒否、目印のない拒否、GETで確認できない成功、その他のエラー)。生の応答をそのまま記録してください。",
                "An answer the lab does not count (another webhook's deny, a deny without the policy's marker, a success the GET does not confirm, any other error). Keep the raw answer verbatim.",
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `audit`'s words (`lab/src/audit_cmd.rs`): the table's column names, each finding's meaning and
// the closing line. Values (names, policies, selectors, requests) stay as the API writes them.

/// `audit`'s words.
pub mod webhook_audit {
    use super::{Line, Text, t};
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
}
