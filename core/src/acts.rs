//! The acts registry: the one list of each lab's acts, in order. Everything that needs to know
//! which acts exist reads it — the CLI's `act N` range and `grade N` parsing (`lab`'s `main.rs`),
//! the act dispatch (`lab::labs::run_act`, which finds each act's runner beside its body in
//! `labs/{common,a,b}.rs`), the grader dispatch (`grade::grade`), whether the
//! audit and metrics rules apply (`grade`'s `audit.rs`, `metrics.rs`), the input files
//! each act reads ([`crate::inputs::InputFile::act`]), `cargo xtask lab run`'s loop and its
//! reference inputs, the ordered cluster tests (`tests/tests/lab_{a,b}.rs`) and the fixture
//! generator (`lab/tests/common/fixtures.rs`).
//!
//! Adding an act: one [`ActSpec`] line in [`LAB_A`] or [`LAB_B`], its runner (an `async fn` in
//! `lab/src/labs/a.rs` or `b.rs`, listed in that file's `RUNNERS`), its facts type (`facts.rs`), its grader (`grade/a.rs`, `b.rs`
//! or `c.rs`, named by a [`Grader`] and bound in `grade::grader_of`) and its fixture (`lab/tests/common/fixtures.rs`); nothing else names act
//! numbers or counts (`xtask/tests/tidy.rs` fails on a literal act count or range elsewhere).
//! The act numbers are the spec's (`docs/labs.md`, "Lab B" and "Lab A" tables).

use crate::error::LabError;
use crate::evidence::{Lab, Outcome};
use crate::inputs::InputFile;
use crate::text::{Text, t};

/// What an act is for in its lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An act that sets up, observes or disturbs the cluster; its evidence is graded on its own.
    Observe,
    /// The lab's report: the student's conclusions, tied to the evidence by digests. After it every
    /// act of the lab is graded again (`act N` prints every finding). One per lab, its last act.
    Report,
}

/// The failurePolicy a step gives the lab's policy (`docs/labs.md`, acts 2 and 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// A webhook call failure rejects the request.
    Fail,
    /// A webhook call failure admits the request (the API server fails open).
    Ignore,
}

/// Which replica of the admission controller a step acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The one replica of a one-replica Deployment (exactly one running pod).
    One,
    /// The replica the Lease `kyverno` names (the leader).
    Leader,
    /// A replica the Lease does not name now (the first by pod name).
    Follower,
}

/// A fault an act puts on the admission controller: always an attempt with a detached healer
/// that undoes it at its deadline (`docs/faults.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The target's process stopped (SIGSTOP through a pidfd); the healer resumes it after
    /// `resume_after_sec` seconds, or after the student's `freeze-plan.json` `resume_after_sec`
    /// when `None`.
    Freeze {
        /// The replica frozen.
        target: Target,
        /// Seconds from the freeze to the healer's resume; `None`: the plan's.
        resume_after_sec: Option<u64>,
    },
    /// The Deployment scaled to `to` replicas; the healer puts the original count back after
    /// `restore_after_sec` seconds, or after the student's plan's `restore_after_sec` when `None`.
    Scale {
        /// The replica count asked for.
        to: u32,
        /// Seconds from the healer's ready answer to its restore; `None`: the plan's.
        restore_after_sec: Option<u64>,
    },
}

/// The grader of each act, named: one per grading function of `grade/` (shared acts 1-3 and each
/// lab's own). `grade::grader_of` maps a name to its function (an exhaustive match, so a name
/// without a function does not compile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grader {
    /// `grade::act1`.
    SharedAct1,
    /// `grade::act2`.
    SharedAct2,
    /// `grade::act3`.
    SharedAct3,
    /// `grade::b::act4`.
    BAct4,
    /// `grade::b::freeze_acts` (acts 5 and 6).
    BFreeze,
    /// `grade::b::act7`.
    BAct7,
    /// `grade::b::act8`.
    BAct8,
    /// `grade::a::act4`.
    AAct4,
    /// `grade::a::act5`.
    AAct5,
    /// `grade::a::act6`.
    AAct6,
    /// `grade::a::act7`.
    AAct7,
    /// `grade::a::act8`.
    AAct8,
    /// `grade::c::act3`.
    CAct3,
    /// `grade::c::act4`.
    CAct4,
    /// `grade::c::freeze_acts` (acts 5 and 6).
    CFreeze,
    /// `grade::c::act7`.
    CAct7,
    /// `grade::c::act8`.
    CAct8,
}

/// One step of an act, from the one closed set every lab's acts are made of (`docs/labs.md`'s
/// tables, read as steps). An act lists its steps in order ([`ActSpec::steps`]); the runner of a
/// step kind lives in `lab/src/steps/`, and what a step's parameters say (a freeze's target and
/// length, a traffic's waves) is read from here by the runners ([`fault`], [`traffic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The scope file checked against the live cluster and saved (act 1).
    CheckScope,
    /// The policy applied with `failure_policy`, its webhook registration awaited (act 2).
    ApplyPolicy {
        /// The policy's failurePolicy.
        failure_policy: FailurePolicy,
    },
    /// The policy switched in place (same UID) to `to`, its new registration awaited, and one
    /// violating request denied by the healthy webhook.
    SwitchPolicy {
        /// The failurePolicy after the switch.
        to: FailurePolicy,
    },
    /// Healthy requests: a good pod stored, violating pods denied, a control pod stored; in
    /// `waves` parallel waves of `size` when `waves` > 0, else one after another.
    Baseline {
        /// Parallel waves (0: one request of each kind, in sequence).
        waves: u32,
        /// Violating requests per wave.
        size: u32,
    },
    /// The admission controller's pod, container (CRI) and process (`/proc`) read, nothing
    /// changed.
    Investigate {
        /// Which replica (a leader's investigation reads the followers too).
        target: Target,
    },
    /// A fault, through an attempt and its healer.
    Fault(Fault),
    /// Requests while the fault lasts: `waves` parallel waves of `size` violating pods with a
    /// control pod each (0 waves: one good, one violating, one control at once).
    Traffic {
        /// Parallel waves (0: one of each kind at once).
        waves: u32,
        /// Violating requests per wave.
        size: u32,
    },
    /// The Lease and the Service's EndpointSlice read each second while the fault lasts.
    Samples,
    /// After the fault: violating requests until the first explicit deny (bounded).
    AwaitDeny,
    /// One violating request with a new name, denied by the healthy webhook (recovery shown by a
    /// deny, not by the resume).
    ExpectDeny,
    /// Server-side dry-run: a violating request validated without being stored.
    DryRun,
    /// After the fault: a bounded wait for the replicas to settle (restarted or running on,
    /// Ready), then the target's process, the Lease and the existing pod.
    Settle,
    /// The fault's attempt healed: the original state put back and awaited.
    Restore,
    /// The student's report checked against the evidence (the lab's [`Role::Report`] act).
    Report,
}

/// One act of one lab: everything about it that is not its body.
#[derive(Clone, Copy)]
pub struct ActSpec {
    /// The act number (1-based, the `NN` of `evidence/NN.json`).
    pub number: u8,
    /// What the act is for: [`Role::Report`] for the lab's report, else [`Role::Observe`].
    pub role: Role,
    /// Short title in both languages (progress lines, reports).
    pub title: Text,
    /// The student input files the act reads (written first by `cargo xtask lab run`).
    pub inputs: &'static [InputFile],
    /// Whether the act's evidence carries the API server's admission metrics
    /// (`facts.admission_metrics`, graded by `grade/metrics.rs`).
    pub metrics: bool,
    /// Whether the act's evidence carries the audit events of its requests
    /// (`facts.admission_audit`, graded by `grade/audit.rs`).
    pub audit: bool,
    /// The name of the act's step in the ordered cluster test (`tests/tests/lab_{a,b}.rs`).
    pub test_name: &'static str,
    /// What the act does, in order (one runner per step kind in `lab/src/steps/`).
    pub steps: &'static [Step],
    /// The act's grader, by name: `grade/` binds each name to its pure function
    /// (`grade::grader_of`), so that the registry does not depend on the graders.
    pub(crate) grader: Grader,
}

impl std::fmt::Debug for ActSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActSpec")
            .field("number", &self.number)
            .field("role", &self.role)
            .field("title", &self.title.en)
            .field("inputs", &self.inputs)
            .field("test_name", &self.test_name)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

/// Acts 1-3 of labs A and B (`lab/src/labs/common.rs`; lab C takes acts 1-2); only the test
/// names differ.
macro_rules! shared_acts {
    ($act2_test:literal) => {
        [
            ActSpec {
                number: 1,
                role: Role::Observe,
                title: t("スコープの確認", "scope"),
                inputs: &[InputFile::Scope],
                metrics: false,
                audit: false,
                test_name: "act_1_scope_matches_the_live_cluster",
                steps: &[Step::CheckScope],
                grader: Grader::SharedAct1,
            },
            ActSpec {
                number: 2,
                role: Role::Observe,
                title: t("ポリシーの適用", "policy"),
                inputs: &[InputFile::Policy],
                metrics: false,
                audit: false,
                test_name: $act2_test,
                steps: &[Step::ApplyPolicy {
                    failure_policy: FailurePolicy::Fail,
                }],
                grader: Grader::SharedAct2,
            },
            ActSpec {
                number: 3,
                role: Role::Observe,
                title: t("正常時の基準", "healthy baseline"),
                inputs: &[],
                metrics: true,
                audit: true,
                test_name: "act_3_baseline_good_stored_bad_denied",
                steps: &[Step::Baseline { waves: 0, size: 1 }],
                grader: Grader::SharedAct3,
            },
        ]
    };
}

/// The short freeze of act 6 (labs B and C), seconds: long enough for requests to run into the
/// 3 s timeout, shorter than Kyverno's 10 s Lease renew deadline.
pub const SHORT_FREEZE_SEC: u64 = 10;

const SHARED_B: [ActSpec; 3] =
    shared_acts!("act_2_policy_registers_a_fail_webhook_with_3s_timeout");
const SHARED_A: [ActSpec; 3] = shared_acts!("act_2_policy_registers_a_fail_webhook");

/// Lab B's acts in order (freeze the admission controller process; Fail vs Ignore).
pub static LAB_B: &[ActSpec] = &[
    SHARED_B[0],
    SHARED_B[1],
    SHARED_B[2],
    ActSpec {
        number: 4,
        role: Role::Observe,
        title: t("プロセスの調査", "investigation"),
        inputs: &[InputFile::FreezePlan],
        metrics: false,
        audit: false,
        test_name: "act_4_investigation_finds_the_controller_process",
        steps: &[Step::Investigate {
            target: Target::One,
        }],
        grader: Grader::BAct4,
    },
    ActSpec {
        number: 5,
        role: Role::Observe,
        title: t("Fail での凍結", "freeze under Fail"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_5_fail_freeze_times_out_matching_requests",
        steps: &[
            Step::Investigate {
                target: Target::One,
            },
            Step::Fault(Fault::Freeze {
                target: Target::One,
                resume_after_sec: None,
            }),
            Step::Traffic { waves: 0, size: 1 },
            Step::AwaitDeny,
            Step::Settle,
        ],
        grader: Grader::BFreeze,
    },
    ActSpec {
        number: 6,
        role: Role::Observe,
        title: t("Ignore での凍結", "freeze under Ignore"),
        inputs: &[InputFile::PolicyIgnore],
        metrics: true,
        audit: true,
        test_name: "act_6_ignore_freeze_stores_unvalidated_requests",
        steps: &[
            Step::SwitchPolicy {
                to: FailurePolicy::Ignore,
            },
            Step::Investigate {
                target: Target::One,
            },
            Step::Fault(Fault::Freeze {
                target: Target::One,
                resume_after_sec: Some(SHORT_FREEZE_SEC),
            }),
            Step::Traffic { waves: 0, size: 1 },
            Step::AwaitDeny,
            Step::Settle,
        ],
        grader: Grader::BFreeze,
    },
    ActSpec {
        number: 7,
        role: Role::Observe,
        title: t("回復の確認", "recovery"),
        inputs: &[InputFile::Recovery],
        metrics: true,
        audit: true,
        test_name: "act_7_recovery_is_an_explicit_deny",
        steps: &[Step::ExpectDeny],
        grader: Grader::BAct7,
    },
    ActSpec {
        number: 8,
        role: Role::Report,
        title: t("報告", "report"),
        inputs: &[InputFile::ReportB],
        metrics: false,
        audit: false,
        test_name: "act_8_report_agrees_with_the_evidence",
        steps: &[Step::Report],
        grader: Grader::BAct8,
    },
];

/// Lab A's acts in order (scale the admission controller to 0; the registration disappears).
pub static LAB_A: &[ActSpec] = &[
    SHARED_A[0],
    SHARED_A[1],
    SHARED_A[2],
    ActSpec {
        number: 4,
        role: Role::Observe,
        title: t("Deployment の調査", "investigation"),
        inputs: &[InputFile::ScalePlan],
        metrics: false,
        audit: false,
        test_name: "act_4_investigation_changes_nothing",
        steps: &[Step::Investigate {
            target: Target::One,
        }],
        grader: Grader::AAct4,
    },
    ActSpec {
        number: 5,
        role: Role::Observe,
        title: t("0 レプリカへのスケール", "scale to zero"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_5_scale_to_zero_removes_the_registration_and_admits_the_request",
        steps: &[
            Step::Fault(Fault::Scale {
                to: 0,
                restore_after_sec: None,
            }),
            Step::Traffic { waves: 0, size: 1 },
        ],
        grader: Grader::AAct5,
    },
    ActSpec {
        number: 6,
        role: Role::Observe,
        title: t("回復の時系列", "recovery timeline"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_6_recovery_timeline_lease_then_registration_then_deny",
        steps: &[Step::Restore, Step::AwaitDeny],
        grader: Grader::AAct6,
    },
    ActSpec {
        number: 7,
        role: Role::Observe,
        title: t("サーバー側 dry-run", "server-side dry-run"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_7_server_dry_run_validates_without_storing",
        steps: &[Step::DryRun],
        grader: Grader::AAct7,
    },
    ActSpec {
        number: 8,
        role: Role::Report,
        title: t("報告", "report"),
        inputs: &[InputFile::ReportA],
        metrics: false,
        audit: false,
        test_name: "act_8_report_agrees_with_the_evidence",
        steps: &[Step::Report],
        grader: Grader::AAct8,
    },
];

/// Lab C's acts in order (three replicas; freeze the leader, then a follower: `docs/labs.md`,
/// "Lab C"): acts 1-2 are lab B's, act 3 scales to three replicas and records the healthy
/// baseline, act 4 investigates the leader and the followers, act 5 freezes the leader under
/// Fail, act 6 a follower under Ignore, act 7 scales back to the original count, act 8 is the
/// report.
pub static LAB_C: &[ActSpec] = &[
    SHARED_B[0],
    SHARED_B[1],
    ActSpec {
        number: 3,
        role: Role::Observe,
        title: t(
            "3 レプリカと正常時の基準",
            "three replicas, healthy baseline",
        ),
        inputs: &[InputFile::HaPlan],
        metrics: true,
        audit: true,
        test_name: "act_3_three_ready_replicas_and_a_parallel_baseline",
        steps: &[
            // The healer keeps the three replicas for acts 3-7 (a student writes three input
            // files between them), then puts the original count back.
            Step::Fault(Fault::Scale {
                to: crate::inputs::HaReplicas::VALUE,
                restore_after_sec: Some(1800),
            }),
            Step::Baseline { waves: 2, size: 6 },
        ],
        grader: Grader::CAct3,
    },
    ActSpec {
        number: 4,
        role: Role::Observe,
        title: t("リーダーとフォロワーの調査", "leader and followers"),
        inputs: &[InputFile::FreezePlanC],
        metrics: false,
        audit: false,
        test_name: "act_4_investigation_finds_the_leader_and_the_followers",
        steps: &[Step::Investigate {
            target: Target::Leader,
        }],
        grader: Grader::CAct4,
    },
    ActSpec {
        number: 5,
        role: Role::Observe,
        title: t("リーダーの凍結 (Fail)", "leader frozen under Fail"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_5_leader_freeze_under_fail",
        steps: &[
            Step::Investigate {
                target: Target::Leader,
            },
            Step::Fault(Fault::Freeze {
                target: Target::Leader,
                resume_after_sec: None,
            }),
            Step::Traffic { waves: 3, size: 6 },
            Step::Samples,
            Step::AwaitDeny,
            Step::Settle,
        ],
        grader: Grader::CFreeze,
    },
    ActSpec {
        number: 6,
        role: Role::Observe,
        title: t("フォロワーの凍結 (Ignore)", "follower frozen under Ignore"),
        inputs: &[InputFile::PolicyIgnore],
        metrics: true,
        audit: true,
        test_name: "act_6_follower_freeze_under_ignore",
        steps: &[
            Step::SwitchPolicy {
                to: FailurePolicy::Ignore,
            },
            Step::Investigate {
                target: Target::Follower,
            },
            Step::Fault(Fault::Freeze {
                target: Target::Follower,
                resume_after_sec: Some(SHORT_FREEZE_SEC),
            }),
            Step::Traffic { waves: 2, size: 9 },
            Step::Samples,
            Step::AwaitDeny,
            Step::Settle,
        ],
        grader: Grader::CFreeze,
    },
    ActSpec {
        number: 7,
        role: Role::Observe,
        title: t("元のレプリカ数への回復", "scale back and recovery"),
        inputs: &[InputFile::RecoveryC],
        metrics: true,
        audit: true,
        test_name: "act_7_scale_back_recovers_an_explicit_deny",
        steps: &[Step::Restore, Step::AwaitDeny],
        grader: Grader::CAct7,
    },
    ActSpec {
        number: 8,
        role: Role::Report,
        title: t("報告", "report"),
        inputs: &[InputFile::ReportC],
        metrics: false,
        audit: false,
        test_name: "act_8_report_agrees_with_the_evidence",
        steps: &[Step::Report],
        grader: Grader::CAct8,
    },
];

/// The labs in the order `lab run` and the tests name them.
pub const LABS: [Lab; 3] = [Lab::A, Lab::B, Lab::C];

/// One lab of the registry: what it disturbs, its acts and its words.
#[derive(Clone, Copy, Debug)]
pub struct LabSpec {
    /// The lab.
    pub lab: Lab,
    /// What the lab disturbs, one clause in both languages: the `--help` about line and the
    /// `--lab` help of the student tool are made of these (`lab/src/help.rs`), and README's lab
    /// list opens each lab with the English one (`xtask/tests/tidy.rs` checks it).
    pub summary: Text,
    /// Its acts, in order.
    pub acts: &'static [ActSpec],
    /// The words of its report page (`report::render`); what the page draws (the fault
    /// timelines, the observations, the key facts) is read from the acts' fault steps.
    pub page: Page,
    /// What a `webhook-timeout` outcome means in this lab (`explain`'s lab line).
    pub webhook_timeout: Text,
    /// Whether `cargo xtask matrix --baseline DIR` requires a run of this lab in `DIR` (labs A
    /// and B: every baseline has had them since the matrix began); a lab without it joins the
    /// baseline from the runs that have it.
    pub in_every_baseline: bool,
}

/// Where a request of the report's condition table is in an act's `facts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// The request record at a JSON pointer into the act's `facts`.
    At {
        /// The act.
        act: u8,
        /// The JSON pointer, e.g. `/target_bad`.
        ptr: &'static str,
    },
    /// The first request of a list in the act's `facts` whose outcome is `outcome`; when none
    /// is, the list's first if `or_first`, else no request.
    First {
        /// The act.
        act: u8,
        /// The JSON pointer of the list, e.g. `/bad`.
        list: &'static str,
        /// The outcome looked for.
        outcome: Outcome,
        /// Whether the list's first request stands in when none has `outcome`.
        or_first: bool,
    },
}

/// One row of the report's condition table: a condition and the requests observed under it,
/// target namespace good and bad, then control (`None`: no such request under it).
#[derive(Clone, Copy, Debug)]
pub struct Condition {
    /// The condition, in both languages (with the act it is observed in).
    pub name: Text,
    /// Target good, target bad, control.
    pub requests: [Option<Request>; 3],
}

/// A lab's report page words, declared beside its acts (the page's shared words are
/// `report/text.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Page {
    /// The page's title (`<title>` and `<h1>`).
    pub title: Text,
    /// The key facts columns' headers (acts 5 and 6, `report::key_facts`).
    pub key_fact_headers: [Text; 3],
    /// The three phases after the healthy baseline in the observations table (acts 5, 6, 7).
    pub phases: [Text; 3],
    /// The condition table's rows, in order.
    pub conditions: &'static [Condition],
}

/// The request at `ptr` of act `act`'s facts.
const fn at(act: u8, ptr: &'static str) -> Option<Request> {
    Some(Request::At { act, ptr })
}

/// A condition row.
const fn cond(name: Text, requests: [Option<Request>; 3]) -> Condition {
    Condition { name, requests }
}

/// A wave's cell (lab C): its first request with the outcome a request meeting the frozen
/// replica has, else its first; every request is in the timeline.
const fn met(act: u8, outcome: Outcome) -> Option<Request> {
    Some(Request::First {
        act,
        list: "/bad",
        outcome,
        or_first: true,
    })
}

// The conditions labs B and C share (the freezes' policy switch, resumes and recovery).
const COND_RESUMED_FAIL: Condition = cond(
    t(
        "再開後の最初の拒否、Fail (act 5)",
        "first deny after resume, Fail (act 5)",
    ),
    [None, at(5, "/first_explicit_deny"), None],
);
const COND_HEALTHY_IGNORE: Condition = cond(
    t(
        "正常時、failurePolicy Ignore (act 6)",
        "healthy, failurePolicy Ignore (act 6)",
    ),
    [None, at(6, "/healthy_bad"), None],
);
const COND_RESUMED_IGNORE: Condition = cond(
    t(
        "再開後の最初の拒否、Ignore (act 6)",
        "first deny after resume, Ignore (act 6)",
    ),
    [None, at(6, "/first_explicit_deny"), None],
);
const COND_RECOVERED: Condition = cond(
    t("復旧後 (act 7)", "recovered (act 7)"),
    [None, at(7, "/healthy_bad"), None],
);

/// Lab A's page: healthy (act 3), scaled to 0 (act 5), the first explicit deny of the recovery
/// (act 6: the first `explicit-deny` of its probes), server-side dry-run (act 7).
const PAGE_A: Page = Page {
    title: t(
        "ラボA 記録: アドミッションコントローラーを0にスケール",
        "Lab A record: the admission controller scaled to 0",
    ),
    // The page of one lab; the nightly summary and the index page keep the combined English
    // headers of `report::KEY_FACT_HEADERS`.
    key_fact_headers: [
        t("スケールダウン中", "during the scale-down"),
        t("Lease の引き継ぎ", "Lease takeover"),
        t(
            "復旧後の最初の明示的な拒否",
            "first explicit deny after recovery",
        ),
    ],
    phases: [
        t("0にスケール後 (act 5)", "scaled to 0 (act 5)"),
        t("復旧 (act 6)", "recovery (act 6)"),
        t("サーバー側 dry-run (act 7)", "server-side dry-run (act 7)"),
    ],
    conditions: &[
        cond(
            t("正常時 (act 3)", "healthy (act 3)"),
            [at(3, "/good"), at(3, "/bad"), None],
        ),
        cond(
            t("0 にスケールした後 (act 5)", "scaled to 0 (act 5)"),
            [None, at(5, "/target_bad"), at(5, "/control")],
        ),
        cond(
            t(
                "復旧中の最初の明示的な拒否 (act 6)",
                "recovery: first explicit deny (act 6)",
            ),
            [
                None,
                Some(Request::First {
                    act: 6,
                    list: "/deny_probes",
                    outcome: Outcome::ExplicitDeny,
                    or_first: false,
                }),
                None,
            ],
        ),
        cond(
            t("サーバー側 dry-run (act 7)", "server-side dry-run (act 7)"),
            [at(7, "/good"), at(7, "/bad"), None],
        ),
    ],
};

/// Lab B's page: healthy (act 3), frozen under Fail (act 5), the first deny after its resume,
/// healthy and frozen under Ignore (act 6), its first deny after resume, recovered (act 7).
const PAGE_B: Page = Page {
    title: t(
        "ラボB 記録: アドミッションコントローラーのプロセスを凍結",
        "Lab B record: the admission controller process frozen",
    ),
    key_fact_headers: [
        t(
            "凍結中 (failurePolicy Fail)",
            "freeze under failurePolicy Fail",
        ),
        t(
            "凍結中 (failurePolicy Ignore)",
            "freeze under failurePolicy Ignore",
        ),
        t(
            "再開後の最初の明示的な拒否",
            "first explicit deny after resume",
        ),
    ],
    phases: [
        t("Fail で凍結中 (act 5)", "frozen, Fail (act 5)"),
        t("Ignore で凍結中 (act 6)", "frozen, Ignore (act 6)"),
        t("復旧後 (act 7)", "recovered (act 7)"),
    ],
    conditions: &[
        cond(
            t(
                "正常時、failurePolicy Fail (act 3)",
                "healthy, failurePolicy Fail (act 3)",
            ),
            [at(3, "/good"), at(3, "/bad"), None],
        ),
        cond(
            t(
                "凍結中、failurePolicy Fail (act 5)",
                "frozen, failurePolicy Fail (act 5)",
            ),
            [
                at(5, "/target_good"),
                at(5, "/target_bad"),
                at(5, "/control"),
            ],
        ),
        COND_RESUMED_FAIL,
        COND_HEALTHY_IGNORE,
        cond(
            t(
                "凍結中、failurePolicy Ignore (act 6)",
                "frozen, failurePolicy Ignore (act 6)",
            ),
            [
                at(6, "/target_good"),
                at(6, "/target_bad"),
                at(6, "/control"),
            ],
        ),
        COND_RESUMED_IGNORE,
        COND_RECOVERED,
    ],
};

/// Lab C's page: lab B's conditions with three replicas, the leader frozen under Fail and a
/// follower under Ignore (a wave's cell: [`met`]).
const PAGE_C: Page = Page {
    title: t(
        "ラボC 記録: 3 レプリカのアドミッションコントローラー",
        "Lab C record: three admission-controller replicas",
    ),
    key_fact_headers: [
        t(
            "リーダー凍結中 (failurePolicy Fail)",
            "leader frozen, failurePolicy Fail",
        ),
        t("Lease と元のリーダー", "the Lease and the former leader"),
        t(
            "フォロワー凍結中 (failurePolicy Ignore)",
            "follower frozen, failurePolicy Ignore",
        ),
    ],
    phases: [
        t(
            "リーダーを Fail で凍結中 (act 5)",
            "leader frozen, Fail (act 5)",
        ),
        t(
            "フォロワーを Ignore で凍結中 (act 6)",
            "follower frozen, Ignore (act 6)",
        ),
        t(
            "元のレプリカ数に戻した後 (act 7)",
            "back to the original replicas (act 7)",
        ),
    ],
    conditions: &[
        cond(
            t(
                "正常、3 レプリカ、failurePolicy Fail (act 3)",
                "healthy, three replicas, failurePolicy Fail (act 3)",
            ),
            [at(3, "/good"), at(3, "/bad/0"), at(3, "/control")],
        ),
        cond(
            t(
                "リーダー凍結中、Fail (act 5; 波のうちタイムアウトした最初のリクエスト、なければ最初のリクエスト)",
                "leader frozen, Fail (act 5; the waves' first request that timed out, else their first)",
            ),
            [None, met(5, Outcome::WebhookTimeout), at(5, "/control/0")],
        ),
        COND_RESUMED_FAIL,
        COND_HEALTHY_IGNORE,
        cond(
            t(
                "フォロワー凍結中、Ignore (act 6; 波のうち保存された最初のリクエスト、なければ最初のリクエスト)",
                "follower frozen, Ignore (act 6; the waves' first request stored, else their first)",
            ),
            [None, met(6, Outcome::Stored), at(6, "/control/0")],
        ),
        COND_RESUMED_IGNORE,
        COND_RECOVERED,
    ],
};

/// Every lab, in the order of [`LABS`] (a unit test keeps the two in step).
pub static LAB_SPECS: [LabSpec; 3] = [
    LabSpec {
        lab: Lab::A,
        summary: t(
            "スケールダウンで webhook の登録が消える",
            "scale-down: the admission controller scaled to 0, its webhook registration disappears",
        ),
        acts: LAB_A,
        page: PAGE_A,
        webhook_timeout: t(
            "webhookの呼び出しが timeoutSeconds で打ち切られました。ラボAでは登録が残っているのにコントローラーが応答しない状態を示し、想定の経過 (登録が消える) とは違います。",
            "The webhook call was cut off at timeoutSeconds. In lab A this means the registration was still there while the controller did not answer, which is not the expected path (the registration disappears).",
        ),
        in_every_baseline: true,
    },
    LabSpec {
        lab: Lab::B,
        summary: t(
            "コントローラーのプロセスを凍結し、failurePolicy Fail と Ignore を比べる",
            "freeze: the one admission-controller process frozen, failurePolicy Fail against Ignore",
        ),
        acts: LAB_B,
        page: PAGE_B,
        webhook_timeout: t(
            "webhookの呼び出しが timeoutSeconds で打ち切られました。ラボBでは凍結したプロセスが応答しないためで、failurePolicy Fail なので拒否されました (ポリシーの判定ではありません)。",
            "The webhook call was cut off at timeoutSeconds. In lab B the frozen process cannot answer; under failurePolicy Fail the request is rejected (not a policy decision).",
        ),
        in_every_baseline: true,
    },
    LabSpec {
        lab: Lab::C,
        summary: t(
            "3 レプリカでリーダー、次にフォロワーを凍結",
            "three replicas: the leader frozen under Fail, then a follower under Ignore",
        ),
        acts: LAB_C,
        page: PAGE_C,
        webhook_timeout: t(
            "webhookの呼び出しが timeoutSeconds で打ち切られました。ラボCでは、APIサーバーが凍結したレプリカのエンドポイントを選んだ呼び出しです。failurePolicy Fail なら拒否、Ignore なら検証なしで受け入れられます (ポリシーの判定ではありません)。",
            "The webhook call was cut off at timeoutSeconds. In lab C it is a call the API server sent to the frozen replica's endpoint: rejected under failurePolicy Fail, admitted unvalidated under Ignore (not a policy decision).",
        ),
        in_every_baseline: false,
    },
];

/// The registry's entry of `lab`.
pub fn lab_spec(lab: Lab) -> &'static LabSpec {
    LAB_SPECS
        .iter()
        .find(|s| s.lab == lab)
        .expect("every lab is in LAB_SPECS (unit test)")
}

/// The words of `lab`'s report page ([`LabSpec::page`]).
pub fn page(lab: Lab) -> &'static Page {
    &lab_spec(lab).page
}

/// The freezes `lab`'s acts put on the admission controller ([`Fault::Freeze`]), as (act,
/// target), in act order.
pub fn freezes(lab: Lab) -> Vec<(u8, Target)> {
    numbers(lab)
        .filter_map(|n| match fault(lab, n) {
            Some(Fault::Freeze { target, .. }) => Some((n, target)),
            _ => None,
        })
        .collect()
}

/// The act of `lab` that scales the admission controller to 0 ([`Fault::Scale`] to 0), if any.
pub fn scale_down(lab: Lab) -> Option<u8> {
    numbers(lab).find(|n| matches!(fault(lab, *n), Some(Fault::Scale { to: 0, .. })))
}

/// How many replicas of the admission controller `lab`'s acts run with once scaled: the largest
/// [`Fault::Scale`] `to` of its acts, at least 1 (the chart's one replica: labs A and B; lab C
/// scales to [`crate::inputs::HaReplicas`]).
pub fn replicas(lab: Lab) -> u32 {
    numbers(lab)
        .filter_map(|n| match fault(lab, n) {
            Some(Fault::Scale { to, .. }) => Some(to),
            _ => None,
        })
        .fold(1, u32::max)
}

/// Whether act `act` of `lab` switches the policy in place ([`Step::SwitchPolicy`]): its facts
/// are a policy switch around its run (lab B's and lab C's act 6).
pub fn switches_policy(lab: Lab, act: u8) -> bool {
    (steps(lab, act).iter()).any(|s| matches!(s, Step::SwitchPolicy { .. }))
}

/// What `lab` disturbs ([`LabSpec::summary`]).
pub fn summary(lab: Lab) -> Text {
    lab_spec(lab).summary
}

/// The acts of `lab`, in order (numbers `1..=count(lab)`).
pub fn of(lab: Lab) -> &'static [ActSpec] {
    lab_spec(lab).acts
}

/// Act `act` of `lab`, `None` when the lab has no such act.
pub fn spec(lab: Lab, act: u8) -> Option<&'static ActSpec> {
    of(lab).iter().find(|s| s.number == act)
}

/// The steps of act `act` of `lab` (empty when the lab has no such act).
pub fn steps(lab: Lab, act: u8) -> &'static [Step] {
    spec(lab, act).map_or(&[], |s| s.steps)
}

/// The fault act `act` of `lab` puts on the admission controller ([`Step::Fault`]), if any.
pub fn fault(lab: Lab, act: u8) -> Option<Fault> {
    steps(lab, act).iter().find_map(|s| match s {
        Step::Fault(f) => Some(*f),
        _ => None,
    })
}

/// The requests act `act` of `lab` sends while its fault lasts ([`Step::Traffic`]), as
/// `(waves, size)`, if any.
pub fn traffic(lab: Lab, act: u8) -> Option<(u32, u32)> {
    steps(lab, act).iter().find_map(|s| match s {
        Step::Traffic { waves, size } => Some((*waves, *size)),
        _ => None,
    })
}

/// The healthy requests of act `act` of `lab` ([`Step::Baseline`]), as `(waves, size)`, if any.
pub fn baseline(lab: Lab, act: u8) -> Option<(u32, u32)> {
    steps(lab, act).iter().find_map(|s| match s {
        Step::Baseline { waves, size } => Some((*waves, *size)),
        _ => None,
    })
}

/// How many acts `lab` has (the last act is the report, which grades every act again).
pub fn count(lab: Lab) -> u8 {
    of(lab).len() as u8
}

/// The most acts any lab has: the range `act N` and `grade N` accept before the lab is known,
/// and how many `evidence/NN.json` a work directory may hold.
pub fn max_count() -> u8 {
    LABS.into_iter().map(count).max().unwrap_or(0)
}

/// The act numbers of `lab`, in order.
pub fn numbers(lab: Lab) -> impl Iterator<Item = u8> {
    of(lab).iter().map(|s| s.number)
}

/// Whether `act` is the report of `lab` ([`Role::Report`]; after it every act is graded again).
/// The registry's own test keeps the report the lab's last act.
pub fn is_report(lab: Lab, act: u8) -> bool {
    spec(lab, act).is_some_and(|s| s.role == Role::Report)
}

/// The act that reads `file` in `lab`, if any.
pub fn reading(lab: Lab, file: InputFile) -> Option<u8> {
    of(lab)
        .iter()
        .find(|s| s.inputs.contains(&file))
        .map(|s| s.number)
}

/// The input files as the registry knows them (each is listed by the act that reads it); defined
/// here, not in `inputs.rs`, so that the file formats need not know the acts.
impl InputFile {
    /// The lab's input files in act order (each act's [`ActSpec::inputs`]).
    pub fn all(lab: Lab) -> Vec<InputFile> {
        of(lab)
            .iter()
            .flat_map(|s| s.inputs.iter().copied())
            .collect()
    }

    /// The input of `lab` whose file name (or name without `.json`) is `name`; `None` if the lab has
    /// no such input. Only the final path component of `name` counts (`/w/policy.json` works).
    pub fn from_name(lab: Lab, name: &str) -> Option<InputFile> {
        let base = std::path::Path::new(name).file_name()?.to_str()?;
        let base = base.strip_suffix(".json").unwrap_or(base);
        InputFile::all(lab)
            .into_iter()
            .find(|f| f.file_name().strip_suffix(".json") == Some(base))
    }

    /// The act that reads this input (an input several labs read
    /// is read by the same act in each).
    pub fn act(self) -> u8 {
        [Lab::B, Lab::A, Lab::C]
            .into_iter()
            .find_map(|lab| reading(lab, self))
            .expect("every input file is read by an act of the registry")
    }
}

/// Refuses an act number `lab` does not have.
///
/// Errors: [`LabError::Usage`] naming the lab's range.
pub fn check(lab: Lab, act: u8) -> Result<&'static ActSpec, LabError> {
    spec(lab, act).ok_or_else(|| {
        LabError::Usage(format!(
            "act must be 1 to {} in lab {}, got {act}",
            count(lab),
            lab.as_str()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lab_numbers_its_acts_one_to_count_in_order() {
        for lab in LABS {
            let numbers: Vec<u8> = numbers(lab).collect();
            let expected: Vec<u8> = (1..=count(lab)).collect();
            assert_eq!(numbers, expected, "lab {}", lab.as_str());
            let names: std::collections::BTreeSet<_> =
                of(lab).iter().map(|s| s.test_name).collect();
            assert_eq!(names.len(), of(lab).len(), "test names unique");
            for s in of(lab) {
                assert!(
                    s.test_name.starts_with(&format!("act_{}_", s.number)),
                    "{} starts with act_{}_",
                    s.test_name,
                    s.number
                );
            }
        }
    }

    #[test]
    fn every_input_file_is_read_by_exactly_one_act() {
        for lab in LABS {
            for f in InputFile::all(lab) {
                let n = of(lab).iter().filter(|s| s.inputs.contains(&f)).count();
                assert_eq!(n, 1, "{} in lab {}", f.file_name(), lab.as_str());
            }
        }
        assert!(check(Lab::B, count(Lab::B) + 1).is_err());
        assert!(check(Lab::B, 0).is_err());
    }

    #[test]
    fn the_steps_are_the_spec_and_the_rules() {
        for lab in LABS {
            for a in of(lab) {
                assert!(!a.steps.is_empty(), "lab {} act {}", lab.as_str(), a.number);
                // The report act is the one step `Report`, and only it.
                assert_eq!(
                    a.role == Role::Report,
                    a.steps == [Step::Report],
                    "lab {} act {}",
                    lab.as_str(),
                    a.number
                );
                // Traffic is sent only while a fault lasts.
                if traffic(lab, a.number).is_some() {
                    assert!(fault(lab, a.number).is_some());
                }
            }
        }
        // Lab B is the one-replica case of lab C's freezes: the same steps but for the target
        // and the waves.
        let kinds = |lab, act| -> Vec<std::mem::Discriminant<Step>> {
            steps(lab, act).iter().map(std::mem::discriminant).collect()
        };
        let b6 = kinds(Lab::B, 6);
        let mut c6 = kinds(Lab::C, 6);
        c6.retain(|k| *k != std::mem::discriminant(&Step::Samples));
        assert_eq!(b6, c6);
        // What the graders hold (`rules::c`) is what the runners are told to send.
        use crate::rules::c as rc;
        assert_eq!(
            traffic(Lab::C, 5),
            Some((rc::LEADER_WAVES, rc::LEADER_WAVE_SIZE))
        );
        assert_eq!(
            traffic(Lab::C, 6),
            Some((rc::FOLLOWER_WAVES, rc::FOLLOWER_WAVE_SIZE))
        );
        // The leader's freeze sends what the grader requires at least.
        let (waves, size) = traffic(Lab::C, 5).expect("lab C's act 5 sends waves");
        assert!(waves * size >= rc::MIN_FREEZE_REQUESTS);
        assert_eq!(
            fault(Lab::B, 6),
            Some(Fault::Freeze {
                target: Target::One,
                resume_after_sec: Some(SHORT_FREEZE_SEC)
            })
        );
        assert_eq!(fault(Lab::B, 7), None);
        assert!(matches!(
            fault(Lab::A, 5),
            Some(Fault::Scale {
                to: 0,
                restore_after_sec: None
            })
        ));
    }

    #[test]
    fn lab_specs_are_the_labs_in_order() {
        let specs: Vec<Lab> = LAB_SPECS.iter().map(|s| s.lab).collect();
        assert_eq!(specs, LABS.to_vec());
        for s in &LAB_SPECS {
            assert!(!s.summary.en.is_empty() && !s.summary.ja.is_empty());
        }
    }

    #[test]
    fn replicas_are_the_largest_scale_of_a_labs_acts() {
        // Lab A scales to 0 and back: one replica; lab B never scales; lab C's act 3 scales up.
        assert_eq!(replicas(Lab::A), 1);
        assert_eq!(replicas(Lab::B), 1);
        assert_eq!(replicas(Lab::C), crate::inputs::HaReplicas::VALUE);
        assert!(
            matches!(fault(Lab::C, 3), Some(Fault::Scale { to, .. }) if to == replicas(Lab::C))
        );
    }

    #[test]
    fn every_lab_has_one_report_and_it_is_the_last_act() {
        for lab in LABS {
            let reports: Vec<u8> = of(lab)
                .iter()
                .filter(|s| s.role == Role::Report)
                .map(|s| s.number)
                .collect();
            assert_eq!(reports, vec![count(lab)], "lab {}", lab.as_str());
            assert!(is_report(lab, count(lab)) && !is_report(lab, 1));
            assert!(!is_report(lab, count(lab) + 1));
        }
    }

    #[test]
    fn lab_c_reads_its_own_plans_recovery_and_report() {
        assert_eq!(spec(Lab::C, 3).unwrap().inputs, &[InputFile::HaPlan]);
        assert_eq!(spec(Lab::C, 6).unwrap().inputs, &[InputFile::PolicyIgnore]);
        assert_eq!(InputFile::RecoveryC.act(), 7);
        assert_eq!(InputFile::ReportC.act(), 8);
        assert_eq!(
            InputFile::from_name(Lab::C, "report.json"),
            Some(InputFile::ReportC)
        );
        assert_eq!(InputFile::HaPlan.act(), 3);
        assert_eq!(InputFile::FreezePlanC.act(), 4);
        assert_eq!(
            InputFile::from_name(Lab::C, "freeze-plan.json"),
            Some(InputFile::FreezePlanC)
        );
        assert_eq!(
            InputFile::from_name(Lab::B, "freeze-plan.json"),
            Some(InputFile::FreezePlan)
        );
    }
}
