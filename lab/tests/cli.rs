//! The built `kca-webhook-lab` binary on temporary work directories (no cluster): malformed inputs
//! are reported with file, JSON path, expected and found, exit non-zero and write nothing.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_kca-webhook-lab");

fn run(workdir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--workdir")
        .arg(workdir)
        .args(args)
        .env_remove("KCA_WEBHOOK_DIR")
        .env_remove("KCA_WEBHOOK_LAB")
        .output()
        .expect("running kca-webhook-lab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, (Vec<u8>, std::time::SystemTime)>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.insert(
                    format!("{rel}/"),
                    (
                        Vec::new(),
                        std::fs::metadata(&p).unwrap().modified().unwrap(),
                    ),
                );
                walk(root, &p, out);
            } else {
                out.insert(
                    rel,
                    (
                        std::fs::read(&p).unwrap(),
                        std::fs::metadata(&p).unwrap().modified().unwrap(),
                    ),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

fn reference(file: lab::inputs::InputFile) -> Value {
    let pass = common::read_tree(&common::fixtures_dir().join("b/pass"));
    pass[file.file_name()].clone()
}

struct Bad {
    file: &'static str,
    content: String,
    path: &'static str,
    expected: &'static str,
    found: &'static str,
}

fn bad_inputs() -> Vec<Bad> {
    use lab::inputs::InputFile as F;
    let mut policy_extra = reference(F::Policy);
    policy_extra["spec"]["matchConstraints"]["objectSelector"] = json!({});
    let mut policy_msg = reference(F::Policy);
    policy_msg["spec"]["validations"][0]["message"] = json!("KCA_ENV");
    let mut scope = reference(F::Scope);
    scope["node_uid"] = json!("kca-lab-node");
    let mut plan = reference(F::FreezePlan);
    plan["resume_after_sec"] = json!("20");
    let mut ignore = reference(F::PolicyIgnore);
    ignore["spec"]["failurePolicy"] = json!("Fail");
    vec![
        Bad {
            file: "policy.json",
            content: policy_extra.to_string(),
            path: "$.spec.matchConstraints.objectSelector",
            expected: "expected no field \"objectSelector\"",
            found: "found field \"objectSelector\"",
        },
        Bad {
            file: "policy.json",
            content: serde_json::to_string_pretty(&policy_msg).unwrap(),
            path: "$.spec.validations[0].message",
            expected: "expected \"KCA_ENVIRONMENT_REQUIRED\"",
            found: "found \"KCA_ENV\"",
        },
        Bad {
            file: "scope.json",
            content: scope.to_string(),
            path: "$.node_uid",
            expected: "expected a UID",
            found: "found \"kca-lab-node\"",
        },
        Bad {
            file: "freeze-plan.json",
            content: plan.to_string(),
            path: "$.resume_after_sec",
            expected: "expected 20",
            found: "found \"20\"",
        },
        Bad {
            file: "policy-ignore.json",
            content: ignore.to_string(),
            path: "$.spec.failurePolicy",
            expected: "expected \"Ignore\"",
            found: "found \"Fail\"",
        },
        Bad {
            file: "recovery.json",
            content: "{\n  \"mode\": \"Ignore\",\n".to_owned(),
            path: "$",
            expected: "expected a JSON document",
            found: "found invalid JSON at line 3",
        },
    ]
}

#[test]
fn malformed_inputs_are_reported_and_nothing_is_written() {
    for bad in bad_inputs() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(bad.file);
        std::fs::write(&path, &bad.content).unwrap();
        // Existing evidence must not be touched either.
        std::fs::create_dir(tmp.path().join("evidence")).unwrap();
        let before = snapshot(tmp.path());
        for lang in ["en", "ja"] {
            let out = run(
                tmp.path(),
                &[
                    "--lab",
                    "b",
                    "--lang",
                    lang,
                    "check",
                    path.to_str().unwrap(),
                ],
            );
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}: {err}", bad.file);
            assert!(
                err.contains(&format!("{}: {}", bad.file, bad.path)),
                "{}: {err}",
                bad.file
            );
            if lang == "en" {
                assert!(err.contains(bad.expected), "{}: {err}", bad.file);
                assert!(err.contains(bad.found), "{}: {err}", bad.file);
                assert!(err.contains("nothing was written"), "{err}");
            } else {
                assert!(err.contains("期待値") && err.contains("実際"), "{err}");
            }
        }
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{}: the work directory changed",
            bad.file
        );
        // The act that reads the file refuses too (here without a cluster) and writes nothing.
        let act = lab::inputs::InputFile::from_name(lab::evidence::Lab::B, bad.file)
            .unwrap()
            .act()
            .to_string();
        let out = run(
            tmp.path(),
            &[
                "--lab",
                "b",
                "--kubeconfig",
                "/nonexistent/kubeconfig",
                "act",
                &act,
            ],
        );
        assert_ne!(
            out.status.code(),
            Some(0),
            "{}: {}",
            bad.file,
            text(&out.stderr)
        );
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{}: act {act} changed the work directory",
            bad.file
        );
    }
}

#[test]
fn act_without_a_cluster_fails_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let pass = common::read_tree(&common::fixtures_dir().join("b/pass"));
    std::fs::write(
        tmp.path().join("scope.json"),
        pass["scope.json"].to_string(),
    )
    .unwrap();
    let before = snapshot(tmp.path());
    let out = run(
        tmp.path(),
        &[
            "--lab",
            "b",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "act",
            "1",
        ],
    );
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).is_empty());
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn valid_input_checks_ok_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("policy.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&reference(lab::inputs::InputFile::Policy)).unwrap(),
    )
    .unwrap();
    let out = run(tmp.path(), &["--lang", "en", "check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("policy.json: valid"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn check_uses_saved_evidence_for_digests() {
    // In the passing work directory, report.json is checked against the evidence digests;
    // an edited 05.json makes the same report wrong.
    let tmp = tempfile::tempdir().unwrap();
    common::write_tree(
        tmp.path(),
        &common::read_tree(&common::fixtures_dir().join("b/pass")),
    );
    let report = tmp.path().join("report.json");
    let out = run(
        tmp.path(),
        &["--lang", "en", "check", report.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ev5 = tmp.path().join("evidence/05.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&ev5).unwrap()).unwrap();
    v["facts"]["target_good"]["elapsed_ms"] = json!(3999);
    std::fs::write(&ev5, v.to_string()).unwrap();
    let out = run(
        tmp.path(),
        &["--lang", "en", "check", report.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("report.json: $.fail_evidence_sha256"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn digest_prints_the_canonical_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("x.json");
    std::fs::write(&p, "{ \"b\": [1.0, 1e3], \"a\": \"\\u00e9\" }\n").unwrap();
    let out = run(tmp.path(), &["digest", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let expected = lab::digest::digest_str(r#"{"a":"é","b":[1,1000]}"#).unwrap();
    assert_eq!(text(&out.stdout).trim(), expected);
}

#[test]
fn schema_is_published_per_input() {
    let tmp = tempfile::tempdir().unwrap();
    for (lab, name) in [
        ("b", "policy.json"),
        ("b", "freeze-plan"),
        ("a", "scale-plan.json"),
        ("a", "report.json"),
    ] {
        let out = run(tmp.path(), &["--lab", lab, "schema", name]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["additionalProperties"], json!(false), "{name}");
        assert_eq!(
            v["$schema"],
            json!("https://json-schema.org/draft/2020-12/schema")
        );
    }
    let out = run(tmp.path(), &["--lab", "a", "schema", "freeze-plan.json"]);
    assert_eq!(out.status.code(), Some(2), "lab a has no freeze-plan.json");
}

#[test]
fn grade_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    common::write_tree(
        tmp.path(),
        &common::read_tree(&common::fixtures_dir().join("a/pass")),
    );
    let out = run(tmp.path(), &["--lang", "en", "grade", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(
        text(&out.stdout).matches(": pass (").count(),
        8,
        "{}",
        text(&out.stdout)
    );
    // The lab is taken from the evidence when --lab is not given (lab A here).
    common::write_tree(
        tmp.path(),
        &common::read_tree(&common::fixtures_dir().join("a/flagged/act5-surviving-pod-new-uid")),
    );
    let out = run(tmp.path(), &["--lang", "en", "grade", "5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("[pod-replaced]"),
        "{}",
        text(&out.stdout)
    );
    let out = run(tmp.path(), &["grade", "9"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn internal_subcommands_are_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &["--help"]);
    let help = text(&out.stdout);
    assert!(
        help.contains("grade")
            && !help.contains("watchdog-freeze")
            && !help.contains("watcher-scale"),
        "{help}"
    );
    // Reached (not a clap usage error) and refusing empty arguments.
    for sub in ["watchdog-freeze", "watcher-scale"] {
        let out = run(tmp.path(), &[sub]);
        assert_ne!(out.status.code(), Some(0), "{sub}");
        assert!(
            !text(&out.stderr).contains("unrecognized subcommand"),
            "{sub}: {}",
            text(&out.stderr)
        );
    }
}
