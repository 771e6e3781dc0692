//! A [`LabError`] as the student sees it ([`error_text`]): Japanese, or the error's own English
//! display text.

use crate::error::{ActStatus, LabError};
use crate::text::Lang;

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
    error_text_of(lang, e, true)
}

/// A [`LabError`] of a command that never writes (`digest`): [`error_text`] without "nothing was
/// written".
pub fn read_only_error_text(lang: Lang, e: &LabError) -> String {
    error_text_of(lang, e, false)
}

/// How many problems of an invalid input are listed (the rest are counted): 50.
pub const LISTED_ISSUES: usize = 50;

fn error_text_of(lang: Lang, e: &LabError, writes: bool) -> String {
    match (lang, e) {
        (Lang::Ja, LabError::InputInvalid { issues }) => {
            let mut s = format!(
                "入力ファイルが正しくありません（問題 {} 件、{}）{}:",
                issues.len(),
                if issues.len() > LISTED_ISSUES {
                    format!("最初の {LISTED_ISSUES} 件を表示")
                } else {
                    "すべて表示".to_owned()
                },
                if writes {
                    "。何も書き込んでいません"
                } else {
                    ""
                }
            );
            for i in issues.iter().take(LISTED_ISSUES) {
                let (expected, found) =
                    i.ja.as_ref()
                        .map_or((&i.expected, &i.found), |(e, f)| (e, f));
                s.push_str(&format!(
                    "\n  {}: {}: 期待値 {}, 実際 {}",
                    i.file, i.json_path, expected, found
                ));
            }
            if issues.len() > LISTED_ISSUES {
                s.push_str(&format!("\n  …ほか {} 件", issues.len() - LISTED_ISSUES));
            }
            s
        }
        (Lang::En, LabError::InputInvalid { issues }) => {
            let mut s = format!(
                "invalid input ({} {}, {}){}:",
                issues.len(),
                if issues.len() == 1 {
                    "problem"
                } else {
                    "problems"
                },
                if issues.len() > LISTED_ISSUES {
                    format!("the first {LISTED_ISSUES} listed")
                } else {
                    "all listed".to_owned()
                },
                if writes { "; nothing was written" } else { "" }
            );
            for i in issues.iter().take(LISTED_ISSUES) {
                s.push_str(&format!(
                    "\n  {}: {}: expected {}, found {}",
                    i.file, i.json_path, i.expected, i.found
                ));
            }
            if issues.len() > LISTED_ISSUES {
                s.push_str(&format!("\n  … and {} more", issues.len() - LISTED_ISSUES));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_with_many_problems_lists_the_first_and_counts_the_rest() {
        let one = match LabError::input("policy.json", "$.a", "x", "y") {
            LabError::InputInvalid { issues } => issues[0].clone(),
            _ => unreachable!(),
        };
        let e = LabError::InputInvalid {
            issues: vec![one; LISTED_ISSUES + 10],
        };
        let en = error_text(Lang::En, &e);
        assert!(
            en.contains("the first 50 listed") && en.ends_with("… and 10 more"),
            "{en}"
        );
        assert_eq!(
            en.matches("policy.json: $.a").count(),
            LISTED_ISSUES,
            "{en}"
        );
        let ja = error_text(Lang::Ja, &e);
        assert!(
            ja.contains("最初の 50 件を表示") && ja.ends_with("…ほか 10 件"),
            "{ja}"
        );
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
