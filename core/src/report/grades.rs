//! `grade N|all -o json|junit`: the grades of a work directory as a document for scripts and CI,
//! pure. [`GradeReport`] (`-o json`, schema [`schema`], published as
//! `lab/schemas/grade.schema.json`) holds per act its status, how many checks ran, and each
//! finding with its code, file and JSON path (the finding's subject split as the report page
//! does), its particulars and its meaning in the chosen language; `-o junit` is the lab run's own
//! JUnit suite ([`super::junit::suite`]) of the same grades, serialised by `quick-junit`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::evidence::Lab;
use crate::grade::{Code, Finding, Findings, GradeInput};
use crate::text::Lang;

/// The format name of [`GradeReport`].
pub const FORMAT: &str = "kca-webhook-lab/grade/v1";

/// An act's grade in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ActStatus {
    /// No finding and at least one check ran.
    Passed,
    /// At least one finding (or no check ran).
    Failed,
    /// The act's evidence file is not there (the act did not run): a finding
    /// `evidence-missing`, counted as failed.
    NotRun,
}

/// One finding (or note) of an act.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeFinding {
    /// The finding code's wire name, e.g. `timeout-too-fast` (`kca-webhook-lab explain` and
    /// docs/student.md list them).
    pub code: String,
    /// The file it is about, relative to the work directory (e.g. `evidence/05.json`).
    pub file: String,
    /// The JSON path inside `file` (e.g. `facts.target_good`); empty when the finding is about the
    /// whole file.
    pub path: String,
    /// Language-neutral particulars (expected/found values); may be empty.
    pub detail: String,
    /// What the code means and what to do, in the language asked for (`--lang`).
    pub message: String,
}

/// One act's grade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActGrade {
    /// The act number.
    pub act: u8,
    /// Passed, failed or not run.
    pub status: ActStatus,
    /// How many checks ran.
    pub checks: u32,
    /// The findings (empty when passed).
    pub findings: Vec<GradeFinding>,
    /// Checks that could not be made, reported without failing the act.
    pub notes: Vec<GradeFinding>,
}

/// `grade N|all -o json`: every act graded, with the totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeReport {
    /// [`FORMAT`].
    pub format: String,
    /// The lab (`a`, `b` or `c`).
    pub lab: String,
    /// Whether every act graded passed.
    pub passed: bool,
    /// Acts passed, of `acts.len()`.
    pub acts_passed: usize,
    /// Checks run over every act.
    pub checks: u32,
    /// Findings over every act.
    pub findings: usize,
    /// The acts, in the order graded.
    pub acts: Vec<ActGrade>,
}

fn finding(f: &Finding, lang: Lang) -> GradeFinding {
    let (file, path) = super::split_subject(&f.subject);
    GradeFinding {
        code: f.code.as_str().to_owned(),
        file: file.to_owned(),
        path: path.to_owned(),
        detail: f.detail.clone(),
        message: crate::messages::code_text(f.code).get(lang).to_owned(),
    }
}

/// An act's status (see [`ActStatus`]).
pub fn status(g: &Findings) -> ActStatus {
    if g.passed() {
        ActStatus::Passed
    } else if g.has(Code::EvidenceMissing) && g.findings.len() == 1 {
        ActStatus::NotRun
    } else {
        ActStatus::Failed
    }
}

/// The document of `grades` of `lab`, messages in `lang`.
pub fn report(lab: Lab, grades: &[Findings], lang: Lang) -> GradeReport {
    let acts: Vec<ActGrade> = grades
        .iter()
        .map(|g| ActGrade {
            act: g.act,
            status: status(g),
            checks: g.checks,
            findings: g.findings.iter().map(|f| finding(f, lang)).collect(),
            notes: g.notes.iter().map(|f| finding(f, lang)).collect(),
        })
        .collect();
    GradeReport {
        format: FORMAT.to_owned(),
        lab: lab.as_str().to_owned(),
        passed: grades.iter().all(Findings::passed),
        acts_passed: grades.iter().filter(|g| g.passed()).count(),
        checks: grades.iter().map(|g| g.checks).sum(),
        findings: grades.iter().map(|g| g.findings.len()).sum(),
        acts,
    }
}

/// The JSON Schema of `grade -o json` ([`GradeReport`]).
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(GradeReport)).unwrap_or(serde_json::Value::Null)
}

/// `grade -o junit`: the JUnit XML of `grades` (one suite, `lab-<x>`: a case per act and one per
/// grade, as `cargo xtask lab run`'s junit.xml), named after the work directory `name`.
///
/// Errors: quick-junit's serialiser failed (its message).
pub fn junit(
    lab: Lab,
    input: &GradeInput,
    grades: &[Findings],
    name: &str,
) -> Result<String, String> {
    let mut r = quick_junit::Report::new(format!("kca-webhook-lab grade {name}"));
    r.add_test_suite(super::junit::suite(lab, input, grades, &BTreeMap::new()));
    r.to_string().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::Finding;

    fn g(act: u8, checks: u32, codes: &[(Code, &str)]) -> Findings {
        Findings {
            lab: Lab::B,
            act,
            checks,
            findings: codes
                .iter()
                .map(|(code, subject)| Finding {
                    code: *code,
                    subject: (*subject).to_owned(),
                    detail: String::new(),
                })
                .collect(),
            notes: vec![],
        }
    }

    #[test]
    fn each_act_has_its_status_and_each_finding_its_file_and_path() {
        let grades = [
            g(1, 4, &[]),
            g(
                2,
                3,
                &[(Code::ValueMismatch, "evidence/02.json facts.policy.uid")],
            ),
            g(3, 1, &[(Code::EvidenceMissing, "evidence/03.json")]),
        ];
        let r = report(Lab::B, &grades, Lang::En);
        let s: Vec<ActStatus> = r.acts.iter().map(|a| a.status).collect();
        assert_eq!(s, [ActStatus::Passed, ActStatus::Failed, ActStatus::NotRun]);
        assert_eq!(
            (r.passed, r.acts_passed, r.checks, r.findings),
            (false, 1, 8, 2)
        );
        let f = &r.acts[1].findings[0];
        assert_eq!(
            (f.code.as_str(), f.file.as_str(), f.path.as_str()),
            ("value-mismatch", "evidence/02.json", "facts.policy.uid")
        );
        assert_eq!(r.acts[2].findings[0].path, "");
        let ja = report(Lab::B, &grades, Lang::Ja);
        assert_ne!(ja.acts[1].findings[0].message, f.message);
    }
}
