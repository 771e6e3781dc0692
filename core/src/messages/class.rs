//! `grade-many`'s words (`core/src/report/class.rs`, `lab/src/grade_many.rs`): the class table's
//! column names, each row's result, the progress line and the closing line. Values (directory
//! names, finding codes, paths) stay as they are.

use crate::text::{Line, Text, line, t};

/// The table's columns, in order (the CSV header is the English one, for scripts).
pub const COLUMNS: [Text; 8] = [
    t("学生", "STUDENT"),
    t("ラボ", "LAB"),
    t("結果", "RESULT"),
    t("合格した act", "ACTS-PASSED"),
    t("確認項目", "CHECKS"),
    t("指摘", "FINDINGS"),
    t("指摘コード", "CODES"),
    t("記録", "REPORT"),
];
/// A row whose every act passed.
pub const PASSED: Text = t("合格", "passed");
/// A row with a finding.
pub const FAILED: Text = t("指摘あり", "findings");
/// A row whose work directory could not be read.
pub const UNREADABLE: Text = t("読めない", "unreadable");
/// The report cell when there is no report to link.
pub const NO_REPORT: Text = t("なし", "none");
/// The HTML page's title.
pub const TITLE: Text = t("クラスの採点", "Class grades");

line!(
    /// The progress line on stderr: how many work directories are graded, and the last one.
    progress(done: usize, total: usize, name: &str) => "採点中 {done}/{total}: {name}", "grading {done}/{total}: {name}");
line!(
    /// The closing line: rows, and how many passed, had findings, could not be read.
    summary(rows: usize, passed: usize, failed: usize, unreadable: usize) => "作業ディレクトリ {rows} 個: 合格 {passed}、指摘あり {failed}、読めない {unreadable}", "{rows} work directories: {passed} passed, {failed} with findings, {unreadable} unreadable");
line!(
    /// The error cell of an unreadable work directory.
    unreadable(error: &str) => "読めません: {error}", "cannot be read: {error}");
