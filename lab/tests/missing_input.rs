//! A missing input file tells the student what to do next (which act reads it, where it goes, the
//! `schema` command, where each bound value comes from), and `check NAME` finds a bare name in the
//! work directory when the current directory has no such file. The built binary, no cluster.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use lab::evidence::Lab;
use lab::inputs::Source;

const BIN: &str = env!("CARGO_BIN_EXE_kca-webhook-lab");

fn run(cwd: &Path, workdir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(cwd)
        .arg("--workdir")
        .arg(workdir)
        .arg("--kubeconfig")
        .arg("/nonexistent/kubeconfig")
        .args(args)
        .env_remove("KCA_WEBHOOK_DIR")
        .env_remove("KCA_WEBHOOK_LAB")
        .output()
        .expect("running kca-webhook-lab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn act_without_its_input_says_what_to_write() {
    let tmp = tempfile::tempdir().unwrap();
    let wd = tmp.path().join("wd");
    std::fs::create_dir(&wd).unwrap();
    for (lab, flag) in [(Lab::B, "b"), (Lab::A, "a")] {
        for spec in lab::acts::of(lab) {
            let Some(&file) = spec.inputs.first() else {
                continue;
            };
            let act = spec.number.to_string();
            let name = file.file_name();
            let stem = name.strip_suffix(".json").unwrap();
            for lang in ["ja", "en"] {
                let out = run(
                    tmp.path(),
                    &wd,
                    &["--lab", flag, "--lang", lang, "act", &act],
                );
                let err = stderr(&out);
                let ctx = format!("lab {flag} act {act} ({lang}): {err}");
                assert_eq!(out.status.code(), Some(2), "{ctx}");
                assert!(err.contains(&wd.join(name).display().to_string()), "{ctx}");
                assert!(err.contains(&format!("act {act} ")), "names the act: {ctx}");
                assert!(
                    err.contains(&format!("kca-webhook-lab schema {stem}\n")),
                    "{ctx}"
                );
                for (path, source) in file.bound_fields() {
                    let line = err
                        .lines()
                        .find(|l| l.trim_start().starts_with(&format!("{path}: ")))
                        .unwrap_or_else(|| panic!("no line for {path}: {ctx}"));
                    let from = match source {
                        Source::NodeUid => "vm.node_uid".to_owned(),
                        Source::NamespaceUid(_) => "namespaces".to_owned(),
                        Source::DeploymentUid => "controller.deployment_uid".to_owned(),
                        Source::PolicyUid => "facts.policy.metadata.uid".to_owned(),
                        Source::Digest(n) => format!(
                            "kca-webhook-lab digest {}",
                            wd.join(format!("evidence/{n:02}.json")).display()
                        ),
                    };
                    assert!(line.contains(&from), "{path}: {line:?} lacks {from:?}");
                }
                if lang == "en" {
                    assert!(err.contains("input file not found"), "{ctx}");
                } else {
                    assert!(err.contains("入力ファイルがありません"), "{ctx}");
                    assert!(err.contains("次にすること"), "{ctx}");
                }
            }
        }
    }
    // A relative --workdir: the hint names the full paths too.
    let out = run(
        tmp.path(),
        Path::new("wd"),
        &["--lab", "b", "--lang", "en", "act", "1"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("from the work directory {};", wd.display())),
        "{err}"
    );
    let out = run(
        tmp.path(),
        Path::new("wd"),
        &["--lab", "b", "--lang", "en", "check", "scope"],
    );
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "also looked for {}: ",
            wd.join("scope.json").display()
        )),
        "{err}"
    );
    // Nothing was written.
    assert_eq!(std::fs::read_dir(&wd).unwrap().count(), 0);
}

#[test]
fn check_reads_a_bare_name_from_the_cwd_then_the_work_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("cwd");
    let wd = tmp.path().join("wd");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::create_dir(&wd).unwrap();
    let pass = common::read_tree(&common::fixtures_dir().join("b/pass"));
    let policy = pass["policy.json"].to_string();

    // Neither has it: the error names both full paths, and what to do next.
    let out = run(&cwd, &wd, &["--lang", "en", "check", "policy.json"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: input file not found",
            cwd.join("policy.json").display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "also looked for {}",
            wd.join("policy.json").display()
        )),
        "{err}"
    );
    assert!(err.contains("kca-webhook-lab schema policy"), "{err}");

    // Only the work dir has it: a bare name (with or without .json) reads it there.
    std::fs::write(wd.join("policy.json"), &policy).unwrap();
    for name in ["policy.json", "policy"] {
        let out = run(&cwd, &wd, &["--lang", "en", "check", name]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("policy.json: valid"));
    }

    // A path with a directory is read as given, never from the work dir.
    let out = run(&cwd, &wd, &["--lang", "en", "check", "./policy.json"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&cwd.join("policy.json").display().to_string()),
        "{err}"
    );
    assert!(!err.contains("also looked for"), "{err}");

    // The current directory's file comes first.
    std::fs::write(cwd.join("policy.json"), "{").unwrap();
    let out = run(&cwd, &wd, &["--lang", "en", "check", "policy.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("policy.json: $"), "{}", stderr(&out));
}

/// Grading a recorded run's evidence without its input files reports each missing input once, as
/// input-missing (not also input-changed), and never prints a Rust `None`.
#[test]
fn grading_without_the_inputs_reports_each_missing_input_once() {
    let tmp = tempfile::tempdir().unwrap();
    let wd = tmp.path().join("wd");
    let from = common::fixtures_dir().join("recorded/b-20261130T210502Z/evidence");
    std::fs::create_dir_all(wd.join("evidence")).unwrap();
    for e in std::fs::read_dir(&from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), wd.join("evidence").join(e.file_name())).unwrap();
    }
    let out = run(tmp.path(), &wd, &["--lang", "en", "grade", "all"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert!(!said.contains("[input-changed]"), "{said}");
    assert!(!said.contains("None"), "{said}");
    for name in [
        "scope.json",
        "policy.json",
        "freeze-plan.json",
        "report.json",
    ] {
        assert!(
            said.contains(&format!("[input-missing] {name}:")),
            "{name}: {said}"
        );
    }
}
