//! The student tool's Japanese `--help`: a table over the clap command built in `main.rs`
//! (`HELP_JA`), which `main` applies after reading `--lang` by hand, before clap parses
//! ([`localize_help`]); a unit test in `main.rs` names any command or argument without a Japanese
//! text ([`help_untranslated`]). It lives in this crate, not in `lab-core`, so the pure core needs
//! no clap for it.

use crate::text::Lang;

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
        "ラボ (a: スケールダウンで webhook の登録が消える、b: コントローラーのプロセスを凍結し、failurePolicy Fail と Ignore を比べる、c: 3 レプリカでリーダー、次にフォロワーを凍結)。既定: 作業ディレクトリにある証拠のラボ、なければ b",
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
