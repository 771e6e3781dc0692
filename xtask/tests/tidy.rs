//! Conventions that stay true (rust-analyzer's `tidy` tests are the model): each test reads the
//! source tree and fails naming the file and the rule it breaks.
//!
//! - every Rust source file is named in ARCHITECTURE.md's code map by a name that names only it
//!   (`grade/a.rs`, not `a.rs`, which two files end with), and every `*.rs` file the document names
//!   exists (so the map a newcomer reads first matches the tree);
//! - README.md and ARCHITECTURE.md stay short (150 and 250 lines) and timeless: no date in either
//!   (measurements live in `docs/`, with their dates and the command that reproduces them);
//! - no committed file cites the team's notes in the `shared` directory beside the repository
//!   which a clone does not have (a short list of files waits for other work to land);
//! - in the lab crate, only `lab/src/cluster.rs` talks to the API server (no other module names
//!   `kube` or builds its own requests), so every request the tool sends is in one file;
//! - the pure core (`core/`, crate `lab-core`) depends, even transitively, on neither the kube
//!   client nor tokio (nor any HTTP or gRPC stack): the compiler then keeps cluster I/O out of
//!   evidence, facts, inputs, classify, graders, report and messages;
//! - the graders (`core/src/grade/`) never reach the cluster, the node or the network, and never
//!   start a process: `grade` is a pure function of (inputs, evidence), read from files only by
//!   `GradeInput::load` through `Workdir`;
//! - the number of acts and their ranges come from the acts registry (`core/src/acts.rs`): no
//!   literal act count or act range (`1..=8`, `4..=8`, `1..=7u8`, `LAST_ACT`, `len() == 8`,
//!   `" / 8"`, `1 to 8`) anywhere else in code, so adding an act is one registry line;
//! - xtask runs external commands only through `xtask::command` (one error type with the
//!   pasteable command, exit status and output tail), except the daemons it supervises and the
//!   streamed `go build`;
//! - each crate's modules import only from their own layer or a lower one (ARCHITECTURE.md,
//!   "Layers"), and so do the files inside xtask's folders, but a listed few that point up today
//!   (xtask: none, so xtask has no import circle);
//! - the student tool's words live in one place: no Japanese literal in `lab/src` or `core/src`
//!   outside `messages/`, `lab/src/help.rs`, the report page's `report/text.rs` and the registry's act titles
//!   (`acts.rs`);
//!   comments and unit tests are not words.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The workspace root (this crate is `xtask/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

/// Every `*.rs` file under `dir` (relative to the root), skipping `fixtures` directories (data,
/// not code) and build output.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            if path.is_dir() {
                if name != "fixtures" && name != "target" {
                    walk(root, &path, out);
                }
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    walk(&root, &root.join(dir), &mut out);
    out.sort();
    out
}

/// The lines of `text` a rule reads: (0-based line number, the line without its indentation),
/// comment and doc lines left out.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(n, line)| (n, line.trim_start()))
        .filter(|(_, code)| !code.starts_with("//"))
}

/// The sources the code map covers.
const MAPPED: &[&str] = &[
    "core/src",
    "lab/src",
    "lab/tests",
    "xtask/src",
    "xtask/tests",
    "tests/src",
    "tests/tests",
];

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("reading ARCHITECTURE.md")
}

/// The "Code map" section of ARCHITECTURE.md: from its heading to the next `## ` heading.
fn code_map(doc: &str) -> &str {
    let start = doc
        .find("\n## Code map")
        .expect("ARCHITECTURE.md has a `## Code map` section");
    let rest = &doc[start + 1..];
    match rest[3..].find("\n## ") {
        Some(end) => &rest[..end + 3],
        None => rest,
    }
}

/// The words between backticks in `text`, split at spaces, commas and parentheses.
fn quoted_words(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|chunk| chunk.split([' ', ',', '(', ')']))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `word` names `path`: the path ends with it at a `/` (`grade/a.rs` names
/// `core/src/grade/a.rs`), or the word is a directory (`faults/`) and the path is its `mod.rs`.
fn names(word: &str, path: &str) -> bool {
    let ends = |w: &str| path == w || path.ends_with(&format!("/{w}"));
    if word.ends_with('/') {
        ends(&format!("{word}mod.rs"))
    } else {
        ends(word)
    }
}

/// The source files the code map does not name by a word that names only that file; each with
/// the shortest word that would.
fn unmapped(map: &str, files: &[PathBuf]) -> Vec<String> {
    let paths: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let only = |word: &str, path: &str| {
        names(word, path) && paths.iter().filter(|p| names(word, p)).count() == 1
    };
    let words = quoted_words(map);
    paths
        .iter()
        .filter(|p| !words.iter().any(|w| only(w, p)))
        .map(|p| {
            let parts: Vec<&str> = p.split('/').collect();
            let word = (1..=parts.len())
                .map(|n| parts[parts.len() - n..].join("/"))
                .find(|w| only(w, p))
                .unwrap_or_else(|| p.clone());
            format!("{p} (name it `{word}`)")
        })
        .collect()
}

/// Every `*.rs` name between backticks in the document is the end of some source file's path.
fn stale(doc: &str, files: &[PathBuf]) -> Vec<String> {
    let paths: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut named = BTreeSet::new();
    for chunk in doc.split('`').skip(1).step_by(2) {
        for word in chunk.split([' ', ',', '(', ')']) {
            if word.ends_with(".rs") && !word.contains('*') && !word.contains('<') {
                named.insert(word.trim_start_matches("./").to_owned());
            }
        }
    }
    named
        .into_iter()
        .filter(|n| {
            !paths
                .iter()
                .any(|p| p == n || p.ends_with(&format!("/{n}")))
        })
        .collect()
}

#[test]
fn every_source_file_is_in_the_architecture_code_map() {
    let files: Vec<PathBuf> = MAPPED.iter().flat_map(|d| rust_files(d)).collect();
    assert!(files.len() > 50, "found only {} source files", files.len());
    let missing = unmapped(code_map(&architecture()), &files);
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name these files, between backticks, by a name no other \
         file ends with (add a few words saying what each is):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_file_the_architecture_names_exists() {
    let mut files: Vec<PathBuf> = MAPPED.iter().flat_map(|d| rust_files(d)).collect();
    files.extend(rust_files("ci"));
    let gone = stale(&architecture(), &files);
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {gone:?}"
    );
}

/// What a grader must not use, with why.
const GRADER_FORBIDDEN: &[(&str, &str)] = &[
    (
        "std::fs",
        "reads and writes files (only GradeInput::load reads, through Workdir)",
    ),
    ("std::process", "starts processes"),
    ("std::net", "opens sockets"),
    ("tokio", "runs async I/O"),
    ("kube", "talks to the API server"),
    ("crate::cluster", "talks to the API server"),
    ("crate::cri", "talks to the node's container runtime"),
    ("crate::faults", "makes and heals faults"),
    ("crate::labs", "runs acts"),
    ("crate::metrics::read", "reads /metrics from the API server"),
    (
        "Cursor",
        "reads the API server's audit log (crate::audit::Cursor)",
    ),
];

/// Lines of the files under `dir` that use a forbidden path (comments and docs skipped).
fn impure(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        for (n, code) in code_lines(text) {
            for (needle, why) in GRADER_FORBIDDEN {
                let hit = code.match_indices(needle).any(|(i, _)| {
                    let before = code[..i].chars().next_back();
                    let after = code[i + needle.len()..].chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if hit {
                    out.push(format!("{}:{}: `{needle}` {why}", path.display(), n + 1));
                }
            }
        }
        if path.file_name().is_some_and(|f| f != "mod.rs") && text.contains("Workdir") {
            out.push(format!(
                "{}: uses Workdir (only grade/mod.rs's GradeInput::load reads files)",
                path.display()
            ));
        }
    }
    out
}

#[test]
fn graders_never_reach_the_cluster_or_start_processes() {
    let files: Vec<(PathBuf, String)> = rust_files("core/src/grade")
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(root().join(&p)).unwrap();
            (p, text)
        })
        .collect();
    assert!(files.len() >= 4, "grade/ has only {} files", files.len());
    let bad = impure(&files);
    assert!(
        bad.is_empty(),
        "graders are pure functions of (inputs, evidence):\n  {}",
        bad.join("\n  ")
    );
}

/// Packages the pure core must never depend on, even through another crate: the kube client and
/// its types' async stack, tokio, HTTP/gRPC clients, and clap (the command lines are `lab`'s and
/// `xtask`'s; the core offers `ValueEnum` for `Lab` and `Lang` only behind its optional `clap`
/// feature, which `cargo tree -p lab-core` leaves out).
const CORE_FORBIDDEN: &[&str] = &[
    "clap",
    "kube",
    "kube-client",
    "kube-core",
    "kube-runtime",
    "tokio",
    "hyper",
    "hyper-util",
    "tonic",
    "tower",
    "reqwest",
    "k8s-cri",
];

/// The packages `package` depends on through normal (not dev or build) dependencies,
/// transitively, with the features `package` itself selects: `cargo tree -p PACKAGE -e normal`
/// (cargo's per-package feature resolution). `cargo metadata`'s resolve graph would unify the
/// features of the whole workspace and show, e.g., `backon`'s optional tokio that only kube-runtime
/// asks for.
fn normal_dependencies(package: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .args(["--format", "{p}"])
        .current_dir(root())
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_pure_core_depends_on_neither_kube_nor_tokio() {
    let core = normal_dependencies("lab-core");
    assert!(
        core.contains("serde_json"),
        "lab-core's dependencies were not found: the rule checks nothing ({core:?})"
    );
    let lab = normal_dependencies("lab");
    assert!(
        lab.contains("tokio") && lab.contains("kube"),
        "the graph walk misses lab's own kube/tokio: the rule checks nothing"
    );
    let bad: Vec<&&str> = CORE_FORBIDDEN
        .iter()
        .filter(|f| core.contains(**f))
        .collect();
    assert!(
        bad.is_empty(),
        "lab-core (core/Cargo.toml) must stay free of cluster I/O, but depends on {bad:?}; \
         put the code that needs them in the lab crate"
    );
}

/// Lines outside `lab/src/cluster.rs` that reach the API server by themselves.
fn api_clients(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        if path.ends_with("lab/src/cluster.rs") {
            continue;
        }
        for (n, code) in code_lines(text) {
            let uses_kube = code.match_indices("kube").any(|(i, _)| {
                let before = code[..i].chars().next_back();
                let after = &code[i + 4..];
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
                    && (after.starts_with("::")
                        || after.starts_with(';')
                        || after.starts_with(" as"))
            });
            if uses_kube || code.contains("hyper::") || code.contains("reqwest") {
                out.push(format!("{}:{}: {}", path.display(), n + 1, code.trim()));
            }
        }
    }
    out
}

#[test]
fn only_cluster_rs_talks_to_the_api_server() {
    let files: Vec<(PathBuf, String)> = rust_files("lab/src")
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(root().join(&p)).unwrap();
            (p, text)
        })
        .collect();
    assert!(
        files.iter().any(|(p, t)| p.ends_with("lab/src/cluster.rs")
            && !api_clients(&[(PathBuf::from("x.rs"), t.clone())]).is_empty()),
        "lab/src/cluster.rs no longer uses kube: the rule checks nothing"
    );
    let bad = api_clients(&files);
    assert!(
        bad.is_empty(),
        "only lab/src/cluster.rs talks to the API server (add a method there):\n  {}",
        bad.join("\n  ")
    );
}

/// Where a literal act count or act range may appear: the registry itself.
const REGISTRY: &str = "core/src/acts.rs";

/// Lines (comments skipped) that spell the number of acts or a range of acts as literals: a range
/// with literal bounds starting at act 1-4 and reaching act 5 or beyond (`1..=8`, `4..=8`,
/// `3..=7u8`, `1..9`), `LAST_ACT`, a comparison with 8, `" / 8"`, `1 to 8`. Ranges that stop
/// before act 5 (`for act in 1..=4`, the acts before a fault) are a test's own plan, not a count.
fn act_counts(files: &[(PathBuf, String)]) -> Vec<String> {
    fn number_before(s: &str) -> Option<u32> {
        let digits: String = s
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let before = s[..s.len() - digits.len()].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            return None;
        }
        digits.parse().ok()
    }
    fn number_after(s: &str) -> Option<u32> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        let rest = &s[digits.len()..];
        let rest = rest.strip_prefix("u8").unwrap_or(rest);
        if rest
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        {
            return None;
        }
        digits.parse().ok()
    }
    let mut out = Vec::new();
    for (path, text) in files {
        if path.ends_with(REGISTRY) {
            continue;
        }
        for (n, code) in code_lines(text) {
            let mut why = None;
            for (i, _) in code.match_indices("..") {
                let (inclusive, tail) = match code[i + 2..].strip_prefix('=') {
                    Some(t) => (true, t),
                    None => (false, &code[i + 2..]),
                };
                if let (Some(start), Some(end)) = (number_before(&code[..i]), number_after(tail)) {
                    let last = if inclusive {
                        end
                    } else {
                        end.saturating_sub(1)
                    };
                    if (1..=4).contains(&start) && (5..=9).contains(&last) {
                        why = Some("a literal act range");
                    }
                }
            }
            for needle in ["LAST_ACT", "== 8", "!= 8", "\" / 8\"", "1 to 8"] {
                if code.contains(needle) {
                    why = Some("a literal act count");
                }
            }
            if let Some(why) = why {
                out.push(format!(
                    "{}:{}: {why}: {}",
                    path.display(),
                    n + 1,
                    code.trim()
                ));
            }
        }
    }
    out
}

#[test]
fn act_counts_and_ranges_come_from_the_registry() {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for dir in MAPPED {
        for p in rust_files(dir) {
            if p.ends_with("xtask/tests/tidy.rs") {
                continue;
            }
            let text = std::fs::read_to_string(root().join(&p)).unwrap();
            files.push((p, text));
        }
    }
    assert!(
        files.iter().any(|(p, _)| p.ends_with(REGISTRY)),
        "{REGISTRY} is gone: the rule checks nothing"
    );
    let bad = act_counts(&files);
    assert!(
        bad.is_empty(),
        "the acts registry ({REGISTRY}: lab::acts::count, numbers, spec) says how many acts a lab \
         has; no literal count or range elsewhere:\n  {}",
        bad.join("\n  ")
    );
}

/// Where Japanese text may be written: the tool's messages (a folder), the report page's words, the
/// Japanese `--help` and the act titles of the registry.
const WORDS: &[&str] = &[
    "core/src/messages",
    "core/src/report/text.rs",
    "lab/src/help.rs",
    REGISTRY,
];

/// Japanese text: kana, CJK ideographs, the ideographic comma and full stop.
fn is_japanese(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{4e00}'..='\u{9fff}' | '\u{3000}'..='\u{303f}' | '\u{ff00}'..='\u{ffef}')
}

/// Lines (comments and everything from `#[cfg(test)]` on skipped) with a Japanese literal outside
/// [`WORDS`].
fn stray_words(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        if WORDS
            .iter()
            .any(|w| path.starts_with(w) || path.ends_with(w))
        {
            continue;
        }
        for (n, code) in code_lines(text) {
            if code.starts_with("#[cfg(test)]") {
                break;
            }
            let code = code.split(" // ").next().unwrap_or(code);
            if code.chars().any(is_japanese) {
                out.push(format!("{}:{}: {}", path.display(), n + 1, code.trim()));
            }
        }
    }
    out
}

/// Each file (repo-relative) with its text.
fn with_text(files: impl IntoIterator<Item = PathBuf>) -> Vec<(PathBuf, String)> {
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(root().join(&p)).unwrap();
            (p, text)
        })
        .collect()
}

#[test]
fn student_words_live_in_messages() {
    let files = with_text(["lab/src", "core/src"].iter().flat_map(|d| rust_files(d)));
    assert!(
        files
            .iter()
            .any(|(p, t)| p.starts_with(WORDS[0]) && t.chars().any(is_japanese)),
        "{} holds no Japanese: the rule checks nothing",
        WORDS[0]
    );
    let bad = stray_words(&files);
    assert!(
        bad.is_empty(),
        "student-facing words go to core/src/messages/, in both languages:\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn the_rules_themselves_catch_what_they_are_for() {
    // The checks above on small inputs, so a rule that can no longer fail is seen here.
    let files = vec![
        PathBuf::from("lab/src/a.rs"),
        PathBuf::from("lab/src/x/mod.rs"),
    ];
    assert_eq!(unmapped("`a.rs` and `x/`", &files), Vec::<String>::new());
    assert_eq!(unmapped("`a.rs`", &files).len(), 1);
    assert_eq!(unmapped("a.rs and x/, not quoted", &files).len(), 2);
    let two = vec![
        PathBuf::from("lab/src/labs/a.rs"),
        PathBuf::from("core/src/grade/a.rs"),
    ];
    assert_eq!(
        unmapped("`a.rs`", &two),
        vec![
            "lab/src/labs/a.rs (name it `labs/a.rs`)",
            "core/src/grade/a.rs (name it `grade/a.rs`)"
        ]
    );
    assert!(unmapped("`labs/a.rs`, `core/src/grade/a.rs`", &two).is_empty());
    assert_eq!(unmapped("`bs/a.rs` `grade/a.rs`", &two).len(), 1);
    let doc = "# A\n`x/`\n## Code map\n`a.rs`\n## Next\n`b.rs`\n";
    assert_eq!(code_map(doc), "## Code map\n`a.rs`");
    assert_eq!(stale("see `a.rs`, `gone.rs`", &files), vec!["gone.rs"]);
    let g = |s: &str| impure(&[(PathBuf::from("core/src/grade/b.rs"), s.to_owned())]);
    assert_eq!(g("use std::fs;").len(), 1);
    assert_eq!(g("let c = kube::Client::try_default();").len(), 1);
    assert!(g("// std::fs in a comment").is_empty());
    assert!(g("let kubelet = 1; let tokio_like = 2;").is_empty());
    assert_eq!(g("fn f(w: &Workdir) {}").len(), 1);
    let k = |s: &str| api_clients(&[(PathBuf::from("lab/src/faults/scale.rs"), s.to_owned())]);
    assert_eq!(k("use kube::{Api, Client};").len(), 1);
    assert_eq!(k("let c: kube::Client = todo!();").len(), 1);
    assert!(k("// kube::Api in a comment").is_empty());
    assert!(k("let kubeconfig = kubelet_kube_dir;").is_empty());
    assert!(k("use crate::cluster::Cluster;").is_empty());
    let c = |s: &str| act_counts(&[(PathBuf::from("lab/src/main.rs"), s.to_owned())]);
    assert_eq!(c("for act in 1..=8u8 {").len(), 1);
    assert_eq!(c("(Lab::B, 4..=8) => b::run(act, env).await,").len(), 1);
    assert_eq!(c("for act in 1..=7u8 {").len(), 1);
    assert_eq!(c("for act in 1..9 {").len(), 1);
    assert_eq!(c("if *n == lab::workdir::LAST_ACT {").len(), 1);
    assert_eq!(c("self.acts.len() == 8").len(), 1);
    assert!(c("for act in 1..=4 {").is_empty());
    assert!(c("for act in lab::acts::numbers(lab) {").is_empty());
    assert!(c("let x = &s[10..=18];").is_empty());
    assert!(c("// acts 1..=8 in a comment").is_empty());
    assert!(act_counts(&[(PathBuf::from(REGISTRY), "1..=8".to_owned())]).is_empty());
    let w = |p: &str, s: &str| stray_words(&[(PathBuf::from(p), s.to_owned())]);
    assert_eq!(
        w(
            "lab/src/labs/a.rs",
            r#"ui.step("停止しました", "stopped");"#
        )
        .len(),
        1
    );
    assert_eq!(
        w(
            "lab/src/explain.rs",
            "if en { \"rule\" } else { \"判定規則\" },"
        )
        .len(),
        1
    );
    assert!(
        w(
            "core/src/messages/act.rs",
            r#"t("停止しました", "stopped")"#
        )
        .is_empty()
    );
    assert!(w("lab/src/labs/a.rs", "// 停止 in a comment").is_empty());
    assert!(
        w(
            "lab/src/digest.rs",
            "#[cfg(test)]\nmod tests { const X: &str = \"名前\"; }"
        )
        .is_empty()
    );
    assert!(w("lab/src/labs/a.rs", r#"ui.step(m::FROZEN);"#).is_empty());
}

/// The methods that run a process and wait for it (std's `Command::output`/`status`, xshell's
/// `Cmd::read`/`read_stderr`) or start one (`spawn()`, no arguments: a thread's `spawn(f)` has).
const RUNS_A_PROCESS: &[&str] = &[
    ".output()",
    ".status()",
    ".read()",
    ".read_stderr()",
    ".spawn()",
];

/// Where a process may be run or started directly: the one helper, the daemons `cluster up`
/// supervises, `go build`'s streamed progress, and the apt-get installer, which is standard
/// library only because the lab crate's tests compile it in too.
const MAY_RUN_PROCESSES: &[&str] = &[
    "xtask/src/command.rs",
    "xtask/src/cluster/process.rs",
    "xtask/src/upstream/go.rs",
    "xtask/src/upstream/debian.rs",
];

/// Lines of xtask that run an external command without `xtask::command` (comments skipped).
fn bare_commands(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        if MAY_RUN_PROCESSES.iter().any(|a| path.ends_with(a)) {
            continue;
        }
        for (n, code) in code_lines(text) {
            if let Some(m) = RUNS_A_PROCESS.iter().find(|m| code.contains(*m)) {
                out.push(format!(
                    "{}:{}: `{m}`: {}",
                    path.display(),
                    n + 1,
                    code.trim()
                ));
            }
        }
    }
    out
}

#[test]
fn xtask_runs_external_commands_only_through_its_command_helper() {
    let files = with_text(rust_files("xtask/src"));
    assert!(
        files
            .iter()
            .any(|(p, t)| p.ends_with("xtask/src/command.rs") && t.contains(".output()")),
        "xtask/src/command.rs no longer runs commands: the rule checks nothing"
    );
    let bad = bare_commands(&files);
    assert!(
        bad.is_empty(),
        "run external commands through xtask::command::{{run, run_unchecked, run_inherited}} \
         (it prints the pasteable command, exit status and output tail on failure):\n  {}",
        bad.join("\n  ")
    );
    let b = |s: &str| bare_commands(&[(PathBuf::from("xtask/src/cluster/x.rs"), s.to_owned())]);
    assert_eq!(
        b("let o = Command::new(\"ip\").arg(\"a\").output()?;").len(),
        1
    );
    assert_eq!(b("        .status()").len(), 1);
    assert_eq!(b("let v = cmd!(sh, \"go version\").read()?;").len(), 1);
    assert!(b("// .output() in a comment").is_empty());
    assert!(b("let h = scope.spawn(|| 1); let s = out.status;").is_empty());
    assert!(b("crate::command::run(cmd)?;").is_empty());
}

/// The two documents a newcomer reads first, with their longest allowed length in lines.
const SHORT_DOCUMENTS: &[(&str, usize)] = &[("README.md", 150), ("ARCHITECTURE.md", 250)];

/// Whether `s` starts with `n` ASCII digits.
fn digits(s: &[u8], n: usize) -> bool {
    s.len() >= n && s[..n].iter().all(u8::is_ascii_digit)
}

/// The dates in `text`, as "line N: the line": an ISO date (`2026-12-01`), a compact UTC time stamp
/// (`20261201T050000Z`, a run id), or a clock time in UTC (`10:18 UTC`). A date in README or
/// ARCHITECTURE is a measurement or a report of one, which belongs in `docs/` (with the command
/// that reproduces it) and goes stale in a document that should be timeless.
fn dates(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let b = line.as_bytes();
        let dated = (0..b.len()).any(|i| {
            let s = &b[i..];
            let word_start = i == 0 || !b[i - 1].is_ascii_digit();
            let iso = digits(s, 4)
                && s.get(4) == Some(&b'-')
                && digits(&s[5..], 2)
                && s.get(7) == Some(&b'-')
                && digits(&s[8..], 2);
            let stamp = digits(s, 8) && s.get(8) == Some(&b'T') && digits(&s[9..], 6);
            let clock = digits(s, 2)
                && s.get(2) == Some(&b':')
                && digits(&s[3..], 2)
                && line[i + 5..].trim_start().starts_with("UTC");
            word_start && (iso || stamp || clock)
        });
        if dated {
            out.push(format!("line {}: {}", n + 1, line.trim()));
        }
    }
    out
}

#[test]
fn readme_and_architecture_stay_short_and_timeless() {
    let mut problems = Vec::new();
    for (name, max) in SHORT_DOCUMENTS {
        let text = std::fs::read_to_string(root().join(name)).expect("reading a document");
        let lines = text.lines().count();
        if lines > *max {
            problems.push(format!(
                "{name}: {lines} lines, more than {max}: move detail to docs/ or a module's `//!` header"
            ));
        }
        for d in dates(&text) {
            problems.push(format!(
                "{name}: {d}: a dated figure belongs in docs/, with the command that reproduces it"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(dates("measured 2026-12-01: 12 min").len(), 1);
    assert_eq!(dates("run `20261201T050000Z`").len(), 1);
    assert_eq!(dates("at 10:18 UTC, 438 tests").len(), 1);
    assert!(dates("v1.35.8, 2 cores, 24 GiB, `--runs 3`, 10.44.0.1/30, 1..=8").is_empty());
    assert!(dates("port 10:18, sha 123-45-6789").is_empty());
}

/// Files that still cite the team's notes beside the repository and are another engineer's this
/// session (issues 23-25, 27, 29): each must cite the public source (an upstream file, issue or
/// doc) or a file in `docs/` once that work has landed, and leave this list. Shrink it; never grow it.
const CITES_SHARED_NOTES_FOR_NOW: &[&str] = &[];

/// What a clone of the repository does not have: the team's notes beside it (spelled in two parts
/// so that this file does not cite them itself).
const SHARED_NOTES: &str = concat!("..", "/shared/");

/// How a citation of those notes is written: their path, or a research note by name and section
/// (`kyverno.md §3`).
const NOTE_CITATIONS: &[&str] = &[
    SHARED_NOTES,
    concat!("research", "/"),
    concat!("kyverno.md", " §"),
    concat!("kubernetes.md", " §"),
];

/// Verbatim copies of the team's notes that a clone needs (the product spec): they keep the
/// notes' own words, citations included.
const VERBATIM_COPIES: &[&str] = &["docs/labs.md"];

/// This file: the rule's own words and examples name what it forbids.
const THIS_FILE: &str = "xtask/tests/tidy.rs";

/// Whether `line` cites the team's notes.
fn cites_notes(line: &str) -> bool {
    NOTE_CITATIONS.iter().any(|c| line.contains(c))
}

/// Every committed text file: the workspace's crates, scripts, workflows and documents (build
/// output and `.git` left out).
fn committed_files() -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    walk(root, &path, out);
                }
            } else {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

/// Lines of `files` that cite [`SHARED_NOTES`], but in the files still allowed to.
fn shared_citations(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        if CITES_SHARED_NOTES_FOR_NOW
            .iter()
            .chain(VERBATIM_COPIES)
            .chain([&THIS_FILE])
            .any(|a| path.ends_with(a))
        {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if cites_notes(line) {
                out.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn no_committed_file_cites_notes_a_clone_does_not_have() {
    let files: Vec<(PathBuf, String)> = committed_files()
        .into_iter()
        .filter_map(|p| Some((std::fs::read_to_string(root().join(&p)).ok()?, p)))
        .map(|(t, p)| (p, t))
        .collect();
    assert!(
        files.iter().any(|(p, _)| p.ends_with(THIS_FILE)),
        "the walk did not find this file: the rule checks nothing"
    );
    let bad = shared_citations(&files);
    assert!(
        bad.is_empty(),
        "cite the public source (upstream file, issue, doc) or a file in docs/, not the team's \
         notes ({SHARED_NOTES}…):\n  {}",
        bad.join("\n  ")
    );
    let still: Vec<&&str> = CITES_SHARED_NOTES_FOR_NOW
        .iter()
        .filter(|a| {
            !files
                .iter()
                .any(|(p, t)| p.ends_with(a) && t.lines().any(cites_notes))
        })
        .collect();
    assert!(
        still.is_empty(),
        "these files no longer cite the team's notes: take them off CITES_SHARED_NOTES_FOR_NOW: {still:?}"
    );
    let s = |p: &str, t: &str| shared_citations(&[(PathBuf::from(p), t.to_owned())]);
    let cite = format!("//! see `{SHARED_NOTES}research/k.md` §1");
    assert_eq!(s("lab/src/x.rs", &cite).len(), 1);
    assert_eq!(s("Cargo.toml", &cite).len(), 1);
    assert!(s("lab/src/x.rs", "//! see `docs/embedded-node.md`").is_empty());
    assert_eq!(s("lab/src/x.rs", "// (kyverno.md §3)").len(), 1);
    assert_eq!(s("lab/src/x.rs", "// (research/kyverno.md §8)").len(), 1);
    assert!(
        s(
            "lab/src/x.rs",
            "// kyverno `pkg/webhooks/server.go`, kyverno#8916"
        )
        .is_empty()
    );
    assert!(s("docs/labs.md", "(`../research/anchors-3.md` §3.2)").is_empty());
    // No file is exempt any more: the graders' files are checked like every other.
    assert_eq!(s("core/src/classify.rs", &cite).len(), 1);
}

/// Each crate's layers, top first, as ARCHITECTURE.md's "Layers" states them: a module (a file or
/// folder right under `src/`, or one file of a folder named here on its own, `messages/said`) may
/// import (`crate::m`, `crate::m::f`, `super::m`) only from its own layer or a lower one. A
/// folder's entry (`xtask/src/cluster`) orders the files and folders right inside it the same way
/// (the folder's `mod.rs` is its face and is not ordered: its children may use its items). A
/// module not named here is not checked (a new one gets its place here and in ARCHITECTURE.md);
/// names the crate only re-exports (the core's modules inside `lab`) count as the lowest layer.
const LAYERS: &[(&str, &[&[&str]])] = &[
    (
        "core/src",
        &[
            &["report", "explain"],
            &[
                "messages",
                "messages/codes",
                "messages/commands",
                "messages/errors",
                "messages/explain",
                "messages/webhook_audit",
            ],
            &["grade"],
            &[
                "audit",
                "metrics",
                "classify",
                "rules",
                "derive",
                "webhook_audit",
                "policy_audit",
                "workdir",
            ],
            &["acts"],
            &["inputs", "messages/act"],
            &["facts", "digest", "messages/said"],
            &["evidence", "json", "wait", "diagnostics"],
            &["files", "admission"],
            &["error"],
            &["text"],
        ],
    ),
    (
        "lab/src",
        &[
            &["main", "help"],
            &["labs"],
            &["diagnostics", "steps"],
            &["labs/common"],
            &["faults", "probe", "metrics"],
            &["cluster", "cri", "pidmap", "signals"],
        ],
    ),
    (
        "xtask/src",
        &[
            &["main"],
            &["bench", "matrix", "guest", "dist", "conformance"],
            &["lab_run"],
            &["backend"],
            &["cluster"],
            &["upstream"],
            &["lock", "flags", "packaging"],
            &["command", "status"],
        ],
    ),
    (
        "xtask/src/cluster",
        &[
            &["teardown"],
            &["process", "preflight"],
            &["daemons", "foreign", "kyverno", "kubeconfig", "pki", "mark"],
            &["netns"],
            &["record"],
            &["config", "host", "sysctl", "ready"],
        ],
    ),
    (
        "xtask/src/upstream",
        &[
            &["chart", "images", "wrapper"],
            &["go"],
            &["prereq", "cache", "progress", "versions"],
            &["components", "debian"],
        ],
    ),
    ("xtask/src/backend", &[&["k3s"], &["kubeconfig", "summary"]]),
    ("xtask/src/guest", &[&["boot"], &["image"]]),
    ("xtask/src/matrix", &[&["table"], &["facts"]]),
    ("xtask/src/conformance", &[&["run"], &["suite"]]),
];

/// Imports that point up today, each `file -> module`: none (the last, `core/src/acts.rs ->
/// grade`, went when the registry named its graders by `acts::Grader` instead of holding their
/// functions). Keep it empty.
const UPWARD_FOR_NOW: &[&str] = &[];
/// The layer (0 = top) of module `m` in `layers`, if it is named there.
fn layer_of(layers: &[&[&str]], m: &str) -> Option<usize> {
    layers.iter().position(|l| l.contains(&m))
}

/// The module `parts` (an import's or a file's module path below the ordered folder) belong to in
/// `layers`: `a/b` when the layers name that file of folder `a` on its own, else `a`.
fn module_of(layers: &[&[&str]], parts: &[String]) -> String {
    let first = parts[0].as_str();
    if let Some(second) = parts.get(1) {
        let sub = format!("{first}/{second}");
        if layer_of(layers, &sub).is_some() {
            return sub;
        }
    }
    first.to_owned()
}

/// The crate's source root (`…/src`) of a `LAYERS` entry and the module path of the folder it
/// orders inside that crate (empty for the crate itself).
fn crate_and_folder(src: &str) -> (&str, Vec<&str>) {
    let at = src.find("/src").map_or(src.len(), |i| i + "/src".len());
    let folder = src[at..].split('/').filter(|s| !s.is_empty()).collect();
    (&src[..at], folder)
}

/// The module path of a file relative to its crate's `src/` (`cluster/daemons/kubelet.rs` →
/// `cluster::daemons::kubelet`; a `mod.rs` names its folder; the crate roots `lib.rs` and
/// `main.rs` are the modules `lib` and `main`, as the layer tables name them).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.len() > 1 && parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// The code a layer rule reads: comment lines left out, and the unit tests (a `#[cfg(test)]`
/// followed by an inline `mod … {`, up to its closing brace) skipped.
fn layer_code(text: &str) -> String {
    let lines: Vec<&str> = code_lines(text).map(|(_, l)| l).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let test_mod = lines[i] == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|l| l.starts_with("mod ") && l.contains('{'));
        if !test_mod {
            out.push(lines[i]);
            i += 1;
            continue;
        }
        let mut depth = 0i64;
        for line in &lines[i + 1..] {
            i += 1;
            depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if depth <= 0 {
                break;
            }
        }
        i += 1;
    }
    out.join("\n")
}

/// The leading identifier of `s`.
fn ident(s: &str) -> &str {
    let n = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..n]
}

/// The items of a `{…}` use group, split at its top-level commas (`a::{b, c}, d` → `a::{b, c}`,
/// `d`); `group` starts after the `{`.
fn group_items(group: &str) -> Vec<&str> {
    let (mut depth, mut from, mut out) = (0usize, 0usize, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(&group[from..i]);
                return out;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&group[from..]);
    out
}

/// The inline modules of `code` (`mod m { … }` starting a line, `pub` or not), outer first: (the
/// byte range of the block, `m`).
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let decl = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ");
        if let Some(rest) = decl.strip_prefix("mod ") {
            let name = ident(rest);
            if !name.is_empty() && rest[name.len()..].trim_start().starts_with('{') {
                let open = offset + line.find('{').unwrap_or(0);
                let mut depth = 0usize;
                let mut end = code.len();
                for (i, c) in code[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + i;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                out.push((open, end, name.to_owned()));
            }
        }
        offset += line.len();
    }
    out
}

/// Every path `code` (of module `me`) names through `crate::` or `super::`, made absolute below
/// the crate: `crate::a::B` → `a::B`; in `x/y.rs`, `super::z::C` → `x::z::C`; a use group gives
/// one path per item (`use super::{a, b::C}` → `x::a`, `x::b::C`).
fn imported_paths(me: &[String], code: &str) -> Vec<Vec<String>> {
    fn walk(mut path: Vec<String>, rest: &str, out: &mut Vec<Vec<String>>) {
        let rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            for item in group_items(group) {
                walk(path.clone(), item, out);
            }
            return;
        }
        let name = ident(rest);
        if name.is_empty() || name == "self" {
            out.push(path);
            return;
        }
        path.push(name.to_owned());
        match rest[name.len()..].strip_prefix("::") {
            Some(r) => walk(path, r, out),
            None => out.push(path),
        }
    }
    let inline = inline_modules(code);
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for (start, _) in code.char_indices() {
        let before = start.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
            continue;
        }
        let mut rest = &code[start..];
        let base = if let Some(r) = rest.strip_prefix("crate::") {
            rest = r;
            Vec::new()
        } else {
            let mut supers = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                rest = r;
                supers += 1;
            }
            if supers == 0 {
                continue;
            }
            // Inside an inline `mod m { … }`, `super` is the file's module (or an outer `m`).
            let mut here = me.to_vec();
            here.extend(
                inline
                    .iter()
                    .filter(|(from, to, _)| (*from..*to).contains(&start))
                    .map(|(_, _, m)| m.clone()),
            );
            here[..here.len().saturating_sub(supers)].to_vec()
        };
        walk(base, rest, &mut out);
    }
    out
}

/// The upward imports inside one `LAYERS` entry, as `file -> module` (comment lines and unit
/// tests skipped: a `tests.rs` file, an inline `#[cfg(test)] mod`).
fn upward_imports(src: &str, layers: &[&[&str]], files: &[(PathBuf, String)]) -> Vec<String> {
    let (krate, folder) = crate_and_folder(src);
    let below = |p: &[String]| {
        (p.len() > folder.len() && p.iter().zip(&folder).all(|(a, b)| a == b))
            .then(|| p[folder.len()..].to_vec())
    };
    let mut out = BTreeSet::new();
    for (path, text) in files {
        let Ok(rel) = path.strip_prefix(krate) else {
            continue;
        };
        if rel.ends_with("tests.rs") {
            continue;
        }
        let me = module_path(rel);
        let Some(mine) = below(&me).and_then(|m| layer_of(layers, &module_of(layers, &m))) else {
            continue;
        };
        for p in imported_paths(&me, &layer_code(text)) {
            let Some(theirs) = below(&p) else {
                continue;
            };
            let name = module_of(layers, &theirs);
            if layer_of(layers, &name).is_some_and(|t| t < mine) {
                out.insert(format!("{} -> {name}", path.display()));
            }
        }
    }
    out.into_iter().collect()
}

#[test]
fn modules_import_only_from_their_layer_or_below() {
    let mut found = Vec::new();
    for (src, layers) in LAYERS {
        let files = with_text(rust_files(src));
        for name in layers.iter().flat_map(|l| l.iter()) {
            let exists = files.iter().any(|(p, _)| {
                p.starts_with(format!("{src}/{name}")) || p.ends_with(format!("{src}/{name}.rs"))
            });
            assert!(exists, "LAYERS names `{src}/{name}`, which does not exist");
        }
        found.extend(upward_imports(src, layers, &files));
    }
    let new: Vec<&String> = found
        .iter()
        .filter(|f| !UPWARD_FOR_NOW.contains(&f.as_str()))
        .collect();
    assert!(
        new.is_empty(),
        "these imports point up (ARCHITECTURE.md, \"Layers\"): move the item down, or the module \
         up:\n  {}",
        new.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    let gone: Vec<&&str> = UPWARD_FOR_NOW
        .iter()
        .filter(|a| !found.iter().any(|f| f == *a))
        .collect();
    assert!(
        gone.is_empty(),
        "these imports no longer point up: take them off UPWARD_FOR_NOW: {gone:?}"
    );
    let l: &[&[&str]] = &[&["top"], &["low"]];
    let up = |p: &str, t: &str| upward_imports("x/src", l, &[(PathBuf::from(p), t.to_owned())]);
    assert_eq!(
        up("x/src/low.rs", "use crate::top::A;"),
        vec!["x/src/low.rs -> top"]
    );
    assert_eq!(up("x/src/low/m.rs", "let a = crate::top::f();").len(), 1);
    assert!(up("x/src/top.rs", "use crate::low::A;").is_empty());
    assert!(up("x/src/low.rs", "/// see [`crate::top`]").is_empty());
    assert!(up("x/src/other.rs", "use crate::top::A;").is_empty());
    let inner =
        |p: &str, t: &str| upward_imports("x/src/f", l, &[(PathBuf::from(p), t.to_owned())]);
    assert_eq!(
        inner("x/src/f/low.rs", "use super::top::A;"),
        vec!["x/src/f/low.rs -> top"]
    );
    assert_eq!(
        inner("x/src/f/low/m.rs", "use crate::f::{low, top};").len(),
        1
    );
    assert_eq!(
        inner(
            "x/src/f/low/m.rs",
            "use super::super::{low::X, top::{A, B}};"
        )
        .len(),
        1
    );
    assert_eq!(
        inner("x/src/f/low.rs", "use super::{\n    top::A,\n};").len(),
        1
    );
    assert!(inner("x/src/f/low.rs", "use super::lowish::A;").is_empty());
    assert!(
        inner(
            "x/src/f/low.rs",
            "mod m {\n    use super::top_of_low::A;\n}\nuse super::low::B;"
        )
        .is_empty()
    );
    assert_eq!(
        inner(
            "x/src/f/low.rs",
            "pub mod m {\n    use super::super::top::A;\n}"
        )
        .len(),
        1
    );
    assert!(inner("x/src/f/mod.rs", "use top::A;").is_empty());
    assert!(inner("x/src/f/top.rs", "use super::low::A;").is_empty());
    assert!(inner("x/src/f/low.rs", "use crate::top::A;").is_empty());
    assert!(
        inner(
            "x/src/f/low.rs",
            "#[cfg(test)]\nmod tests {\n    use super::super::top::A;\n}"
        )
        .is_empty()
    );
    // One file of a folder may have a layer of its own (`messages/said` under `messages`).
    let l: &[&[&str]] = &[&["w/hi"], &["mid"], &["w/lo"]];
    let up = |p: &str, t: &str| upward_imports("x/src", l, &[(PathBuf::from(p), t.to_owned())]);
    assert_eq!(
        up("x/src/w/lo.rs", "use crate::mid::A;"),
        vec!["x/src/w/lo.rs -> mid"]
    );
    assert_eq!(
        up("x/src/mid.rs", "let w = crate::w::hi::f();"),
        vec!["x/src/mid.rs -> w/hi"]
    );
    assert!(up("x/src/mid.rs", "use crate::w::lo::f;").is_empty());
    assert!(up("x/src/w/hi.rs", "use crate::mid::A;").is_empty());
    assert!(up("x/src/w/lo/tests.rs", "use crate::mid::A;").is_empty());
    assert!(
        up(
            "x/src/w/lo.rs",
            "#[cfg(test)]\nmod tests { use crate::mid::A; }"
        )
        .is_empty()
    );
}

/// `text` with comments and the insides of string and char literals blanked (newlines kept), so
/// that every brace left is code.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let ident = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let (c, next) = (b[i], b.get(i + 1).copied());
        let raw = c == 'r'
            && matches!(next, Some('"' | '#'))
            && (!ident(i.checked_sub(1).and_then(|p| b.get(p)))
                || (b[i - 1] == 'b' && !ident(i.checked_sub(2).and_then(|p| b.get(p)))));
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if raw {
            let mut j = i + 1;
            while b.get(j) == Some(&'#') {
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let rest: String = b[j + 1..].iter().collect();
            let len = rest
                .find(&close)
                .map_or(rest.len(), |n| rest[..n].chars().count());
            let end = (j + 1 + len + 1 + hashes).min(b.len());
            out.extend(b[i.min(end)..end].iter().map(|&c| blank(c)));
            i = j + 1 + len + 1 + hashes;
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && next == Some('\\') {
            // An escaped char literal: up to its closing quote.
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The 0-based line ranges (first, last) of the unit tests in `code` (from [`code_only`]): each
/// item after a `#[cfg(test)]` or `#[test]` line, to its closing brace.
fn test_ranges(code: &str) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim();
        if (t == "#[cfg(test)]" || t == "#[test]")
            && let Some(end) = item_end(&lines, n + 1)
        {
            out.push((n, end));
        }
    }
    out
}

/// The last line of the item that starts at or after line `from` of `lines`: the line of the
/// brace that closes its body, or of the `;` that ends it without one.
fn item_end(lines: &[&str], from: usize) -> Option<usize> {
    let (mut depth, mut opened, mut nest) = (0i64, false, 0i64);
    for (n, line) in lines.iter().enumerate().skip(from) {
        for c in line.chars() {
            match c {
                '(' | '[' => nest += 1,
                ')' | ']' => nest -= 1,
                ';' if !opened && nest == 0 => return Some(n),
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => {
                    depth -= 1;
                    if opened && depth == 0 {
                        return Some(n);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// The functions of `text` outside unit tests, each (name, 1-based first line, lines from `fn` to
/// its closing brace); declarations without a body are left out.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let tests = test_ranges(&code);
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let mut rest = line.trim_start();
        loop {
            let before = rest;
            for q in [
                "pub(crate) ",
                "pub(super) ",
                "pub ",
                "async ",
                "const ",
                "unsafe ",
            ] {
                rest = rest.strip_prefix(q).unwrap_or(rest);
            }
            if rest == before {
                break;
            }
        }
        let Some(sig) = rest.strip_prefix("fn ") else {
            continue;
        };
        if tests.iter().any(|&(a, b)| (a..=b).contains(&n)) {
            continue;
        }
        let Some(end) = item_end(&lines, n) else {
            continue;
        };
        if !lines[n..=end].iter().any(|l| l.contains('{')) {
            continue;
        }
        out.push((ident(sig).to_owned(), n + 1, end - n + 1));
    }
    out
}

/// The longest a non-test function may be, in lines from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;

/// The production sources the function limit covers (test directories and `tests.rs` files are
/// tests).
const LIMITED: &[&str] = &["core/src", "lab/src", "xtask/src", "tests/src"];

/// Functions allowed over [`MAX_FUNCTION_LINES`], each `(file, function, why)`: tables that read
/// best whole, and functions being shortened by work still open. Shrink this list; never grow it
/// (a function that is short again must leave it).
const LONG_FUNCTIONS_FOR_NOW: &[(&str, &str, &str)] = &[
    (
        "core/src/messages/codes.rs",
        "code_text",
        "a table: one arm per finding code with its words in both languages, exhaustive over `Code`",
    ),
    (
        "core/src/messages/errors.rs",
        "error_text_of",
        "a table: one arm per (language, `LabError` variant), exhaustive over the variants",
    ),
];

/// Every non-test function over [`MAX_FUNCTION_LINES`] in `files`, as `file:line fn name (N lines)`
/// keyed by `(file, name)`.
fn long_functions(files: &[(PathBuf, String)]) -> Vec<((String, String), String)> {
    let mut out = Vec::new();
    for (path, text) in files {
        let p = path.display().to_string();
        if p.contains("/tests/") || p.ends_with("/tests.rs") {
            continue;
        }
        for (name, line, len) in functions(text) {
            if len > MAX_FUNCTION_LINES {
                out.push((
                    (p.clone(), name.clone()),
                    format!("{p}:{line} fn {name} ({len} lines)"),
                ));
            }
        }
    }
    out
}

#[test]
fn no_function_is_over_a_hundred_lines() {
    let files = with_text(LIMITED.iter().flat_map(|d| rust_files(d)));
    assert!(
        files.iter().any(|(p, _)| p.ends_with(REGISTRY)),
        "{REGISTRY} is gone: the rule reads the wrong tree"
    );
    let found = long_functions(&files);
    let listed = |f: &str, n: &str| {
        LONG_FUNCTIONS_FOR_NOW
            .iter()
            .any(|(lf, ln, _)| *lf == f && *ln == n)
    };
    let new: Vec<&str> = found
        .iter()
        .filter(|((f, n), _)| !listed(f, n))
        .map(|(_, s)| s.as_str())
        .collect();
    assert!(
        new.is_empty(),
        "non-test functions over {MAX_FUNCTION_LINES} lines: split them into named steps:\n  {}",
        new.join("\n  ")
    );
    let short: Vec<String> = LONG_FUNCTIONS_FOR_NOW
        .iter()
        .filter(|(f, n, _)| !found.iter().any(|((ff, nn), _)| ff == f && nn == n))
        .map(|(f, n, _)| format!("{f} fn {n}"))
        .collect();
    assert!(
        short.is_empty(),
        "these are {MAX_FUNCTION_LINES} lines or fewer now (or gone): take them off \
         LONG_FUNCTIONS_FOR_NOW:\n  {}",
        short.join("\n  ")
    );
}

#[test]
fn the_function_limit_sees_what_it_is_for() {
    let f = |s: &str| functions(s);
    let body = |n: usize| format!("fn long() {{\n{}}}\n", "    let x = 1;\n".repeat(n));
    assert_eq!(f(&body(3)), vec![("long".to_owned(), 1, 5)]);
    // Braces in strings, chars and comments are not code; a raw string's neither.
    let tricky = "pub(crate) async fn g(a: [u8; 2]) -> &'static str {\n    let s = \"}\";\n    \
                  let c = '}';\n    let e = '\\'';\n    // }\n    let r = r#\"}\"#;\n    \"\"\n}\nfn h() {}\n";
    assert_eq!(
        f(tricky),
        vec![("g".to_owned(), 1, 8), ("h".to_owned(), 9, 1)]
    );
    // Unit tests and bodiless declarations are not counted.
    let tests = format!(
        "#[cfg(test)]\nmod tests {{\n{}}}\ntrait T {{ fn d(&self); }}\n",
        body(200)
    );
    assert!(f(&tests).is_empty());
    let one = |p: &str, s: &str| long_functions(&[(PathBuf::from(p), s.to_owned())]);
    assert_eq!(one("lab/src/x.rs", &body(101)).len(), 1);
    assert!(one("lab/src/x.rs", &body(98)).is_empty());
    assert!(one("lab/tests/x.rs", &body(101)).is_empty());
    assert!(one("core/src/inputs/tests.rs", &body(101)).is_empty());
}

/// The files that may `match` over the labs: the registry (each lab's entry) and the type's own
/// names (`Lab::as_str`).
const LAB_MATCHES_MAY: &[(&str, &str)] = &[
    (REGISTRY, "the registry: each lab's entry"),
    ("core/src/evidence.rs", "the type itself: `Lab::as_str`"),
];

/// Files that `match` over the labs today outside [`LAB_MATCHES_MAY`], with how many arms: each
/// belongs in the registry (a field of `LabSpec` or of an act's steps). Shrink these numbers;
/// never grow them (a file with fewer arms must lower its number, one with none leave the list).
const LAB_MATCHES_FOR_NOW: &[(&str, usize)] = &[];

/// The arms over labs (`Lab::A =>`, `Lab::B | Lab::C =>`) outside unit tests, per file.
fn lab_match_arms(files: &[(PathBuf, String)]) -> Vec<(String, usize, Vec<usize>)> {
    let mut out = Vec::new();
    for (path, text) in files {
        let p = path.display().to_string();
        if p.contains("/tests/") || p.ends_with("/tests.rs") {
            continue;
        }
        let code = code_only(text);
        let tests = test_ranges(&code);
        let mut lines = Vec::new();
        for (n, line) in code.lines().enumerate() {
            if tests.iter().any(|&(a, b)| (a..=b).contains(&n)) {
                continue;
            }
            let mut arms = line.matches("=>").count();
            // An arm is `Lab::X` (or an or-pattern of them) right before `=>`, alone or as an
            // element of a tuple pattern (`(Outcome::X, Lab::C) =>`: a match over labs too).
            for (i, _) in line.match_indices("=>") {
                let pat = line[..i].trim_end();
                let is_lab = match tuple_elements(pat) {
                    Some(elements) => elements.iter().any(|e| is_lab_pattern(e)),
                    None => is_lab_pattern(pat.rsplit(['{', ',', '(']).next().unwrap_or(pat)),
                };
                if !is_lab {
                    arms -= 1;
                }
            }
            if arms > 0 {
                lines.extend(std::iter::repeat_n(n + 1, arms));
            }
        }
        if !lines.is_empty() {
            out.push((p, lines.len(), lines));
        }
    }
    out
}

/// Whether `pat` is `Lab::X` or an or-pattern of them (`Lab::B | Lab::C`, any path prefix).
fn is_lab_pattern(pat: &str) -> bool {
    let pat = pat.trim();
    !pat.is_empty()
        && pat.split('|').all(|alt| {
            let alt = alt.trim();
            let last = alt.rsplit("::").next().unwrap_or(alt);
            alt.ends_with(&format!("Lab::{last}"))
                && last.len() == 1
                && last.chars().all(|c| c.is_ascii_uppercase())
        })
}

/// The top-level elements of the tuple pattern `pat` ends with (`… (a, b | c)` → `a`, `b | c`);
/// `None` when it does not end with one.
fn tuple_elements(pat: &str) -> Option<Vec<&str>> {
    let inner_end = pat.strip_suffix(')')?.len();
    let mut depth = 0i32;
    let mut start = None;
    for (i, c) in pat[..inner_end].char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => {
                start = Some(i + 1);
                break;
            }
            '(' => depth -= 1,
            _ => {}
        }
    }
    let inner = &pat[start?..inner_end];
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&inner[from..]);
    Some(out)
}

#[test]
fn only_the_registry_matches_over_labs() {
    let files = with_text(LIMITED.iter().flat_map(|d| rust_files(d)));
    let found = lab_match_arms(&files);
    assert!(
        found.iter().any(|(p, _, _)| p == "core/src/evidence.rs"),
        "core/src/evidence.rs (`Lab::as_str`) has no arm over labs: the rule sees nothing"
    );
    let mut problems = Vec::new();
    for (p, arms, lines) in &found {
        if LAB_MATCHES_MAY.iter().any(|(f, _)| f == p) {
            continue;
        }
        let allowed = LAB_MATCHES_FOR_NOW
            .iter()
            .find(|(f, _)| f == p)
            .map_or(0, |(_, n)| *n);
        if *arms != allowed {
            problems.push(format!(
                "{p}: {arms} arms over labs (lines {lines:?}), LAB_MATCHES_FOR_NOW allows {allowed}"
            ));
        }
    }
    for (f, n) in LAB_MATCHES_FOR_NOW {
        if !found.iter().any(|(p, _, _)| p == f) {
            problems.push(format!(
                "{f}: no arm over labs now (listed with {n}): take it off"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "a `match` over labs belongs in the registry ({REGISTRY}: a field of the lab's `LabSpec`); \
         LAB_MATCHES_FOR_NOW only shrinks:\n  {}",
        problems.join("\n  ")
    );
    let arms = |s: &str| lab_match_arms(&[(PathBuf::from("lab/src/x.rs"), s.to_owned())]);
    assert_eq!(
        arms("match lab {\n    Lab::A => 1,\n    Lab::B | Lab::C => 2,\n}")[0].1,
        2
    );
    assert_eq!(
        arms("let t = match lab { Lab::A => &X, lab::Lab::B => &Y };")[0].1,
        2
    );
    assert!(arms("match k { Kind::A => 1, LabX::B => 2 }").is_empty());
    // A tuple pattern with a lab in it is an arm over labs; one without is not.
    assert_eq!(
        arms("match (o, lab) {\n    (Outcome::T, Lab::B) => 1,\n    (Outcome::T, Lab::A | Lab::C) => 2,\n    (_, _) => 3,\n}")[0].1,
        2
    );
    assert!(arms("match (a, b) { (Kind::A, Some(x)) => 1, (_, None) => 2 }").is_empty());
    assert!(arms("// Lab::A => in a comment\nlet s = \"Lab::B =>\";").is_empty());
    assert!(
        arms("#[cfg(test)]\nmod tests {\n    fn f() { match l { Lab::A => 1 } }\n}").is_empty()
    );
}

/// Words that count the labs, stale whenever the registry holds another number of them.
const LAB_COUNT_WORDS: &[&str] = &["two labs", "both labs", "either lab"];

/// Where the lab-counting words are checked: the two documents a newcomer reads first, the
/// `--help` sources of both tools, and the docstrings of the core and the lab crate.
const LAB_WORDS_CHECKED: &[&str] = &[
    "README.md",
    "ARCHITECTURE.md",
    "lab/src",
    "core/src",
    "xtask/src/flags.rs",
    "xtask/src/main.rs",
    "xtask/src/lib.rs",
];

/// The number word of `n` (README's first line says how many labs there are).
fn number_word(n: usize) -> &'static str {
    ["no", "one", "two", "three", "four", "five", "six"]
        .get(n)
        .copied()
        .unwrap_or("many")
}

/// What README.md says about the labs that the registry does not: its first line must count them
/// ("Reproduces three …"), and its lab list must be one `- **Lab X** — <summary>` bullet per lab
/// of the registry, in its order, each opening with the registry's English summary
/// (`LabSpec::summary`).
fn readme_labs(readme: &str, labs: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let first = format!("Reproduces {} Kubernetes", number_word(labs.len()));
    if !readme.contains(&first) {
        out.push(format!("README.md does not open with \"{first} …\""));
    }
    let bullets: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("- **Lab "))
        .collect();
    let want: Vec<String> = labs
        .iter()
        .map(|(lab, summary)| format!("- **Lab {}** — {summary}", lab.to_uppercase()))
        .collect();
    let ok = bullets.len() == want.len()
        && bullets
            .iter()
            .zip(&want)
            .all(|(b, w)| b.starts_with(w.as_str()));
    if !ok {
        out.push(format!(
            "README.md's lab list is {bullets:#?}, the registry's (core/src/acts.rs, LAB_SPECS) \
             opens each bullet as {want:#?}"
        ));
    }
    out
}

/// Lines of `files` (comment lines included: docstrings are `--help`) with a lab-counting word.
fn lab_count_words(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if let Some(w) = LAB_COUNT_WORDS.iter().find(|w| lower.contains(*w)) {
                out.push(format!(
                    "{}:{}: \"{w}\": {}",
                    path.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    out
}

#[test]
fn the_documents_and_help_name_the_labs_of_the_registry() {
    let labs: Vec<(String, String)> = lab::acts::LAB_SPECS
        .iter()
        .map(|s| (s.lab.as_str().to_owned(), s.summary.en.to_owned()))
        .collect();
    let readme = std::fs::read_to_string(root().join("README.md")).expect("reading README.md");
    let mut problems = readme_labs(&readme, &labs);
    let mut paths = Vec::new();
    for p in LAB_WORDS_CHECKED {
        if p.ends_with(".rs") || p.ends_with(".md") {
            paths.push(PathBuf::from(p));
        } else {
            paths.extend(rust_files(p));
        }
    }
    if labs.len() != 2 {
        problems.extend(lab_count_words(&with_text(paths)));
    }
    assert!(
        problems.is_empty(),
        "the registry has {} labs ({}); the documents and `--help` say otherwise:\n  {}",
        labs.len(),
        labs.iter()
            .map(|(l, _)| l.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        problems.join("\n  ")
    );
    let two = [
        ("a".to_owned(), "x".to_owned()),
        ("b".to_owned(), "y".to_owned()),
    ];
    assert!(
        readme_labs(
            "Reproduces two Kubernetes\n- **Lab A** — x, more\n- **Lab B** — y\n",
            &two
        )
        .is_empty()
    );
    assert_eq!(
        readme_labs(
            "Reproduces three Kubernetes\n- **Lab A** — x\n- **Lab B** — y\n",
            &two
        )
        .len(),
        1
    );
    assert_eq!(
        readme_labs(
            "Reproduces two Kubernetes\n- **Lab B** — y\n- **Lab A** — x\n",
            &two
        )
        .len(),
        1
    );
    assert_eq!(
        readme_labs("Reproduces two Kubernetes\n- **Lab A** — x\n", &two).len(),
        1
    );
    let w = |s: &str| lab_count_words(&[(PathBuf::from("README.md"), s.to_owned())]);
    assert_eq!(w("/// Both labs on each cell").len(), 1);
    assert!(w("every lab of the registry").is_empty());
}

/// Lines of a lab's act file (`lab/src/labs/<lab>.rs`) that name another lab's file: what labs
/// share is a step's runner (`lab/src/steps/`) or `labs/common.rs`, never a sibling.
fn sideways_imports(files: &[(PathBuf, String)], labs: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        let Some(me) = labs
            .iter()
            .find(|l| path.ends_with(format!("lab/src/labs/{l}.rs")))
        else {
            continue;
        };
        for (n, code) in code_lines(&layer_code(text)) {
            for other in labs.iter().filter(|l| *l != me) {
                let named = [format!("labs::{other}::"), format!("super::{other}::")]
                    .iter()
                    .any(|p| code.contains(p.as_str()))
                    || code.contains(&format!("labs::{{{other}"))
                    || code.contains(&format!("use super::{other};"));
                if named {
                    out.push(format!("{}:{}: {}", path.display(), n + 1, code.trim()));
                }
            }
        }
    }
    out
}

#[test]
fn no_lab_reaches_into_another_labs_file() {
    let labs: Vec<&str> = lab::acts::LABS.iter().map(|l| l.as_str()).collect();
    let files = with_text(rust_files("lab/src/labs"));
    // A lab made only of steps other labs run has no file of its own; a file named after a lab
    // is that lab's runners, so it must be a lab of the registry.
    let lab_files: Vec<&str> = files
        .iter()
        .filter_map(|(p, _)| p.file_stem()?.to_str())
        .filter(|stem| !["mod", "common"].contains(stem))
        .collect();
    assert!(
        lab_files.iter().any(|f| labs.contains(f)),
        "no lab/src/labs/<lab>.rs of a lab of the registry: the rule reads the wrong tree"
    );
    let strays: Vec<&&str> = lab_files.iter().filter(|f| !labs.contains(f)).collect();
    assert!(
        strays.is_empty(),
        "lab/src/labs/ has files named after no lab of the registry (core/src/acts.rs): {strays:?}"
    );
    let bad = sideways_imports(&files, &labs);
    assert!(
        bad.is_empty(),
        "a lab's acts use another lab's file: move what they share into a step's runner \
         (lab/src/steps/) or labs/common.rs:\n  {}",
        bad.join("\n  ")
    );
    let f = |s: &str| {
        sideways_imports(
            &[(PathBuf::from("lab/src/labs/c.rs"), s.to_owned())],
            &["a", "b", "c"],
        )
    };
    assert_eq!(f("use crate::labs::b::{FreezeAct, settle};").len(), 1);
    assert_eq!(
        f("let i = crate::labs::b::investigate_pod(p, cri).await?;").len(),
        1
    );
    assert_eq!(f("    resume_after_sec: super::a::X,").len(), 1);
    assert!(f("use crate::steps::freeze::{FreezeAct, settle};").is_empty());
    assert!(f("use crate::labs::common::Env;").is_empty());
    assert!(f("// see crate::labs::b::act6").is_empty());
}

/// The nightly workflow. YAML cannot read the registry: its `labs` job lists `lab/schemas/`'s
/// directories (one per lab of the registry, `lab/tests/schemas.rs`) as the output `labs`, and the
/// jobs that run every lab take their `lab:` list from it ([`NIGHTLY_LABS`]).
const NIGHTLY: &str = ".github/workflows/nightly.yml";

/// A `lab:` matrix that is the registry's labs, read from the `labs` job's output.
const NIGHTLY_LABS: &str = "${{ fromJSON(needs.labs.outputs.labs) }}";

/// Jobs of [`NIGHTLY`] whose `lab: [...]` list is not every lab of the registry, with why. Every
/// other list must be the registry's labs, in its order.
const NIGHTLY_LAB_SUBSETS: &[(&str, &str)] = &[(
    "k3s-in-docker",
    "labs a and b: the list has not named lab C since lab C came (7198c1e added it to the \
     embedded and k3s-on-runner jobs only); lab C on k3s in Docker is not tried",
)];

/// The jobs `job` of a workflow waits for: its `needs:` (one name or a `[a, b]` list).
fn job_needs(yaml: &str, job: &str) -> Vec<String> {
    let mut inside = false;
    for line in yaml.lines() {
        if let Some(name) = (line.strip_prefix("  ").and_then(|l| l.strip_suffix(':')))
            .filter(|name| !name.starts_with(' '))
        {
            inside = name == job;
            continue;
        }
        if let Some(needs) = line.strip_prefix("    needs:").filter(|_| inside) {
            let needs = needs.trim().trim_start_matches('[').trim_end_matches(']');
            return needs.split(',').map(|n| n.trim().to_owned()).collect();
        }
    }
    vec![]
}

/// Each `lab: [x, y]` list of a workflow with the job it is in (`jobs:`' two-space keys); a
/// `lab:` read from the `labs` job's output ([`NIGHTLY_LABS`]) is the one-item list of that text.
fn workflow_lab_lists(yaml: &str) -> Vec<(String, Vec<String>)> {
    let mut job = String::new();
    let mut out = Vec::new();
    for line in yaml.lines() {
        if let Some(name) = line
            .strip_prefix("  ")
            .and_then(|l| l.strip_suffix(':'))
            .filter(|l| !l.starts_with(' ') && !l.contains(' '))
        {
            job = name.to_owned();
        }
        let Some(value) = line.trim_start().strip_prefix("lab: ") else {
            continue;
        };
        if value == NIGHTLY_LABS {
            out.push((job.clone(), vec![NIGHTLY_LABS.to_owned()]));
        } else if let Some(list) = value.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let labs = list.split(',').map(|l| l.trim().to_owned()).collect();
            out.push((job.clone(), labs));
        }
    }
    out
}

#[test]
fn the_nightly_lab_lists_are_the_registrys_labs() {
    let labs: Vec<String> = lab::acts::LABS
        .iter()
        .map(|l| l.as_str().to_owned())
        .collect();
    let yaml = std::fs::read_to_string(root().join(NIGHTLY)).expect("reading nightly.yml");
    let lists = workflow_lab_lists(&yaml);
    assert!(
        !lists.is_empty(),
        "{NIGHTLY} has no `lab:` matrix: the rule reads the wrong file"
    );
    // The output the jobs read is lab/schemas/'s directories, which lab/tests/schemas.rs holds
    // to the registry's labs.
    let reads_schemas = "find lab/schemas -mindepth 1 -maxdepth 1 -type d";
    let mut problems = Vec::new();
    if !yaml.contains(reads_schemas) || !yaml.contains("labs: ${{ steps.labs.outputs.labs }}") {
        problems.push(format!(
            "labs: no job output `labs` made by `{reads_schemas} ...` (the registry's labs)"
        ));
    }
    let registry = [NIGHTLY_LABS.to_owned()];
    for (job, list) in &lists {
        let subset = NIGHTLY_LAB_SUBSETS.iter().any(|(j, _)| j == job);
        if list == &registry {
            // The output is there only for a job that waits for the labs job.
            if !job_needs(&yaml, job).iter().any(|n| n == "labs") {
                problems.push(format!(
                    "{job}: reads the labs job's output without `needs: labs`"
                ));
            }
            if subset {
                problems.push(format!(
                    "{job}: runs every lab now: take it off NIGHTLY_LAB_SUBSETS"
                ));
            }
        } else if let Some(l) = list.iter().find(|l| !labs.contains(l)) {
            problems.push(format!("{job}: lab {l} is not in the registry"));
        } else if !subset {
            problems.push(format!(
                "{job}: {list:?} by hand; a job that runs every lab reads `lab: {NIGHTLY_LABS}`"
            ));
        }
    }
    for (job, _) in NIGHTLY_LAB_SUBSETS {
        if !lists
            .iter()
            .any(|(j, l)| j == job && l != &labs && l != &registry)
        {
            problems.push(format!(
                "{job}: listed in NIGHTLY_LAB_SUBSETS but runs every lab now: take it off"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{NIGHTLY}'s `lab:` lists are the labs of the registry (core/src/acts.rs):\n  {}",
        problems.join("\n  ")
    );
    let y = "jobs:\n  one:\n    strategy:\n      matrix:\n        lab: [a, b]\n  two:\n        lab: [c]\n  three:\n        lab: ${{ fromJSON(needs.labs.outputs.labs) }}\n";
    assert_eq!(
        workflow_lab_lists(y),
        vec![
            ("one".to_owned(), vec!["a".to_owned(), "b".to_owned()]),
            ("two".to_owned(), vec!["c".to_owned()]),
            ("three".to_owned(), vec![NIGHTLY_LABS.to_owned()]),
        ]
    );
    let y = "jobs:\n  one:\n    needs: labs\n  two:\n    needs: [matrix, labs]\n  three:\n    runs-on: x\n";
    assert_eq!(job_needs(y, "one"), vec!["labs"]);
    assert_eq!(job_needs(y, "two"), vec!["matrix", "labs"]);
    assert!(job_needs(y, "three").is_empty());
}

/// The labs' ordered cluster tests, one lane per lab (`lab_<lab>::lane()`).
const CLUSTER_LANES: &str = "tests/tests/labs/main.rs";

/// `cargo test` runs every lab of the registry on a cluster: the cluster tests' lanes
/// ([`CLUSTER_LANES`]) name each lab's (`lab_<lab>::lane()`), and no lane of a lab the registry
/// does not have. A lab left out would pass `cargo test` with its fixtures only.
#[test]
fn every_lab_has_a_cluster_lane() {
    let text = std::fs::read_to_string(root().join(CLUSTER_LANES)).expect("reading the lanes");
    let labs: Vec<&str> = lab::acts::LABS.iter().map(|l| l.as_str()).collect();
    let missing = |text: &str| -> Vec<String> {
        let lanes: Vec<String> = code_lines(text)
            .filter_map(|(_, l)| {
                let rest = l.trim().strip_prefix("lab_")?;
                Some(rest.strip_suffix("::lane(),")?.to_owned())
            })
            .collect();
        let mut out: Vec<String> = (labs.iter().filter(|l| !lanes.iter().any(|x| x == *l)))
            .map(|l| format!("lab {l} has no lane `lab_{l}::lane()`"))
            .collect();
        out.extend(
            (lanes.iter().filter(|x| !labs.contains(&x.as_str())))
                .map(|x| format!("lane lab_{x} is no lab of the registry")),
        );
        out
    };
    let problems = missing(&text);
    assert!(
        problems.is_empty(),
        "{CLUSTER_LANES}: {}",
        problems.join("; ")
    );
    assert_eq!(
        missing("let lanes = vec![\n    lab_a::lane(),\n    lab_c::lane(),\n];").len(),
        1
    );
}

/// The API docs build with every intra-doc link resolved: `cargo doc --workspace --no-deps`
/// fails on a broken or ambiguous link (`rustdoc::broken_intra_doc_links` is denied in the
/// workspace lints), the step the CI workflow runs. Links to private items only warn. Uses the
/// workspace's target directory (the dependencies' metadata a `cargo clippy` or an earlier run
/// left is reused) and the downloaded crates only (`--offline`).
#[test]
fn docs_build_with_every_link_resolved() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["doc", "--workspace", "--no-deps", "--offline", "--quiet"])
        .current_dir(root())
        .output()
        .expect("running cargo doc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert!(
        out.status.success(),
        "cargo doc --workspace --no-deps failed: {errors:?}\n{stderr}"
    );
}
