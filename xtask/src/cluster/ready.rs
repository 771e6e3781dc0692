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
                eprintln!(
                    "   … still waiting for {what} ({}s): {}",
                    waited.as_secs(),
                    last.trim_start_matches("last probe error: ")
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
