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
        .env_remove("KCA_REGISTRATION_BOUND")
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
        // It refuses on the file (checked before the cluster is reached), not on the kubeconfig.
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", bad.file);
        assert!(
            err.contains(&format!("{}: {}", bad.file, bad.path)) && !err.contains("/nonexistent"),
            "{}: act {act}: {err}",
            bad.file
        );
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{}: act {act} changed the work directory",
            bad.file
        );
    }
}

/// A file with several problems: `check` (both languages) and the act that reads it list every
/// one, each with file, JSON path, expected and found, in one answer, and write nothing.
#[test]
fn every_problem_of_a_file_is_listed_at_once_and_nothing_is_written() {
    let mut plan = reference(lab::inputs::InputFile::FreezePlan);
    let obj = plan.as_object_mut().unwrap();
    obj.remove("action");
    obj.remove("signal_identity");
    obj.insert("resume_after_sec".into(), json!("20"));
    obj.insert("node_uid".into(), json!("kca-lab-node"));
    obj.insert("comment".into(), json!("mine"));
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("freeze-plan.json");
    std::fs::write(&path, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    std::fs::create_dir(tmp.path().join("evidence")).unwrap();
    let before = snapshot(tmp.path());
    let lines = [
        "freeze-plan.json: $.action: expected field \"action\", found nothing",
        "freeze-plan.json: $.node_uid: expected a UID (8-4-4-4-12 lowercase hex, as in metadata.uid), found \"kca-lab-node\"",
        "freeze-plan.json: $.resume_after_sec: expected 20, found \"20\"",
        "freeze-plan.json: $.signal_identity: expected field \"signal_identity\", found nothing",
        "freeze-plan.json: $.comment: expected no field \"comment\" (allowed: ",
    ];
    let en = run(
        tmp.path(),
        &[
            "--lab",
            "b",
            "--lang",
            "en",
            "check",
            path.to_str().unwrap(),
        ],
    );
    let err = text(&en.stderr);
    assert_eq!(en.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid input (5 problems, all listed); nothing was written:"),
        "{err}"
    );
    let listed: Vec<&str> = err
        .lines()
        .filter_map(|l| l.trim().strip_prefix("freeze-plan.json: "))
        .collect();
    assert_eq!(listed.len(), lines.len(), "{err}");
    for (got, want) in listed.iter().zip(lines) {
        let want = want.strip_prefix("freeze-plan.json: ").unwrap();
        assert!(got.starts_with(want), "{got:?} is not {want:?}:\n{err}");
    }
    let ja = run(tmp.path(), &["--lab", "b", "check", path.to_str().unwrap()]);
    let err = text(&ja.stderr);
    assert_eq!(ja.status.code(), Some(2), "{err}");
    assert!(err.contains("問題 5 件"), "{err}");
    // Each problem in Japanese words (values, paths and field names as written).
    for want in [
        "freeze-plan.json: $.action: 期待値 フィールド \"action\", 実際 なし",
        "freeze-plan.json: $.node_uid: 期待値 UID (metadata.uid と同じ、8-4-4-4-12 桁の小文字 16 進数), 実際 \"kca-lab-node\"",
        "freeze-plan.json: $.resume_after_sec: 期待値 20, 実際 \"20\"",
        "freeze-plan.json: $.signal_identity: 期待値 フィールド \"signal_identity\", 実際 なし",
        "freeze-plan.json: $.comment: 期待値 フィールド \"comment\" がないこと (使えるフィールド: \"action\", ",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    // The act that reads the file (4) lists the same problems, before reaching the cluster.
    let act = run(
        tmp.path(),
        &[
            "--lab",
            "b",
            "--lang",
            "en",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "act",
            "4",
        ],
    );
    let act_err = text(&act.stderr);
    assert_eq!(act.status.code(), Some(2), "{act_err}");
    for want in lines {
        assert!(act_err.contains(want), "{want}: {act_err}");
    }
    assert_eq!(snapshot(tmp.path()), before, "the work directory changed");
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

/// `digest` of a missing file, a directory and an empty file: the same exit code as any bad input
/// (2), no "nothing was written" (digest never writes), and no column 0.
#[test]
fn digest_of_bad_input_exits_2_and_says_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let starts_a_line = tmp.path().join("open.json");
    std::fs::write(&starts_a_line, "{\n").unwrap();
    let cases = [
        (tmp.path().join("nope.json"), "nope.json"),
        (tmp.path().to_path_buf(), "directory"),
        (empty, "empty"),
        (starts_a_line, "line 2 column 1"),
    ];
    for (path, says) in &cases {
        for lang in ["en", "ja"] {
            let out = run(
                tmp.path(),
                &["--lang", lang, "digest", path.to_str().unwrap()],
            );
            let err = text(&out.stderr);
            let ctx = format!("{} ({lang}): {err}", path.display());
            assert_eq!(out.status.code(), Some(2), "{ctx}");
            assert!(text(&out.stdout).is_empty(), "{ctx}");
            assert!(!err.contains("nothing was written"), "{ctx}");
            assert!(!err.contains("何も書き込んでいません"), "{ctx}");
            assert!(!err.contains("column 0"), "{ctx}");
            if lang == "en" {
                assert!(err.contains(says), "{ctx}");
            }
        }
    }
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
        usize::from(lab::acts::count(lab::evidence::Lab::A)),
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
    let beyond = (lab::acts::count(lab::evidence::Lab::A) + 1).to_string();
    let out = run(tmp.path(), &["grade", &beyond]);
    assert_eq!(out.status.code(), Some(2), "grade {beyond}");
}

#[test]
fn registration_bound_is_an_option_in_whole_seconds_from_1_to_3600() {
    let tmp = tempfile::tempdir().unwrap();
    let help = text(&run(tmp.path(), &["--help"]).stdout);
    assert!(
        help.contains("--registration-bound <SECONDS>") && help.contains("[default: 90]"),
        "{help}"
    );
    for bad in ["0", "3601", "1.5", "ten"] {
        let out = run(
            tmp.path(),
            &["--registration-bound", bad, "schema", "policy"],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--registration-bound"), "{bad}: {err}");
    }
    let out = run(
        tmp.path(),
        &["--registration-bound", "15", "schema", "policy"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `--help` speaks Japanese by default and English with `--lang en`, for the tool and for a
/// command, long and short.
#[test]
fn help_follows_lang() {
    let tmp = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let out = run(tmp.path(), args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    let ja = help(&["--help"]);
    for want in [
        "使い方: kca-webhook-lab",
        "コマンド:",
        "オプション:",
        "入力ファイルを 1 つ、オフラインで検証します",
        "メッセージの言語",
        "ヘルプを表示します",
    ] {
        assert!(ja.contains(want), "{want}: {ja}");
    }
    assert!(!ja.contains("Validate one input file offline"), "{ja}");
    for args in [
        &["check", "--help"][..],
        &["check", "-h"],
        &["help", "check"],
    ] {
        let ja = help(args);
        assert!(
            ja.contains("引数:") && ja.contains("名前でどの入力かが決まります"),
            "{args:?}: {ja}"
        );
        assert!(
            ja.contains("作業ディレクトリ (入力ファイルと evidence/)"),
            "{ja}"
        );
    }
    for args in [
        &["--lang", "en", "--help"][..],
        &["--lang=en", "check", "--help"],
        &["check", "-h", "--lang", "en"],
    ] {
        let en = help(args);
        assert!(en.contains("Usage: kca-webhook-lab"), "{args:?}: {en}");
        assert!(
            en.contains("Validate one input file offline") && !en.contains("使い方"),
            "{args:?}: {en}"
        );
    }
}

#[test]
fn internal_subcommands_are_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &["--help"]);
    let help = text(&out.stdout);
    assert!(
        help.contains("grade") && !help.contains("healer-freeze") && !help.contains("healer-scale"),
        "{help}"
    );
    // Reached (not a clap usage error) and refusing empty arguments.
    for sub in ["healer-freeze", "healer-scale"] {
        let out = run(tmp.path(), &[sub]);
        assert_ne!(out.status.code(), Some(0), "{sub}");
        assert!(
            !text(&out.stderr).contains("unrecognized subcommand"),
            "{sub}: {}",
            text(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// One file, four readers: `check`, `act N`, `grade all` and `digest` agree on whether a file is
// valid (I-JSON, read by `lab::json`) and on its canonical digest.

const RECORDED_B: &str = "recorded/b-20261129T153816Z";

/// What every reader must say about a file.
#[derive(Debug, Clone, Copy)]
enum Verdict {
    /// Valid, with the canonical digest of the recorded file (the same value, spelled otherwise).
    SameValue,
    /// Refused: the JSON path named and a fragment of the expected text.
    Refused {
        path: &'static str,
        expected: &'static str,
    },
}

/// One spelling of a file of the recorded lab B run.
struct Spelling {
    name: &'static str,
    /// Relative path in the recorded run, e.g. `policy.json` or `evidence/05.json`.
    file: &'static str,
    /// From the recorded file's bytes to the tested bytes.
    edit: fn(&[u8]) -> Vec<u8>,
    verdict: Verdict,
}

/// `text` with the one occurrence of `from` replaced by `to` (panics when it is not exactly once,
/// so a changed fixture cannot turn a case into a no-op).
fn once(text: &[u8], from: &str, to: &[u8]) -> Vec<u8> {
    let t = String::from_utf8(text.to_vec()).unwrap();
    assert_eq!(t.matches(from).count(), 1, "{from:?} must occur once");
    let i = t.find(from).unwrap();
    let mut out = t.as_bytes()[..i].to_vec();
    out.extend_from_slice(to);
    out.extend_from_slice(&t.as_bytes()[i + from.len()..]);
    out
}

fn spellings() -> Vec<Spelling> {
    use Verdict::*;
    const TIMEOUT: &str = "\"timeoutSeconds\": 3\n";
    const MESSAGE: &str = "\"message\": \"KCA_ENVIRONMENT_REQUIRED\"";
    vec![
        // The graders' review case `chk-dup-key-policy`: failurePolicy written twice (this edit gives
        // that case's policy.json byte for byte).
        Spelling {
            name: "duplicate failurePolicy",
            file: "policy.json",
            edit: |t| {
                once(
                    t,
                    "\"failurePolicy\": \"Fail\",",
                    b"\"failurePolicy\": \"Ignore\",\n    \"failurePolicy\": \"Fail\",",
                )
            },
            verdict: Refused {
                path: "$.spec.failurePolicy",
                expected: "unique member names",
            },
        },
        Spelling {
            name: "duplicate name after unescaping",
            file: "policy.json",
            edit: |t| {
                once(
                    t,
                    "\"kind\": \"ValidatingPolicy\",",
                    b"\"kind\": \"ValidatingPolicy\",\n  \"\\u006bind\": \"ValidatingPolicy\",",
                )
            },
            verdict: Refused {
                path: "$.kind",
                expected: "unique member names",
            },
        },
        Spelling {
            name: "timeoutSeconds 3.0",
            file: "policy.json",
            edit: |t| once(t, TIMEOUT, b"\"timeoutSeconds\": 3.0\n"),
            verdict: SameValue,
        },
        Spelling {
            name: "timeoutSeconds 3e0",
            file: "policy.json",
            edit: |t| once(t, TIMEOUT, b"\"timeoutSeconds\": 3e0\n"),
            verdict: SameValue,
        },
        Spelling {
            name: "timeoutSeconds 0.3E+1",
            file: "policy.json",
            edit: |t| once(t, TIMEOUT, b"\"timeoutSeconds\": 0.3E+1\n"),
            verdict: SameValue,
        },
        Spelling {
            name: "compact, escaped, members reordered",
            file: "policy.json",
            edit: |t| {
                let v: Value = serde_json::from_slice(t).unwrap();
                let mut text = String::from("{\"spec\":");
                text.push_str(&v["spec"].to_string());
                text.push_str(",\"metadata\":{\"name\":\"kca-webhook-\\u006cabel\"}");
                text.push_str(
                    ",\"kind\":\"ValidatingPolicy\",\"apiVersion\":\"policies.kyverno.io/v1\"}",
                );
                text.into_bytes()
            },
            verdict: SameValue,
        },
        Spelling {
            name: "NaN",
            file: "policy.json",
            edit: |t| once(t, TIMEOUT, b"\"timeoutSeconds\": NaN\n"),
            verdict: Refused {
                path: "$.spec.webhookConfiguration.timeoutSeconds",
                expected: "a JSON document",
            },
        },
        Spelling {
            name: "lone surrogate",
            file: "policy.json",
            edit: |t| {
                once(
                    t,
                    MESSAGE,
                    b"\"message\": \"KCA_ENVIRONMENT_REQUIRED\\ud800\"",
                )
            },
            verdict: Refused {
                path: "$.spec.validations[0].message",
                expected: "without lone surrogates",
            },
        },
        Spelling {
            name: "noncharacter",
            file: "policy.json",
            edit: |t| {
                once(
                    t,
                    MESSAGE,
                    b"\"message\": \"KCA_ENVIRONMENT_REQUIRED\\uffff\"",
                )
            },
            verdict: Refused {
                path: "$.spec.validations[0].message",
                expected: "without Unicode noncharacters",
            },
        },
        Spelling {
            name: "byte order mark",
            file: "policy.json",
            edit: |t| [b"\xEF\xBB\xBF".as_slice(), t].concat(),
            verdict: Refused {
                path: "$",
                expected: "without a byte order mark",
            },
        },
        Spelling {
            name: "not UTF-8",
            file: "policy.json",
            edit: |t| once(t, MESSAGE, b"\"message\": \"KCA_ENVIRONMENT_REQUIRED\xff\""),
            verdict: Refused {
                path: "$",
                expected: "UTF-8 text",
            },
        },
        Spelling {
            name: "trailing document",
            file: "policy.json",
            edit: |t| [t, b"{}\n".as_slice()].concat(),
            verdict: Refused {
                path: "$",
                expected: "nothing after it",
            },
        },
        Spelling {
            name: "integer beyond 2^53",
            file: "freeze-plan.json",
            edit: |t| {
                once(
                    t,
                    "\"resume_after_sec\": 20,",
                    b"\"resume_after_sec\": 9007199254740993,",
                )
            },
            verdict: Refused {
                path: "$.resume_after_sec",
                expected: "2^53",
            },
        },
        Spelling {
            name: "integer beyond 2^64",
            file: "freeze-plan.json",
            edit: |t| {
                once(
                    t,
                    "\"resume_after_sec\": 20,",
                    b"\"resume_after_sec\": 18446744073709551636,",
                )
            },
            verdict: Refused {
                path: "$.resume_after_sec",
                expected: "2^53",
            },
        },
        Spelling {
            name: "resume_after_sec 2.0e1",
            file: "freeze-plan.json",
            edit: |t| {
                once(
                    t,
                    "\"resume_after_sec\": 20,",
                    b"\"resume_after_sec\": 2.0e1,",
                )
            },
            verdict: SameValue,
        },
        Spelling {
            name: "evidence: duplicate schema_version",
            file: "evidence/05.json",
            edit: |t| {
                once(
                    t,
                    "\"schema_version\": 1,",
                    b"\"schema_version\": 1,\n  \"schema_version\": 1,",
                )
            },
            verdict: Refused {
                path: "$.schema_version",
                expected: "unique member names",
            },
        },
        Spelling {
            name: "evidence: elapsed_ms beyond 2^53",
            file: "evidence/05.json",
            edit: |t| {
                once(
                    t,
                    "\n      \"elapsed_ms\": 14,",
                    b"\n      \"elapsed_ms\": 9007199254740993,",
                )
            },
            verdict: Refused {
                path: "$.facts.control.elapsed_ms",
                expected: "2^53",
            },
        },
        Spelling {
            name: "evidence: elapsed_ms 14.0",
            file: "evidence/05.json",
            edit: |t| {
                once(
                    t,
                    "\n      \"elapsed_ms\": 14,",
                    b"\n      \"elapsed_ms\": 14.0,",
                )
            },
            verdict: SameValue,
        },
    ]
}

/// A copy of the recorded lab B run (files byte for byte).
fn recorded_copy() -> tempfile::TempDir {
    let src = common::recorded::Recording::open(RECORDED_B).dir;
    let tmp = tempfile::tempdir().unwrap();
    for (rel, _) in snapshot(&src) {
        let (from, to) = (src.join(&rel), tmp.path().join(&rel));
        if rel.ends_with('/') {
            std::fs::create_dir_all(to).unwrap();
        } else {
            std::fs::copy(from, to).unwrap();
        }
    }
    tmp
}

#[test]
fn check_act_grade_and_digest_agree_on_every_spelling() {
    let rec = common::recorded::Recording::open(RECORDED_B);
    for s in spellings() {
        let ctx = s.name;
        let tmp = recorded_copy();
        let path = tmp.path().join(s.file);
        let recorded_digest = lab::digest::digest_file(&path).unwrap();
        let bytes = (s.edit)(&std::fs::read(&path).unwrap());
        std::fs::write(&path, &bytes).unwrap();
        let before = snapshot(tmp.path());
        let base = s.file.rsplit('/').next().unwrap();
        let input = lab::inputs::InputFile::from_name(lab::evidence::Lab::B, s.file)
            .filter(|_| !s.file.starts_with("evidence/"));
        let p = path.to_str().unwrap();
        let en = |args: &[&str]| {
            let mut all = vec!["--lab", "b", "--lang", "en"];
            all.extend_from_slice(args);
            run(tmp.path(), &all)
        };

        // digest
        let out = en(&["digest", p]);
        let (digest_out, digest_err) = (text(&out.stdout), text(&out.stderr));
        // check (input files only: `check` takes inputs)
        let check = input.map(|_| en(&["check", p]));
        // grade all
        let grade = en(&["grade", "all"]);
        let graded = text(&grade.stdout);
        // the act that reads the file (an input's own act; for evidence NN, act NN+1), without a
        // cluster: a refusal must name the file and path, not the missing kubeconfig.
        let act = match input {
            Some(f) => f.act(),
            None => base.trim_end_matches(".json").parse::<u8>().unwrap() + 1,
        }
        .to_string();
        let acted = en(&["--kubeconfig", "/nonexistent/kubeconfig", "act", &act]);
        let act_err = text(&acted.stderr);

        match s.verdict {
            Verdict::SameValue => {
                assert_eq!(out.status.code(), Some(0), "{ctx}: digest: {digest_err}");
                assert_eq!(digest_out.trim(), recorded_digest, "{ctx}: digest");
                if let Some(c) = &check {
                    assert_eq!(
                        c.status.code(),
                        Some(0),
                        "{ctx}: check: {}",
                        text(&c.stderr)
                    );
                    assert!(text(&c.stdout).contains(&format!("{base}: valid")), "{ctx}");
                }
                // The recording's acts pass; an act the registry has after them is not run yet
                // in it (grade_recorded.rs states the rule), and `grade all` then exits 1.
                let all = rec.uncovered().is_empty();
                assert_eq!(
                    grade.status.code(),
                    Some(if all { 0 } else { 1 }),
                    "{ctx}: grade:\n{graded}"
                );
                for act in &rec.acts {
                    assert!(
                        graded.contains(&format!("lab b act {act}: pass (")),
                        "{ctx}: act {act}:\n{graded}"
                    );
                }
                assert_eq!(
                    graded.matches(": pass (").count(),
                    rec.acts.len(),
                    "{ctx}:\n{graded}"
                );
                // The act got past its inputs and evidence and stopped at the cluster.
                assert_eq!(acted.status.code(), Some(1), "{ctx}: act {act}: {act_err}");
                assert!(
                    act_err.contains("/nonexistent/kubeconfig"),
                    "{ctx}: act {act}: {act_err}"
                );
            }
            Verdict::Refused { path: jp, expected } => {
                let named = format!("{jp}: expected ");
                assert_eq!(
                    out.status.code(),
                    Some(2),
                    "{ctx}: digest accepted: {digest_out}"
                );
                assert!(
                    digest_err.contains(&format!("{base}: {named}"))
                        && digest_err.contains(expected),
                    "{ctx}: digest: {digest_err}"
                );
                assert!(digest_out.is_empty(), "{ctx}: digest printed {digest_out}");
                if let Some(c) = &check {
                    let err = text(&c.stderr);
                    assert_eq!(c.status.code(), Some(2), "{ctx}: check: {err}");
                    assert!(
                        err.contains(&format!("{base}: {named}")) && err.contains(expected),
                        "{ctx}: check: {err}"
                    );
                }
                assert_eq!(grade.status.code(), Some(1), "{ctx}: grade:\n{graded}");
                let (code, act_graded) = match input {
                    Some(f) => ("[input-invalid]", f.act()),
                    None => ("[evidence-invalid]", base[..2].parse().unwrap()),
                };
                // policy.json is also what act 6 compares policy-ignore.json with: no silent pass.
                let also = (base == "policy.json").then_some(6);
                for act_graded in std::iter::once(act_graded).chain(also) {
                    let section = graded
                        .split("lab b act ")
                        .find(|sec| sec.starts_with(&format!("{act_graded}:")))
                        .unwrap_or_default();
                    assert!(
                        section
                            .lines()
                            .any(|l| l.contains(code) && l.contains(base) && l.contains(&named)),
                        "{ctx}: grade act {act_graded} must flag {code} {base} {named}:\n{graded}"
                    );
                }
                // The act refuses on the file, before the cluster.
                assert_ne!(acted.status.code(), Some(0), "{ctx}: act {act}");
                assert!(
                    act_err.contains(base)
                        && act_err.contains(&named)
                        && act_err.contains(expected),
                    "{ctx}: act {act} must refuse on {base} {jp}: {act_err}"
                );
                assert!(
                    !act_err.contains("/nonexistent/kubeconfig"),
                    "{ctx}: act {act}: {act_err}"
                );
            }
        }
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{ctx}: a reader changed the work directory"
        );
    }
}

#[test]
fn grading_a_work_dir_that_does_not_exist_names_it_and_creates_nothing() {
    let parent = tempfile::tempdir().expect("temp dir");
    let missing = parent.path().join("no-such-workdir");
    let o = run(&missing, &["--lang", "en", "grade", "all"]);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "exit status {:?}", o.status);
    assert!(
        err.contains(&missing.display().to_string()) && err.contains("no such work directory"),
        "stderr: {err}"
    );
    assert!(
        !err.contains("evidence/01.json"),
        "the missing work dir is reported as such, not as missing evidence: {err}"
    );
    assert!(!missing.exists(), "grade created the work dir");
}

/// `heal` prints lines in the chosen language like every other command, not raw JSON.
#[test]
fn heal_says_what_it_did_in_words() {
    let tmp = tempfile::tempdir().unwrap();
    for (lang, says) in [
        ("en", "nothing to heal"),
        ("ja", "後始末する障害はありません"),
    ] {
        let out = run(
            tmp.path(),
            &[
                "--lang",
                lang,
                "--kubeconfig",
                "/nonexistent/kubeconfig",
                "heal",
            ],
        );
        let said = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
        assert!(!said.trim_start().starts_with('{'), "{said}");
        assert!(said.contains(says), "{said}");
    }
}

/// `check report.json` runs act 8's rule on the work directory's evidence (graders-4 case
/// `c8-check-report-contradicts`, `fixtures/recorded-cases/`): the words act 8 would flag are
/// rejected, naming each field, with or without act 8's own evidence; the recorded report is
/// valid and the answer says which parts were checked.
#[test]
fn check_holds_a_report_to_act_8s_rule() {
    let rec = common::recorded::Recording::open("recorded/c-20261201T234822Z");
    let case = common::read_tree(
        &common::fixtures_dir().join("recorded-cases/c8-check-report-contradicts"),
    );
    let meta = &case["case.json"];
    for drop_act8 in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let mut files = rec.files();
        files.insert("report.json".into(), case["report.json"].clone());
        if drop_act8 {
            files.remove("evidence/08.json");
        }
        common::write_tree(tmp.path(), &files);
        let report = tmp.path().join("report.json");
        let out = run(
            tmp.path(),
            &[
                "--lang",
                "en",
                "--lab",
                "c",
                "check",
                report.to_str().unwrap(),
            ],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}{}", text(&out.stdout));
        for path in meta["check"].as_array().unwrap() {
            let path = path.as_str().unwrap();
            assert!(
                err.contains(&format!("report.json: {path}")),
                "{path}: {err}"
            );
        }
        assert!(err.contains("act 8's rule"), "{err}");
    }
    let tmp = tempfile::tempdir().unwrap();
    common::write_tree(tmp.path(), &rec.files());
    let report = tmp.path().join("report.json");
    for (lang, says) in [
        ("en", "words against the evidence by act 8's rule"),
        ("ja", "証拠との照合"),
    ] {
        let out = run(
            tmp.path(),
            &[
                "--lang",
                lang,
                "--lab",
                "c",
                "check",
                report.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains(says), "{}", text(&out.stdout));
    }
}
