//! `cargo xtask lab summary <dir>`: one Markdown table row per lab run found under an artifacts
//! directory, with the facts the labs are about, read from the evidence's `facts` (never from
//! logs): for lab A whether the registration was kept or absent after the scale-down, the leader
//! takeover and the first explicit deny after recovery; for lab B the outcomes and latencies of
//! the target requests under the Fail and the Ignore freezes and the first explicit deny after
//! each resume. The nightly workflow appends it to `$GITHUB_STEP_SUMMARY`.
//!
//! A lab run is a directory holding `evidence/NN.json` (or `workdir/evidence/NN.json`), as
//! `cargo xtask lab run` writes under `target/lab-artifacts/<run-id>/<lab>/`; its `backend.json`
//! (kubeconfig and k3s backends) gives the versions, else the pinned ones are shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Every lab-run directory under `root` (a directory with `evidence/` holding a `NN.json`), with
/// `.../workdir` folded into its parent.
fn runs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let rd = std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for e in rd.flatten() {
            let p = e.path();
            if !p.is_dir() || p.is_symlink() {
                continue;
            }
            if p.file_name().is_some_and(|n| n == "evidence") {
                let mut run = dir.clone();
                if run.file_name().is_some_and(|n| n == "workdir") {
                    run.pop();
                }
                out.entry(run).or_insert(());
            } else {
                stack.push(p);
            }
        }
    }
    Ok(out.into_keys().collect())
}

fn evidence(run: &Path, act: u8) -> Option<Value> {
    for dir in [run.join("evidence"), run.join("workdir").join("evidence")] {
        if let Ok(text) = std::fs::read_to_string(dir.join(format!("{act:02}.json"))) {
            return serde_json::from_str(&text).ok();
        }
    }
    None
}

fn s<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

/// The row of one lab run: `[run, lab, backend, kubernetes, kyverno, fact columns…, grades]`.
fn row(root: &Path, run: &Path) -> Vec<String> {
    // `<run-id>/<lab>`: when `root` is one run's directory, its own name is the run id.
    let base = if run.parent() == Some(root) {
        root.parent().unwrap_or(root)
    } else {
        root
    };
    let name = run.strip_prefix(base).unwrap_or(run).display().to_string();
    let backend: Value = std::fs::read_to_string(run.join("backend.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let lab = evidence(run, 1)
        .or_else(|| evidence(run, 2))
        .and_then(|e| e["lab"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".into());
    let k8s = s(&backend, "/kubernetes/gitVersion")
        .unwrap_or(super::PINNED_KUBERNETES)
        .to_string();
    let kyv = s(&backend, "/kyverno/tag")
        .unwrap_or(super::PINNED_KYVERNO)
        .to_string();
    let be = s(&backend, "/backend").unwrap_or("embedded").to_string();
    let mut cells = vec![name, lab.clone(), be, k8s, kyv];
    let e5 = evidence(run, 5)
        .map(|e| e["facts"].clone())
        .unwrap_or(Value::Null);
    let e6 = evidence(run, 6)
        .map(|e| e["facts"].clone())
        .unwrap_or(Value::Null);
    // The same key facts as the report page (one definition: `lab::report::key_facts`), for a
    // lab of the registry; a run whose evidence names no such lab has none (`—`), never another
    // lab's.
    let which = lab::acts::LABS
        .into_iter()
        .find(|l| l.as_str().eq_ignore_ascii_case(&lab));
    match which {
        Some(which) => cells.extend(lab::report::key_facts(which, &e5, &e6)),
        None => cells.extend(lab::report::KEY_FACT_HEADERS.iter().map(|_| "—".to_owned())),
    }
    let grades: Value = std::fs::read_to_string(run.join("grades.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let graded = grades.as_array().map(|g| {
        let passed = g
            .iter()
            .filter(|f| f["findings"].as_array().is_some_and(|a| a.is_empty()))
            .count();
        format!("{passed}/{} grades pass", g.len())
    });
    cells.push(graded.unwrap_or_else(|| "no grades.json".into()));
    cells
}

/// The Markdown table for every lab run under `root`.
///
/// Errors: `root` unreadable, or no lab run under it (a summary of nothing would hide a failed job).
pub fn markdown(root: &Path) -> Result<String> {
    let runs = runs(root)?;
    if runs.is_empty() {
        bail!(
            "no lab run (a directory with evidence/NN.json) under {}",
            root.display()
        );
    }
    let mut out = format!(
        "| run | lab | backend | Kubernetes | Kyverno | {} | grades |\n|---|---|---|---|---|---|---|---|---|\n",
        lab::report::KEY_FACT_HEADERS.join(" | ")
    );
    for run in &runs {
        out.push_str(&format!("| {} |\n", row(root, run).join(" | ")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn put(path: &Path, v: Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
    }

    #[test]
    fn table_rows_from_evidence_facts() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("lab-a-k3s/20261129T000000Z/a");
        put(
            &a.join("evidence/01.json"),
            json!({"lab": "a", "act": 1, "facts": {}}),
        );
        put(
            &a.join("evidence/05.json"),
            json!({"lab": "a", "act": 5, "facts": {"policy_webhook_present": false, "target_bad": {"outcome": "stored", "elapsed_ms": 40}}}),
        );
        put(
            &a.join("evidence/06.json"),
            json!({"lab": "a", "act": 6, "facts": {"lease_after_restore_ms": 32100,
                "replicas_restored": {"at": "2026-11-29T00:00:00.000Z"},
                "first_explicit_deny": {"at": "2026-11-29T00:00:40.500Z"}}}),
        );
        put(
            &a.join("backend.json"),
            json!({"backend": "k3s", "kubernetes": {"gitVersion": "v1.35.8+k3s1"}, "kyverno": {"tag": "v1.19.1"}}),
        );
        put(
            &a.join("grades.json"),
            json!([{"act": 1, "findings": []}, {"act": 2, "findings": [{"code": "x"}]}]),
        );
        let b = d.path().join("lab-b/20261129T000000Z/b/workdir");
        put(
            &b.join("evidence/01.json"),
            json!({"lab": "b", "act": 1, "facts": {}}),
        );
        put(
            &b.join("evidence/05.json"),
            json!({"lab": "b", "act": 5, "facts": {"target_good": {"outcome": "webhook-timeout", "elapsed_ms": 3012},
                "target_bad": {"outcome": "webhook-timeout", "elapsed_ms": 3007}, "first_deny_after_resume_ms": 1500}}),
        );
        put(
            &b.join("evidence/06.json"),
            json!({"lab": "b", "act": 6, "facts": {"target_good": {"outcome": "stored", "elapsed_ms": 3020},
                "target_bad": {"outcome": "stored", "elapsed_ms": 3010}, "first_deny_after_resume_ms": 800}}),
        );
        let md = markdown(d.path()).unwrap();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 4, "{md}");
        assert!(
            lines[2].contains("| a | k3s | v1.35.8+k3s1 | v1.19.1 |"),
            "{md}"
        );
        assert!(
            lines[2].contains(
                "registration after scale-down: absent; violating request stored (40 ms)"
            ),
            "{md}"
        );
        assert!(
            lines[2].contains("lease taken 32.1 s after restore"),
            "{md}"
        );
        assert!(lines[2].contains("first deny 40.5 s after restore"), "{md}");
        assert!(lines[2].contains("1/2 grades pass"), "{md}");
        assert!(
            lines[3].contains("| b | embedded | v1.35.8 | v1.19.1 |"),
            "{md}"
        );
        assert!(
            lines[3].contains("Fail: good webhook-timeout (3.0 s), bad webhook-timeout (3.0 s)"),
            "{md}"
        );
        assert!(
            lines[3].contains("Ignore: good stored (3.0 s), bad stored (3.0 s)"),
            "{md}"
        );
        assert!(
            lines[3].contains("first deny 1.5 s / 800 ms after resume"),
            "{md}"
        );
        assert!(lines[3].contains("no grades.json"), "{md}");
        let empty = tempfile::tempdir().unwrap();
        assert!(
            markdown(empty.path())
                .unwrap_err()
                .to_string()
                .contains("no lab run")
        );
        // A run whose evidence names a lab the registry does not have: no key facts, not lab B's.
        let other = tempfile::tempdir().unwrap();
        let run = other.path().join("x/20261203T000000Z");
        put(
            &run.join("evidence/05.json"),
            json!({"lab": "x", "act": 5, "facts": {"target_good": {"outcome": "webhook-timeout", "elapsed_ms": 3012}}}),
        );
        put(
            &run.join("evidence/01.json"),
            json!({"lab": "x", "act": 1, "facts": {}}),
        );
        let md = markdown(other.path()).unwrap();
        let row = md.lines().nth(2).unwrap_or_default();
        assert!(
            row.contains("| x |") && row.contains("| — | — | — |"),
            "{md}"
        );
        assert!(!row.contains("webhook-timeout"), "{md}");
        // Given one run's directory, the run column still names the run: `<run-id>/<lab>`.
        let one = markdown(&d.path().join("lab-b/20261129T000000Z")).unwrap();
        assert!(
            one.lines()
                .nth(2)
                .is_some_and(|l| l.starts_with("| 20261129T000000Z/b | b |")),
            "{one}"
        );
    }
}
