//! `grade N|all -o text|json|junit`: the grades as a document for scripts and CI. `json` is
//! [`lab_core::report::grades::GradeReport`] (schema published as `lab/schemas/grade.schema.json`,
//! kept current by `lab/tests/schemas.rs`); `junit` is the JUnit XML `cargo xtask lab run` writes
//! for its own runs ([`lab_core::report::junit::suite`]), here for one work directory.

use std::path::Path;

use lab_core::evidence::Lab;
use lab_core::grade::{Findings, GradeInput};
use lab_core::report::grades;
use lab_core::text::Lang;

use crate::error::LabError;

/// `-o` of `grade`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// Each act's verdict and findings as lines.
    #[default]
    Text,
    /// [`grades::GradeReport`] as JSON.
    Json,
    /// JUnit XML: a test case per act and one per grade.
    Junit,
}

/// The document of `results` (graded from `input`) in `output` (`json` or `junit`); `workdir`
/// names the JUnit report. `text` is the caller's (one line per act, `messages::findings`).
///
/// Errors: an encoder failed (its message, as a usage error).
pub fn render(
    lab: Lab,
    input: &GradeInput,
    results: &[Findings],
    output: Output,
    lang: Lang,
    workdir: &Path,
) -> Result<String, LabError> {
    match output {
        Output::Json | Output::Text => {
            serde_json::to_string_pretty(&grades::report(lab, results, lang))
                .map_err(|e| LabError::Usage(format!("encoding the grades as JSON: {e}")))
        }
        Output::Junit => grades::junit(lab, input, results, &workdir.display().to_string())
            .map(|s| s.trim_end().to_owned())
            .map_err(|e| LabError::Usage(format!("encoding the grades as JUnit XML: {e}"))),
    }
}
