//! One way to run an external command (helm, ctr, crictl, go, gcc, ip, cargo, …): [`run`] with
//! captured output, [`run_unchecked`] when a non-zero exit is an answer the caller reads, and
//! [`run_inherited`] when the output goes straight to the terminal. Every failure is one
//! [`RunError`], which prints the pasteable command ([`pretty`]), the exit status and the tail of
//! the output (kind's `exec.RunError` / `PrettyCommand`).
//!
//! Build commands with [`xshell::cmd!`] on a [`shell`] where that fits (fixed program and
//! arguments, environment variables), or with `std::process::Command` when the command needs what
//! xshell does not offer (its own process group, a command built step by step); both go through
//! these functions. The daemons `cluster up` starts and supervises are spawned by
//! `cluster::process::spawn`, and `go build` streams its progress (`upstream::go`), so those two
//! spawn children themselves. `xtask/tests/tidy.rs` keeps every other `.output()` / `.status()`
//! in this file. A long child started by [`spawn_logged`] is waited for by [`wait_child`], bounded.

use std::fmt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How many lines of output a [`RunError`] shows (the last ones).
pub const OUTPUT_TAIL: usize = 40;

/// What a command printed and how it ended.
#[derive(Debug, Clone)]
pub struct Output {
    /// The exit status.
    pub status: ExitStatus,
    /// stdout, lossily decoded as UTF-8.
    pub stdout: String,
    /// stderr, lossily decoded as UTF-8.
    pub stderr: String,
}

impl Output {
    /// stdout then stderr, as one text (for messages).
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Why a command failed: it could not be started, or it exited unsuccessfully.
#[derive(Debug)]
pub struct RunError {
    /// The command, pasteable into a POSIX shell ([`pretty`]).
    pub command: String,
    /// The exit status; None when the command could not be started.
    pub status: Option<ExitStatus>,
    /// Why it could not be started (None when it ran).
    pub spawn_error: Option<std::io::Error>,
    /// The last [`OUTPUT_TAIL`] lines of stdout then stderr ("" when the output was not
    /// captured: [`run_inherited`]).
    pub output_tail: String,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.status, &self.spawn_error) {
            (_, Some(e)) => write!(f, "could not start `{}`: {e}", self.command)?,
            (Some(s), None) => write!(f, "`{}` failed ({s})", self.command)?,
            (None, None) => write!(f, "`{}` failed", self.command)?,
        }
        if !self.output_tail.is_empty() {
            write!(f, "\n  last lines of its output:")?;
            for l in self.output_tail.lines() {
                write!(f, "\n    {l}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.spawn_error
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// An xshell [`Shell`](xshell::Shell) for [`xshell::cmd!`].
///
/// # Errors
/// The current directory cannot be read (xshell's `Shell::new`).
pub fn shell() -> anyhow::Result<xshell::Shell> {
    Ok(xshell::Shell::new()?)
}

/// Runs `cmd` with stdin from /dev/null and its output captured; a non-zero exit is an error.
///
/// # Errors
/// [`RunError`]: the command could not be started or exited unsuccessfully.
pub fn run(cmd: impl Into<Command>) -> Result<Output, RunError> {
    let mut cmd = cmd.into();
    let out = capture(&mut cmd)?;
    if !out.status.success() {
        return Err(RunError {
            command: pretty(&cmd),
            status: Some(out.status),
            spawn_error: None,
            output_tail: tail(&out.text(), OUTPUT_TAIL),
        });
    }
    Ok(out)
}

/// Like [`run`], but a non-zero exit is returned as an [`Output`] for the caller to read (a
/// refusal whose wording decides what to do next, JSON printed beside an error).
///
/// # Errors
/// [`RunError`]: the command could not be started.
pub fn run_unchecked(cmd: impl Into<Command>) -> Result<Output, RunError> {
    capture(&mut cmd.into())
}

/// Runs `cmd` with stdin from /dev/null, capturing stdout and stderr.
fn capture(cmd: &mut Command) -> Result<Output, RunError> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| RunError {
        command: pretty(cmd),
        status: None,
        spawn_error: Some(e),
        output_tail: String::new(),
    })?;
    Ok(Output {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Starts `cmd` in its own process group, stdin from /dev/null, stdout and stderr appended to
/// `log`, and returns the child for the caller to wait for under its own bound (the long runs of
/// `cargo xtask guest`: debootstrap, qemu). The child is the caller's to end: `Child::kill`
/// signals exactly this unreaped child.
///
/// # Errors
/// [`RunError`]: `log` cannot be opened or the command cannot be started.
pub fn spawn_logged(
    cmd: impl Into<Command>,
    log: &std::path::Path,
) -> Result<std::process::Child, RunError> {
    use std::os::unix::process::CommandExt;
    let mut cmd: Command = cmd.into();
    let fail = |cmd: &Command, e: std::io::Error| RunError {
        command: pretty(cmd),
        status: None,
        spawn_error: Some(e),
        output_tail: String::new(),
    };
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| fail(&cmd, e))?;
    let err = out.try_clone().map_err(|e| fail(&cmd, e))?;
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    cmd.spawn().map_err(|e| fail(&cmd, e))
}

/// Waits for `child` (one of ours, started by [`spawn_logged`]) to exit, polling
/// every 500 ms and calling `tick` with the time waited; when `bound` runs out it kills exactly
/// that child (unreaped, so its PID is still ours) and fails naming `what`.
pub fn wait_child(
    child: &mut Child,
    what: &str,
    bound: Duration,
    mut tick: impl FnMut(Duration),
) -> anyhow::Result<ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child
            .try_wait()
            .with_context(|| format!("waiting for {what}"))?
        {
            return Ok(st);
        }
        if t0.elapsed() > bound {
            let pid = child.id();
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "waited {} s for {what}; it did not finish, so it was stopped (pid {pid})",
                bound.as_secs()
            );
        }
        tick(t0.elapsed());
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Runs `cmd` with the terminal's stdin, stdout and stderr (its output is already on screen, so
/// the error carries none); a non-zero exit is an error.
///
/// # Errors
/// [`RunError`]: the command could not be started or exited unsuccessfully.
pub fn run_inherited(cmd: impl Into<Command>) -> Result<(), RunError> {
    let mut cmd: Command = cmd.into();
    let status = cmd.status().map_err(|e| RunError {
        command: pretty(&cmd),
        status: None,
        spawn_error: Some(e),
        output_tail: String::new(),
    })?;
    if !status.success() {
        return Err(RunError {
            command: pretty(&cmd),
            status: Some(status),
            spawn_error: None,
            output_tail: String::new(),
        });
    }
    Ok(())
}

/// Runs `cmd` with its stdout shown (on our stderr) and written to `log` line by line, its stderr
/// written to `log` only (a test suite's own log: `e2e.test`'s klog), and returns its exit status:
/// a non-zero exit is not an error here, the caller reads what the command reported.
///
/// # Errors
/// [`RunError`]: the command could not be started or its output not read; `log` not writable.
pub fn run_logged(cmd: impl Into<Command>, log: &std::path::Path) -> Result<ExitStatus, RunError> {
    use std::io::{BufRead as _, Write as _};
    let mut cmd: Command = cmd.into();
    let fail = |cmd: &Command, e: std::io::Error| RunError {
        command: pretty(cmd),
        status: None,
        spawn_error: Some(e),
        output_tail: String::new(),
    };
    let mut file = std::fs::File::create(log).map_err(|e| fail(&cmd, e))?;
    writeln!(file, "$ {}", pretty(&cmd)).map_err(|e| fail(&cmd, e))?;
    let err_file = file.try_clone().map_err(|e| fail(&cmd, e))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err_file));
    let mut child = cmd.spawn().map_err(|e| fail(&cmd, e))?;
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let line = line.map_err(|e| fail(&cmd, e))?;
            eprintln!("{line}");
            writeln!(file, "{line}").map_err(|e| fail(&cmd, e))?;
        }
    }
    child.wait().map_err(|e| fail(&cmd, e))
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A command as a line one can paste into a shell: `cd DIR && VAR=… prog args…` (the directory
/// only when it is not this process's own, and only the variables the command sets).
pub fn pretty(cmd: &Command) -> String {
    let mut out = String::new();
    if let Some(dir) = cmd.get_current_dir()
        && std::env::current_dir().ok().as_deref() != Some(dir)
    {
        out.push_str(&format!("cd {} && ", shell_quote(&dir.to_string_lossy())));
    }
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            out.push_str(&format!(
                "{}={} ",
                k.to_string_lossy(),
                shell_quote(&v.to_string_lossy())
            ));
        }
    }
    out.push_str(&shell_quote(&cmd.get_program().to_string_lossy()));
    for a in cmd.get_args() {
        out.push(' ');
        out.push_str(&shell_quote(&a.to_string_lossy()));
    }
    out
}

/// Quotes `s` for a POSIX shell when it holds anything but safe characters.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log holds the command, its stdout and its stderr; a non-zero exit is returned, not an
    /// error; a program that cannot start is an error naming it.
    #[test]
    fn a_logged_run_keeps_both_streams_and_returns_the_status() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("e2e.log");
        let mut c = Command::new("sh");
        c.args(["-c", "echo on-stdout; echo on-stderr >&2; exit 3"]);
        let status = run_logged(c, &log).unwrap();
        assert_eq!(status.code(), Some(3));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("$ sh -c"), "{text}");
        assert!(text.lines().any(|l| l == "on-stdout"), "{text}");
        assert!(text.lines().any(|l| l == "on-stderr"), "{text}");
        let e = run_logged(Command::new("/nonexistent/e2e.test"), &log)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/e2e.test"), "{e}");
    }

    #[test]
    fn commands_render_pasteable() {
        let mut c = Command::new("go");
        c.current_dir("/tmp/w")
            .env("CGO_ENABLED", "0")
            .env_remove("GOOS");
        c.args(["build", "-ldflags", "-s -w -X a.b=it's"]);
        assert_eq!(
            pretty(&c),
            r"cd /tmp/w && CGO_ENABLED=0 go build -ldflags '-s -w -X a.b=it'\''s'"
        );
    }

    #[test]
    fn an_xshell_command_renders_without_its_own_directory() {
        let sh = shell().unwrap();
        let ns = "kca lab";
        let c: Command = xshell::cmd!(sh, "ip netns pids {ns}").into();
        assert_eq!(pretty(&c), "ip netns pids 'kca lab'");
    }

    #[test]
    fn a_failed_command_names_itself_its_status_and_its_output_tail() {
        let sh = shell().unwrap();
        let script = "for i in $(seq 1 50); do echo line$i; done; echo oops >&2; exit 3";
        let e = run(xshell::cmd!(sh, "sh -c {script}")).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("`sh -c 'for i in $(seq 1 50); do echo line$i; done; echo oops >&2; exit 3'` failed (exit status: 3)"),
            "{text}"
        );
        assert!(text.contains("\n    line50\n    oops"), "{text}");
        assert!(!text.contains("line10\n"), "only the tail: {text}");
        assert_eq!(e.status.and_then(|s| s.code()), Some(3));
    }

    #[test]
    fn a_command_that_cannot_start_says_so() {
        let e = run(Command::new("/nonexistent/kca-prog")).unwrap_err();
        assert!(e.status.is_none() && e.spawn_error.is_some(), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("could not start `/nonexistent/kca-prog`: "),
            "{e}"
        );
    }

    #[test]
    fn unchecked_returns_a_failure_as_output_and_run_captures_stdout() {
        let sh = shell().unwrap();
        let o = run_unchecked(xshell::cmd!(sh, "sh -c 'echo no >&2; exit 1'")).unwrap();
        assert_eq!((o.status.code(), o.stderr.as_str()), (Some(1), "no\n"));
        let o = run(xshell::cmd!(sh, "echo hi")).unwrap();
        assert_eq!(o.stdout, "hi\n");
        let e = run_inherited(xshell::cmd!(sh, "false")).unwrap_err();
        assert_eq!(e.to_string(), "`false` failed (exit status: 1)");
    }
}
