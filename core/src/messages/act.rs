//! The acts' words (`labs/`): the progress lines printed while an act runs and the summary lines it
//! ends with (`lab::labs::ActSummary::lines`), one item per line: a [`Line`] built by the `line!`
//! macro, which `labs::Ui` prints in the chosen language. Values (names, UIDs, times, outcomes,
//! field names) are not translated: they are the words of the cluster and the evidence.

use crate::text::{Lang, Line, Text, line, t};

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
/// A process state letter of `/proc/PID/stat` in proc(5)'s words, e.g. `S (sleeping)`; `None`
/// (no such process after the resume) is `gone`, a letter proc(5) does not list is `X (unknown)`.
/// Source: proc_pid_stat(5), field 3 "state".
pub fn process_state(lang: Lang, state: Option<char>) -> String {
    let Some(c) = state else {
        return t("消滅 (プロセスなし)", "gone (no such process)")
            .get(lang)
            .to_owned();
    };
    let words = match c {
        'R' => t("実行中", "running"),
        'S' => t("スリープ", "sleeping"),
        'D' => t("割り込み不可の待機", "disk sleep"),
        'Z' => t("ゾンビ", "zombie"),
        'T' => t("シグナルで停止", "stopped"),
        't' => t("トレースで停止", "tracing stop"),
        'X' | 'x' => t("終了", "dead"),
        'I' => t("アイドル", "idle"),
        'K' => t("wakekill", "wakekill"),
        'W' => t("waking", "waking"),
        'P' => t("parked", "parked"),
        _ => t("不明", "unknown"),
    };
    format!("{c} ({})", words.get(lang))
}
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
/// Lab A act 5: starting the scale healer.
pub const STARTING_SCALE_HEALER: Text = t(
    "healer を起動します (55 秒後に元のレプリカ数へ戻す独立プロセス)",
    "starting the healer (an independent process that restores the replicas after 55 s)",
);
line!(
    /// Lab A act 5: the scale healer is ready.
    scale_healer_ready(pid: u32, armed_at: &str, deadline_at: &str) =>
    "  healer pid {pid} 準備完了 {armed_at}, 復旧予定 {deadline_at}",
    "  healer pid {pid} ready at {armed_at}, restores at {deadline_at}");
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
    "Deployment は 0 レプリカのままです: 幕 6 が復旧させて経過を記録します。実行しなければ healer が {deadline_at} に戻します",
    "the deployment stays at 0 replicas: act 6 restores it and records the recovery; otherwise the healer restores it at {deadline_at}");

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
        (Some(Restorer::Watcher), Lang::Ja) => "healer",
        (None, Lang::Ja) => "不明",
        (Some(Restorer::Runner), Lang::En) => "runner",
        (Some(Restorer::Watcher), Lang::En) => "healer",
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
    /// Act 8 summary (every lab): how many fields disagree.
    report_disagrees(count: usize) =>
    "report.json のうち証拠と食い違う項目: {count}",
    "{count} field(s) of report.json disagree with the evidence");

/// Act 8's summary lines (every lab, said the same way): one [`report_check`] line per field,
/// then [`report_disagrees`].
pub fn report_summary(lang: Lang, checks: &[crate::facts::ReportCheck]) -> Vec<String> {
    let mut lines: Vec<String> = checks
        .iter()
        .map(|c| {
            report_check(
                if c.agrees { "✓" } else { "✗" },
                &c.field,
                &c.report.to_string(),
                &c.evidence.to_string(),
            )
            .get(lang)
            .to_owned()
        })
        .collect();
    let disagree = checks.iter().filter(|c| !c.agrees).count();
    lines.push(report_disagrees(disagree).get(lang).to_owned());
    lines
}

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
    /// The audit events of an act with many requests, counted by outcome
    /// (`code [annotation keys] ×N, …`, verbatim; [`crate::audit::outcome_counts`]), and where
    /// each request's events are (`evidence`'s `key`).
    audit_counted(total: usize, outcomes: &str, evidence: &str, key: &str) =>
    "監査ログ: リクエスト {total} 件: {outcomes} (各リクエストの詳細は {evidence} の facts.{key})",
    "audit: {total} requests: {outcomes} (each request in {evidence} facts.{key})");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_state_is_said_in_proc5_words_not_rust_debug() {
        assert_eq!(process_state(Lang::En, Some('S')), "S (sleeping)");
        assert_eq!(process_state(Lang::En, Some('T')), "T (stopped)");
        assert_eq!(process_state(Lang::En, Some('?')), "? (unknown)");
        assert_eq!(process_state(Lang::En, None), "gone (no such process)");
        assert_eq!(process_state(Lang::Ja, Some('S')), "S (スリープ)");
    }

    #[test]
    fn report_summary_lists_each_field_then_how_many_disagree() {
        let check = |field: &str, agrees: bool| crate::facts::ReportCheck {
            field: field.to_owned(),
            report: "x".into(),
            evidence: if agrees { "x" } else { "y" }.into(),
            agrees,
        };
        let lines = report_summary(Lang::En, &[check("fail", true), check("ignore", false)]);
        assert_eq!(
            lines,
            [
                "✓ fail: report \"x\" / evidence \"x\"",
                "✗ ignore: report \"x\" / evidence \"y\"",
                "1 field(s) of report.json disagree with the evidence",
            ]
        );
        let ja = report_summary(Lang::Ja, &[check("fail", true)]);
        assert_eq!(
            ja.last().unwrap(),
            "report.json のうち証拠と食い違う項目: 0"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Lab C (three replicas), acts 3-4.

line!(
    /// Lab C act 3: the healer that owns the scale to `replicas` (the registry's) is starting.
    starting_ha_healer(replicas: u32) =>
    "healer を起動します ({replicas} レプリカへのスケールを行い、期限に元のレプリカ数へ戻す独立プロセス)",
    "starting the healer (an independent process that scales to {replicas} replicas and puts the original count back at its deadline)");
line!(
    /// Lab C act 3: the healer is ready; it puts the original count back at `deadline_at`.
    ha_healer_ready(pid: u32, deadline_at: &str) =>
    "  healer pid {pid} 準備完了、act 7 か heal がなければ {deadline_at} に元のレプリカ数へ戻します",
    "  healer pid {pid} ready; unless act 7 or heal does it first, it puts the original count back at {deadline_at}");
line!(
    /// Lab C act 3: scaling to the registry's replicas.
    scaling_to(deployment: &str, replicas: u32) =>
    "{deployment} を {replicas} レプリカにスケールします", "scaling {deployment} to {replicas} replicas");
line!(
    /// Lab C act 3: the bounded wait's state.
    waiting_replicas(state: &str) =>
    "準備完了を待っています: {state}", "waiting until ready: {state}");
line!(
    /// Lab C act 3 summary: one replica.
    replica(name: &str, uid: &str, ip: &str, ready: bool) =>
    "レプリカ {name} uid {uid} IP {ip} Ready={ready}", "replica {name} uid {uid} IP {ip} Ready={ready}");
line!(
    /// Lab C act 3/4 summary: the Lease.
    lease_held_by(holder: &str, transitions: &str) =>
    "Lease kyverno の保持者 {holder} (leaseTransitions {transitions})",
    "Lease kyverno held by {holder} (leaseTransitions {transitions})");
line!(
    /// Lab C act 3: the parallel waves are being sent.
    sending_waves(waves: u32, size: u32) =>
    "違反する Pod を {waves} 回、{size} 件ずつ並列に送ります",
    "sending violating pods in {waves} parallel waves of {size}");
line!(
    /// Lab C act 3 summary: how the waves ended.
    waves_outcome(denied: usize, total: usize) =>
    "並列の違反リクエスト: explicit-deny {denied}/{total}", "violating requests in parallel: explicit-deny {denied}/{total}");
line!(
    /// Lab C act 3 summary: how many pod admission requests one replica counted.
    replica_requests(pod: &str, delta: &str) =>
    "  {pod}: Kyverno が数えた Pod のアドミッション要求 {delta}", "  {pod}: pod admission requests Kyverno counted {delta}");
line!(
    /// Lab C act 4: investigating the `replicas` replicas.
    investigating_replicas(replicas: usize) =>
    "Lease と {replicas} つのレプリカのプロセスを調べます (API, CRI, /proc)",
    "investigating the Lease and the {replicas} replicas' processes (API, CRI, /proc)");
line!(
    /// Lab C act 4 summary: one replica's process.
    replica_process(role: &str, name: &str, pid: u32, start_time_ticks: u64, state: &str) =>
    "{role} {name}: PID {pid} 開始時刻 {start_time_ticks} 状態 {state}",
    "{role} {name}: PID {pid} start time {start_time_ticks} state {state}");

// ---------------------------------------------------------------------------------------------
// Lab C, acts 5-8.

line!(
    /// Lab C act 5/6: which replica is frozen and why.
    freezing_replica(role: &str, pod: &str) =>
    "{role} {pod} のプロセスを凍結します", "freezing the process of the {role} {pod}");
line!(
    /// Lab C act 5/6: one wave sent during the freeze, and how it ended.
    freeze_wave(wave: u32, met: usize, met_word: &str, denied: usize, total: usize) =>
    "  波 {wave}: {met_word} {met}, explicit-deny {denied} / {total}",
    "  wave {wave}: {met_word} {met}, explicit-deny {denied} of {total}");
line!(
    /// Lab C act 5/6 summary: the waves during the freeze.
    freeze_waves_outcome(met: usize, met_word: &str, denied: usize, other: usize, total: usize) =>
    "凍結中の違反リクエスト {total} 件: {met_word} {met}, explicit-deny {denied}, その他 {other}",
    "violating requests during the freeze, {total}: {met_word} {met}, explicit-deny {denied}, other {other}");
line!(
    /// Lab C act 5/6 summary: the Lease during the freeze.
    lease_during_freeze(before: &str, takeover: &str) =>
    "凍結中の Lease: 凍結前の保持者 {before}、{takeover}",
    "the Lease during the freeze: held by {before} before it; {takeover}");
line!(
    /// Lab C act 5/6: the Lease moved to `holder`, `ms` after the freeze began.
    lease_taken_over(holder: &str, ms: i64) =>
    "凍結開始の {ms} ms 後に {holder} が保持者になりました",
    "{holder} became its holder {ms} ms after the freeze began");
/// Lab C act 5/6: the Lease stayed with its holder.
pub const LEASE_KEPT: Text = t("保持者は変わりませんでした", "its holder did not change");
line!(
    /// Lab C act 5/6 summary: the frozen pod as an endpoint during the freeze.
    frozen_endpoint(pod: &str, ready: usize, samples: usize) =>
    "凍結中の {pod} は {samples} 回の読み取りのうち {ready} 回 ready なエンドポイントでした",
    "during the freeze {pod} was a ready endpoint in {ready} of {samples} reads");
line!(
    /// Lab C act 5/6: waiting for the frozen replica to settle.
    waiting_settle(state: &str) =>
    "凍結したレプリカが落ち着くのを待っています: {state}",
    "waiting for the frozen replica to settle: {state}");
line!(
    /// Lab C act 5/6 summary: the frozen replica after the resume.
    replica_after(pod: &str, before: u32, after: u32, same_uid: bool, holds_lease: bool) =>
    "再開後の {pod}: 再起動回数 {before} → {after}、同じ Pod UID {same_uid}、Lease 保持 {holds_lease}",
    "{pod} after the resume: restart count {before} → {after}, same pod UID {same_uid}, holds the Lease {holds_lease}");
/// Lab C act 7: the scale back is being done.
pub const SCALING_BACK: Text = t(
    "heal で act 3 の healer を停止させ、元のレプリカ数へ戻します",
    "scaling back to the original count (the heal stands act 3's healer down and writes the count back)",
);
line!(
    /// Lab C act 7: the wait for the original count and a deny.
    waiting_scale_back(state: &str) =>
    "元のレプリカ数と拒否を待っています: {state}",
    "waiting for the original count and a deny: {state}");
line!(
    /// Lab C act 7 summary: the scale back.
    scaled_back(action: &str, before: u32, after: u32, live: usize) =>
    "スケールバック ({action}): {before} → {after}、稼働中のレプリカ {live}",
    "scale back ({action}): {before} → {after}, live replicas {live}");
line!(
    /// Lab C act 5/6: what is sent during the freeze.
    during_freeze_waves(waves: u32, size: u32) =>
    "凍結中: 登録を確認し、違反する Pod を {waves} 回 {size} 件ずつ並列に、各回に対照の Pod を 1 件送ります",
    "during the freeze: the registration read, then {waves} parallel waves of {size} violating pods, each with a control pod");
