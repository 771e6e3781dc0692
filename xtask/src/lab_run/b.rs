//! Lab B's reference inputs, written the way a student writes them: `scope.json` and
//! `freeze-plan.json` from `inspect`'s live values, `policy.json` and `policy-ignore.json` as the
//! lab states them, `recovery.json` and `report.json` from the evidence (act 2's policy UID and the
//! canonical digests `inspect` prints).

use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::inputs::{self, InputFile};

use super::LabRun;

/// Which input file lab B's act `act` reads first.
pub fn inputs_of(act: u8) -> &'static [InputFile] {
    match act {
        1 => &[InputFile::Scope],
        2 => &[InputFile::Policy],
        4 => &[InputFile::FreezePlan],
        6 => &[InputFile::PolicyIgnore],
        7 => &[InputFile::Recovery],
        8 => &[InputFile::ReportB],
        _ => &[],
    }
}

/// Writes the reference inputs of lab B's act `act` (see [`super::InputWriter`]).
pub fn write_inputs(run: &LabRun, act: u8) -> Result<Vec<PathBuf>> {
    let files = inputs_of(act);
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let ctx = run.student_context()?;
    let mut written = Vec::new();
    for &file in files {
        let value = inputs::reference(file, &ctx).with_context(|| {
            format!(
                "the values {} needs are not known yet (inspect or earlier evidence)",
                file.file_name()
            )
        })?;
        written.push(run.write_input(file, &value)?);
    }
    Ok(written)
}
