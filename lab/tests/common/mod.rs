//! Shared by the integration tests: the fixture generator and small helpers.

#![allow(dead_code)]

pub mod cases;
/// The Debian packages the tests need and the one installer xtask uses too (std only).
#[path = "../../../xtask/src/upstream/debian.rs"]
pub mod debian;
pub mod fixtures;
pub mod recorded;
/// The answer keys (xtask's: the student binary ships none).
#[path = "../../../xtask/src/lab_run/reference.rs"]
pub mod reference;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `lab/tests/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

/// Reads every `*.json` file under `dir` with [`lab::json::parse`] (relative path → parsed JSON).
pub fn read_tree(dir: &Path) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, serde_json::Value>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "json") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                // The one reader of the tool: fixtures are I-JSON like any file it reads.
                let bytes = std::fs::read(&p).unwrap();
                out.insert(
                    rel,
                    lab::json::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// Writes `files` (relative path → JSON) under `dir`, pretty-printed.
pub fn write_tree(dir: &Path, files: &BTreeMap<String, serde_json::Value>) {
    for (rel, v) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            format!("{}\n", serde_json::to_string_pretty(v).unwrap()),
        )
        .unwrap();
    }
}

/// Installs the report page test's Debian packages ([`debian::REPORT_PAGES`]: chromium, a
/// Japanese font, fontconfig) when any is missing, once per test process, through the installer
/// `cargo xtask` uses; panics with the packages and the command to run when it cannot (not root,
/// not Debian, apt-get failing). `KCA_CHROMIUM` set: the caller brought its own browser, and only
/// the font packages are checked.
pub fn ensure_report_page_packages() {
    static ONCE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let result = ONCE.get_or_init(|| {
        let wanted: Vec<debian::Package> = debian::REPORT_PAGES
            .iter()
            .copied()
            .filter(|p| p.name != "chromium" || std::env::var_os("KCA_CHROMIUM").is_none())
            .collect();
        if !debian::is_debian() {
            // Off Debian dpkg cannot tell; the browser and font checks of the test say what is
            // missing.
            return Ok(());
        }
        debian::ensure(&wanted, "the report page test", true)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
