//! The freeze's safety net on real processes, without a cluster: a `sleep` we start is frozen
//! through a pidfd by a runner process, and the real detached watchdog (`kca-webhook-lab
//! watchdog-freeze`, the hidden subcommand) resumes it at its deadline — also when the runner is
//! killed with SIGKILL in the middle of the freeze.
//!
//! The runner is this test binary re-executed with `KCA_TEST_FREEZE_RUNNER` set (custom harness):
//! it calls `lab::faults::freeze::freeze` like act 5 does, prints `frozen`, and waits to be killed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lab::faults::freeze::{self, FreezeFiles, FreezeTarget, ResumedBy, WatchdogReport};
use libtest_mimic::{Arguments, Failed, Trial};

const RUNNER_ENV: &str = "KCA_TEST_FREEZE_RUNNER";

fn main() {
    if let Ok(spec) = std::env::var(RUNNER_ENV) {
        std::process::exit(runner(&spec));
    }
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let trials = vec![
        Trial::test(
            "watchdog_resumes_at_its_deadline_after_the_runner_is_sigkilled",
            sigkilled_runner,
        ),
        Trial::test(
            "watchdog_resumes_when_the_runner_waits_for_it",
            runner_waits,
        ),
        Trial::test(
            "runner_exit_path_resumes_at_once_and_the_watchdog_finds_it_running",
            runner_drop,
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}

/// Runner mode: `PID STARTTIME RESUME_AFTER FAULT_DIR`; freezes, prints `frozen`, sleeps.
fn runner(spec: &str) -> i32 {
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let [pid, start, after, dir] = parts[..] else {
        eprintln!("runner: bad spec {spec:?}");
        return 2;
    };
    let target = FreezeTarget {
        act: 5,
        container_id: "test".into(),
        pod_uid: "test".into(),
        pid: pid.parse().unwrap_or(0),
        starttime: start.parse().unwrap_or(0),
        resume_after_sec: after.parse().unwrap_or(0),
    };
    let files = FreezeFiles::new(Path::new(dir), "05-freeze");
    let program = match freeze::lab_program() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("runner: {e}");
            return 1;
        }
    };
    match freeze::freeze(&program, &files, &target) {
        Ok(fz) => {
            println!("frozen");
            // Keep the freeze (and its guard) alive until we are killed.
            std::thread::sleep(Duration::from_secs(600));
            drop(fz);
            0
        }
        Err(e) => {
            eprintln!("runner: {e}");
            1
        }
    }
}

struct Sleeper(Child);
impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("120")
                .spawn()
                .expect("spawning sleep"),
        )
    }
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
    fn starttime(&self) -> u64 {
        freeze::read_stat(self.pid()).unwrap().unwrap().starttime
    }
    fn state(&self) -> char {
        freeze::read_stat(self.pid())
            .unwrap()
            .map(|s| s.state)
            .unwrap_or('?')
    }
}
impl Drop for Sleeper {
    fn drop(&mut self) {
        // Our own child, ended through its handle.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn lab_bin() -> Result<PathBuf, Failed> {
    xtask::lab_run::ensure_lab_binary().map_err(|e| Failed::from(format!("{e:#}")))
}

fn report(files: &FreezeFiles) -> Option<WatchdogReport> {
    std::fs::read_to_string(&files.report)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
}

/// Waits until the watchdog reports `resumed` (bounded).
fn wait_report(files: &FreezeFiles, bound: Duration) -> Result<WatchdogReport, Failed> {
    let t0 = Instant::now();
    loop {
        if let Some(r) = report(files).filter(|r| r.status != "ready") {
            return Ok(r);
        }
        if t0.elapsed() > bound {
            return Err(format!("no final watchdog report in {}", files.report.display()).into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigkilled_runner() -> Result<(), Failed> {
    lab_bin()?;
    let resume_after = 3u64;
    let s = Sleeper::start();
    let dir = tempfile_dir()?;
    let files = FreezeFiles::new(&dir, "05-freeze");
    let mut runner = Command::new(std::env::current_exe()?)
        .env(
            RUNNER_ENV,
            format!(
                "{} {} {resume_after} {}",
                s.pid(),
                s.starttime(),
                dir.display()
            ),
        )
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(runner.stdout.take().ok_or("runner stdout")?).read_line(&mut line)?;
    let frozen = Instant::now();
    if line.trim() != "frozen" {
        let _ = runner.kill();
        let _ = runner.wait();
        return Err(format!("runner said {line:?}, not frozen").into());
    }
    if s.state() != 'T' {
        return Err(format!(
            "state after the runner's SIGSTOP is {}, expected T",
            s.state()
        )
        .into());
    }
    std::thread::sleep(Duration::from_millis(500));
    // SIGKILL the runner (our own child, through its handle) in the middle of the freeze.
    runner.kill()?;
    runner.wait()?;
    if s.state() != 'T' {
        return Err(
            "the process resumed when the runner died; it must stay frozen until the deadline"
                .into(),
        );
    }
    let bound = Duration::from_secs(resume_after + 1);
    while s.state() == 'T' {
        if frozen.elapsed() > bound + Duration::from_secs(2) {
            return Err(format!("still stopped {:?} after the freeze", frozen.elapsed()).into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let resumed_after = frozen.elapsed();
    eprintln!("    resumed {resumed_after:?} after the freeze (resume_after_sec {resume_after})");
    if resumed_after > bound {
        return Err(
            format!("resumed after {resumed_after:?}, later than resume_after_sec + 1 s").into(),
        );
    }
    let r = wait_report(&files, Duration::from_secs(2))?;
    if r.status != "resumed"
        || r.state_before_resume != Some('T')
        || r.state_after_resume == Some('T')
    {
        return Err(format!("watchdog report: {r:?}").into());
    }
    let ledger = freeze::FreezeLedger::read(&files.ledger)?;
    if ledger.status != "frozen" || ledger.resumed_by.is_some() {
        return Err(format!(
            "the killed runner's ledger should still say frozen without a resumer: {ledger:?}"
        )
        .into());
    }
    Ok(())
}

fn runner_waits() -> Result<(), Failed> {
    let program = lab_bin()?;
    let s = Sleeper::start();
    let dir = tempfile_dir()?;
    let files = FreezeFiles::new(&dir, "05-freeze");
    let target = FreezeTarget {
        act: 5,
        container_id: "c".into(),
        pod_uid: "u".into(),
        pid: s.pid(),
        starttime: s.starttime(),
        resume_after_sec: 2,
    };
    let mut fz = freeze::freeze(&program, &files, &target)?;
    if s.state() != 'T' {
        return Err(format!("state {} after freeze, expected T", s.state()).into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let rec = rt.block_on(fz.wait_for_watchdog(Duration::from_secs(3), |_| {}))?;
    if rec.resumed_by != ResumedBy::Watchdog
        || rec.state_after == Some('T')
        || rec.state_after.is_none()
    {
        return Err(format!("resume record: {rec:?}").into());
    }
    let ledger = fz.ledger().clone();
    drop(fz);
    if ledger.status != "resumed" || ledger.resumed_by != Some(ResumedBy::Watchdog) {
        return Err(format!("ledger: {ledger:?}").into());
    }
    let parse = |s: &Option<String>| {
        lab::facts::parse_rfc3339(s.as_deref().unwrap_or("")).ok_or("a timestamp in the ledger")
    };
    let (f, r) = (parse(&ledger.frozen_at)?, parse(&ledger.resumed_at)?);
    let ms = (r - f).num_milliseconds();
    eprintln!("    frozen {ms} ms (resume_after_sec 2)");
    if !(1500..=3000).contains(&ms) {
        return Err(format!("frozen {ms} ms, expected about 2000").into());
    }
    Ok(())
}

fn runner_drop() -> Result<(), Failed> {
    let program = lab_bin()?;
    let s = Sleeper::start();
    let dir = tempfile_dir()?;
    let files = FreezeFiles::new(&dir, "06-freeze");
    let target = FreezeTarget {
        act: 6,
        container_id: "c".into(),
        pod_uid: "u".into(),
        pid: s.pid(),
        starttime: s.starttime(),
        resume_after_sec: 2,
    };
    let fz = freeze::freeze(&program, &files, &target)?;
    if s.state() != 'T' {
        return Err(format!("state {} after freeze, expected T", s.state()).into());
    }
    drop(fz); // an error path of the runner
    if s.state() == 'T' {
        return Err("dropping the freeze did not resume the process".into());
    }
    let ledger = freeze::FreezeLedger::read(&files.ledger)?;
    if ledger.resumed_by != Some(ResumedBy::RunnerExit) {
        return Err(format!("ledger: {ledger:?}").into());
    }
    // The watchdog still fires at its deadline and finds the process running.
    let r = wait_report(&files, Duration::from_secs(5))?;
    if r.status != "resumed" || r.state_before_resume == Some('T') {
        return Err(format!("watchdog report: {r:?}").into());
    }
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf, Failed> {
    let base = xtask::cluster::config::repo_root()
        .join("target")
        .join("freeze-tests");
    std::fs::create_dir_all(&base)?;
    let dir = base.join(format!("{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
