//! Root acts only through what it opened and proved (issue 36): each row is one experiment of the
//! reliability review's fourth proofs, run as root with `nobody` as the other user, no cluster.
//! The lab binary runs with `--kubeconfig` naming a file that does not exist, so nothing here can
//! reach a cluster.
//!
//! - **N1** `report --out DIR` into a directory another user controls (owns, or may write) is
//!   refused before anything is written; into a trusted one the page is made with its final mode
//!   and nothing else is left in the directory.
//! - **N4** a work dir below a directory `nobody` owns, or reached through `nobody`'s symlink, is
//!   refused by every command that uses it (`act`, `inspect`, `heal`, `report`, `grade`, `check`),
//!   naming the directory, and nothing is written.
//! - **N8** a 1 MiB input of nested arrays makes a bounded page (each file embedded up to
//!   `RAW_EMBED_BOUND`, with a note naming the whole file), in bounded memory.
//! - **N10** `explain` reads stdin up to `JSON_BOUND` and refuses more (`< /dev/zero`).
//!
//! N2, N3 and N5 (locks, the heal that stays open, the ancestor swap race) are rows of
//! `freeze_healer.rs`, which has the stopped-process fixtures.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use libtest_mimic::{Arguments, Failed, Trial};

/// The uid/gid of `nobody`.
const NOBODY: u32 = 65534;

fn main() {
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test(
            "report_out_into_a_dir_another_user_controls_is_refused",
            report_out_into_a_dir_another_user_controls_is_refused,
        ),
        Trial::test(
            "report_out_into_a_trusted_dir_leaves_only_the_page",
            report_out_into_a_trusted_dir_leaves_only_the_page,
        ),
        Trial::test(
            "a_workdir_below_another_users_dir_is_refused_by_every_command",
            a_workdir_below_another_users_dir_is_refused_by_every_command,
        ),
        Trial::test(
            "a_workdir_reached_through_a_symlink_is_refused",
            a_workdir_reached_through_a_symlink_is_refused,
        ),
        Trial::test(
            "a_deeply_nested_input_makes_a_bounded_page",
            a_deeply_nested_input_makes_a_bounded_page,
        ),
        Trial::test(
            "two_files_of_nested_arrays_at_the_read_bound_are_refused_in_bounded_memory",
            two_files_of_nested_arrays_at_the_read_bound_are_refused_in_bounded_memory,
        ),
        Trial::test(
            "explain_reads_stdin_up_to_its_bound",
            explain_reads_stdin_up_to_its_bound,
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}

/// The lab binary, built once per test process; `$KCA_WEBHOOK_LAB_BIN` names another one (an
/// older build, to see each row red without its fix).
fn lab_bin() -> Result<PathBuf, Failed> {
    static BIN: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    if let Some(p) = std::env::var_os(lab::faults::attempt::LAB_BIN_ENV) {
        return Ok(PathBuf::from(p));
    }
    BIN.get_or_init(|| xtask::lab_run::ensure_lab_binary().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(Failed::from)
}

/// A fresh directory of this test process below `target/trust-tests/` (root's, `0755`).
fn scratch() -> Result<PathBuf, Failed> {
    let base = xtask::cluster::config::repo_root()
        .join("target")
        .join("trust-tests");
    std::fs::create_dir_all(&base)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = base.join(format!("{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

/// A copy of the recorded lab B work dir (inputs and evidence) at `to`.
fn recorded_b(to: &Path) -> Result<(), Failed> {
    let from =
        xtask::cluster::config::repo_root().join("lab/tests/fixtures/recorded/b-20261130T210502Z");
    for e in walkdir::WalkDir::new(&from) {
        let e = e.map_err(|e| format!("{e}"))?;
        let rel = e.path().strip_prefix(&from)?;
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else if e.file_name() != "README.md" {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

/// The lab binary in `work` with `args` (English, no cluster reachable): exit status and output.
fn lab(work: &Path, args: &[&str]) -> Result<(std::process::ExitStatus, String), Failed> {
    let mut cmd = Command::new(lab_bin()?);
    cmd.args([
        "--lang",
        "en",
        "--lab",
        "b",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--workdir",
    ])
    .arg(work)
    .args(args)
    .stdin(Stdio::null());
    tests::run_to_end(cmd, "kca-webhook-lab").map_err(|e| format!("{e:#}").into())
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Result<Vec<String>, Failed> {
    let mut v: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    v.sort();
    Ok(v)
}

/// N1: `handin/` is nobody's (0755), or root's but writable by others without the sticky bit:
/// `report --out handin/report.html` is refused naming why, and nothing appears in it. A root-only
/// file next to it keeps its mode (the old write chmodded whatever the temporary became).
fn report_out_into_a_dir_another_user_controls_is_refused() -> Result<(), Failed> {
    let base = scratch()?;
    let work = base.join("w");
    recorded_b(&work)?;
    let victim = base.join("shadow-like");
    std::fs::write(&victim, "root:$6$hash-that-must-stay-private\n")?;
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600))?;
    for (owner, mode, why) in [
        (NOBODY, 0o755, "owned by uid 65534"),
        (0, 0o777, "writable by group or others"),
    ] {
        let handin = base.join(format!("handin-{owner}-{mode:o}"));
        std::fs::create_dir_all(&handin)?;
        std::os::unix::fs::chown(&handin, Some(owner), Some(owner))?;
        std::fs::set_permissions(&handin, std::fs::Permissions::from_mode(mode))?;
        let out = handin.join("report.html");
        let (status, text) = lab(&work, &["report", "--out", &out.to_string_lossy()])?;
        if status.success() || !text.contains(why) || !text.contains(&handin.display().to_string())
        {
            return Err(format!("report --out into {}: {status} {text}", handin.display()).into());
        }
        let left = names(&handin)?;
        if !left.is_empty() {
            return Err(format!("the refused report left {left:?} in {}", handin.display()).into());
        }
    }
    let mode = std::fs::metadata(&victim)?.permissions().mode() & 0o7777;
    if mode != 0o600 {
        return Err(format!("the root-only file is now {mode:o}").into());
    }
    Ok(())
}

/// N1, the write itself: into a trusted directory the page is one regular file of mode 0644 (the
/// mode it was created with) and no temporary is left beside it; written twice, it is replaced.
fn report_out_into_a_trusted_dir_leaves_only_the_page() -> Result<(), Failed> {
    let base = scratch()?;
    let work = base.join("w");
    recorded_b(&work)?;
    let out_dir = base.join("out");
    for _ in 0..2 {
        let (status, text) = lab(
            &work,
            &[
                "report",
                "--out",
                &out_dir.join("report.html").to_string_lossy(),
            ],
        )?;
        if !status.success() {
            return Err(format!("report --out: {status} {text}").into());
        }
    }
    let left = names(&out_dir)?;
    if left != ["report.html"] {
        return Err(format!("the out dir holds {left:?}").into());
    }
    let meta = std::fs::symlink_metadata(out_dir.join("report.html"))?;
    if !meta.is_file() || meta.permissions().mode() & 0o777 != 0o644 {
        return Err(format!(
            "the page is {:?} mode {:o}",
            meta.file_type(),
            meta.permissions().mode()
        )
        .into());
    }
    Ok(())
}

/// Every command that uses the work dir refuses `work` naming `bad` and why, and writes nothing
/// into `work` (its entries before and after are the same).
fn every_command_refuses(work: &Path, bad: &Path, why: &str) -> Result<(), Failed> {
    let before = names(work)?;
    for args in [
        &["act", "1"][..],
        &["inspect"],
        &["heal"],
        &["report"],
        &["grade", "all"],
        &["check", "scope.json"],
    ] {
        let (status, text) = lab(work, args)?;
        if status.success() || !text.contains(why) || !text.contains(&bad.display().to_string()) {
            return Err(format!("{args:?} in {}: {status} {text}", work.display()).into());
        }
    }
    let after = names(work)?;
    if before != after {
        return Err(
            format!("the refused commands changed the work dir: {before:?} → {after:?}").into(),
        );
    }
    Ok(())
}

/// N4: root's work dir `nb/w` below `nb/`, which nobody owns (nobody could rename `w` away
/// between two commands, or swap it during one).
fn a_workdir_below_another_users_dir_is_refused_by_every_command() -> Result<(), Failed> {
    let base = scratch()?;
    let nb = base.join("nb");
    let work = nb.join("w");
    recorded_b(&work)?;
    std::os::unix::fs::chown(&nb, Some(NOBODY), Some(NOBODY))?;
    every_command_refuses(&work, &nb, "owned by uid 65534")
}

/// N4: the work dir named through `nobody`'s symlink `nb/link -> real` (nobody may repoint it).
fn a_workdir_reached_through_a_symlink_is_refused() -> Result<(), Failed> {
    let base = scratch()?;
    let real = base.join("real");
    recorded_b(&real.join("w"))?;
    let nb = base.join("nb");
    std::fs::create_dir_all(&nb)?;
    std::os::unix::fs::symlink(&real, nb.join("link"))?;
    std::os::unix::fs::lchown(nb.join("link"), Some(NOBODY), Some(NOBODY))?;
    every_command_refuses(&nb.join("link/w"), &nb.join("link"), "symlink")
}

/// The address space a bounded command is given: 512 MiB. The old `report` of N8's file peaked
/// at 351 MB of RSS (so more address space) and the old `explain < /dev/zero` read 2.1 GB.
const MEMORY_LIMIT: u64 = 512 << 20;

/// `cmd` limited to [`MEMORY_LIMIT`] of address space (`RLIMIT_AS`, set in the child).
fn limited(mut cmd: Command) -> Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setrlimit(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setrlimit(
                rustix::process::Resource::As,
                rustix::process::Rlimit {
                    current: Some(MEMORY_LIMIT),
                    maximum: Some(MEMORY_LIMIT),
                },
            )
            .map_err(std::io::Error::from)
        });
    }
    cmd
}

/// Runs lab B's `report` on `work` within [`MEMORY_LIMIT`] of address space; the page it wrote.
fn limited_report(work: &Path) -> Result<String, Failed> {
    let mut cmd = Command::new(lab_bin()?);
    cmd.args(["--lang", "en", "--lab", "b", "--workdir"])
        .arg(work)
        .arg("report");
    let (status, out) =
        tests::run_to_end(limited(cmd), "kca-webhook-lab report").map_err(|e| format!("{e:#}"))?;
    if !status.success() {
        return Err(
            format!("report within {MEMORY_LIMIT} bytes of address space: {status} {out}").into(),
        );
    }
    Ok(std::fs::read_to_string(work.join("report.html"))?)
}

/// N8: `report.json` is 900 kB of 126-deep nested arrays (pretty-printed: ×127). The page embeds
/// each file up to its bound with the note naming the whole file: the page stays under 16 MiB
/// and the report runs within [`MEMORY_LIMIT`] of address space.
fn a_deeply_nested_input_makes_a_bounded_page() -> Result<(), Failed> {
    let base = scratch()?;
    let work = base.join("w");
    recorded_b(&work)?;
    let block = format!("{}{}", "[".repeat(126), "]".repeat(126));
    let mut text = String::from("[");
    // 900 kB: about 450 000 values, under the reader's value bound (`json::VALUE_BOUND`), so
    // the file is read and its page must be cut (pretty-printed it would be about 114 MB).
    while text.len() < 900_000 {
        text.push_str(&block);
        text.push(',');
    }
    text.push_str(&block);
    text.push(']');
    std::fs::write(work.join("report.json"), &text)?;
    let page = limited_report(&work)?;
    println!(
        "row N8: report.json {} B -> report.html {} B (address space limited to {MEMORY_LIMIT} B)",
        text.len(),
        page.len()
    );
    let bound = 16 << 20;
    if page.len() > bound
        || !page.contains("cut here")
        || !page.contains("the whole file is report.json")
    {
        return Err(format!(
            "the page is {} bytes (bound {bound}), cut note present: {}",
            page.len(),
            page.contains("cut here")
        )
        .into());
    }
    Ok(())
}

/// N8, the rest: `report.json` and `recovery.json`, each 8 MiB (the read bound) of 126-deep
/// nested arrays. Read whole they were about 0.8 GB of values each, and the two aborted `report`
/// ("memory allocation … failed"). The reader's value bound (`json::VALUE_BOUND`) refuses each
/// file after 500 000 values: `report` writes its page within [`MEMORY_LIMIT`] of address space,
/// and the page names the bound for both files.
fn two_files_of_nested_arrays_at_the_read_bound_are_refused_in_bounded_memory() -> Result<(), Failed>
{
    let base = scratch()?;
    let work = base.join("w");
    recorded_b(&work)?;
    let block = format!("{}{}", "[".repeat(126), "]".repeat(126));
    let blocks = ((8 << 20) - 2) / (block.len() + 1);
    let text = format!("[{}]", vec![block; blocks].join(","));
    for file in ["report.json", "recovery.json"] {
        std::fs::write(work.join(file), &text)?;
    }
    let page = limited_report(&work)?;
    let named = page.matches("at most 500000 JSON values").count();
    println!(
        "row N8: report.json and recovery.json, {} B each -> report.html {} B, the value bound named {named} times (address space limited to {MEMORY_LIMIT} B)",
        text.len(),
        page.len()
    );
    if named < 2 {
        return Err(format!(
            "the page names the value bound {named} times, expected once per file (2)"
        )
        .into());
    }
    Ok(())
}

/// N10: `explain < /dev/zero` is refused at the bound, within [`MEMORY_LIMIT`] of address space.
fn explain_reads_stdin_up_to_its_bound() -> Result<(), Failed> {
    let mut cmd = Command::new(lab_bin()?);
    cmd.args(["--lang", "en", "explain"])
        .stdin(std::fs::File::open("/dev/zero")?);
    let out = limited(cmd).output()?;
    let text = String::from_utf8_lossy(&out.stderr);
    println!("row N10: explain < /dev/zero (address space limited to {MEMORY_LIMIT} B): {text}");
    if out.status.success() || !text.contains("bytes an API answer may have") {
        return Err(format!("explain < /dev/zero: {} {text}", out.status).into());
    }
    Ok(())
}
