//! The drift table: one row per taught fact ([`all_facts`]), one column per cell
//! (Kubernetes × Kyverno), each value marked against the pinned cell, plus each cell's running
//! versions, Kyverno's support label, run failures and the graders' findings. A pure function of
//! the cells' evidence ([`build`]) and three renderings: Markdown ([`Table::markdown`]), HTML
//! ([`Table::html`]) and JSON (serde).

use std::collections::HashMap;

use lab::evidence::Lab;
use serde::Serialize;

use super::facts::{Drift, Evidence, Fact, Figure, Observed, drift};
use crate::upstream::Versions;

/// One lab's run in one cell, as read from its artifacts.
#[derive(Debug, Clone, Default)]
pub struct LabResult {
    /// The evidence documents by act (empty when the run stopped before act 1).
    pub evidence: Evidence,
    /// The graders' findings, one line each (`act N: <message>`); empty when every act passed.
    pub findings: Vec<String>,
    /// Why the run failed (cluster up, an act, …), `None` when every act completed.
    pub failure: Option<String>,
}

/// Everything the table needs about one cell (one run of it).
#[derive(Debug, Clone)]
pub struct CellInput {
    /// The pair asked for.
    pub versions: Versions,
    /// What ran, from `versions.json` (`kube-apiserver vX`, image, chart), one line; empty when
    /// not recorded.
    pub running: String,
    /// Each lab's run, keyed by lab: only the labs the matrix ran (an in-memory table, never
    /// serialized).
    pub labs: HashMap<Lab, LabResult>,
    /// Where the cell's artifacts are (a run directory with `index.html`), for links.
    pub artifacts: String,
}

impl CellInput {
    /// The run of the lab whose wire name is `lab` (`a`, `b`, …; [`Lab::as_str`]), if it ran.
    fn lab(&self, lab: &str) -> Option<&LabResult> {
        self.labs
            .iter()
            .find_map(|(l, r)| (l.as_str() == lab).then_some(r))
    }
}

/// One cell's value for one fact.
#[derive(Debug, Clone, Serialize)]
pub struct Value {
    /// What was observed.
    pub observed: Observed,
    /// Against the pinned cell.
    pub drift: Drift,
}

/// One row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Fact id.
    pub id: &'static str,
    /// Lab.
    pub lab: &'static str,
    /// Title.
    pub title: &'static str,
    /// Whether the course text states it.
    pub stated: bool,
    /// One value per column, in column order (`None`: the lab did not run in that cell).
    pub values: Vec<Option<Value>>,
}

/// One column.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// The pair.
    pub versions: Versions,
    /// `supported`, or `outside Kyverno's stated support (v1.33–v1.35)`.
    pub support: String,
    /// What ran (from `versions.json`).
    pub running: String,
    /// Lab failures, one line each (`lab b: …`).
    pub failures: Vec<String>,
    /// The graders' findings, one line each (`lab a act 5: …`).
    pub findings: Vec<String>,
    /// The cell's artifacts.
    pub artifacts: String,
}

/// The drift table.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// The pinned pair (the reference column).
    pub pinned: Versions,
    /// The columns, the pinned cell first when present.
    pub columns: Vec<Column>,
    /// The rows, in [`all_facts`] order.
    pub rows: Vec<Row>,
    /// The spread of the rows that carry a figure, over each pair's runs ([`spread`]).
    pub spread: Spread,
}

/// The spread of the figures (counts, times) over each pair's runs: one column per distinct pair,
/// in column order, one row per fact that carries a figure in any run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Spread {
    /// The pairs, each once, in the order of their first column.
    pub cells: Vec<Versions>,
    /// One row per fact with a figure.
    pub rows: Vec<SpreadRow>,
}

/// One fact's figures per pair.
#[derive(Debug, Clone, Serialize)]
pub struct SpreadRow {
    /// Fact id.
    pub id: &'static str,
    /// Title.
    pub title: &'static str,
    /// Per pair (in [`Spread::cells`] order): every run's figure, in column order (empty: none).
    pub figures: Vec<Vec<Figure>>,
}

/// `min–max of N (runs: a, b, c)` or `min–max ms (runs: …)` of a pair's figures; `—` when none.
pub fn spread_text(figures: &[Figure]) -> String {
    let (Some(min), Some(max)) = (
        figures.iter().map(|f| f.n).min(),
        figures.iter().map(|f| f.n).max(),
    ) else {
        return "—".into();
    };
    let range = if min == max {
        min.to_string()
    } else {
        format!("{min}–{max}")
    };
    let mut ofs: Vec<i64> = figures.iter().filter_map(|f| f.of).collect();
    ofs.sort_unstable();
    ofs.dedup();
    let of = match ofs.as_slice() {
        [] => String::new(),
        [n] => format!(" of {n}"),
        _ => format!(
            " of {}",
            ofs.iter().map(i64::to_string).collect::<Vec<_>>().join("/")
        ),
    };
    let runs = figures
        .iter()
        .map(|f| f.n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!("{range}{of} ({} run(s): {runs})", figures.len())
}

/// The spread of `rows` over `columns` (see [`Spread`]).
pub fn spread(columns: &[Column], rows: &[Row]) -> Spread {
    let mut cells: Vec<Versions> = Vec::new();
    for c in columns {
        if !cells.contains(&c.versions) {
            cells.push(c.versions.clone());
        }
    }
    let rows = rows
        .iter()
        .filter_map(|r| {
            let mut figures = vec![Vec::new(); cells.len()];
            for (c, v) in columns.iter().zip(&r.values) {
                if let Some(f) = v.as_ref().and_then(|v| v.observed.figure)
                    && let Some(i) = cells.iter().position(|x| *x == c.versions)
                {
                    figures[i].push(f);
                }
            }
            figures.iter().any(|f| !f.is_empty()).then_some(SpreadRow {
                id: r.id,
                title: r.title,
                figures,
            })
        })
        .collect();
    Spread { cells, rows }
}

/// Why the matrix fails, one line each (empty: it passes): a stated fact that changed or could not
/// be observed in a cell (with the cell's versions), a failed run, grades that failed while no
/// stated fact changed.
pub fn failures(t: &Table) -> Vec<String> {
    let mut out = Vec::new();
    for (i, col) in t.columns.iter().enumerate() {
        let mut stated_changed = false;
        for row in t.rows.iter().filter(|r| r.stated) {
            if let Some(Some(v)) = row.values.get(i)
                && v.drift == Drift::Changed
            {
                stated_changed = true;
                out.push(format!(
                    "{}: stated fact {} ({}) changed: {}",
                    col.versions.label(),
                    row.id,
                    row.title,
                    v.observed.value.as_deref().unwrap_or("")
                ));
            }
        }
        for f in &col.failures {
            out.push(format!("{}: run failed: {f}", col.versions.label()));
        }
        if col.failures.is_empty() && !stated_changed && !col.findings.is_empty() {
            out.push(format!(
                "{}: {} grader finding(s) while no stated fact changed (first: {})",
                col.versions.label(),
                col.findings.len(),
                col.findings[0]
            ));
        }
    }
    out
}

/// Builds the table from the cells; the reference is the cell whose versions are the pinned pair
/// (`pinned`; when no cell is pinned every value is `not-observed`, which the caller prevents by
/// always including a pinned cell or a recorded baseline).
pub fn build(cells: &[CellInput]) -> Table {
    let pinned_v = Versions::pinned();
    let mut order: Vec<&CellInput> = cells.iter().collect();
    order.sort_by_key(|c| !c.versions.is_pinned());
    let pinned = order.iter().find(|c| c.versions.is_pinned()).copied();
    let rows: Vec<Row> = all_facts()
        .map(|f| {
            let reference = pinned
                .and_then(|p| p.lab(f.lab))
                .map(|l| (f.observe)(&l.evidence));
            let values = order
                .iter()
                .map(|c| {
                    c.lab(f.lab).map(|l| {
                        let observed = (f.observe)(&l.evidence);
                        let d = if c.versions.is_pinned() {
                            if observed.value.is_some() {
                                Drift::Pinned
                            } else {
                                Drift::NotObserved
                            }
                        } else {
                            match &reference {
                                Some(r) => drift(f.compare, r, &observed),
                                None => Drift::NotObserved,
                            }
                        };
                        Value { observed, drift: d }
                    })
                })
                .collect();
            Row {
                id: f.id,
                lab: f.lab,
                title: f.title,
                stated: f.stated,
                values,
            }
        })
        .collect();
    let columns: Vec<Column> = order
        .iter()
        .map(|c| {
            let mut failures = Vec::new();
            let mut findings = Vec::new();
            for lab in lab::acts::LABS {
                let name = lab.as_str();
                if let Some(l) = c.labs.get(&lab) {
                    if let Some(e) = &l.failure {
                        failures.push(format!("lab {name}: {e}"));
                    }
                    findings.extend(l.findings.iter().map(|f| format!("lab {name} {f}")));
                }
            }
            Column {
                versions: c.versions.clone(),
                support: support_label(&c.versions),
                running: c.running.clone(),
                failures,
                findings,
                artifacts: c.artifacts.clone(),
            }
        })
        .collect();
    let spread = spread(&columns, &rows);
    Table {
        pinned: pinned_v,
        columns,
        rows,
        spread,
    }
}

/// `supported` or `outside Kyverno's stated support (v1.33–v1.35)`.
pub fn support_label(v: &Versions) -> String {
    match v.support() {
        Ok(crate::upstream::versions::Support::Supported) => "supported".into(),
        Ok(crate::upstream::versions::Support::Outside { range, .. }) => format!(
            "outside Kyverno {}'s stated support (v1.{}–v1.{})",
            v.kyverno, range.0, range.1
        ),
        Err(e) => format!("unknown ({e})"),
    }
}

fn mark(d: Drift) -> &'static str {
    match d {
        Drift::Pinned => "pinned",
        Drift::Same => "same",
        Drift::Changed => "**CHANGED**",
        Drift::NotObserved => "not observed",
    }
}

/// A table cell's text: `|` escaped, no line breaks, `<`/`>` as entities (a Markdown renderer
/// drops unknown tags such as `<webhook>`).
fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('\n', " ")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Table {
    /// The table as Markdown: a header row of cells, the support/running/failures/findings rows,
    /// then one row per fact (`value (mark)`, the measured detail on a second line).
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str("| fact | stated |");
        for c in &self.columns {
            out.push_str(&format!(
                " Kubernetes {} × Kyverno {} |",
                c.versions.kubernetes, c.versions.kyverno
            ));
        }
        out.push('\n');
        out.push_str("|---|---|");
        for _ in &self.columns {
            out.push_str("---|");
        }
        out.push('\n');
        let meta = |label: &str, f: &dyn Fn(&Column) -> String| {
            let mut line = format!("| {label} | |");
            for c in &self.columns {
                line.push_str(&format!(" {} |", md_escape(&f(c))));
            }
            line.push('\n');
            line
        };
        out.push_str(&meta("Kyverno support", &|c| c.support.clone()));
        out.push_str(&meta(
            "running (versions.json; each act's evidence)",
            &|c| c.running.clone(),
        ));
        out.push_str(&meta("runs", &|c| {
            if c.failures.is_empty() {
                "completed".into()
            } else {
                format!("FAILED: {}", c.failures.join("; "))
            }
        }));
        out.push_str(&meta("graders' findings", &|c| {
            if c.findings.is_empty() {
                "none".into()
            } else {
                c.findings.join("; ")
            }
        }));
        for r in &self.rows {
            out.push_str(&format!(
                "| {} `{}` | {} |",
                md_escape(r.title),
                r.id,
                if r.stated { "yes" } else { "no" }
            ));
            for v in &r.values {
                match v {
                    None => out.push_str(" (lab not run) |"),
                    Some(v) => {
                        let val = v.observed.value.as_deref().unwrap_or("—");
                        out.push_str(&format!(
                            " {} ({})<br>{} |",
                            md_escape(val),
                            mark(v.drift),
                            md_escape(&v.observed.detail)
                        ));
                    }
                }
            }
            out.push('\n');
        }
        out.push_str(&self.spread_markdown());
        out
    }

    /// The spread table ([`Spread`]) as Markdown under its own header line; empty when no row
    /// carries a figure.
    pub fn spread_markdown(&self) -> String {
        let sp = &self.spread;
        if sp.rows.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "\nSpread over each pair's runs (min–max, then every run's figure in run order):\n\n| fact |",
        );
        for v in &sp.cells {
            out.push_str(&format!(
                " Kubernetes {} × Kyverno {} |",
                v.kubernetes, v.kyverno
            ));
        }
        out.push_str("\n|---|");
        for _ in &sp.cells {
            out.push_str("---|");
        }
        out.push('\n');
        for r in &sp.rows {
            out.push_str(&format!("| {} `{}` |", md_escape(r.title), r.id));
            for f in &r.figures {
                out.push_str(&format!(" {} |", md_escape(&spread_text(f))));
            }
            out.push('\n');
        }
        out
    }

    /// The table as a self-contained HTML page (no scripts), linking each cell's run index.
    pub fn html(&self, title: &str) -> String {
        let e = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        };
        let mut h = format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>\
             body{{font-family:sans-serif}}table{{border-collapse:collapse}}td,th{{border:1px solid #999;padding:4px;vertical-align:top}}\
             .changed{{background:#fdd}}.same{{background:#efe}}.pinned{{background:#eef}}.not-observed{{background:#eee}}small{{color:#555}}\
             </style></head><body><h1>{}</h1><table><tr><th>fact</th><th>stated</th>",
            e(title),
            e(title)
        );
        for c in &self.columns {
            h.push_str(&format!(
                "<th>Kubernetes {} × Kyverno {}<br><small>{}</small><br><a href=\"{}\">run</a></th>",
                e(&c.versions.kubernetes),
                e(&c.versions.kyverno),
                e(&c.support),
                e(&c.artifacts)
            ));
        }
        h.push_str("</tr>");
        let meta = |label: &str, f: &dyn Fn(&Column) -> String| {
            let mut line = format!("<tr><th>{}</th><td></td>", e(label));
            for c in &self.columns {
                line.push_str(&format!("<td>{}</td>", e(&f(c))));
            }
            line.push_str("</tr>");
            line
        };
        h.push_str(&meta("running", &|c| c.running.clone()));
        h.push_str(&meta("runs", &|c| {
            if c.failures.is_empty() {
                "completed".into()
            } else {
                format!("FAILED: {}", c.failures.join("; "))
            }
        }));
        h.push_str(&meta("graders' findings", &|c| {
            if c.findings.is_empty() {
                "none".into()
            } else {
                c.findings.join("; ")
            }
        }));
        for r in &self.rows {
            h.push_str(&format!(
                "<tr><td>{}<br><small>{}</small></td><td>{}</td>",
                e(r.title),
                e(r.id),
                if r.stated { "yes" } else { "no" }
            ));
            for v in &r.values {
                match v {
                    None => h.push_str("<td>(lab not run)</td>"),
                    Some(v) => {
                        let class = match v.drift {
                            Drift::Pinned => "pinned",
                            Drift::Same => "same",
                            Drift::Changed => "changed",
                            Drift::NotObserved => "not-observed",
                        };
                        h.push_str(&format!(
                            "<td class=\"{class}\">{} <b>{}</b><br><small>{}</small></td>",
                            e(v.observed.value.as_deref().unwrap_or("—")),
                            e(mark(v.drift).trim_matches('*')),
                            e(&v.observed.detail)
                        ));
                    }
                }
            }
            h.push_str("</tr>");
        }
        h.push_str("</table></body></html>\n");
        h
    }
}

/// Every row of the table: labs B and A ([`super::facts::FACTS`]), then lab C's
/// ([`super::facts_c::FACTS_C`]). Here, above both, so that neither facts file imports the other.
pub fn all_facts() -> impl Iterator<Item = &'static Fact> {
    super::facts::FACTS
        .iter()
        .chain(super::facts_c::FACTS_C.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fact_ids_are_unique_and_name_their_lab() {
        let mut ids: Vec<&str> = all_facts().map(|f| f.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all_facts().count());
        for f in all_facts() {
            assert!(f.id.starts_with(&format!("{}.", f.lab)), "{}", f.id);
        }
    }
}
