//! What people read after a lab run: per lab `report.html` (English) and `report.ja.html`
//! (rendered by [`lab::report::render`] from the lab's `workdir/`), `acts.json` (each act's result
//! as the runner saw it), and per run `index.html` and `junit.xml` (one suite per lab,
//! [`lab::report::junit::suite`]), all under `target/lab-artifacts/<run-id>/`.
//!
//! Everything here is recomputed from the artifacts directory alone, so a copied artifacts
//! directory renders the same pages.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use lab::evidence::Lab;
use lab::grade::{self, GradeInput};
use lab::text::Lang;
use lab::workdir::Workdir;

use super::{RunReport, lab_name};

/// File name of the runner's per-act results in a lab's artifacts directory.
pub const ACTS_FILE: &str = "acts.json";

/// Writes `<lab dir>/acts.json`: `{"setup_error": null|"…", "acts": {"1": {"status": "completed",
/// "error": null}, …}}` from the run's result (`Err`: the lab did not get to its acts).
pub fn write_acts(
    lab_dir: &Path,
    result: std::result::Result<&RunReport, &anyhow::Error>,
) -> Result<()> {
    let v = match result {
        Ok(r) => {
            let acts: BTreeMap<String, serde_json::Value> = r
                .acts
                .iter()
                .map(|(act, res)| {
                    let v = match res {
                        Ok(s) => serde_json::json!({"status": s.status, "error": null}),
                        Err(e) => serde_json::json!({"status": "failed", "error": e}),
                    };
                    (act.to_string(), v)
                })
                .collect();
            serde_json::json!({"setup_error": null, "acts": acts})
        }
        Err(e) => serde_json::json!({"setup_error": format!("{e:#}"), "acts": {}}),
    };
    std::fs::create_dir_all(lab_dir).with_context(|| format!("creating {}", lab_dir.display()))?;
    let p = lab_dir.join(ACTS_FILE);
    std::fs::write(&p, serde_json::to_string_pretty(&v)?)
        .with_context(|| format!("writing {}", p.display()))
}

/// Act number → error text from `acts.json` (act 0: the lab's setup, e.g. `cluster up`).
fn act_errors(lab_dir: &Path) -> BTreeMap<u8, String> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(lab_dir.join(ACTS_FILE)) else {
        return out;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return out;
    };
    if let Some(e) = v["setup_error"].as_str() {
        out.insert(0, e.to_owned());
    }
    if let Some(m) = v["acts"].as_object() {
        for (k, a) in m {
            if let (Ok(n), Some(e)) = (k.parse::<u8>(), a["error"].as_str()) {
                out.insert(n, e.to_owned());
            }
        }
    }
    out
}

/// The labs present in a run directory (`<run>/a/`, `<run>/b/`, `<run>/c/`).
fn labs_in(run_dir: &Path) -> Vec<Lab> {
    lab::acts::LABS
        .into_iter()
        .filter(|l| run_dir.join(lab_name(*l)).is_dir())
        .collect()
}

/// Renders `report.html` and `report.ja.html` of one lab's artifacts directory; returns the
/// number of grades that pass.
pub fn write_lab_pages(lab_dir: &Path, lab: Lab) -> Result<usize> {
    let input = GradeInput::load(&Workdir::new(lab_dir.join("workdir")), lab);
    let grades = grade::grade_all(lab, &input);
    // A failure's diagnostics: the lab run's `diagnostics/`, else the newest a failed act left in
    // the work directory (`workdir/diagnostics/act-NN/`).
    let diag = lab::diagnostics::read_summary(&lab_dir.join("diagnostics"))
        .map(|s| (s, "diagnostics/summary.txt".to_owned()))
        .or_else(|| {
            lab::diagnostics::latest_in_workdir(&lab_dir.join("workdir")).map(|(d, s)| {
                let rel = d.strip_prefix(lab_dir).unwrap_or(&d).join("summary.txt");
                (s, rel.display().to_string())
            })
        });
    for (lang, name) in [(Lang::En, "report.html"), (Lang::Ja, "report.ja.html")] {
        let link = diag
            .as_ref()
            .map(|(summary, href)| lab::report::DiagnosticsLink { summary, href });
        let page = lab::report::render_with_diagnostics(lab, &input, &grades, lang, link);
        lab::report::write_file(&lab_dir.join(name), page.as_bytes())?;
    }
    Ok(grades.iter().filter(|g| g.passed()).count())
}

/// Writes `index.html` and `junit.xml` of a run directory from every lab in it.
pub fn write_run_files(run_dir: &Path) -> Result<()> {
    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut entries = Vec::new();
    let mut junit = quick_junit::Report::new(format!("kca-webhook-lab run {run_id}"));
    for lab in labs_in(run_dir) {
        let dir = run_dir.join(lab_name(lab));
        let input = GradeInput::load(&Workdir::new(dir.join("workdir")), lab);
        let grades = grade::grade_all(lab, &input);
        junit.add_test_suite(lab::report::junit::suite(
            lab,
            &input,
            &grades,
            &act_errors(&dir),
        ));
        let f = |act: u8| {
            input
                .evidence
                .get(&act)
                .and_then(|d| d.as_ref().ok())
                .map(|d| d.value()["facts"].clone())
                .unwrap_or(serde_json::Value::Null)
        };
        let mut links = vec![(
            format!("{}/report.ja.html", lab_name(lab)),
            "日本語".to_owned(),
        )];
        for extra in ["diagnostics", "logs", "evidence"] {
            if dir.join(extra).is_dir() {
                links.push((format!("{}/{extra}/", lab_name(lab)), extra.to_owned()));
            }
        }
        entries.push(lab::report::IndexEntry {
            lab,
            href: format!("{}/report.html", lab_name(lab)),
            grades_passed: grades.iter().filter(|g| g.passed()).count(),
            key_facts: lab::report::key_facts(lab, &f(5), &f(6)),
            links,
        });
    }
    lab::report::write_file(
        &run_dir.join("index.html"),
        lab::report::index(&run_id, &entries).as_bytes(),
    )?;
    let xml = junit.to_string().context("serializing junit.xml")?;
    lab::report::write_file(&run_dir.join("junit.xml"), xml.as_bytes())?;
    Ok(())
}

/// A Markdown summary of every `junit.xml` under `root` (the nightly job summary): per file the
/// tests, failures and skipped counts, then each failing test case with its message.
///
/// Errors: unreadable directory, or a `junit.xml` that does not parse (naming it).
pub fn junit_markdown(root: &Path) -> Result<String> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .with_context(|| format!("reading {}", d.display()))?
            .flatten()
        {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "junit.xml") {
                files.push(p);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        anyhow::bail!("no junit.xml under {}", root.display());
    }
    let mut out = String::from("| junit.xml | tests | failures | skipped |\n|---|---|---|---|\n");
    let mut failing = String::new();
    for f in &files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let r = quick_junit::Report::deserialize_from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not JUnit XML: {e}", f.display()))?;
        let name = f.strip_prefix(root).unwrap_or(f).display().to_string();
        let (mut tests, mut failures, mut skipped) = (0, 0, 0);
        for s in &r.test_suites {
            for c in &s.test_cases {
                tests += 1;
                match &c.status {
                    quick_junit::TestCaseStatus::Success { .. } => {}
                    quick_junit::TestCaseStatus::Skipped { .. } => skipped += 1,
                    quick_junit::TestCaseStatus::NonSuccess {
                        message,
                        description,
                        ..
                    } => {
                        failures += 1;
                        let detail = description
                            .as_ref()
                            .map(|d| d.as_str().lines().next().unwrap_or("").to_owned())
                            .unwrap_or_default();
                        failing.push_str(&format!(
                            "- `{}` {}: {} {}\n",
                            name,
                            c.name.as_str(),
                            message.as_ref().map(|m| m.as_str()).unwrap_or(""),
                            detail.replace('|', "\\|")
                        ));
                    }
                }
            }
        }
        out.push_str(&format!("| {name} | {tests} | {failures} | {skipped} |\n"));
    }
    if !failing.is_empty() {
        out.push_str("\nFailing test cases:\n\n");
        out.push_str(&failing);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let dest = to.join(p.file_name().unwrap());
            if p.is_dir() {
                copy_dir(&p, &dest);
            } else {
                std::fs::copy(&p, &dest).unwrap();
            }
        }
    }

    #[test]
    fn run_files_from_artifacts_alone() {
        // The generated passing work dir: one evidence file per act of the registry (a recorded
        // real run holds only the acts there were when it was recorded).
        let passing = crate::cluster::config::repo_root().join("lab/tests/fixtures/b/pass");
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("20261130T000000Z");
        // Lab b got through; lab a never got to act 1.
        copy_dir(&passing, &run.join("b/workdir"));
        std::fs::create_dir_all(run.join("a")).unwrap();
        let err = anyhow::anyhow!("bringing up cluster laba: kube-apiserver not ready after 120 s");
        write_acts(&run.join("a"), Err(&err)).unwrap();
        let (a, b) = (
            usize::from(lab::acts::count(Lab::A)),
            usize::from(lab::acts::count(Lab::B)),
        );
        assert_eq!(write_lab_pages(&run.join("b"), Lab::B).unwrap(), b);
        write_lab_pages(&run.join("a"), Lab::A).unwrap();
        write_run_files(&run).unwrap();
        for f in [
            "index.html",
            "junit.xml",
            "a/report.html",
            "b/report.html",
            "b/report.ja.html",
        ] {
            assert!(run.join(f).is_file(), "{f}");
        }
        let index = std::fs::read_to_string(run.join("index.html")).unwrap();
        assert!(index.contains(r#"href="b/report.html""#), "{index}");
        let md = junit_markdown(tmp.path()).unwrap();
        // lab a: setup + a acts + a grades, setup and the a grades fail, the a acts are skipped;
        // lab b: b acts + b grades, all pass.
        let row = format!(
            "| 20261130T000000Z/junit.xml | {} | {} | {a} |",
            1 + 2 * a + 2 * b,
            1 + a
        );
        assert!(md.contains(&row), "{row}:\n{md}");
        assert!(
            md.contains("lab a setup: the lab did not get to its acts bringing up cluster laba"),
            "{md}"
        );
        assert!(!md.contains("lab b "), "{md}");
    }
}
