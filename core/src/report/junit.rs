//! JUnit XML of a lab run (for CI), built with `quick-junit`: one test suite per lab, one test case
//! per act (`lab b act 5`) and one per grade (`lab b grade 5`).
//!
//! An act's case fails when the act failed (`act_errors`, the runner's error text) or its evidence
//! is `interrupted`; it is skipped when no evidence exists (an earlier act failed); its time is the
//! act's own `finished_at - started_at` from the evidence (seconds in the XML). A grade's case fails
//! with one line per finding (`[code] file path: meaning (detail)`, English) and records the number
//! of checks as assertions.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

use crate::evidence::Lab;
use crate::grade::{Findings, GradeInput};
use crate::text::Lang;

fn failure(message: String, description: Option<String>) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
    s.set_message(message);
    if let Some(d) = description {
        s.set_description(d);
    }
    s
}

/// The test suite `lab-<a|b>` of one lab run: a case per act of `grades`, then a case per grade,
/// in `grades`' order (pure).
///
/// `grades`: the tool passes [`crate::grade::grade_all`] of the work directory, so every act of
/// the registry ([`crate::acts`]) has its two cases (an act not run yet: skipped, and its grade
/// fails with `evidence-missing`); a test of a recording passes the grades of the acts it has.
/// `act_errors`: act number → the error the runner saw (an act that failed before writing
/// evidence); key 0 is the lab's setup (e.g. `cluster up`) and adds a failing `lab X setup` case.
pub fn suite(
    lab: Lab,
    input: &GradeInput,
    grades: &[Findings],
    act_errors: &BTreeMap<u8, String>,
) -> TestSuite {
    let l = lab.as_str();
    let mut suite = TestSuite::new(format!("lab-{l}"));
    // A case `lab <l> <name>` of the class `kca-webhook-lab.lab-<l><class>`.
    let test_case = |name: String, status, class: &str| {
        let mut case = TestCase::new(format!("lab {l} {name}"), status);
        case.set_classname(format!("kca-webhook-lab.lab-{l}{class}"));
        case
    };
    if let Some(e) = act_errors.get(&0) {
        let failed = failure("the lab did not get to its acts".into(), Some(e.clone()));
        suite.add_test_case(test_case("setup".into(), failed, ""));
    }
    for act in grades.iter().map(|g| g.act) {
        let doc = input.evidence.get(&act);
        let value = doc.and_then(|d| d.as_ref().ok()).map(|d| d.value());
        let status = match (act_errors.get(&act), doc.map(Result::as_ref)) {
            (Some(e), _) => failure(format!("act {act} failed"), Some(e.clone())),
            (None, None) => {
                let mut s = TestCaseStatus::skipped();
                s.set_message("no evidence: the act did not run");
                s
            }
            (None, Some(Err(e))) => failure("evidence unreadable".into(), Some(e.clone())),
            (None, Some(Ok(d))) if d.value()["status"] == "completed" => TestCaseStatus::success(),
            (None, Some(Ok(d))) => failure(
                format!("act {act} {}", d.value()["status"].as_str().unwrap_or("?")),
                d.value()["interruption"].as_str().map(str::to_owned),
            ),
        };
        let mut case = test_case(format!("act {act}"), status, ".acts");
        if let Some(v) = value {
            let t = |ptr: &str| super::timeline::ms_at(v, ptr);
            if let (Some(a), Some(b)) = (t("/started_at"), t("/finished_at"))
                && b >= a
            {
                case.set_time(Duration::from_millis((b - a) as u64));
            }
        }
        suite.add_test_case(case);
    }
    for g in grades {
        let lines: Vec<String> = g.findings.iter().map(|f| f.message(Lang::En)).collect();
        let status = match g {
            g if g.passed() => TestCaseStatus::success(),
            g if g.findings.is_empty() => failure("no check ran".into(), None),
            _ => failure(
                format!("{} finding(s)", lines.len()),
                Some(lines.join("\n")),
            ),
        };
        let mut case = test_case(format!("grade {}", g.act), status, ".grades");
        case.set_assertions(g.checks as usize);
        suite.add_test_case(case);
    }
    suite
}
