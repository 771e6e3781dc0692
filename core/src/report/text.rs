//! The report page's own words, Japanese and English (the rest of the student-facing text is in
//! [`crate::messages`]; values from the evidence are never translated).

pub(crate) use crate::text::Text;
use crate::text::{Lang, Line, line, t};

/// Lab C's timeline paragraph (acts 5 and 6).
pub(crate) const TIMELINE_C: Text = t(
    "レプリカごとに1行です。灰色の帯はそのレプリカの凍結 (pidfd 経由の SIGSTOP から SIGCONT まで)、濃い緑の帯は Lease がそのレプリカを保持者としていた区間 (毎秒の読み取りで、各読み取りは次の読み取りまで有効とみなします)、その下の細い帯は kyverno-svc のエンドポイントとしての状態 (毎秒の読み取り) です。その下に、違反リクエストの波を1行ずつ (リクエストごとに細い段、最後の段は対照の Pod)、送信から応答までの棒として結果の色で示します。API サーバーの記録はどのレプリカが応答したかを示さないため、リクエストはレプリカの行には置きません。代わりに各レプリカ行の右に、そのレプリカ自身の admission カウンタ (kyverno_admission_requests_total、Pod) のこの act での増分を示します。",
    "One row per replica. The grey band is that replica's freeze (SIGSTOP through a pidfd until SIGCONT); the dark green band is where the Lease named that replica as its holder (read each second; each read is taken to hold until the next); the thin strip under it is its endpoint in kyverno-svc (read each second). Below, each wave of violating requests on one row (one thin lane per request, the control pod last), a bar from sent to answered coloured by its outcome. The API server's record does not name the replica that answered a request, so requests are not placed on the replica rows; instead each replica row gives, on its right, the change of that replica's own admission counter (kyverno_admission_requests_total, pods) during the act.",
);
pub(crate) const LEADER_FREEZE: Text = t(
    "act 5: failurePolicy Fail でリーダーを凍結",
    "act 5: the leader frozen under failurePolicy Fail",
);
pub(crate) const FOLLOWER_FREEZE: Text = t(
    "act 6: failurePolicy Ignore でフォロワーを凍結",
    "act 6: a follower frozen under failurePolicy Ignore",
);
pub(crate) const LEASE_HOLDER: Text = t("Lease の保持者", "Lease holder");
pub(crate) const EP_READY: Text = t("エンドポイント: 準備完了", "endpoint ready");
pub(crate) const EP_NOT_READY: Text = t("エンドポイント: 準備未完了", "endpoint not ready");
pub(crate) const EP_ABSENT: Text = t("エンドポイントなし", "no endpoint");
pub(crate) const WAVE: Text = t("波", "wave");
pub(crate) const CONTROL_SHORT: Text = t("対照", "control");
pub(crate) const LEASE: Text = t("Lease", "Lease");
pub(crate) const FROZEN: Text = t("凍結", "frozen");
pub(crate) const HELD_LEASE_BEFORE: Text =
    t("凍結前の Lease 保持者", "Lease holder before the freeze");
pub(crate) const ADMISSION_COUNTER: Text = t("admission カウンタ", "admission counter");
/// A replica's admission counter that went down between two reads (its process restarted).
pub(crate) const COUNTER_RESET: Text = t("再起動でリセット", "reset by a restart");
pub(crate) const RESTARTS: Text = t("再起動回数", "restarts");
pub(crate) const NEW_POD_UID: Text = t("Pod の UID が変わった", "new pod UID");
pub(crate) const POD_GONE: Text = t("Pod が消えた", "pod gone");
pub(crate) const INTRO: Text = t(
    "このページは保存された入力・証拠・採点結果だけから作られています (クラスターには接続しません)。生の証拠は末尾に折りたたんで埋め込まれています。",
    "This page is made only from the saved inputs, evidence and grades (no cluster access). The raw evidence is embedded, collapsed, at the end.",
);
pub(crate) const GRADES_PASS: Text = t("採点に合格したact", "acts whose grade passes");
pub(crate) const DIAGNOSTICS: Text = t("失敗時の診断情報", "Diagnostics of the failure");
pub(crate) const DIAGNOSTICS_NOTE: Text = t(
    "失敗の直後にクラスターから集めた情報のうち、手がかりになりそうな行です。残り (イベント、Kyverno のログと再起動回数、Webhook 設定、ノードの状態) はこちら:",
    "The most telling lines of what was collected from the cluster right after the failure. The rest (events, Kyverno's logs and restart counts, webhook configurations, node conditions):",
);
pub(crate) const ACTS: Text = t("actごとの状態と採点", "Acts: status and grade");
pub(crate) const ACT: Text = t("act", "act");
pub(crate) const STATUS: Text = t("状態", "status");
pub(crate) const TIME: Text = t("時刻 (UTC)", "time (UTC)");
pub(crate) const VERDICT: Text = t("採点", "grade");
pub(crate) const DIGESTS: Text = t("正規ダイジェスト", "canonical digests");
pub(crate) const METRICS: Text = t(
    "API サーバーの admission webhook カウンタ (この幕での増分)",
    "the API server's admission webhook counters (change during this act)",
);
pub(crate) const AUDIT: Text = t(
    "API サーバーの監査ログ (各リクエストの最終イベント: コードと注釈)",
    "API server audit log (each request's final event: code and annotations)",
);
pub(crate) const AUDIT_NOT_OBSERVED: Text = t("監査ログは観測されていません", "audit not observed");
pub(crate) const PASS: Text = t("合格", "pass");
pub(crate) const FINDINGS: Text = t("指摘", "finding(s)");
pub(crate) const CHECKS: Text = t("項目を確認", "checks");
pub(crate) const MISSING: Text = t("証拠なし", "no evidence");
pub(crate) const UNREADABLE: Text = t("読めない証拠", "unreadable evidence");
pub(crate) const CODE: Text = t("コード", "code");
pub(crate) const FILE: Text = t("ファイル", "file");
pub(crate) const PATH: Text = t("JSONパス", "JSON path");
pub(crate) const MESSAGE: Text = t("内容", "message");
pub(crate) const INPUTS: Text = t("入力ファイル", "Input files");
pub(crate) const TIMELINE: Text = t("障害のタイムライン", "Fault timeline");
pub(crate) const TIMELINE_B: Text = t(
    "各リクエストは送信から応答までの棒で、色は結果を表します。灰色の帯は凍結 (pidfd 経由の SIGSTOP から SIGCONT まで) です。",
    "Each request is a bar from sent to answered, coloured by its outcome. The grey band is the freeze (SIGSTOP through a pidfd until SIGCONT).",
);
pub(crate) const TIMELINE_A: Text = t(
    "各時刻は復元 (replicas を元に戻した時刻) からの経過で示します。リクエストは送信から応答までの棒です。",
    "Each step is shown with its time since the restore (replicas set back). Requests are bars from sent to answered.",
);
pub(crate) const FAIL_FREEZE: Text = t(
    "act 5: failurePolicy Fail で凍結",
    "act 5: freeze under failurePolicy Fail",
);
pub(crate) const IGNORE_FREEZE: Text = t(
    "act 6: failurePolicy Ignore で凍結",
    "act 6: freeze under failurePolicy Ignore",
);
pub(crate) const SCALE_RECOVERY: Text = t(
    "act 5-6: 0へのスケールと復旧",
    "acts 5-6: scale to 0 and recovery",
);
pub(crate) const NO_FREEZE: Text = t(
    "この act の凍結は記録されていません",
    "no freeze recorded for this act",
);
pub(crate) const NO_SCALE: Text = t(
    "スケールダウンは記録されていません",
    "no scale-down recorded",
);
pub(crate) const FREEZE_WINDOW: Text = t("凍結", "freeze");
pub(crate) const HEALER_ARMED: Text = t("healer 準備完了", "healer armed");
pub(crate) const AFTER_RESUME: Text = t("再開後", "after resume");
pub(crate) const FIRST_DENY: Text = t("再開後の最初の拒否", "first deny after resume");
pub(crate) const SINCE_RESTORE: Text = t("復元から", "since restore");
pub(crate) const NOT_CONFIRMED: Text = t("未確認", "not confirmed");
pub(crate) const WATCHER_DEADLINE: Text = t("watcher の期限", "watcher deadline");
pub(crate) const LEGEND: Text = t("凡例", "legend");
pub(crate) const KEY_FACTS: Text = t("主な事実", "Key facts");
pub(crate) const OBSERVATIONS: Text = t("4つの観測 (段階ごと)", "The four observations, per phase");
pub(crate) const OBSERVATIONS_NOTE: Text = t(
    "この4つは別々の観測です。1つから他を推測しないでください。— はその段階で観測していないことを示します。",
    "These are four separate observations; none implies another. — means not observed in that phase.",
);
pub(crate) const PHASE: Text = t("段階", "phase");
pub(crate) const OBS_POLICY: Text = t("ポリシーが存在する", "policy exists");
pub(crate) const OBS_REGISTERED: Text = t("webhook が登録されている", "webhook registered");
pub(crate) const OBS_ANSWERS: Text = t(
    "webhook が応答する (明示的な拒否)",
    "webhook answers (explicit deny)",
);
pub(crate) const OBS_EXISTING: Text = t("既存のPodが同じUIDのまま", "existing pod, same UID");
pub(crate) const PHASE_BASELINE: Text = t("正常時 (act 2-3)", "healthy (acts 2-3)");
pub(crate) const RAW: Text = t(
    "生の証拠 (そのまま、折りたたみ)",
    "Raw evidence (verbatim, collapsed)",
);
line!(
    /// The note after a file cut at the page's bound of `bound` bytes; the whole file is `name`.
    raw_cut(bound: usize, name: &str) => "… ここで切り詰め: ページに載せるのは各ファイルの整形後の先頭 {bound} バイトまで。全体はファイルそのもの: {name}", "… cut here: the page embeds the first {bound} bytes of each file, pretty-printed; the whole file is {name}");

// The condition table (the page's first section).
pub(crate) const CONDITIONS: Text = t("条件ごとに観測した結果", "What was observed, per condition");
pub(crate) const CONDITIONS_NOTE: Text = t(
    "各欄は、その条件で送ったリクエストの結果 (API の応答を分類したもの)、応答までの時間、証拠の場所です。— はその条件では送っていないことを示します。",
    "Each cell is the outcome of the request sent under that condition (the API's answer, classified), the time to its answer, and where the evidence is. — means no such request under that condition.",
);
pub(crate) const CONDITION: Text = t("条件", "condition");
pub(crate) const COL_TARGET_GOOD: Text = t(
    "対象の名前空間・ラベルあり",
    "target namespace, labelled (good)",
);
pub(crate) const COL_TARGET_BAD: Text = t(
    "対象の名前空間・ラベルなし",
    "target namespace, unlabelled (bad)",
);
pub(crate) const COL_CONTROL: Text = t(
    "対照 (対象外の名前空間)・ラベルなし",
    "control namespace, unlabelled",
);

// The API server's counters, as a table.
pub(crate) const COUNTER: Text = t("カウンタ", "counter");
pub(crate) const CHANGE: Text = t("変化", "change");
pub(crate) const METRICS_NOT_OBSERVED: Text =
    t("カウンタは読めませんでした", "the counters were not read");
pub(crate) const METRICS_NO_CHANGE: Text = t("変化なし", "no change");

// The timeline's row labels and notes.
pub(crate) const ROW_HEALTHY_BAD: Text = t("正常時・ラベルなし", "healthy, bad");
pub(crate) const ROW_TARGET_GOOD: Text = t("対象・ラベルあり", "target, good");
pub(crate) const ROW_TARGET_BAD: Text = t("対象・ラベルなし", "target, bad");
pub(crate) const ROW_CONTROL: Text = t("対照・ラベルなし", "control, bad");
pub(crate) const ROW_TARGET_BAD_SCALED: Text =
    t("対象・ラベルなし (0 にスケール中)", "target, bad (scaled)");
pub(crate) const VIA_PIDFD: Text = t("pidfd 経由", "pidfd");
pub(crate) const WATCHER_ARMED: Text = t("watcher 準備完了", "watcher armed");
pub(crate) const SCALED_TO_0: Text = t("0 にスケール", "scale to 0");
pub(crate) const PODS_GONE: Text = t("Pod がなくなった", "pods gone");
pub(crate) const REGISTRATION_ABSENT: Text = t("webhook 登録なし", "registration absent");
pub(crate) const REGISTRATION_PRESENT: Text =
    t("webhook 登録がまだある", "registration still present");
pub(crate) const REGISTRATION_UNKNOWN: Text = t("webhook 登録 ?", "registration ?");
pub(crate) const RESTORE: Text = t("復元", "restore");
pub(crate) const RESTORED_BY: Text = t("復元した者", "by");
pub(crate) const NEW_POD_CREATED: Text = t("新しい Pod が作られた", "new pod created");
pub(crate) const NEW_POD_RUNNING: Text = t("新しい Pod が Running", "new pod Running");
pub(crate) const LEASE_ACQUIRED: Text = t("Lease を取得", "Lease acquired");
pub(crate) const WEBHOOK_REGISTERED: Text = t("webhook 登録", "webhook registered");
pub(crate) const FIRST_EXPLICIT_DENY: Text = t("最初の明示的な拒否", "first explicit deny");
pub(crate) const PROBES: Text = t("dry-run プローブ", "dry-run probes");

// The four observations' cells.
pub(crate) const ABSENT: Text = t("なし", "absent");
pub(crate) const GONE: Text = t("消えた", "gone");
pub(crate) const PRESENT: Text = t("あり", "present");
pub(crate) const LIST_READ: Text = t("一覧を読んだ時刻", "list read");
pub(crate) const AT: Text = t("時刻", "at");
pub(crate) const BEFORE: Text = t("以前", "before");

// Lab C's key facts' words.
pub(crate) const KF_LEASE_NOT_OBSERVED: Text = t("Lease は読めなかった", "Lease not observed");
pub(crate) const KF_UNVALIDATED: Text = t("未検証", "unvalidated");

line!(
    /// `Lease taken over by <holder>, first read <secs> after the freeze`.
    kf_takeover(holder: &str, secs: &str) => "凍結から {secs} 後の読み取りで {holder} が Lease を保持 (引き継ぎ)", "Lease taken over by {holder}, first read {secs} after the freeze");
line!(
    /// `Lease kept by <holder>` (every read during the freeze named it).
    kf_lease_kept(holder: &str) => "Lease は移らなかった (保持者 {holder})", "Lease kept by {holder}");
line!(
    /// `former leader <what> (restarts <before>→<after>)`.
    kf_former_leader(what: &str, before: u32, after: u32) => "元のリーダーは{what} (再起動回数 {before}→{after})", "former leader {what} (restarts {before}→{after})");

// The key facts' words.
pub(crate) const KF_REGISTRATION: Text = t(
    "スケールダウン後の webhook 登録",
    "registration after scale-down",
);
pub(crate) const KF_KEPT: Text = t("あり", "kept");
pub(crate) const KF_VIOLATING: Text = t("違反リクエスト", "violating request");
pub(crate) const KF_LEASE: Text = t("Lease 取得: 復元から", "lease taken");
pub(crate) const KF_AFTER_RESTORE: Text = t("後", "after restore");
pub(crate) const KF_FIRST_DENY_RESTORE: Text = t("最初の拒否: 復元から", "first deny");
pub(crate) const KF_FIRST_DENY_RESUME: Text = t("最初の拒否: 再開から", "first deny");
pub(crate) const KF_AFTER_RESUME: Text = t("後", "after resume");
pub(crate) const KF_GOOD: Text = t("ラベルあり", "good");
pub(crate) const KF_BAD: Text = t("ラベルなし", "bad");

/// A word the evidence writes, in `lang`: an act's status (`completed`, `interrupted`), a frozen
/// replica's role (`leader`, `follower`), what the former leader did (`restarted`, `kept-running`),
/// or who resumed a process or restored replicas (`watchdog` and `healer` are the healer; `runner`,
/// `runner-exit`, `later-command`, `watcher`); another word as written.
pub(crate) fn evidence_word(name: &str, lang: Lang) -> &str {
    let word = match name {
        "completed" => t("完了", "completed"),
        "interrupted" => t("中断", "interrupted"),
        "leader" => t("リーダー", "leader"),
        "follower" => t("フォロワー", "follower"),
        "restarted" => t("再起動した", "restarted"),
        "kept-running" => t("動き続けた", "kept running"),
        "watchdog" | "healer" => t("healer", "healer"),
        "runner" => t("act のプロセス", "runner"),
        "runner-exit" => t("act のプロセスの終了処理", "runner (exit path)"),
        "later-command" => t("後のコマンド", "a later command"),
        _ => return name,
    };
    word.get(lang)
}
