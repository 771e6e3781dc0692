//! The student tool's Japanese `--help`: a table over the clap command built in `main.rs`
//! (`HELP_JA`), which `main` applies after reading `--lang` by hand, before clap parses
//! ([`localize_help`]); a unit test in `main.rs` names any command or argument without a Japanese
//! text ([`help_untranslated`]). It lives in this crate, not in `lab-core`, so the pure core needs
//! no clap for it. The about line and the `--lab` help, in both languages, are made from the
//! acts registry ([`about`], [`lab_help`]: every lab of [`crate::acts::LAB_SPECS`] and what it
//! disturbs), so they name every lab there is.

use std::borrow::Cow;

use crate::acts::LAB_SPECS;
use crate::text::Lang;

/// The tool's about line in `lang`: what it observes, then every lab of the registry and what it
/// disturbs ([`crate::acts::LabSpec::summary`]).
pub fn about(lang: Lang) -> String {
    let labs = |sep: &str| {
        LAB_SPECS
            .iter()
            .map(|s| format!("lab {}: {}", s.lab.as_str(), s.summary.get(lang)))
            .collect::<Vec<_>>()
            .join(sep)
    };
    match lang {
        Lang::Ja => format!(
            "admission controller が止まったときや消えたときに、ポリシーエンジンの admission webhook が何をするかを観察します ({})",
            labs("、")
        ),
        Lang::En => format!(
            "Observe what a policy engine's admission webhook does when its admission controller fails ({})",
            labs("; ")
        ),
    }
}

/// The `--lab` help in `lang`: every lab of the registry and what it disturbs, and the default.
pub fn lab_help(lang: Lang) -> String {
    let labs = |sep: &str| {
        LAB_SPECS
            .iter()
            .map(|s| format!("{}: {}", s.lab.as_str(), s.summary.get(lang)))
            .collect::<Vec<_>>()
            .join(sep)
    };
    match lang {
        Lang::Ja => format!(
            "ラボ ({})。既定: 作業ディレクトリにある証拠のラボ、なければ b",
            labs("、")
        ),
        Lang::En => format!(
            "Which lab ({}). Default: the lab of the work directory's evidence, else `b`",
            labs("; ")
        ),
    }
}

/// The Japanese help of `(command, argument id)`: the registry-made texts first, then `HELP_JA`.
fn ja_text(cmd: &str, arg: &str) -> Option<Cow<'static, str>> {
    match (cmd, arg) {
        ("", "") => Some(about(Lang::Ja).into()),
        ("", "lab") => Some(lab_help(Lang::Ja).into()),
        _ => HELP_JA
            .iter()
            .find(|(c, a, _)| *c == cmd && *a == arg)
            .map(|(_, _, t)| Cow::Borrowed(*t)),
    }
}

/// The Japanese `--help` of the student tool: `(command, argument id, text)`; command `""` is the
/// tool itself, argument `""` the command's own description. The English `--help` is the doc
/// comments of `lab/src/main.rs` (clap's derive); [`help_untranslated`] lists what this table
/// misses.
const HELP_JA: &[(&str, &str, &str)] = &[
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
        "act 2 (と lab B・lab C の act 6) が、Kyverno がポリシーの webhook を登録するのを待つ秒数。過ぎると診断情報を集めて act は失敗します。遅いマシンでは長く、Kyverno の admission controller が止まっているとわかっているときは短くします",
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
        "grade",
        "output",
        "出力の形式 (text: 文 (既定)、json: JSON Schema は lab/schemas/grade.schema.json、junit: JUnit XML)",
    ),
    (
        "grade-many",
        "",
        "複数の作業ディレクトリ (クラスの提出物) をオフラインで採点し、1 つの表 (ディレクトリごとに 1 行) を表示します。読めないディレクトリもその理由を書いた 1 行になります。終了コード: すべて合格なら 0、それ以外は 1",
    ),
    ("grade-many", "dirs", "作業ディレクトリ (いくつでも)"),
    (
        "grade-many",
        "output",
        "出力の形式 (table: 表 (既定)、csv、json: 行の配列、html: 1 ページの HTML)",
    ),
    (
        "grade-many",
        "reports",
        "各ディレクトリの 1 ページの記録をこのディレクトリに <学生>.html として書き出し、表からリンクします",
    ),
    (
        "version",
        "",
        "バージョン、ビルドしたコミットと日時、ターゲット、ラボが対象とする Kubernetes と Kyverno のバージョンを表示します",
    ),
    (
        "version",
        "output",
        "出力の形式 (text: 文 (既定)、json: JSON Schema は lab/schemas/version.schema.json、yaml)",
    ),
    (
        "completion",
        "",
        "シェルの補完スクリプトを表示します (bash: source <(kca-webhook-lab completion bash))",
    ),
    ("completion", "shell", "シェル (bash、zsh、fish)"),
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
pub fn localize_help(cmd: clap::Command, lang: Lang) -> clap::Command {
    let mut cmd = cmd
        .about(about(lang))
        .long_about(None)
        // In place (`mut_args`): `mut_arg` would move `--lab` to the end of the list.
        .mut_args(|a| match a.get_id().as_str() {
            "lab" => a.help(lab_help(lang)).long_help(None),
            _ => a,
        });
    if lang == Lang::En {
        return cmd;
    }
    cmd.build();
    localize_command(cmd, "")
}

fn localize_command(mut cmd: clap::Command, name: &str) -> clap::Command {
    // An argument's own text, else the tool's (global arguments and the help flag are copied into
    // every command by `build`).
    let text = ja_text;
    if let Some(about) = text(name, "") {
        cmd = cmd.about(about.into_owned()).long_about(None);
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
            Some(t) => a
                .help(t.into_owned())
                .long_help(None)
                .hide_possible_values(true),
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
        let has = |cmd: &str, arg: &str| ja_text(cmd, arg).is_some();
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
