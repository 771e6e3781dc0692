//! Every student-facing string of the tool, in Japanese (default) and English (`--lang en`), by
//! topic; the vocabulary they are written in ([`Lang`](crate::text::Lang), [`Text`](crate::text::Text), [`Line`](crate::text::Line), [`Words`](crate::text::Words)) is
//! [`crate::text`].
//!
//! Values inside messages (paths, UIDs, outcomes, JSON) are not translated: they are the words the
//! evidence and the inputs use.
//!
//! - [`said`]: the words of input problems (kept on each `InputIssue` in both languages);
//! - [`act`]: the acts' progress and summary lines; [`explain`]: `explain`'s words;
//!   [`webhook_audit`]: `audit`'s words; [`class`]: `grade-many`'s words;
//! - [`codes`]: what each finding code means ([`code_text`], an exhaustive match whose test walks
//!   `Code::iter()`) and a grade as lines; [`errors`]: a `LabError` as the student sees it;
//! - [`commands`]: the student tool's own lines around its commands.
//!
//! Each table stands beside or above the types it renders (ARCHITECTURE.md, "Layers"). The
//! Japanese `--help` is the `lab` crate's (`lab/src/help.rs`): clap stays out of the core. No
//! Japanese literal elsewhere in the tool's code but the report page's `report/text.rs`, the
//! registry's act titles and that help table (`xtask/tests/tidy.rs`).
//!
//! Terms, one spelling: the **healer** (the detached process that undoes a fault: lab B's freeze,
//! lab A's scale-down; the evidence's older field names `watchdog_pid`, `watchdog_armed_at`,
//! `resumed_by: watchdog` and lab A's `watcher` facts and `restored_by: watcher` stay: they are the
//! evidence format, which the recorded fixtures pin), the **start time** of a process (`/proc/<pid>/stat` field 22, clock ticks;
//! `pid_start_time_ticks` in evidence). Raw entry names (`lease-before` in lab A act 6,
//! `leader-lease-before` in lab B) are evidence too and stay as recorded.

pub mod act;
pub mod class;
pub mod codes;
pub mod commands;
pub mod errors;
pub mod explain;
pub mod said;
pub mod webhook_audit;

pub use codes::{code_text, finding, findings};
pub use commands::*;
pub use errors::{error_text, read_only_error_text};
