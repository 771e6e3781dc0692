//! The built `kca-webhook-lab` as scripts, CI and packagers use it (no cluster): `version -o
//! json|yaml` against its schema; `grade -o json|junit` and `grade-many` on recorded work dirs
//! and on copies broken on purpose; the completion scripts parsed by their own shells (bash -n,
//! zsh -n, fish --no-execute) and the man pages by groff.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_kca-webhook-lab");

/// The Debian packages the tests need and the one installer `cargo xtask` uses (std only).
#[allow(dead_code)]
#[path = "../../xtask/src/upstream/debian.rs"]
mod debian;

/// Installs zsh, fish and groff-base when missing ([`debian::SCRIPTING`]), once per test process;
/// panics with the packages and the command to run when it cannot.
fn ensure_scripting_packages() {
    static ONCE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let result = ONCE.get_or_init(|| {
        if !debian::is_debian() {
            return Ok(()); // dpkg cannot tell: the parse below says what is missing.
        }
        debian::ensure(debian::SCRIPTING, "the completion and man page test", false)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("KCA_WEBHOOK_DIR")
        .env_remove("KCA_WEBHOOK_LAB")
        .output()
        .expect("running kca-webhook-lab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A recorded run's work dir (`lab/tests/fixtures/recorded/NAME`).
fn recorded(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recorded")
        .join(name)
}

const LAB_A: &str = "a-20261130T194643Z";
const LAB_B: &str = "b-20261130T210502Z";
const LAB_C: &str = "c-20261201T234822Z";

/// Copies a recorded work dir into `to`.
fn copy(from: &Path, to: &Path) {
    for e in walk(from) {
        let dest = to.join(e.strip_prefix(from).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&e, &dest).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `instance` is valid against `schema` (every error named otherwise).
fn assert_valid(schema: &Value, instance: &Value) {
    let v = jsonschema::validator_for(schema).expect("a valid schema");
    let errors: Vec<String> = v
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{instance:#}");
}

#[test]
fn version_json_is_valid_against_its_schema_and_yaml_says_the_same() {
    let out = run(&["version", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&lab::version::schema(), &v);
    assert_eq!(v["format"], "kca-webhook-lab/version/v1");
    assert_eq!(
        v["kubernetes"], "v1.35.8",
        "the pinned Kubernetes (xtask/upstream/kubernetes/go.mod)"
    );
    assert_eq!(
        v["kyverno"], "v1.19.1",
        "the pinned Kyverno (xtask/upstream/kyverno/go.mod)"
    );
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let yaml = run(&["version", "-o", "yaml"]);
    let y: Value = serde_yaml_ng::from_slice(&yaml.stdout).unwrap();
    assert_eq!(y, v);
    // The schema refuses what the tool does not print (it is no `true` schema).
    let mut extra = v.clone();
    extra["extra"] = Value::from(1);
    assert!(!jsonschema::is_valid(&lab::version::schema(), &extra));
    let text_form = text(&run(&["version"]).stdout);
    assert!(
        text_form.contains("kubernetes: v1.35.8") && text_form.contains("build date: "),
        "{text_form}"
    );
}

#[test]
fn grade_json_has_each_acts_status_and_each_findings_file_and_path() {
    let pass = run(&[
        "--lang",
        "en",
        "--workdir",
        recorded(LAB_B).to_str().unwrap(),
        "grade",
        "all",
        "-o",
        "json",
    ]);
    assert!(
        pass.status.success(),
        "{}{}",
        text(&pass.stdout),
        text(&pass.stderr)
    );
    let r: Value = serde_json::from_slice(&pass.stdout).unwrap();
    assert_valid(&lab::report::grades::schema(), &r);
    assert_eq!(
        (r["lab"].as_str(), r["passed"].as_bool()),
        (Some("b"), Some(true))
    );
    let acts = r["acts"].as_array().unwrap();
    assert_eq!(acts.len(), 8);
    assert!(
        acts.iter()
            .all(|a| a["status"] == "passed" && a["checks"].as_u64() > Some(0))
    );
    assert_eq!(
        r["checks"].as_u64(),
        Some(acts.iter().map(|a| a["checks"].as_u64().unwrap()).sum())
    );

    // Act 5's evidence is cut short and act 7's is gone.
    let tmp = tempfile::tempdir().unwrap();
    copy(&recorded(LAB_B), tmp.path());
    std::fs::write(tmp.path().join("evidence/05.json"), "{\"lab\": ").unwrap();
    std::fs::remove_file(tmp.path().join("evidence/07.json")).unwrap();
    let bad = run(&[
        "--lang",
        "en",
        "--workdir",
        tmp.path().to_str().unwrap(),
        "grade",
        "all",
        "-o",
        "json",
    ]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    let r: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_valid(&lab::report::grades::schema(), &r);
    let act = |n: u64| {
        r["acts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["act"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(act(5)["status"], "failed");
    assert_eq!(act(5)["findings"][0]["file"], "evidence/05.json");
    assert_eq!(act(5)["findings"][0]["code"], "evidence-invalid");
    assert_eq!(act(7)["status"], "not-run");
    assert_eq!(act(1)["status"], "passed");
    let with_path = r["acts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["findings"].as_array().unwrap())
        .find(|f| f["path"] != "");
    assert!(
        with_path.is_some_and(|f| f["path"].as_str().unwrap().contains('.')
            || f["path"].as_str().unwrap().starts_with('/')),
        "some finding names a JSON path: {r:#}"
    );
    let ja = run(&[
        "--workdir",
        tmp.path().to_str().unwrap(),
        "grade",
        "5",
        "-o",
        "json",
    ]);
    let ja: Value = serde_json::from_slice(&ja.stdout).unwrap();
    assert_ne!(
        ja["acts"][0]["findings"][0]["message"],
        act(5)["findings"][0]["message"],
        "ja by default"
    );
}

#[test]
fn grade_junit_has_a_case_per_act_and_per_grade() {
    let tmp = tempfile::tempdir().unwrap();
    copy(&recorded(LAB_B), tmp.path());
    std::fs::remove_file(tmp.path().join("evidence/07.json")).unwrap();
    let out = run(&[
        "--workdir",
        tmp.path().to_str().unwrap(),
        "grade",
        "all",
        "-o",
        "junit",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = quick_junit::Report::deserialize_from_str(&text(&out.stdout)).expect("JUnit XML");
    let suite = &report.test_suites[0];
    assert_eq!(suite.name.as_str(), "lab-b");
    assert_eq!(suite.test_cases.len(), 16);
    let failed: Vec<&str> = suite
        .test_cases
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::NonSuccess { .. }))
        .map(|c| c.name.as_str())
        .collect();
    assert!(failed.contains(&"lab b grade 7"), "{failed:?}");
    let skipped = suite
        .test_cases
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::Skipped { .. }))
        .count();
    assert_eq!(skipped, 1, "act 7 did not run");
}

/// A class: the three recorded labs, a copy with a broken evidence file, a missing directory and
/// a file given as a directory.
fn class(tmp: &Path) -> Vec<PathBuf> {
    let broken = tmp.join("dora");
    copy(&recorded(LAB_B), &broken);
    std::fs::write(broken.join("evidence/03.json"), "not json").unwrap();
    let file = tmp.join("eve.txt");
    std::fs::write(&file, "").unwrap();
    vec![
        recorded(LAB_A),
        recorded(LAB_B),
        recorded(LAB_C),
        broken,
        tmp.join("frank-missing"),
        file,
    ]
}

#[test]
fn grade_many_writes_one_row_per_work_dir_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = class(tmp.path());
    let args = |format: &str| -> Vec<String> {
        let mut a = vec![
            "--lang".to_owned(),
            "en".to_owned(),
            "grade-many".to_owned(),
        ];
        a.extend(dirs.iter().map(|d| d.display().to_string()));
        a.extend(["-o".to_owned(), format.to_owned()]);
        a
    };
    let go = |format: &str, extra: &[&str]| {
        let mut a = args(format);
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        run(&refs)
    };
    let json = go("json", &[]);
    assert_eq!(json.status.code(), Some(1), "not every row passed");
    let rows: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    assert_valid(&lab::report::class::schema(), &Value::Array(rows.clone()));
    let outcome: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["student"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcome,
        [
            (LAB_A, "passed"),
            (LAB_B, "passed"),
            (LAB_C, "passed"),
            ("dora", "findings"),
            ("frank-missing", "unreadable"),
            ("eve.txt", "unreadable")
        ]
    );
    assert_eq!(rows[0]["lab"], "a");
    assert_eq!(rows[2]["lab"], "c");
    assert!(
        rows[3]["codes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "evidence-invalid"),
        "{:?}",
        rows[3]
    );
    assert!(
        rows[4]["error"].as_str().unwrap().contains("No such file"),
        "{:?}",
        rows[4]
    );
    assert_eq!(rows[5]["error"], "not a directory");
    let progress = text(&json.stderr);
    assert!(
        progress.contains("grading 6/6: eve.txt")
            && progress.contains("3 passed, 1 with findings, 2 unreadable"),
        "{progress}"
    );

    let csv = text(&go("csv", &[]).stdout);
    assert_eq!(csv.lines().count(), 7, "{csv}");
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .starts_with("student,lab,result,acts-passed")
    );
    assert!(csv.contains("frank-missing,-,unreadable,0/0"), "{csv}");

    let table = text(&go("table", &[]).stdout);
    assert_eq!(
        table.lines().filter(|l| l.starts_with("dora ")).count(),
        1,
        "{table}"
    );
    assert!(
        table.contains("6 work directories: 3 passed, 1 with findings, 2 unreadable"),
        "{table}"
    );

    let reports = tmp.path().join("reports");
    let html = go("html", &["--reports", reports.to_str().unwrap()]);
    let page = text(&html.stdout);
    for s in [LAB_A, LAB_B, LAB_C, "dora"] {
        assert!(
            page.contains(&format!("<a href=\"{s}.html\">{s}</a>")),
            "{s} linked:\n{page}"
        );
        assert!(
            reports.join(format!("{s}.html")).is_file(),
            "{s}'s report written"
        );
    }
    assert!(!reports.join("frank-missing.html").exists());
    assert!(page.trim_end().ends_with("</html>"));
}

#[test]
fn completion_scripts_parse_in_their_own_shells() {
    ensure_scripting_packages();
    for (shell, program, check) in [
        ("bash", "bash", "-n"),
        ("zsh", "zsh", "-n"),
        ("fish", "fish", "--no-execute"),
    ] {
        let out = run(&["completion", shell]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(
            script.contains("grade-many") && script.contains("completion"),
            "{shell}: the subcommands are completed"
        );
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &script).unwrap();
        let parsed = Command::new(program)
            .arg(check)
            .arg(file.path())
            .output()
            .unwrap_or_else(|e| panic!("{program} is needed to parse its completion script (the test installs it, root on Debian): {e}"));
        assert!(
            parsed.status.success() && parsed.stderr.is_empty(),
            "{program} {check}: {}",
            text(&parsed.stderr)
        );
    }
    // The shells' check is no pass-through: a script cut in half is refused.
    let bash = text(&run(&["completion", "bash"]).stdout);
    let half = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(half.path(), &bash[..bash.len() / 2]).unwrap();
    assert!(
        !Command::new("bash")
            .arg("-n")
            .arg(half.path())
            .output()
            .unwrap()
            .status
            .success()
    );
}

#[test]
fn man_pages_are_one_per_command_and_render_without_warnings() {
    ensure_scripting_packages();
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&["man-pages", tmp.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for want in [
        "kca-webhook-lab.1",
        "kca-webhook-lab-grade-many.1",
        "kca-webhook-lab-audit.1",
        "kca-webhook-lab-version.1",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.contains("healer")),
        "hidden commands have no page: {names:?}"
    );
    for n in &names {
        let r = groff_check(&tmp.path().join(n));
        assert!(
            r.status.success() && r.stderr.is_empty(),
            "{n}: {}",
            text(&r.stderr)
        );
    }
    // The check is no pass-through: an undefined macro is warned about.
    let bad = tmp.path().join("bad.1");
    std::fs::write(&bad, ".TH BAD 1\n.XXBOGUS\n").unwrap();
    assert!(!groff_check(&bad).stderr.is_empty());
    let page = Command::new("groff")
        // grotty without overstriking (bold, underline): plain letters.
        .args(["-k", "-man", "-Tutf8", "-P-cbou"])
        .arg(tmp.path().join("kca-webhook-lab-grade-many.1"))
        .output()
        .unwrap();
    let page = text(&page.stdout);
    assert!(page.contains("--reports <REPORTS>"), "{page}");
}

/// `groff -k -man -Tutf8 -ww -z PAGE`: every warning on, UTF-8 input (preconv), no output.
fn groff_check(page: &Path) -> Output {
    Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .arg(page)
        .output()
        .expect("groff (groff-base)")
}
