//! The healer's life, shared by both faults: how the runner starts it (the lab binary re-executed
//! as `kca-webhook-lab healer-freeze|healer-scale --attempt-dir DIR`, its own session and process
//! group, `/` as its working directory, stdin a pipe from the runner), how it reads its arguments,
//! protects itself ([`harden`]) and logs ([`HealerLog`], `DIR/healer.log`), and how an error
//! message quotes its log ([`log_tail`]).
//!
//! The protocol both faults follow (`docs/faults.md`): plan → ledger → healer started → ready
//! answer → the healer does the fault on the runner's request → deadline → the healer undoes it →
//! a later command heals what is left ([`super::heal`]). What differs is only the fault itself
//! ([`super::freeze`], [`super::scale`]) and how the ready answer travels (the freeze healer's is
//! its `healer.json` status `ready`; the scale healer's, one JSON line on its stdout, because its
//! scale-down answer travels that way too).

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::faults::attempt::{ATTEMPT_DIR_FLAG, LAB_BIN_NAME};
use crate::faults::records::now_rfc3339;

/// The command that starts a healer: `program subcommand --attempt-dir DIR`, working directory
/// `/`, stdin a pipe (the runner's requests), stdout and stderr as given, and `setsid(2)` before
/// exec so it leads its own session and process group: signals to the runner's group or terminal
/// (Ctrl-C, a dropped ssh session's SIGHUP) never reach it.
pub fn command(
    program: &Path,
    subcommand: &str,
    dir: &Path,
    stdout: Stdio,
    stderr: Stdio,
) -> Command {
    let mut cmd = Command::new(program);
    cmd.arg(subcommand)
        .arg(ATTEMPT_DIR_FLAG)
        .arg(dir)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr);
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent; nothing else
    // runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    cmd
}

/// The attempt directory from a healer's arguments (`[subcommand] --attempt-dir DIR`; a leading
/// `subcommand` is skipped). `Err` is the usage line naming what was found (the healer exits 2).
pub fn attempt_dir_arg(subcommand: &str, args: &[String]) -> Result<PathBuf, String> {
    let args = match args.first() {
        Some(a) if a == subcommand => &args[1..],
        _ => args,
    };
    match args {
        [flag, dir] if flag == ATTEMPT_DIR_FLAG => Ok(PathBuf::from(dir)),
        _ => Err(format!(
            "usage: {LAB_BIN_NAME} {subcommand} {ATTEMPT_DIR_FLAG} DIR (found {args:?})"
        )),
    }
}

/// A healer's attempt directory, opened once by the trusted walk
/// ([`crate::files::TrustedDir::open`]: no link on the way, every ancestor root's or ours and not
/// writable by others, the directory ours and writable by no one else), and the path every later
/// read and write goes through (its `/proc/self/fd/N`, resolved from that fd whatever is renamed
/// meanwhile). Keep the first value alive as long as the second is used.
///
/// Errors: why the directory was refused, in words.
pub fn open_attempt_dir(dir: &Path) -> Result<(crate::files::TrustedDir, PathBuf), String> {
    let opened = crate::files::TrustedDir::open(dir, None, crate::files::Owner::Euid)
        .map_err(|e| format!("refusing the attempt directory: {e}"))?;
    let path = opened.fd_path();
    Ok((opened, path))
}

/// Opens (creates, `0600`) a healer's log for appending without following a symlink: the freeze
/// healer writes it through [`HealerLog`], the scale healer's stderr is this file.
pub fn log_file(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

/// A healer's log: lines appended to a file opened without following symlinks. Every write is
/// best-effort (a full disk or a closed file never stops a heal; nothing is printed on stdio).
#[derive(Debug)]
pub struct HealerLog(Option<File>);

impl HealerLog {
    /// Opens (creates, `0600`) `path` for appending ([`log_file`]); on failure the log is silent.
    pub fn open(path: &Path) -> HealerLog {
        HealerLog(log_file(path).ok())
    }

    /// Appends `<now> <who>[<pid>]: msg`, ignoring any error.
    pub fn line(&mut self, who: &str, msg: impl AsRef<str>) {
        if let Some(f) = self.0.as_mut() {
            let _ = writeln!(
                f,
                "{} {who}[{}]: {}",
                now_rfc3339(),
                std::process::id(),
                msg.as_ref()
            );
        }
    }
}

/// The last 5 lines of a helper's log (`healer.log`) for an error message: at most
/// the last 64 KiB are read; empty when it cannot be read.
pub fn log_tail(path: &Path) -> String {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return String::new();
    };
    let bytes = crate::files::read_regular_in(dir, name, 16 * crate::files::RECORD_BOUND)
        .unwrap_or_default();
    let tail = &bytes[bytes.len().saturating_sub(64 << 10)..];
    let text = String::from_utf8_lossy(tail);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// What a healer did to protect itself at start (recorded in its report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Hardening {
    /// `/proc/self/oom_score_adj` after lowering it as far as allowed.
    pub oom_score_adj: Option<i32>,
    /// Session id after `setsid` (equal to the healer's pid: it leads its own session and group).
    pub session: Option<i32>,
    /// The healer's cgroup lines (`/proc/self/cgroup`); it stays in the runner's cgroup (leaving
    /// it would mean creating a cgroup on the host, which the lab does not do).
    pub cgroup: Option<String>,
}

/// Lowers this process's `oom_score_adj` as far as the kernel allows (-1000 needs
/// CAP_SYS_RESOURCE; without it the value cannot go below the current one) and reports the
/// session and cgroup.
pub fn harden() -> Hardening {
    for v in [-1000, -999, -500, 0] {
        if std::fs::write("/proc/self/oom_score_adj", v.to_string()).is_ok() {
            break;
        }
    }
    Hardening {
        oom_score_adj: proc_text("/proc/self/oom_score_adj").and_then(|t| t.trim().parse().ok()),
        session: nix::unistd::getsid(None).ok().map(|p| p.as_raw()),
        cgroup: proc_text("/proc/self/cgroup").map(|t| t.trim().replace('\n', "; ")),
    }
}

/// A `/proc` file's text, read bounded ([`crate::files::PROC_BOUND`], a regular file only).
fn proc_text(path: &str) -> Option<String> {
    crate::files::read_regular(Path::new(path), crate::files::PROC_BOUND)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attempt_dir_is_the_one_argument_after_its_flag() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            attempt_dir_arg("healer-scale", &a(&["healer-scale", "--attempt-dir", "/d"])),
            Ok(PathBuf::from("/d"))
        );
        assert_eq!(
            attempt_dir_arg("healer-freeze", &a(&["--attempt-dir", "/d"])),
            Ok(PathBuf::from("/d"))
        );
        for bad in [
            &["1"][..],
            &["--attempt-dir"],
            &["--fault-dir", "/d"],
            &["--attempt-dir", "/d", "x"],
        ] {
            let err = attempt_dir_arg("healer-freeze", &a(bad)).unwrap_err();
            assert!(
                err.contains("usage:") && err.contains("--attempt-dir"),
                "{err}"
            );
        }
    }
}
