//! A command that fails on bad input or an unreachable cluster writes nothing and creates nothing:
//! the built `kca-webhook-lab` against a kubeconfig whose server is a closed loopback port (no
//! cluster), with a work directory that does not exist, then with one that holds an input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_kca-webhook-lab");

/// A kubeconfig whose API server is a loopback port nothing listens on (bound, then closed).
fn closed_port_kubeconfig(dir: &Path) -> PathBuf {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        l.local_addr().unwrap().port()
    };
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    path
}

fn run(cwd: &Path, workdir: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(cwd)
        .arg("--workdir")
        .arg(workdir)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cri-endpoint")
        .arg(cwd.join("no-cri.sock"))
        .args(args)
        .env_remove("KCA_WEBHOOK_DIR")
        .env_remove("KCA_WEBHOOK_LAB")
        .env_remove("KCA_AUDIT_LOG")
        .env("KCA_LAB_LOCK_DIR", cwd.join("locks"))
        .output()
        .expect("running kca-webhook-lab")
}

/// Every path under `dir`, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Every command a student runs, with the lab it runs in.
fn commands() -> Vec<Vec<String>> {
    let mut v: Vec<Vec<String>> = Vec::new();
    for lab in ["a", "b"] {
        for cmd in [
            vec!["inspect"],
            vec!["inspect", "--metrics"],
            vec!["heal"],
            vec!["report"],
            vec!["grade", "all"],
            vec!["check", "scope.json"],
        ] {
            v.push(
                ["--lab", lab]
                    .into_iter()
                    .chain(cmd)
                    .map(String::from)
                    .collect(),
            );
        }
        let l = if lab == "a" {
            lab::evidence::Lab::A
        } else {
            lab::evidence::Lab::B
        };
        for n in lab::acts::numbers(l) {
            v.push(vec![
                "--lab".into(),
                lab.into(),
                "act".into(),
                n.to_string(),
            ]);
        }
    }
    v
}

#[test]
fn no_command_creates_a_missing_work_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = closed_port_kubeconfig(tmp.path());
    let workdir = tmp.path().join("kca-webhook");
    let before = tree(tmp.path());
    for args in commands() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(tmp.path(), &workdir, &kubeconfig, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !workdir.exists(),
            "{args:?} created the work dir {} (exit {:?}): {err}",
            workdir.display(),
            out.status.code()
        );
        assert_eq!(tree(tmp.path()), before, "{args:?} created something");
        // Only `heal` (nothing to heal) and `grade` (findings) end without an error message.
        if !matches!(args[2], "heal" | "grade") {
            assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
            assert!(!err.trim().is_empty(), "{args:?}: no error shown");
        }
    }
}

#[test]
fn unreachable_cluster_leaves_an_existing_work_dir_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = closed_port_kubeconfig(tmp.path());
    let workdir = tmp.path().join("kca-webhook");
    std::fs::create_dir(&workdir).unwrap();
    let pass = tmp.path().join("pass");
    std::fs::create_dir(&pass).unwrap();
    // A valid scope.json (shape only: the cluster is never reached).
    std::fs::write(
        workdir.join("scope.json"),
        r#"{"target":"kca-webhook-target","control":"kca-webhook-control","node_uid":"11111111-2222-4333-8444-555555555555","namespaces":{"kca-webhook-target":"0b6f3c9e-2d4a-4f7e-9c1a-5e8d7b6a4c3f","kca-webhook-control":"1c7a4dae-3e5b-4a8f-8d2b-6f9e8c7b5d40"}}"#,
    )
    .unwrap();
    let before = tree(tmp.path());
    for args in [
        vec!["--lab", "b", "inspect"],
        vec!["--lab", "b", "act", "1"],
        vec!["--lab", "a", "act", "1"],
    ] {
        let out = run(tmp.path(), &workdir, &kubeconfig, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains(&kubeconfig.display().to_string()),
            "{args:?}: the error names the kubeconfig: {err}"
        );
        assert_eq!(tree(tmp.path()), before, "{args:?} wrote something: {err}");
    }
}
