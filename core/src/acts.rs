//! The acts registry: the one list of each lab's acts, in order. Everything that needs to know
//! which acts exist reads it — the CLI's `act N` range and `grade N` parsing (`lab`'s `main.rs`),
//! the act dispatch (`lab::labs::run_act`, which finds each act's runner beside its body in
//! `labs/{common,a,b}.rs`), the grader dispatch ([`crate::grade::grade`]), whether the
//! audit and metrics rules apply ([`crate::grade`]'s `audit.rs`, `metrics.rs`), the input files
//! each act reads ([`crate::inputs::InputFile::act`]), `cargo xtask lab run`'s loop and its
//! reference inputs, the ordered cluster tests (`tests/tests/lab_{a,b}.rs`) and the fixture
//! generator (`lab/tests/common/fixtures.rs`).
//!
//! Adding an act: one [`ActSpec`] line in [`LAB_A`] or [`LAB_B`], its runner (an `async fn` in
//! `lab/src/labs/a.rs` or `b.rs`, listed in that file's `RUNNERS`), its facts type (`facts.rs`), its grader (`grade/a.rs` or
//! `grade/b.rs`) and its fixture (`lab/tests/common/fixtures.rs`); nothing else names act
//! numbers or counts (`xtask/tests/tidy.rs` fails on a literal act count or range elsewhere).
//! The act numbers are the spec's (`docs/labs.md`, "Lab B" and "Lab A" tables).

use crate::error::LabError;
use crate::evidence::Lab;
use crate::grade::{self, G};
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
    /// Grades the act's evidence (pure; `grade/`).
    pub(crate) grade: fn(&mut G),
}

impl std::fmt::Debug for ActSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActSpec")
            .field("number", &self.number)
            .field("role", &self.role)
            .field("title", &self.title.en)
            .field("inputs", &self.inputs)
            .field("test_name", &self.test_name)
            .finish_non_exhaustive()
    }
}

/// Acts 1-3, the same in both labs (`lab/src/labs/common.rs`); only the test names differ.
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
                grade: grade::act1,
            },
            ActSpec {
                number: 2,
                role: Role::Observe,
                title: t("ポリシーの適用", "policy"),
                inputs: &[InputFile::Policy],
                metrics: false,
                audit: false,
                test_name: $act2_test,
                grade: grade::act2,
            },
            ActSpec {
                number: 3,
                role: Role::Observe,
                title: t("正常時の基準", "healthy baseline"),
                inputs: &[],
                metrics: true,
                audit: true,
                test_name: "act_3_baseline_good_stored_bad_denied",
                grade: grade::act3,
            },
        ]
    };
}

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
        grade: grade::b::act4,
    },
    ActSpec {
        number: 5,
        role: Role::Observe,
        title: t("Fail での凍結", "freeze under Fail"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_5_fail_freeze_times_out_matching_requests",
        grade: grade::b::act5,
    },
    ActSpec {
        number: 6,
        role: Role::Observe,
        title: t("Ignore での凍結", "freeze under Ignore"),
        inputs: &[InputFile::PolicyIgnore],
        metrics: true,
        audit: true,
        test_name: "act_6_ignore_freeze_stores_unvalidated_requests",
        grade: grade::b::act6,
    },
    ActSpec {
        number: 7,
        role: Role::Observe,
        title: t("回復の確認", "recovery"),
        inputs: &[InputFile::Recovery],
        metrics: true,
        audit: true,
        test_name: "act_7_recovery_is_an_explicit_deny",
        grade: grade::b::act7,
    },
    ActSpec {
        number: 8,
        role: Role::Report,
        title: t("報告", "report"),
        inputs: &[InputFile::ReportB],
        metrics: false,
        audit: false,
        test_name: "act_8_report_agrees_with_the_evidence",
        grade: grade::b::act8,
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
        grade: grade::a::act4,
    },
    ActSpec {
        number: 5,
        role: Role::Observe,
        title: t("0 レプリカへのスケール", "scale to zero"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_5_scale_to_zero_removes_the_registration_and_admits_the_request",
        grade: grade::a::act5,
    },
    ActSpec {
        number: 6,
        role: Role::Observe,
        title: t("回復の時系列", "recovery timeline"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_6_recovery_timeline_lease_then_registration_then_deny",
        grade: grade::a::act6,
    },
    ActSpec {
        number: 7,
        role: Role::Observe,
        title: t("サーバー側 dry-run", "server-side dry-run"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_7_server_dry_run_validates_without_storing",
        grade: grade::a::act7,
    },
    ActSpec {
        number: 8,
        role: Role::Report,
        title: t("報告", "report"),
        inputs: &[InputFile::ReportA],
        metrics: false,
        audit: false,
        test_name: "act_8_report_agrees_with_the_evidence",
        grade: grade::a::act8,
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
        grade: grade::c::act3,
    },
    ActSpec {
        number: 4,
        role: Role::Observe,
        title: t("リーダーとフォロワーの調査", "leader and followers"),
        inputs: &[InputFile::FreezePlanC],
        metrics: false,
        audit: false,
        test_name: "act_4_investigation_finds_the_leader_and_the_followers",
        grade: grade::c::act4,
    },
    ActSpec {
        number: 5,
        role: Role::Observe,
        title: t("リーダーの凍結 (Fail)", "leader frozen under Fail"),
        inputs: &[],
        metrics: true,
        audit: true,
        test_name: "act_5_leader_freeze_under_fail",
        grade: grade::c::act5,
    },
    ActSpec {
        number: 6,
        role: Role::Observe,
        title: t("フォロワーの凍結 (Ignore)", "follower frozen under Ignore"),
        inputs: &[InputFile::PolicyIgnore],
        metrics: true,
        audit: true,
        test_name: "act_6_follower_freeze_under_ignore",
        grade: grade::c::act6,
    },
    ActSpec {
        number: 7,
        role: Role::Observe,
        title: t("元のレプリカ数への回復", "scale back and recovery"),
        inputs: &[InputFile::RecoveryC],
        metrics: true,
        audit: true,
        test_name: "act_7_scale_back_recovers_an_explicit_deny",
        grade: grade::c::act7,
    },
    ActSpec {
        number: 8,
        role: Role::Report,
        title: t("報告", "report"),
        inputs: &[InputFile::ReportC],
        metrics: false,
        audit: false,
        test_name: "act_8_report_agrees_with_the_evidence",
        grade: grade::c::act8,
    },
];

/// The labs in the order `lab run` and the tests name them.
pub const LABS: [Lab; 3] = [Lab::A, Lab::B, Lab::C];

/// The acts of `lab`, in order (numbers `1..=count(lab)`).
pub fn of(lab: Lab) -> &'static [ActSpec] {
    match lab {
        Lab::A => LAB_A,
        Lab::B => LAB_B,
        Lab::C => LAB_C,
    }
}

/// Act `act` of `lab`, `None` when the lab has no such act.
pub fn spec(lab: Lab, act: u8) -> Option<&'static ActSpec> {
    of(lab).iter().find(|s| s.number == act)
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
