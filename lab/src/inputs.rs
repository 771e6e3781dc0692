//! Typed student input files of both labs, with strict validation and JSON Schemas.

use crate::evidence::Lab;

/// One kind of student input file. `report.json` differs between the labs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputFile {
    /// `scope.json` (both labs, act 1).
    Scope,
    /// `policy.json` (both labs, act 2).
    Policy,
    /// `freeze-plan.json` (lab B, act 4).
    FreezePlan,
    /// `policy-ignore.json` (lab B, act 6).
    PolicyIgnore,
    /// `recovery.json` (lab B, act 7).
    Recovery,
    /// `report.json` of lab B (act 8).
    ReportB,
    /// `scale-plan.json` (lab A, act 4).
    ScalePlan,
    /// `report.json` of lab A (act 8).
    ReportA,
}

impl InputFile {
    /// The file name in the work directory.
    pub fn file_name(self) -> &'static str {
        match self {
            InputFile::Scope => "scope.json",
            InputFile::Policy => "policy.json",
            InputFile::FreezePlan => "freeze-plan.json",
            InputFile::PolicyIgnore => "policy-ignore.json",
            InputFile::Recovery => "recovery.json",
            InputFile::ScalePlan => "scale-plan.json",
            InputFile::ReportB | InputFile::ReportA => "report.json",
        }
    }

    /// The lab's input files in act order.
    pub fn all(lab: Lab) -> &'static [InputFile] {
        match lab {
            Lab::A => &[
                InputFile::Scope,
                InputFile::Policy,
                InputFile::ScalePlan,
                InputFile::ReportA,
            ],
            Lab::B => &[
                InputFile::Scope,
                InputFile::Policy,
                InputFile::FreezePlan,
                InputFile::PolicyIgnore,
                InputFile::Recovery,
                InputFile::ReportB,
            ],
        }
    }
}
