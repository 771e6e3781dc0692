//! `grade-many DIR…`'s table of a class, pure: one [`ClassRow`] per work directory (a student's
//! hand-in) and its rendering in four formats, each written as a stream (a [`header`], a
//! [`row`] per directory as soon as it is graded, a [`footer`]) so that the caller keeps only
//! one work directory in memory at a time:
//!
//! - `table`: fixed-width columns for a terminal (wide cells are cut with `…`);
//! - `csv`: RFC 4180 (the `csv` crate), English header, one line per row;
//! - `json`: an array of [`ClassRow`] objects (schema [`schema`]);
//! - `html`: a self-contained page, one `<tr>` per student with a link to that student's
//!   one-page report; every value is escaped by `maud`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unicode_width::UnicodeWidthStr;

use crate::grade::Findings;
use crate::messages::class as words;
use crate::text::Lang;

/// `-o` of `grade-many`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// Fixed-width columns.
    #[default]
    Table,
    /// RFC 4180 CSV with an English header.
    Csv,
    /// A JSON array of rows.
    Json,
    /// A self-contained HTML page.
    Html,
}

/// A row's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every act passed.
    Passed,
    /// Some act has a finding (or did not run).
    Findings,
    /// The work directory could not be read (the row's `error` says why).
    Unreadable,
}

/// One work directory of the class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassRow {
    /// The directory's own name (the student, by the course's naming).
    pub student: String,
    /// The directory as given on the command line.
    pub dir: String,
    /// The lab graded (`a`, `b`, `c`); `null` when unreadable.
    pub lab: Option<String>,
    /// Passed, findings or unreadable.
    pub outcome: Outcome,
    /// Acts passed.
    pub acts_passed: usize,
    /// Acts graded (the lab's acts).
    pub acts: usize,
    /// Checks run over every act.
    pub checks: u32,
    /// Findings over every act.
    pub findings: usize,
    /// The distinct finding codes, in the order first found.
    pub codes: Vec<String>,
    /// The link to the student's one-page report (relative to where the table is written, or the
    /// path as given), when there is one.
    pub report: Option<String>,
    /// Why the directory could not be read; `null` otherwise.
    pub error: Option<String>,
}

impl ClassRow {
    /// The row of a graded directory.
    pub fn graded(
        student: &str,
        dir: &str,
        lab: &str,
        grades: &[Findings],
        report: Option<String>,
    ) -> ClassRow {
        let mut codes: Vec<String> = Vec::new();
        for f in grades.iter().flat_map(|g| &g.findings) {
            let c = f.code.as_str();
            if !codes.iter().any(|x| x == c) {
                codes.push(c.to_owned());
            }
        }
        let passed = grades.iter().filter(|g| g.passed()).count();
        ClassRow {
            student: student.to_owned(),
            dir: dir.to_owned(),
            lab: Some(lab.to_owned()),
            outcome: if passed == grades.len() && !grades.is_empty() {
                Outcome::Passed
            } else {
                Outcome::Findings
            },
            acts_passed: passed,
            acts: grades.len(),
            checks: grades.iter().map(|g| g.checks).sum(),
            findings: grades.iter().map(|g| g.findings.len()).sum(),
            codes,
            report,
            error: None,
        }
    }

    /// The row of a directory that could not be read, with the error.
    pub fn unreadable(student: &str, dir: &str, error: String) -> ClassRow {
        ClassRow {
            lab: None,
            outcome: Outcome::Unreadable,
            error: Some(error),
            // No acts: every count 0, no codes, no report.
            ..ClassRow::graded(student, dir, "", &[], None)
        }
    }

    fn cells(&self, lang: Lang) -> [String; 8] {
        let result = match self.outcome {
            Outcome::Passed => words::PASSED.get(lang).to_owned(),
            Outcome::Findings => words::FAILED.get(lang).to_owned(),
            Outcome::Unreadable => words::UNREADABLE.get(lang).to_owned(),
        };
        let codes = match &self.error {
            Some(e) => words::unreadable(e).get(lang).to_owned(),
            None => self.codes.join(","),
        };
        [
            self.student.clone(),
            self.lab.clone().unwrap_or_else(|| "-".to_owned()),
            result,
            format!("{}/{}", self.acts_passed, self.acts),
            self.checks.to_string(),
            self.findings.to_string(),
            codes,
            self.report
                .clone()
                .unwrap_or_else(|| words::NO_REPORT.get(lang).to_owned()),
        ]
    }
}

/// The running totals the footer states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Rows written.
    pub rows: usize,
    /// Rows passed.
    pub passed: usize,
    /// Rows with findings.
    pub failed: usize,
    /// Rows unreadable.
    pub unreadable: usize,
}

impl Totals {
    /// Counts `row`.
    pub fn add(&mut self, row: &ClassRow) {
        self.rows += 1;
        match row.outcome {
            Outcome::Passed => self.passed += 1,
            Outcome::Findings => self.failed += 1,
            Outcome::Unreadable => self.unreadable += 1,
        }
    }
}

/// The widths of the table's columns (display columns); a longer cell is cut with `…`.
const WIDTHS: [usize; 8] = [24, 3, 10, 11, 6, 8, 40, 30];

fn fit(cell: &str, width: usize) -> String {
    if cell.width() <= width {
        return format!("{cell}{}", " ".repeat(width - cell.width()));
    }
    let mut out = String::new();
    for c in cell.chars() {
        if out.width() + unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) + 1 > width {
            break;
        }
        out.push(c);
    }
    out.push('…');
    format!("{out}{}", " ".repeat(width.saturating_sub(out.width())))
}

fn table_line(cells: &[String]) -> String {
    let parts: Vec<String> = cells.iter().zip(WIDTHS).map(|(c, w)| fit(c, w)).collect();
    format!("{}\n", parts.join("  ").trim_end())
}

fn csv_line(cells: &[String]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to memory cannot fail.
    let _ = w.write_record(cells);
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

const HTML_HEAD: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><style>body{font-family:system-ui,\"Noto Sans JP\",sans-serif;margin:1.5em}table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left}th{background:#f2f2f2}.passed{color:#1b5e20}.findings{color:#b71c1c}.unreadable{color:#777}</style>";

/// What comes before the first row.
pub fn header(format: Format, lang: Lang) -> String {
    let names = words::COLUMNS.map(|c| c.get(lang).to_owned());
    match format {
        Format::Table => table_line(&names),
        Format::Csv => csv_line(&words::COLUMNS.map(|c| c.en.to_lowercase())),
        Format::Json => "[\n".to_owned(),
        Format::Html => {
            let title = maud::html! { (words::TITLE.get(lang)) }.into_string();
            let cols = maud::html! { tr { @for n in &names { th { (n) } } } }.into_string();
            let head = format!("{HTML_HEAD}<title>{title}</title></head>");
            format!("{head}<body><h1>{title}</h1><table>\n{cols}\n")
        }
    }
}

/// Row number `index` (0-based; JSON needs it for the commas).
pub fn row(format: Format, r: &ClassRow, index: usize, lang: Lang) -> String {
    match format {
        Format::Table => table_line(&r.cells(lang)),
        Format::Csv => csv_line(&r.cells(Lang::En)),
        Format::Json => {
            let sep = if index == 0 { "" } else { ",\n" };
            format!("{sep}{}", serde_json::to_string(r).unwrap_or_default())
        }
        Format::Html => {
            let c = r.cells(lang);
            let class = match r.outcome {
                Outcome::Passed => "passed",
                Outcome::Findings => "findings",
                Outcome::Unreadable => "unreadable",
            };
            let m = maud::html! {
                tr class=(class) {
                    @for cell in &c[..7] { td { (cell) } }
                    td {
                        @match &r.report {
                            Some(href) => { a href=(href) { (r.student) } }
                            None => { (c[7]) }
                        }
                    }
                }
            };
            format!("{}\n", m.into_string())
        }
    }
}

/// What comes after the last row: the closing line of `totals` (table, HTML), or the end of the
/// JSON array; CSV has none.
pub fn footer(format: Format, totals: Totals, lang: Lang) -> String {
    let line = words::summary(totals.rows, totals.passed, totals.failed, totals.unreadable);
    match format {
        Format::Table => format!("\n{}\n", line.get(lang)),
        Format::Csv => String::new(),
        Format::Json => format!("{}]\n", if totals.rows == 0 { "" } else { "\n" }),
        Format::Html => format!(
            "</table><p>{}</p></body></html>\n",
            maud::html! { (line.get(lang)) }.into_string()
        ),
    }
}

/// The JSON Schema of `grade-many -o json` (an array of [`ClassRow`]).
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Vec<ClassRow>)).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<ClassRow> {
        let mut a = ClassRow::unreadable("bob", "class/bob", "No such file".into());
        a.student = "bob, \"the\" <b>".into();
        vec![
            ClassRow {
                student: "alice".into(),
                dir: "class/alice".into(),
                lab: Some("b".into()),
                outcome: Outcome::Passed,
                acts_passed: 8,
                acts: 8,
                checks: 120,
                findings: 0,
                codes: vec![],
                report: Some("reports/alice.html".into()),
                error: None,
            },
            a,
        ]
    }

    fn whole(format: Format) -> String {
        let mut out = header(format, Lang::En);
        let mut t = Totals::default();
        for (i, r) in rows().iter().enumerate() {
            t.add(r);
            out.push_str(&row(format, r, i, Lang::En));
        }
        out + &footer(format, t, Lang::En)
    }

    #[test]
    fn json_is_an_array_of_the_rows_and_csv_quotes() {
        let back: Vec<ClassRow> = serde_json::from_str(&whole(Format::Json)).unwrap();
        assert_eq!(back, rows());
        let csv = whole(Format::Csv);
        assert!(csv.starts_with("student,lab,result,"), "{csv}");
        assert!(csv.contains("\"bob, \"\"the\"\" <b>\""), "{csv}");
        assert_eq!(csv.lines().count(), 3);
        let empty =
            header(Format::Json, Lang::En) + &footer(Format::Json, Totals::default(), Lang::En);
        assert_eq!(
            serde_json::from_str::<Vec<ClassRow>>(&empty).unwrap(),
            vec![]
        );
    }

    #[test]
    fn html_links_each_report_and_escapes_names() {
        let html = whole(Format::Html);
        assert!(
            html.contains("<a href=\"reports/alice.html\">alice</a>"),
            "{html}"
        );
        assert!(html.contains("bob, &quot;the&quot; &lt;b&gt;"), "{html}");
        assert!(!html.contains("<b>"));
        assert!(html.contains("1 passed, 0 with findings, 1 unreadable"));
    }

    #[test]
    fn table_cells_keep_their_columns() {
        let t = whole(Format::Table);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("STUDENT"));
        assert_eq!(lines[1].find("b  "), Some(26), "{t}");
        assert!(fit("a-very-long-student-directory-name", 10).ends_with('…'));
        assert_eq!(fit("学生", 6).width(), 6);
    }
}
