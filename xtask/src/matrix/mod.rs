//! `cargo xtask matrix [--kubernetes LIST] [--kyverno LIST] [--lab <lab>|all] [--runs N]`: the
//! labs on every Kubernetes × Kyverno cell, each lab on a fresh embedded cluster, and one drift
//! table of the taught facts ([`facts::FACTS`]) against the pinned cell ([`table`]).
//!
//! Steps: every cell's upstream build first (cached entries are reused; a cold Kubernetes or
//! Kyverno version is minutes of `go build`, shown with an ETA), then for each cell and run each
//! lab through `cargo xtask lab run`'s own code ([`crate::lab_run::run_lab`]) with run id
//! `<matrix id>_<cell>_r<k>`, then the table from the artifacts (evidence, `versions.json`, the
//! graders run again on each work dir), written as `matrix.json`, `matrix.md` and `matrix.html`
//! under `target/lab-artifacts/<matrix id>/` (each column links its run's `index.html`), and with
//! `--write-docs` into `docs/matrix.md` between its markers.
//!
//! Exit status: non-zero only when a fact the course text states changed in a cell, or a run
//! failed (each said on stderr, [`table::failures`]).

pub mod facts;
pub mod facts_c;
pub mod table;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use lab::evidence::Lab;

use crate::upstream::Versions;
use facts::Evidence;
use table::{CellInput, LabResult};

/// Markers in `docs/matrix.md` between which `--write-docs` puts the measured table.
pub const DOCS_BEGIN: &str = "<!-- matrix:begin (written by cargo xtask matrix --write-docs) -->";
/// End marker, see [`DOCS_BEGIN`].
pub const DOCS_END: &str = "<!-- matrix:end -->";

/// `cargo xtask matrix …`
#[derive(clap::Args, Debug)]
pub struct MatrixCmd {
    /// Kubernetes releases, comma separated (default: the pinned v1.35.8).
    #[arg(long, value_delimiter = ',', value_name = "vX.Y.Z,…")]
    kubernetes: Vec<String>,
    /// Kyverno releases, comma separated (default: the pinned v1.19.1).
    #[arg(long, value_delimiter = ',', value_name = "vX.Y.Z,…")]
    kyverno: Vec<String>,
    /// Which labs to run in each cell, or all (every lab, in the registry's order).
    #[arg(long, value_name = crate::flags::LAB_VALUES.as_str(), value_parser = crate::flags::parse_lab_choice, default_value = "all")]
    lab: crate::flags::LabChoice,
    /// Runs of each cell (each lab on its own fresh cluster every run).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
    runs: u32,
    /// Use an earlier run directory (holding `a/` and `b/`, and `c/` if lab C ran, with
    /// `workdir/evidence/`, e.g.
    /// `target/lab-artifacts/<run-id>` of a pinned `lab run`) as the pinned column instead of
    /// running the pinned cell; the pinned pair is then left out of the cells run.
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// Only build every cell's upstream programs, images and chart; run nothing.
    #[arg(long)]
    build_only: bool,
    /// Also write the Markdown table into docs/matrix.md (between its markers).
    #[arg(long)]
    write_docs: bool,
    /// Only rebuild the table from earlier matrices' artifacts (`target/lab-artifacts/<id>`,
    /// each with its `cells.json`); runs nothing. Several directories, comma separated, make one
    /// table of all their runs (e.g. `--lab all --runs 1` and `--lab c --runs 4` of the same
    /// cells), written into a new `matrix-<id>` directory whose `cells.json` lists them all.
    #[arg(long, value_name = "DIR,…", value_delimiter = ',')]
    table_from: Vec<PathBuf>,
}

/// One cell run recorded in `cells.json`: the pair, the run number and its artifacts.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct CellRun {
    versions: Versions,
    run: u32,
    dir: PathBuf,
    labs: Vec<String>,
    errors: std::collections::BTreeMap<String, String>,
}

/// The cells of `--kubernetes` × `--kyverno`, each defaulting to the pinned version, checked
/// against the version tables.
///
/// # Errors
/// A version without a row ([`Versions::new`]).
pub fn cells(kubernetes: &[String], kyverno: &[String]) -> Result<Vec<Versions>> {
    let p = Versions::pinned();
    let ks = if kubernetes.is_empty() {
        vec![p.kubernetes.clone()]
    } else {
        kubernetes.to_vec()
    };
    let ys = if kyverno.is_empty() {
        vec![p.kyverno.clone()]
    } else {
        kyverno.to_vec()
    };
    let mut out = Vec::new();
    for k in &ks {
        for y in &ys {
            let v = Versions::new(k, y)?;
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    Ok(out)
}

impl MatrixCmd {
    /// `--table-from DIR,DIR,…`: one table of several matrices' runs ([`merged_runs`]), in a
    /// new `matrix-<id>` directory whose `cells.json` lists them all.
    fn table_from_several(&self) -> Result<()> {
        let mut lists = Vec::new();
        for dir in &self.table_from {
            lists.push(read_json::<Vec<CellRun>>(&dir.join("cells.json"))?);
        }
        let runs = merged_runs(lists);
        let (_, dir) = new_matrix_dir()?;
        write_json(&dir.join("cells.json"), &runs)?;
        eprintln!(
            "matrix: {} run(s) of {} matrices listed in {}",
            runs.len(),
            self.table_from.len(),
            dir.join("cells.json").display()
        );
        finish(&dir, &runs, self.baseline.as_deref(), self.write_docs)
    }

    /// Runs the matrix (see the module docs).
    pub fn run(self) -> Result<()> {
        if let [dir] = self.table_from.as_slice() {
            let runs: Vec<CellRun> = read_json(&dir.join("cells.json"))?;
            return finish(dir, &runs, self.baseline.as_deref(), self.write_docs);
        }
        if !self.table_from.is_empty() {
            return self.table_from_several();
        }
        let mut grid = cells(&self.kubernetes, &self.kyverno)?;
        if self.baseline.is_some() {
            grid.retain(|v| !v.is_pinned());
        } else if !grid.iter().any(Versions::is_pinned) {
            eprintln!(
                " • adding the pinned cell {} as the reference column (or pass --baseline DIR)",
                Versions::pinned().label()
            );
            grid.insert(0, Versions::pinned());
        }
        eprintln!(
            "matrix: {} cell(s): {}",
            grid.len(),
            grid.iter()
                .map(Versions::label)
                .collect::<Vec<_>>()
                .join("; ")
        );
        for v in &grid {
            let started = std::time::Instant::now();
            crate::upstream::ensure_built(&crate::upstream::BuildOptions {
                versions: v.clone(),
                ..Default::default()
            })
            .with_context(|| format!("building {}", v.label()))?;
            eprintln!(
                " ✓ upstream for {} ready in {:.0} s",
                v.label(),
                started.elapsed().as_secs_f64()
            );
        }
        if self.build_only {
            return Ok(());
        }
        lab::signals::install();
        let (id, dir) = new_matrix_dir()?;
        let mut runs = Vec::new();
        for v in &grid {
            for k in 1..=self.runs {
                let run_id = format!("{id}_{}_r{k}", v.cell_id());
                let mut errors = std::collections::BTreeMap::new();
                for lab in self.lab.labs() {
                    if let Some(signal) = lab::signals::pending() {
                        bail!(
                            "interrupted by {signal} before {} lab {}",
                            v.label(),
                            lab.as_str()
                        );
                    }
                    eprintln!("matrix: {} run {k}: lab {}", v.label(), lab.as_str());
                    let opts = crate::lab_run::RunOptions {
                        run_id: run_id.clone(),
                        versions: v.clone(),
                        ..crate::lab_run::RunOptions::new(lab)
                    };
                    match crate::lab_run::run_lab(&opts) {
                        Ok(report) => eprintln!("{}", report.summary()),
                        Err(e) => {
                            eprintln!("lab {}: {e:#}", lab.as_str());
                            errors.insert(lab.as_str().to_string(), format!("{e:#}"));
                        }
                    }
                }
                let run_dir = crate::lab_run::artifacts_dir(&run_id, Lab::A)
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default();
                runs.push(CellRun {
                    versions: v.clone(),
                    run: k,
                    dir: run_dir,
                    labs: self
                        .lab
                        .labs()
                        .iter()
                        .map(|l| l.as_str().to_string())
                        .collect(),
                    errors,
                });
                write_json(&dir.join("cells.json"), &runs)?;
            }
        }
        finish(&dir, &runs, self.baseline.as_deref(), self.write_docs)
    }
}

/// A new matrix's id (`matrix-<run id>`) and its directory `target/lab-artifacts/<id>`, created.
fn new_matrix_dir() -> Result<(String, PathBuf)> {
    let id = format!("matrix-{}", crate::lab_run::run_id());
    let dir = crate::cluster::config::repo_root()
        .join("target")
        .join("lab-artifacts")
        .join(&id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok((id, dir))
}

/// The runs of several matrices as one list: in the order given, each pair's runs numbered
/// 1, 2, … again (so two matrices' `r1` of one pair become runs 1 and 2); each run keeps its own
/// artifacts directory, labs and errors.
fn merged_runs(lists: Vec<Vec<CellRun>>) -> Vec<CellRun> {
    let mut out: Vec<CellRun> = Vec::new();
    for mut r in lists.into_iter().flatten() {
        r.run = 1 + out.iter().filter(|x| x.versions == r.versions).count() as u32;
        out.push(r);
    }
    out
}

/// Builds the table from the runs' artifacts (and the baseline), writes it, and fails per
/// [`table::failures`].
fn finish(dir: &Path, runs: &[CellRun], baseline: Option<&Path>, write_docs: bool) -> Result<()> {
    let mut inputs = Vec::new();
    if let Some(b) = baseline {
        inputs.push(load_baseline(b)?);
    }
    for r in runs {
        let mut c = load_cell(&r.versions, &r.dir, &r.labs, &r.errors)?;
        if runs.iter().filter(|x| x.versions == r.versions).count() > 1 {
            c.running = format!("run {}: {}", r.run, c.running);
        }
        inputs.push(c);
    }
    let t = table::build(&inputs);
    write_json(&dir.join("matrix.json"), &t)?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let md = format!(
        "Measured by `cargo xtask {}` ({}, artifacts `target/lab-artifacts/{}`).\n\n{}",
        args.join(" "),
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        t.markdown()
    );
    std::fs::write(dir.join("matrix.md"), &md)
        .with_context(|| format!("writing {}", dir.join("matrix.md").display()))?;
    std::fs::write(
        dir.join("matrix.html"),
        t.html("kca-webhook-lab version matrix"),
    )
    .with_context(|| format!("writing {}", dir.join("matrix.html").display()))?;
    println!("{md}");
    eprintln!(
        "matrix table: {} (and matrix.md, matrix.json)",
        dir.join("matrix.html").display()
    );
    if write_docs {
        let docs = crate::cluster::config::repo_root()
            .join("docs")
            .join("matrix.md");
        write_docs_table(&docs, &md)?;
        eprintln!("docs/matrix.md updated");
    }
    let fails = table::failures(&t);
    if !fails.is_empty() {
        for f in &fails {
            eprintln!("matrix: {f}");
        }
        bail!("matrix: {} problem(s) (above)", fails.len());
    }
    eprintln!("matrix: no stated fact changed; every run completed");
    Ok(())
}

/// Replaces the text between [`DOCS_BEGIN`] and [`DOCS_END`] in `path` with `table`.
///
/// # Errors
/// The file cannot be read or written, or lacks the markers.
pub fn write_docs_table(path: &Path, table: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let (Some(b), Some(e)) = (text.find(DOCS_BEGIN), text.find(DOCS_END)) else {
        bail!("{}: no markers {DOCS_BEGIN} … {DOCS_END}", path.display());
    };
    let out = format!("{}{DOCS_BEGIN}\n{table}{}", &text[..b], &text[e..]);
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

/// The pinned column from `--baseline DIR`: `DIR/<lab>` (a run directory), or else the newest
/// `DIR/<lab>-*` (the recorded runs, `lab/tests/fixtures/recorded`), for each lab the registry
/// says every baseline has (`LabSpec::in_every_baseline`: labs A and B); another lab's when there.
///
/// # Errors
/// Neither layout, or unreadable evidence.
fn load_baseline(dir: &Path) -> Result<CellInput> {
    let mut cell = CellInput {
        versions: Versions::pinned(),
        running: format!("baseline {}", dir.display()),
        labs: Default::default(),
        artifacts: dir.display().to_string(),
    };
    for lab in lab::acts::LABS {
        let name = lab.as_str();
        let Some(lab_dir) = baseline_lab_dir(dir, name) else {
            // The registry says which labs every baseline has (labs A and B); another lab is
            // there from the runs that have it.
            if !lab::acts::lab_spec(lab).in_every_baseline {
                continue;
            }
            bail!(
                "--baseline {}: no {name}/ and no {name}-* directory",
                dir.display()
            );
        };
        let result = load_lab(lab, &lab_dir)?;
        cell.running = format!("{} · lab {name}: {}", cell.running, lab_dir.display());
        cell.labs.insert(lab, result);
    }
    Ok(cell)
}

/// `dir/<name>` if it is a directory, else the last (newest by its UTC suffix) `dir/<name>-*`.
fn baseline_lab_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    if dir.join(name).is_dir() {
        return Some(dir.join(name));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{name}-")))
        })
        .collect();
    found.sort();
    found.pop()
}

/// One cell's [`CellInput`] from a run directory (`<dir>/<lab>/workdir/evidence`,
/// `<dir>/<lab>/versions.json`), with the graders run again on each work dir.
///
/// # Errors
/// An evidence file that is not JSON (naming it).
fn load_cell(
    versions: &Versions,
    dir: &Path,
    labs: &[String],
    errors: &std::collections::BTreeMap<String, String>,
) -> Result<CellInput> {
    let mut cell = CellInput {
        versions: versions.clone(),
        running: String::new(),
        labs: Default::default(),
        // Relative when the run sits beside the matrix directory (so the page works from an
        // uploaded artifact), else absolute.
        artifacts: match dir.file_name() {
            Some(n)
                if dir.parent()
                    == Some(
                        &crate::cluster::config::repo_root()
                            .join("target")
                            .join("lab-artifacts"),
                    ) =>
            {
                format!("../{}/index.html", n.to_string_lossy())
            }
            _ => dir.join("index.html").display().to_string(),
        },
    };
    for name in labs {
        let lab = lab::acts::LABS
            .into_iter()
            .find(|l| l.as_str() == name)
            .with_context(|| format!("{}: no lab {name:?}", dir.display()))?;
        let lab_dir = dir.join(name);
        let mut result = load_lab(lab, &lab_dir)?;
        if let Some(e) = errors.get(name) {
            result.failure = Some(e.clone());
        }
        if cell.running.is_empty() {
            cell.running = running_line(&lab_dir.join(crate::lab_run::versions::VERSIONS_FILE));
        }
        let (note, mismatch) = evidence_versions(&result.evidence, versions);
        cell.running = format!(
            "{} · lab {name}'s acts: {}",
            cell.running,
            same_as_run(&note, &cell.running)
        );
        if let Some(m) = mismatch {
            result.failure = Some(match result.failure.take() {
                Some(f) => format!("{f}; {m}"),
                None => m,
            });
        }
        cell.labs.insert(lab, result);
    }
    Ok(cell)
}

/// `kube-apiserver v1.36.3 · reg.kyverno.io/kyverno/kyverno:v1.19.1 · kyverno-3.9.1` from a
/// `versions.json`, or why not.
fn running_line(path: &Path) -> String {
    match std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    {
        Some(v) => format!(
            "kube-apiserver {} · {} · {}",
            v.pointer("/apiserver_version/gitVersion")
                .and_then(|x| x.as_str())
                .unwrap_or("?"),
            v["kyverno_image"].as_str().unwrap_or("?"),
            v["kyverno_chart"].as_str().unwrap_or("?")
        ),
        None => format!("not recorded ({} missing)", path.display()),
    }
}

/// What each act's evidence says it ran on (its `versions`: `/version`'s `gitVersion`, the
/// admission controller's image and chart), grouped: `v1.36.3 · <image> · <chart> (acts 1–8)`,
/// one group per distinct triple, acts without the field as `not recorded (acts …)`. The second
/// value says which acts ran another Kubernetes or Kyverno than `asked` (the image's tag), which
/// makes the cell's run a failure: its facts would be another pair's.
fn evidence_versions(evidence: &Evidence, asked: &Versions) -> (String, Option<String>) {
    let mut groups: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    let mut wrong = Vec::new();
    for (act, v) in evidence {
        let Some(r) = v.get("versions") else {
            groups.entry("not recorded".into()).or_default().push(*act);
            continue;
        };
        let git = r
            .pointer("/apiserver_version/gitVersion")
            .and_then(|x| x.as_str());
        let image = r["kyverno_image"].as_str();
        let chart = r["kyverno_chart"].as_str();
        let key = format!(
            "{} · {} · {}",
            git.unwrap_or("?"),
            image.unwrap_or("?"),
            chart.unwrap_or("?")
        );
        groups.entry(key).or_default().push(*act);
        let tag = image.and_then(|i| i.rsplit_once(':')).map(|(_, t)| t);
        if git != Some(asked.kubernetes.as_str()) || tag != Some(asked.kyverno.as_str()) {
            wrong.push(format!(
                "act {act} ran kube-apiserver {} and Kyverno image {}, not the asked {}",
                git.unwrap_or("?"),
                image.unwrap_or("?"),
                asked.label()
            ));
        }
    }
    let note = groups
        .iter()
        .map(|(k, acts)| format!("{k} (acts {})", acts_list(acts)))
        .collect::<Vec<_>>()
        .join("; ");
    let note = if note.is_empty() {
        "no evidence".into()
    } else {
        note
    };
    (note, (!wrong.is_empty()).then(|| wrong.join("; ")))
}

/// `note` ([`evidence_versions`]) shortened to `the same (acts 1–8)` when every act ran what the
/// run's `versions.json` line (`kube-apiserver <git> · <image> · <chart>`, [`running_line`]) says.
fn same_as_run(note: &str, running: &str) -> String {
    match (
        note.rsplit_once(" (acts "),
        running.strip_prefix("kube-apiserver "),
    ) {
        (Some((triple, acts)), Some(run)) if !triple.contains(';') && run.starts_with(triple) => {
            format!("the same (acts {acts}")
        }
        _ => note.to_owned(),
    }
}

/// `1–8` for consecutive acts, else `1, 3, 5`.
fn acts_list(acts: &[u8]) -> String {
    match (acts.first(), acts.last()) {
        (Some(f), Some(l)) if acts.len() > 1 && usize::from(l - f) + 1 == acts.len() => {
            format!("{f}–{l}")
        }
        _ => acts
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// One lab's evidence and the graders' findings from `<lab_dir>/workdir` (or `<lab_dir>` when it
/// has `evidence/` itself, as the recorded fixtures do).
///
/// # Errors
/// An evidence file that cannot be read or is not JSON.
pub fn load_lab(lab: Lab, lab_dir: &Path) -> Result<LabResult> {
    let workdir = if lab_dir.join("workdir").is_dir() {
        lab_dir.join("workdir")
    } else {
        lab_dir.to_path_buf()
    };
    let mut result = LabResult::default();
    let mut incomplete = Vec::new();
    for act in lab::acts::numbers(lab) {
        let path = workdir.join("evidence").join(format!("{act:02}.json"));
        if !path.is_file() {
            incomplete.push(format!("act {act}: no evidence"));
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not JSON", path.display()))?;
        if v["status"].as_str() != Some("completed") {
            incomplete.push(format!("act {act}: {}", v["status"]));
        }
        result.evidence.insert(act, v);
    }
    if !incomplete.is_empty() {
        result.failure = Some(incomplete.join(", "));
    }
    let grades = lab::grade::grade_all(
        lab,
        &lab::grade::GradeInput::load(&lab::workdir::Workdir::new(&workdir), lab),
    );
    for g in grades {
        for f in &g.findings {
            result
                .findings
                .push(format!("act {}: {}", g.act, f.message(lab::text::Lang::En)));
        }
    }
    Ok(result)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(v).context("serialising")?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use facts::Drift;

    fn recorded(run: &str) -> PathBuf {
        crate::cluster::config::repo_root()
            .join("lab/tests/fixtures/recorded")
            .join(run)
    }

    /// The pinned cell from the recorded embedded/kubeconfig runs (lab A 2026-11-30 19:46,
    /// lab B 2026-11-30 21:05, lab C 2026-12-01 23:48), as `cargo xtask matrix --table-from` would load it.
    fn pinned_cell() -> CellInput {
        CellInput {
            versions: Versions::pinned(),
            running: "recorded".into(),
            labs: [
                (Lab::A, "a-20261130T194643Z"),
                (Lab::B, "b-20261130T210502Z"),
                (Lab::C, "c-20261201T234822Z"),
            ]
            .into_iter()
            .map(|(lab, run)| (lab, load_lab(lab, &recorded(run)).unwrap()))
            .collect(),
            artifacts: String::new(),
        }
    }

    fn value<'a>(t: &'a table::Table, id: &str, col: usize) -> &'a table::Value {
        t.rows.iter().find(|r| r.id == id).unwrap().values[col]
            .as_ref()
            .unwrap()
    }

    #[test]
    fn the_recorded_pinned_runs_show_every_taught_fact() {
        let t = table::build(&[pinned_cell()]);
        for r in &t.rows {
            let v = r.values[0].as_ref().unwrap();
            // Lab A's recording ran on the kubeconfig backend (no audit log) but lab B's has one:
            // every fact is observed.
            assert_eq!(v.drift, Drift::Pinned, "{}: {:?}", r.id, v.observed);
        }
        assert_eq!(
            value(&t, "b.fail-freeze.target", 0)
                .observed
                .value
                .as_deref(),
            Some("webhook-timeout (GET: not found)")
        );
        assert_eq!(
            value(&t, "b.fail-freeze.control", 0)
                .observed
                .value
                .as_deref(),
            Some("stored (GET: found)")
        );
        assert_eq!(
            value(&t, "b.ignore-freeze.target", 0)
                .observed
                .value
                .as_deref(),
            Some("stored (GET: found) after the timeout")
        );
        assert_eq!(
            value(&t, "b.timeout.elapsed", 0).observed.value.as_deref(),
            Some("≈ timeoutSeconds")
        );
        assert_eq!(
            value(&t, "b.fail-open.count", 0).observed.value.as_deref(),
            Some("2")
        );
        assert_eq!(
            value(&t, "b.fail-open.audit", 0).observed.value.as_deref(),
            Some("round_0_index_0 = <webhook>")
        );
        assert_eq!(
            value(&t, "a.scale-down.registration", 0)
                .observed
                .value
                .as_deref(),
            Some("registration-absent")
        );
        assert_eq!(
            value(&t, "a.scale-down.request", 0)
                .observed
                .value
                .as_deref(),
            Some("stored (GET: found), webhook not called")
        );
        assert_eq!(
            value(&t, "a.recovery.order", 0).observed.value.as_deref(),
            Some("lease → registration → deny")
        );
        assert_eq!(
            value(&t, "a.dry-run", 0).observed.value.as_deref(),
            Some("good: dry-run-admitted (GET: not found) · bad: explicit-deny")
        );
        assert!(
            t.columns[0].findings.is_empty(),
            "{:?}",
            t.columns[0].findings
        );
        assert!(table::failures(&t).is_empty());
    }

    /// Lab C's rows on the recorded run c-20261201T234822Z, against docs/lab-c.md's row for it
    /// (act 5: 2/18 timeouts, Lease moved 16020 ms after the SIGSTOP, former leader 0→1 same UID;
    /// act 6: 2/18 stored; act 7: 2.0 s).
    #[test]
    fn the_recorded_lab_c_run_shows_what_lab_c_teaches() {
        let t = table::build(&[pinned_cell()]);
        let v = |id: &str| value(&t, id, 0).observed.clone();
        let timeouts = v("c.leader-freeze.timeouts");
        assert_eq!(
            timeouts.value.as_deref(),
            Some("some-matching-requests-timeout")
        );
        assert_eq!(timeouts.figure, Some(facts::Figure { n: 2, of: Some(18) }));
        assert!(
            timeouts.detail.starts_with(
                "2 of 18 webhook-timeout (GET found 0 of them), 16 explicit-deny, 0 other"
            ),
            "{}",
            timeouts.detail
        );
        assert_eq!(
            v("c.leader-freeze.outcomes").value.as_deref(),
            Some("webhook-timeout (GET: not found) or explicit-deny")
        );
        assert_eq!(
            v("c.leader-freeze.endpoint").value.as_deref(),
            Some("ready endpoint in every read")
        );
        assert_eq!(
            v("c.lease.leader-freeze").value.as_deref(),
            Some("taken-over-during-freeze")
        );
        assert_eq!(v("c.lease.takeover-ms").value.as_deref(), Some("16020"));
        assert_eq!(v("c.former-leader").value.as_deref(), Some("restarted"));
        assert!(
            v("c.former-leader")
                .detail
                .starts_with("restart count 0→1, same pod UID")
        );
        let stored = v("c.follower-freeze.stored");
        assert_eq!(stored.value.as_deref(), Some("some-unvalidated-stored"));
        assert_eq!(stored.figure.map(|f| (f.n, f.of)), Some((2, Some(18))));
        // Act 6: the restarted former leader served none of the follower freeze's calls.
        assert_eq!(
            v("c.replica-share").value.as_deref(),
            Some("act 3: 3 of 3 served · act 5: 2 of 2 served · act 6: 2 of 3 served")
        );
        assert_eq!(v("c.registration").value.as_deref(), Some("kept"));
        let back = v("c.scale-back");
        assert_eq!(
            back.value.as_deref(),
            Some("1 replica(s), explicit-deny, existing same-uid-running")
        );
        assert_eq!(back.figure.map(|f| f.n), Some(2005));
        // The spread table has one column (one pair) with one run each.
        assert_eq!(t.spread.cells, vec![Versions::pinned()]);
        let sp = t
            .spread
            .rows
            .iter()
            .find(|r| r.id == "c.leader-freeze.timeouts")
            .unwrap();
        assert_eq!(table::spread_text(&sp.figures[0]), "2 of 18 (1 run(s): 2)");
    }

    #[test]
    fn merged_matrices_number_each_pairs_runs_again_and_keep_their_artifacts() {
        let run = |k: &str, n: u32, labs: &[&str]| CellRun {
            versions: Versions::new(k, "v1.19.1").unwrap(),
            run: n,
            dir: PathBuf::from(format!("m/{k}_r{n}_{}", labs.join(""))),
            labs: labs.iter().map(|l| l.to_string()).collect(),
            errors: Default::default(),
        };
        let all = vec![
            run("v1.35.8", 1, &["a", "b", "c"]),
            run("v1.37.2", 1, &["a", "b", "c"]),
        ];
        let c_only = vec![
            run("v1.35.8", 1, &["c"]),
            run("v1.35.8", 2, &["c"]),
            run("v1.37.2", 1, &["c"]),
        ];
        let merged = merged_runs(vec![all, c_only]);
        let seen: Vec<(String, u32, String)> = merged
            .iter()
            .map(|r| {
                (
                    r.versions.kubernetes.clone(),
                    r.run,
                    r.dir.display().to_string(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("v1.35.8".into(), 1, "m/v1.35.8_r1_abc".into()),
                ("v1.37.2".into(), 1, "m/v1.37.2_r1_abc".into()),
                ("v1.35.8".into(), 2, "m/v1.35.8_r1_c".into()),
                ("v1.35.8".into(), 3, "m/v1.35.8_r2_c".into()),
                ("v1.37.2".into(), 2, "m/v1.37.2_r1_c".into()),
            ]
        );
        assert_eq!(merged[2].labs, ["c"]);
    }

    #[test]
    fn several_runs_of_a_pair_show_their_spread_and_a_count_change_is_no_failure() {
        let mut runs = Vec::new();
        for (k, timeouts) in [(1, 0usize), (2, 7), (3, 4)] {
            let mut c = pinned_cell();
            c.versions = Versions::new("v1.37.2", "v1.19.1").unwrap();
            c.running = format!("run {k}");
            let bad = c
                .labs
                .get_mut(&Lab::C)
                .unwrap()
                .evidence
                .get_mut(&5)
                .unwrap()["facts"]["bad"]
                .as_array_mut()
                .unwrap();
            for (i, r) in bad.iter_mut().enumerate() {
                let word = if i < timeouts {
                    "webhook-timeout"
                } else {
                    "explicit-deny"
                };
                r["outcome"] = serde_json::json!(word);
                r["get"]["exists"] = serde_json::json!(false);
            }
            runs.push(c);
        }
        let mut cells = vec![pinned_cell()];
        cells.extend(runs);
        let t = table::build(&cells);
        assert_eq!(t.spread.cells.len(), 2);
        let sp = t
            .spread
            .rows
            .iter()
            .find(|r| r.id == "c.leader-freeze.timeouts")
            .unwrap();
        assert_eq!(table::spread_text(&sp.figures[0]), "2 of 18 (1 run(s): 2)");
        assert_eq!(
            table::spread_text(&sp.figures[1]),
            "0–7 of 18 (3 run(s): 0, 7, 4)"
        );
        // Run 1 saw none: the lab's word changes, an unstated row; the matrix still passes.
        assert_eq!(
            value(&t, "c.leader-freeze.timeouts", 1).drift,
            Drift::Changed
        );
        assert_eq!(value(&t, "c.leader-freeze.timeouts", 2).drift, Drift::Same);
        assert_eq!(value(&t, "c.leader-freeze.outcomes", 1).drift, Drift::Same);
        assert!(table::failures(&t).is_empty(), "{:?}", table::failures(&t));
        let md = t.markdown();
        assert!(md.contains("Spread over each pair's runs"), "{md}");
        assert!(
            md.contains("| 2 of 18 (1 run(s): 2) | 0–7 of 18 (3 run(s): 0, 7, 4) |"),
            "{md}"
        );
    }

    #[test]
    fn a_stored_request_during_the_leader_freeze_is_a_stated_change() {
        let mut other = pinned_cell();
        other.versions = Versions::new("v1.37.2", "v1.19.1").unwrap();
        let bad = &mut other
            .labs
            .get_mut(&Lab::C)
            .unwrap()
            .evidence
            .get_mut(&5)
            .unwrap()["facts"]["bad"][0];
        bad["outcome"] = serde_json::json!("stored");
        bad["get"]["exists"] = serde_json::json!(true);
        let t = table::build(&[pinned_cell(), other]);
        let v = value(&t, "c.leader-freeze.outcomes", 1);
        assert_eq!(
            v.observed.value.as_deref(),
            Some("also: stored (GET: true)")
        );
        assert_eq!(v.drift, Drift::Changed);
        let f = table::failures(&t);
        assert!(
            f.iter().any(|l| l.contains("c.leader-freeze.outcomes")),
            "{f:?}"
        );
    }

    #[test]
    fn an_identical_other_cell_is_same_everywhere_and_passes() {
        let mut other = pinned_cell();
        other.versions = Versions::new("v1.36.3", "v1.19.1").unwrap();
        let t = table::build(&[other, pinned_cell()]);
        assert!(
            t.columns[0].versions.is_pinned(),
            "the pinned cell comes first"
        );
        for r in &t.rows {
            assert_eq!(r.values[1].as_ref().unwrap().drift, Drift::Same, "{}", r.id);
        }
        assert!(
            t.columns[1]
                .support
                .starts_with("outside Kyverno v1.19.1's stated support (v1.33–v1.35)"),
            "{}",
            t.columns[1].support
        );
        assert!(table::failures(&t).is_empty());
        let md = t.markdown();
        assert!(md.contains("Kubernetes v1.36.3 × Kyverno v1.19.1"), "{md}");
        assert!(md.contains("registration-absent (same)"), "{md}");
    }

    #[test]
    fn a_kept_registration_is_a_stated_change_naming_the_cell() {
        let mut other = pinned_cell();
        other.versions = Versions::new("v1.34.4", "v1.18.2").unwrap();
        let a = other.labs.get_mut(&Lab::A).unwrap();
        a.evidence.get_mut(&5).unwrap()["facts"]["policy_webhook_present"] =
            serde_json::json!(true);
        let t = table::build(&[pinned_cell(), other]);
        assert_eq!(
            value(&t, "a.scale-down.registration", 1).drift,
            Drift::Changed
        );
        let f = table::failures(&t);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].contains("kubernetes v1.34.4 × kyverno v1.18.2")
                && f[0].contains("a.scale-down.registration"),
            "{f:?}"
        );
    }

    #[test]
    fn an_unstated_change_or_a_slower_recovery_does_not_fail_the_matrix() {
        let mut other = pinned_cell();
        other.versions = Versions::new("v1.36.3", "v1.19.1").unwrap();
        let b = other.labs.get_mut(&Lab::B).unwrap();
        b.evidence.get_mut(&2).unwrap()["facts"]["webhook"]["name"] =
            serde_json::json!("renamed.kyverno.svc");
        let a = other.labs.get_mut(&Lab::A).unwrap();
        a.evidence.get_mut(&6).unwrap()["facts"]["first_explicit_deny"]["waited_ms"] =
            serde_json::json!(31000);
        let t = table::build(&[pinned_cell(), other]);
        assert_eq!(value(&t, "b.webhook.name", 1).drift, Drift::Changed);
        assert_eq!(value(&t, "a.recovery.deny-ms", 1).drift, Drift::Same);
        assert!(table::failures(&t).is_empty(), "{:?}", table::failures(&t));
    }

    #[test]
    fn latency_annotations_missing_as_on_v1_34_are_a_change_not_a_failure() {
        let pinned = table::build(&[pinned_cell()]);
        let seen = value(&pinned, "b.latency.audit", 0).observed.value.clone();
        assert!(
            seen.as_deref()
                .is_some_and(|v| v.contains("validating-webhook") && v.contains("total")),
            "the recorded v1.35.8 run carries them: {seen:?}"
        );
        let mut other = pinned_cell();
        other.versions = Versions::new("v1.34.4", "v1.19.1").unwrap();
        let b = other.labs.get_mut(&Lab::B).unwrap();
        let reqs = b.evidence.get_mut(&6).unwrap()["facts"]["admission_audit"]["requests"]
            .as_array_mut()
            .unwrap();
        for r in reqs {
            for e in r["events"].as_array_mut().unwrap() {
                if let Some(a) = e["annotations"].as_object_mut() {
                    a.retain(|k, _| !k.starts_with("apiserver.latency.k8s.io/"));
                }
            }
        }
        let t = table::build(&[pinned_cell(), other]);
        let v = value(&t, "b.latency.audit", 1);
        assert_eq!(v.observed.value.as_deref(), Some("absent"));
        assert_eq!(v.drift, Drift::Changed);
        assert_eq!(value(&t, "b.fail-open.audit", 1).drift, Drift::Same);
        assert!(table::failures(&t).is_empty(), "{:?}", table::failures(&t));
    }

    #[test]
    fn a_failed_run_fails_the_matrix_and_says_which() {
        let mut other = pinned_cell();
        other.versions = Versions::new("v1.36.3", "v1.19.1").unwrap();
        let b = other.labs.get_mut(&Lab::B).unwrap();
        b.evidence.remove(&6);
        b.evidence.remove(&7);
        b.evidence.remove(&8);
        b.failure = Some("act 6: no evidence".into());
        let t = table::build(&[pinned_cell(), other]);
        assert_eq!(
            value(&t, "b.ignore-freeze.target", 1).drift,
            Drift::NotObserved
        );
        let f = table::failures(&t);
        assert!(
            f.iter()
                .any(|l| l.contains("run failed: lab b: act 6: no evidence")),
            "{f:?}"
        );
    }

    #[test]
    fn the_recorded_runs_serve_as_a_baseline() {
        let dir = crate::cluster::config::repo_root().join("lab/tests/fixtures/recorded");
        assert_eq!(
            baseline_lab_dir(&dir, "b"),
            Some(recorded("b-20261130T210502Z"))
        );
        let c = load_baseline(&dir).unwrap();
        assert!(c.versions.is_pinned());
        assert_eq!(c.labs[&Lab::A].evidence.len(), 8);
        assert!(load_baseline(&dir.join("nothing-here")).is_err());
    }

    #[test]
    fn cells_default_to_the_pinned_versions_and_refuse_unknown_ones() {
        let c = cells(&[], &[]).unwrap();
        assert_eq!(c, vec![Versions::pinned()]);
        let c = cells(
            &["v1.35.8".into(), "v1.36.3".into()],
            &["v1.18.2".into(), "v1.19.1".into()],
        )
        .unwrap();
        assert_eq!(c.len(), 4);
        assert!(cells(&["v1.29.0".into()], &[]).is_err());
    }

    #[test]
    fn the_docs_table_goes_between_the_markers() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("m.md");
        std::fs::write(&p, format!("# head\n{DOCS_BEGIN}\nold\n{DOCS_END}\ntail\n")).unwrap();
        write_docs_table(&p, "| new |\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            format!("# head\n{DOCS_BEGIN}\n| new |\n{DOCS_END}\ntail\n")
        );
        std::fs::write(&p, "no markers").unwrap();
        assert!(write_docs_table(&p, "x").is_err());
    }

    fn act_with(git: &str, image: &str) -> serde_json::Value {
        serde_json::json!({"versions": {
            "apiserver_version": {"gitVersion": git},
            "kyverno_image": image,
            "kyverno_chart": "kyverno-3.9.1",
            "read_at": "2026-12-01T18:00:00.000Z"
        }})
    }

    #[test]
    fn every_acts_versions_are_grouped_and_checked_against_the_asked_pair() {
        let asked = Versions::new("v1.36.3", "v1.19.1").unwrap();
        let img = "reg.kyverno.io/kyverno/kyverno:v1.19.1";
        let mut ev: Evidence = lab::acts::numbers(Lab::B)
            .map(|a| (a, act_with("v1.36.3", img)))
            .collect();
        let last = lab::acts::numbers(Lab::B).last().unwrap();
        let (note, wrong) = evidence_versions(&ev, &asked);
        assert_eq!(
            note,
            format!("v1.36.3 · {img} · kyverno-3.9.1 (acts 1–{last})")
        );
        assert_eq!(wrong, None);

        ev.insert(4, act_with("v1.35.8", img));
        ev.insert(7, serde_json::json!({"facts": {}}));
        let (note, wrong) = evidence_versions(&ev, &asked);
        assert!(
            note.contains("v1.35.8 · ") && note.contains("(acts 4)"),
            "{note}"
        );
        assert!(note.contains("(acts 1, 2, 3, 5, 6, 8)"), "{note}");
        assert!(note.contains("not recorded (acts 7)"), "{note}");
        let wrong = wrong.expect("act 4 ran another Kubernetes");
        assert!(
            wrong.starts_with("act 4 ran kube-apiserver v1.35.8"),
            "{wrong}"
        );
        assert!(
            !wrong.contains("act 7"),
            "an old act without the field is no mismatch: {wrong}"
        );

        let run = format!("kube-apiserver v1.36.3 · {img} · kyverno-3.9.1");
        let one = format!("v1.36.3 · {img} · kyverno-3.9.1 (acts 1–{last})");
        assert_eq!(same_as_run(&one, &run), format!("the same (acts 1–{last})"));
        assert_eq!(same_as_run(&note, &run), note, "two groups are spelled out");
        let other_run = run.replace("v1.36.3", "v1.35.8");
        assert_eq!(same_as_run(&one, &other_run), one);

        let other = "reg.kyverno.io/kyverno/kyverno:v1.18.2";
        let ev: Evidence = [(1, act_with("v1.36.3", other))].into();
        let (_, wrong) = evidence_versions(&ev, &asked);
        assert!(wrong.expect("another Kyverno").contains(other));
    }
}
