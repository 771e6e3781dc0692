//! The student tool's own lines around its commands (`lab/src/main.rs`): what to do when an input
//! is missing, `check`, `digest`, `grade`, `inspect --metrics`, the error prefix and a failed act's
//! diagnostics.

use crate::text::{Lang, t};

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

/// `check report.json`, a word the report must hold: the one the evidence supports by act 8's
/// rule (`grade::check_report`).
pub fn check_report_expected(lang: Lang, expected: &str) -> String {
    match lang {
        Lang::Ja => format!("{expected:?}（証拠が示す値。act 8 と同じ規則で判定）"),
        Lang::En => format!("{expected:?} (what the evidence shows, by act 8's rule)"),
    }
}

/// `check report.json`, what a report lacks in place of a word the evidence supports.
pub fn check_report_nothing(lang: Lang) -> &'static str {
    match lang {
        Lang::Ja => "なし",
        Lang::En => "nothing",
    }
}

/// `check report.json` when every part held: which parts were checked (shape and fixed values,
/// the evidence digests, `words` words against the evidence by act 8's rule; 0: the evidence
/// could not be read as the acts' facts, so the words were not checked).
pub fn check_report_ok(lang: Lang, file: &str, words: usize) -> String {
    match (lang, words) {
        (Lang::Ja, 0) => format!(
            "{file}: 形式・固定値・証拠のダイジェストは正しいです（証拠を act の記録として読めないため、記述と証拠の照合はしていません。act 8 の実行時に確認します）"
        ),
        (Lang::Ja, n) => format!(
            "{file}: 正しいです（確認した項目: 形式と固定値、証拠のダイジェスト、証拠との照合 {n} 項目（act 8 と同じ規則））"
        ),
        (Lang::En, 0) => format!(
            "{file}: shape, fixed values and evidence digests are valid (the words were not held against the evidence: it does not read as the acts' facts; act 8 checks them)"
        ),
        (Lang::En, n) => format!(
            "{file}: valid (checked: shape and fixed values, the evidence digests, {n} words against the evidence by act 8's rule)"
        ),
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

/// One attempt `heal` settled: its directory name, the action (`resumed`, `restored`,
/// `already-running`, …, verbatim from `heal.json`) and its note.
pub struct Healed<'a> {
    /// The attempt's directory name under `faults/`.
    pub attempt: &'a str,
    /// What was done, verbatim.
    pub action: &'a str,
    /// Details, verbatim.
    pub note: Option<&'a str>,
}

/// `heal`'s output, one line per attempt settled, attempt left alone and error (values verbatim;
/// the full record of each attempt is its `heal.json`); one line when there was nothing to heal.
pub fn heal_lines(
    lang: Lang,
    healed: &[Healed],
    live: &[String],
    errors: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for h in healed {
        let note = h.note.map(|n| format!(" ({n})")).unwrap_or_default();
        out.push(match lang {
            Lang::Ja => format!(
                "試行 {}: {}{note} (詳細は faults/{}/heal.json)",
                h.attempt, h.action, h.attempt
            ),
            Lang::En => format!(
                "attempt {}: {}{note} (details in faults/{}/heal.json)",
                h.attempt, h.action, h.attempt
            ),
        });
    }
    for l in live {
        out.push(match lang {
            Lang::Ja => {
                format!("そのままにしました（実行中のランナーまたは healer が持つ障害）: {l}")
            }
            Lang::En => format!("left alone (a live runner or healer owns it): {l}"),
        });
    }
    for e in errors {
        out.push(match lang {
            Lang::Ja => format!("エラー: {e}"),
            Lang::En => format!("error: {e}"),
        });
    }
    if out.is_empty() {
        out.push(
            t(
                "後始末する障害はありません（作業ディレクトリに未完了の障害の試行はありません）",
                "nothing to heal: no unfinished fault attempt in the work directory",
            )
            .get(lang)
            .to_owned(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heal_lines_say_each_attempt_and_nothing_to_heal() {
        let healed = [Healed {
            attempt: "freeze-1",
            action: "resumed",
            note: None,
        }];
        assert_eq!(
            heal_lines(Lang::En, &healed, &["x".into()], &["y".into()]),
            [
                "attempt freeze-1: resumed (details in faults/freeze-1/heal.json)",
                "left alone (a live runner or healer owns it): x",
                "error: y",
            ]
        );
        assert_eq!(
            heal_lines(Lang::En, &[], &[], &[]),
            ["nothing to heal: no unfinished fault attempt in the work directory"]
        );
        assert!(heal_lines(Lang::Ja, &[], &[], &[])[0].starts_with("後始末する障害はありません"));
    }
}
