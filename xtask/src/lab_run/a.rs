//! Lab A's reference inputs (owned by the lab A work). Placeholder until that work fills it in:
//! it refuses, so `lab run --lab a` fails clearly instead of pretending.

use std::path::PathBuf;

use anyhow::{Result, bail};

use super::LabRun;

/// Writes the reference inputs of lab A's act `act` (see [`super::InputWriter`]).
pub fn write_inputs(run: &LabRun, act: u8) -> Result<Vec<PathBuf>> {
    let _ = run;
    bail!("lab a reference inputs for act {act} are not written yet")
}
