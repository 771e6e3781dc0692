//! Bounded waits that show progress and keep the last probe error (k3s's `WaitForAPIServerReady`),
//! on the one wait helper [`lab::wait`].

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use lab::wait::{Check, Wait, WaitError};

use crate::status::Step;

/// Polls `probe` every `interval` until it returns Ok, for at most `timeout` ([`lab::wait::Wait`]).
///
/// Prints `• waiting ≤ {timeout}s for {what} ...`, a progress line with the last error every 15 s,
/// and `✓ … (elapsed)` at the end. On timeout the error is a [`lab::error::LabError::WaitTimedOut`]
/// naming what was waited for, the bound, the time waited and the last probe error. `alive` is
/// checked before each probe (e.g. "the daemon still runs"), so a crashed daemon fails the wait at
/// once with its reason.
/// A SIGINT, SIGTERM or SIGHUP received after `cargo xtask lab run` installed the process-wide
/// handler ([`lab::signals`]) fails the wait within one `interval`, so `Cluster::up` stops and
/// tears down what it started.
pub fn wait<T>(
    what: &str,
    timeout: Duration,
    interval: Duration,
    mut alive: impl FnMut() -> Result<()>,
    mut probe: impl FnMut() -> Result<T>,
) -> Result<T> {
    let step = Step::start(format!("waiting ≤ {}s for {what}", timeout.as_secs()));
    let mut last_report = Instant::now();
    let w = Wait::new(
        format!("{what} (bound {} s)", timeout.as_secs()),
        timeout,
        interval,
    );
    let r = w.blocking(
        || -> Result<Check<T, String>> {
            if let Some(signal) = lab::signals::pending() {
                anyhow::bail!("interrupted by {signal} while waiting for {what}");
            }
            alive().with_context(|| format!("while waiting for {what}"))?;
            Ok(match probe() {
                Ok(v) => Check::Done(v),
                Err(e) => Check::NotYet(format!("last probe error: {e:#}")),
            })
        },
        |last, waited| {
            if last_report.elapsed() >= Duration::from_secs(15) {
                crate::status_line!(
                    "   … still waiting for {what} ({}s): {}",
                    waited.as_secs(),
                    progress_line(last.trim_start_matches("last probe error: "))
                );
                last_report = Instant::now();
            }
        },
    );
    match r {
        Ok(v) => {
            step.ok();
            Ok(v)
        }
        // The lab crate's wait error, so the failure diagnostics read the last state
        // (`lab::diagnostics::wait_state_in`).
        Err(WaitError::TimedOut(t)) => Err(lab::error::LabError::from(t).into()),
        Err(WaitError::Failed(e)) => Err(e),
    }
}

/// The longest progress line's error part, in characters.
pub const PROGRESS_LINE_CHARS: usize = 200;

/// One line for a probe error in a progress line (pure): when it carries a health body that
/// lists checks (kube-apiserver's `/readyz`: `[+]name ok` / `[-]name failed: …` lines, printed
/// once per error layer), the failing checks' names, once each; else its first line. At most
/// [`PROGRESS_LINE_CHARS`] characters.
pub fn progress_line(error: &str) -> String {
    let mut failing: Vec<&str> = Vec::new();
    for l in error.lines() {
        // A check line may sit after a prefix (`…(Status { … message: "[+]ping ok`).
        if let Some(i) = l.find("[-]") {
            let name = l[i + 3..].split_whitespace().next().unwrap_or("");
            if !name.is_empty() && !failing.contains(&name) {
                failing.push(name);
            }
        }
    }
    let line = if failing.is_empty() {
        error.lines().next().unwrap_or("").trim().to_string()
    } else {
        format!("failing checks: {}", failing.join(", "))
    };
    if line.chars().count() > PROGRESS_LINE_CHARS {
        let cut: String = line.chars().take(PROGRESS_LINE_CHARS).collect();
        format!("{cut}…")
    } else {
        line
    }
}

/// Runs a future to completion on a fresh current-thread tokio runtime on its own thread, so that
/// the synchronous cluster API works both from plain code and from inside another runtime.
pub fn block_on<F>(f: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("building a tokio runtime")?;
            Ok(rt.block_on(f))
        })
        .join()
        .map_err(|_| anyhow!("async task panicked"))?
    })
}

/// A kube client for a kubeconfig file.
pub async fn client(kubeconfig: &std::path::Path) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading kubeconfig {}", kubeconfig.display()))?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading kubeconfig {}", kubeconfig.display()))?;
    kube::Client::try_from(cfg).context("building a kube client")
}

/// GET a raw path (e.g. `/readyz`) and return the body; non-2xx is an error carrying the body.
pub async fn get_text(client: &kube::Client, path: &str) -> Result<String> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .context("building a request")?;
    client
        .request_text(req)
        .await
        .with_context(|| format!("GET {path}"))
}

/// A TCP connect to `addr` with a 2 s timeout.
pub fn tcp(addr: &str) -> Result<()> {
    let sa: std::net::SocketAddr = addr.parse().with_context(|| format!("address {addr}"))?;
    std::net::TcpStream::connect_timeout(&sa, Duration::from_secs(2))
        .with_context(|| format!("connecting to {addr}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readyz_body_becomes_one_line_naming_the_failing_checks() {
        // The shape seen under emulation (research trial): kube's error text, then the body
        // again; ~70 lines in all.
        let body = "[+]ping ok\n[+]log ok\n[+]etcd ok\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n[+]poststarthook/start-apiextensions-informers ok\n[-]poststarthook/scheduling/bootstrap-system-priority-classes failed: reason withheld\nreadyz check failed";
        let e = format!(
            "GET /readyz: Failed to parse error data (Status {{ message: \"{body}\" }}): {body}"
        );
        assert!(e.lines().count() > 10);
        assert_eq!(
            progress_line(&e),
            "failing checks: poststarthook/rbac/bootstrap-roles, poststarthook/scheduling/bootstrap-system-priority-classes"
        );
        assert_eq!(
            progress_line("connecting to 10.44.0.2:6443: refused\ncaused by x"),
            "connecting to 10.44.0.2:6443: refused"
        );
        assert_eq!(
            progress_line(&"x".repeat(500)).chars().count(),
            PROGRESS_LINE_CHARS + 1
        );
    }

    #[test]
    fn a_wait_that_runs_out_carries_its_last_state_for_the_diagnostics() {
        let mut n = 0;
        let e = wait(
            "the thing",
            Duration::from_millis(50),
            Duration::from_millis(10),
            || Ok(()),
            || -> Result<()> {
                n += 1;
                Err(anyhow!("probe {n} saw 0/1 ready"))
            },
        )
        .unwrap_err()
        .context("bringing up cluster x");
        let w = lab::diagnostics::wait_state_in(e.chain()).expect("a WaitTimedOut in the chain");
        assert_eq!(w.what, "the thing (bound 0 s)");
        assert!(w.waited_ms >= 50, "{w:?}");
        assert!(
            w.last_state.starts_with("last probe error: probe ")
                && w.last_state.ends_with(" saw 0/1 ready"),
            "{w:?}"
        );
    }
}
