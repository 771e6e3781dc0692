//! One process-wide handler for SIGINT, SIGTERM and SIGHUP, shared by the lab tool, `cargo xtask
//! lab run` and the test fixture.
//!
//! The first call of [`install`] starts a thread that reads the three signals (`signal-hook`) and
//! publishes the first one received on a `tokio::sync::watch` channel (later ones change nothing:
//! the work is already stopping, and its messages and evidence name what stopped it). From then on
//! the signals no longer end the process by themselves: whoever runs work checks [`pending`] or
//! awaits [`received`], undoes what it must (heal the fault, write `interrupted` evidence, tear the
//! cluster down) and exits with 130. Nothing is swallowed: a signal stays pending for every later
//! check in the process (tokio's `ctrl_c()` used to consume SIGINT once and ignore it afterwards).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::watch;

use crate::error::LabError;

static CHANNEL: OnceLock<watch::Sender<Option<i32>>> = OnceLock::new();
static GUARDED: AtomicUsize = AtomicUsize::new(0);

/// Installs the handler once (idempotent) and returns a receiver of the first signal number.
pub fn install() -> watch::Receiver<Option<i32>> {
    CHANNEL
        .get_or_init(|| {
            let (tx, _) = watch::channel(None);
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            {
                let _ = std::thread::Builder::new()
                    .name("kca-signals".into())
                    .spawn(move || {
                        for s in signals.forever() {
                            if let Some(tx) = CHANNEL.get() {
                                tx.send_if_modified(|seen| keep_first(seen, s));
                            }
                        }
                    });
            }
            tx
        })
        .subscribe()
}

/// Records signal `s` in `seen` unless one is there already; returns whether `seen` changed. The
/// first signal is what interrupted the work: a later one (SIGTERM while tearing down after
/// SIGINT) does not rename it.
fn keep_first(seen: &mut Option<i32>, s: i32) -> bool {
    seen.is_none() && seen.replace(s).is_none()
}

/// The name of the signal received, if one was (after [`install`]).
pub fn pending() -> Option<&'static str> {
    CHANNEL.get().and_then(|tx| (*tx.borrow()).map(name))
}

/// Waits until a signal is received (installs the handler if needed); returns its name.
pub async fn received() -> &'static str {
    let mut rx = install();
    loop {
        if let Some(s) = *rx.borrow_and_update() {
            return name(s);
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Runs a command's future under the process-wide handler ([`install`]): when SIGINT, SIGTERM or
/// SIGHUP arrives while a fault is live (the act holds a [`Guard`]), the act undoes it and writes
/// `interrupted` evidence itself, and is given up to [`UNDO_BOUND`] for that; otherwise the future
/// is dropped at once. Either way the result is [`LabError::Interrupted`] (exit code 130) naming
/// the signal and `act` (0 for a command that is not an act), unless the act's own error (which
/// already says what was healed) came first. Used by the lab tool and `cargo xtask lab run`.
///
/// An act's fault section stays guarded until the act ends, not only while it waits in
/// [`crate::labs::common::or_signal`] ([`keep_until_act_ends`]): the signal can land during a poll
/// of the act, after this function looked for it, so that the act sees it first, leaves
/// `or_signal` and yields in its exit path (the undo, the evidence) before this function sees the
/// signal; the act is then still guarded and is given its [`UNDO_BOUND`] (issue 12; the race was
/// seen in `lab_run_interrupt` on 2026-12-01 and is reproduced by
/// `lab/tests/signal_after_or_signal.rs`).
pub async fn until_signal<T>(
    fut: impl std::future::Future<Output = Result<T, LabError>>,
    act: u8,
) -> Result<T, LabError> {
    install();
    // The guards the act hands over are dropped with this scope: when the act ends or is dropped.
    let fut = KEPT.scope(std::cell::RefCell::new(Vec::new()), fut);
    let mut fut = std::pin::pin!(fut);
    tokio::select! {
        // A signal already pending wins: the command does not start.
        biased;
        s = received() => {
            let interrupted = |healed: &str| LabError::Interrupted {
                signal: s.into(),
                act,
                healed: healed.into(),
            };
            if guarded() {
                match tokio::time::timeout(UNDO_BOUND, &mut fut).await {
                    Ok(Ok(_)) => Err(interrupted(
                        "a fault was live; the act finished it and its evidence before stopping",
                    )),
                    Err(_) => Err(interrupted(&format!(
                        "a fault was live and the act did not finish within {} s; `kca-webhook-lab heal` undoes what is left (the fault's healer also does at its deadline)",
                        UNDO_BOUND.as_secs()
                    ))),
                    Ok(Err(e)) => Err(e),
                }
            } else {
                Err(interrupted("no fault was live; the act stopped where it was"))
            }
        }
        r = &mut fut => r,
    }
}

/// How long [`until_signal`] lets a guarded act undo its fault after a signal: 30 s.
pub const UNDO_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

/// `SIGINT`, `SIGTERM`, `SIGHUP` or `signal N`.
pub fn name(signal: i32) -> &'static str {
    match signal {
        signal_hook::consts::SIGINT => "SIGINT",
        signal_hook::consts::SIGTERM => "SIGTERM",
        signal_hook::consts::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// While a [`Guard`] lives, the code holding it handles signals itself (a fault is live and must
/// be undone before the process goes); [`guarded`] tells the caller to let it finish.
#[derive(Debug)]
pub struct Guard(());

impl Guard {
    /// Marks a section that handles signals itself.
    pub fn new() -> Guard {
        GUARDED.fetch_add(1, Ordering::SeqCst);
        Guard(())
    }
}

impl Default for Guard {
    fn default() -> Self {
        Guard::new()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        GUARDED.fetch_sub(1, Ordering::SeqCst);
    }
}

tokio::task_local! {
    /// The guards handed over by the act that [`until_signal`] runs ([`keep_until_act_ends`]).
    static KEPT: std::cell::RefCell<Vec<Guard>>;
}

/// Keeps `guard` until the act that [`until_signal`] runs ends (completes or is dropped), so that
/// the act's exit path after its fault section stays guarded; outside `until_signal` the guard is
/// dropped at once.
pub fn keep_until_act_ends(guard: Guard) {
    // On `Err` (no `until_signal` scope) the closure, and the guard in it, are dropped.
    let _ = KEPT.try_with(move |kept| kept.borrow_mut().push(guard));
}

/// Whether a section that handles signals itself is running.
pub fn guarded() -> bool {
    GUARDED.load(Ordering::SeqCst) > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

    #[test]
    fn the_first_signal_is_kept() {
        let (tx, rx) = watch::channel(None);
        assert!(tx.send_if_modified(|seen| keep_first(seen, SIGINT)));
        assert!(!tx.send_if_modified(|seen| keep_first(seen, SIGTERM)));
        assert!(!tx.send_if_modified(|seen| keep_first(seen, SIGHUP)));
        assert_eq!(*rx.borrow(), Some(SIGINT));
        assert_eq!(name(rx.borrow().unwrap()), name(SIGINT));
    }
}
