//! actionlint on `.github/workflows/*.yml`, inside the README test command (`cargo test`).
//!
//! actionlint is built from its Go module, github.com/rhysd/actionlint at [`ACTIONLINT_VERSION`]
//! (`go install …@version`: the module's go.sum and the Go checksum database pin its code), with
//! `GOTOOLCHAIN=local`, into the upstream cache (`<cache>/tools/actionlint-<version>/actionlint`),
//! so it is built once per machine. Any finding fails the test with actionlint's own output.
//! A second test feeds actionlint a broken workflow, so a linter that reports nothing cannot pass
//! for a clean result.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

/// The pinned actionlint release.
const ACTIONLINT_VERSION: &str = "v1.7.12";
const MODULE: &str = "github.com/rhysd/actionlint/cmd/actionlint";

fn repo_root() -> PathBuf {
    xtask::cluster::config::repo_root()
}

/// The cached actionlint binary, built first when missing.
fn actionlint() -> Result<PathBuf> {
    // actionlint runs shellcheck on every `run:` script only when shellcheck is on PATH: install
    // it, so that a missing shellcheck cannot quietly weaken the check.
    xtask::upstream::debian::ensure(
        xtask::upstream::debian::WORKFLOWS,
        "the workflow test",
        false,
    )
    .map_err(anyhow::Error::msg)?;
    let dir = xtask::upstream::default_cache_dir()?
        .join("tools")
        .join(format!("actionlint-{ACTIONLINT_VERSION}"));
    let bin = dir.join("actionlint");
    if bin.is_file() {
        return Ok(bin);
    }
    let tmp = dir.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    eprintln!(
        " • building actionlint {ACTIONLINT_VERSION} from its Go module into {}",
        dir.display()
    );
    let out = Command::new("go")
        .args(["install", &format!("{MODULE}@{ACTIONLINT_VERSION}")])
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-trimpath")
        .env("GOBIN", &tmp)
        .env("CGO_ENABLED", "0")
        .output()
        .context("running go install (Go is required: actionlint is built from its Go module)")?;
    if !out.status.success() {
        bail!(
            "go install {MODULE}@{ACTIONLINT_VERSION} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => {}
        // Another process built it at the same time: keep theirs.
        Err(_) if bin.is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("moving {} to {}", tmp.display(), dir.display()));
        }
    }
    ensure!(bin.is_file(), "{} missing after go install", bin.display());
    Ok(bin)
}

fn run(bin: &Path, files: &[PathBuf], cwd: &Path) -> Result<(bool, String)> {
    let out = Command::new(bin)
        .arg("-no-color")
        .args(files)
        .current_dir(cwd)
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => Ok((true, text)),
        Some(1) => Ok((false, text)),
        other => bail!("actionlint failed to run (exit {other:?}):\n{text}"),
    }
}

#[test]
fn workflows_pass_actionlint() -> Result<()> {
    let root = repo_root();
    let dir = root.join(".github").join("workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    ensure!(
        names.contains(&"ci.yml".to_string()) && names.contains(&"nightly.yml".to_string()),
        "expected ci.yml and nightly.yml in {}, found {names:?}",
        dir.display()
    );
    let bin = actionlint()?;
    let rel: Vec<PathBuf> = files
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap_or(p).to_path_buf())
        .collect();
    let (clean, text) = run(&bin, &rel, &root)?;
    eprintln!(
        "actionlint {ACTIONLINT_VERSION} on {names:?}: {}",
        if clean { "no findings" } else { "findings" }
    );
    ensure!(clean, "actionlint found problems:\n{text}");
    Ok(())
}

#[test]
fn actionlint_reports_a_broken_workflow() -> Result<()> {
    let bin = actionlint()?;
    let d = repo_root()
        .join("target")
        .join(format!("actionlint-selftest-{}", std::process::id()));
    let wf = d.join(".github").join("workflows");
    std::fs::create_dir_all(&wf)?;
    let broken = wf.join("broken.yml");
    std::fs::write(
        &broken,
        "on: push\njobs:\n  j:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ matrix.nope }}\n",
    )?;
    let result = run(&bin, &[broken], &d);
    let _ = std::fs::remove_dir_all(&d);
    let (clean, text) = result?;
    ensure!(
        !clean,
        "actionlint accepted a workflow that uses an undefined matrix property:\n{text}"
    );
    ensure!(
        text.contains("matrix"),
        "actionlint's finding does not name the problem:\n{text}"
    );
    Ok(())
}
