//! Lab A's reference inputs, written the way a student writes them: `scope.json` and
//! `scale-plan.json` from `inspect`'s live values (and act 3's digest), `policy.json` as the lab
//! states it (failurePolicy Fail), and `report.json` from what the evidence shows: the
//! `scale_down`/`request` words follow act 5's observed registration (`registration-absent` on
//! Kyverno v1.19.1, but another version may keep it, and the report must say what was seen), and
//! the digests are the canonical digests of 05/06/07 that `inspect` prints.

use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::facts::a::Act5Facts;
use lab::inputs::{self, InputFile};

use super::LabRun;

/// Which input files lab A's act `act` reads first.
pub fn inputs_of(act: u8) -> &'static [InputFile] {
    match act {
        1 => &[InputFile::Scope],
        2 => &[InputFile::Policy],
        4 => &[InputFile::ScalePlan],
        8 => &[InputFile::ReportA],
        _ => &[],
    }
}

/// Writes the reference inputs of lab A's act `act` (see [`super::InputWriter`]).
pub fn write_inputs(run: &LabRun, act: u8) -> Result<Vec<PathBuf>> {
    let files = inputs_of(act);
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let ctx = run.student_context()?;
    let mut written = Vec::new();
    for &file in files {
        let value = match file {
            InputFile::ReportA => {
                let five = run
                    .workdir()
                    .read_evidence(5)
                    .context("report.json quotes act 5's evidence")?;
                let f5: Act5Facts = serde_json::from_value(five.evidence.facts.clone())
                    .with_context(|| format!("reading the facts of {}", five.path.display()))?;
                inputs::reference_report_a(&ctx, f5.policy_webhook_present)
            }
            _ => inputs::reference(file, &ctx),
        }
        .with_context(|| {
            format!(
                "the values {} needs are not known yet (inspect or earlier evidence)",
                file.file_name()
            )
        })?;
        written.push(run.write_input(file, &value)?);
    }
    Ok(written)
}
