//! One way to wait: a bounded poll ([`Wait`]) that runs a check every `interval` until it is
//! [`Check::Done`] or `bound` runs out, keeping the last state it saw ([`Check::NotYet`]) and what
//! it waited for ([`TimedOut`], which becomes [`LabError::WaitTimedOut`], read by
//! [`crate::diagnostics`]). A check that fails ([`WaitError::Failed`]) ends the wait at once.
//!
//! Built on `backon` (its constant backoff, cut at the bound: the last pause is shortened so the
//! last check runs at the bound, never after it); the same [`Wait`] runs synchronously
//! ([`Wait::blocking`]) or in async code ([`Wait::run`], given the runtime's sleep, e.g.
//! `tokio::time::sleep`: this crate has no tokio). Used by the lab (act waits, the audit log)
//! and by xtask (the cluster's readiness, teardown) as `lab::wait`; the lab depends on nothing
//! of xtask.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use backon::{BackoffBuilder, BlockingRetryable, ConstantBuilder, Retryable};

use crate::error::LabError;

/// What one check saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check<T, S> {
    /// The condition holds; the wait returns `T`.
    Done(T),
    /// Not yet; `S` is the state seen (kept: the wait reports the last one when it runs out).
    NotYet(S),
}

/// A bounded poll: what it waits for, for how long at most, how often it checks.
#[derive(Debug, Clone)]
pub struct Wait {
    /// What is waited for, as the timeout error names it ("webhook validate.kyverno.svc …").
    pub what: String,
    /// The bound (the first check runs at once, the last one at the bound).
    pub bound: Duration,
    /// The pause between checks.
    pub interval: Duration,
}

/// A wait that ran out: what it waited for, how long, and the last state its check saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedOut<S> {
    /// [`Wait::what`].
    pub what: String,
    /// [`Wait::bound`].
    pub bound: Duration,
    /// How long it waited (≥ the bound).
    pub waited: Duration,
    /// The state the last check saw.
    pub last: S,
}

impl<S: fmt::Display> From<TimedOut<S>> for LabError {
    /// [`LabError::WaitTimedOut`] with `what`, the milliseconds waited and the last state.
    fn from(t: TimedOut<S>) -> LabError {
        LabError::WaitTimedOut {
            what: t.what,
            waited_ms: t.waited.as_millis() as u64,
            last_state: t.last.to_string(),
        }
    }
}

/// Why a wait ended without its condition.
#[derive(Debug)]
pub enum WaitError<S, E> {
    /// The bound ran out ([`TimedOut`]).
    TimedOut(TimedOut<S>),
    /// A check failed with `E` (the wait stopped at once).
    Failed(E),
}

impl<S: fmt::Display, E: Into<LabError>> From<WaitError<S, E>> for LabError {
    fn from(e: WaitError<S, E>) -> LabError {
        match e {
            WaitError::TimedOut(t) => t.into(),
            WaitError::Failed(e) => e.into(),
        }
    }
}

/// One attempt's error, as backon sees it: retried while `NotYet`.
enum Attempt<S, E> {
    NotYet(S),
    Failed(E),
}

/// backon's constant backoff, cut at `start + bound` (the last pause ends at the bound).
struct UntilBound<B> {
    every: B,
    start: Instant,
    bound: Duration,
}

impl<B: Iterator<Item = Duration>> Iterator for UntilBound<B> {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let left = self.bound.saturating_sub(self.start.elapsed());
        if left.is_zero() {
            return None;
        }
        self.every.next().map(|d| d.min(left))
    }
}

impl Wait {
    /// A wait for `what`, at most `bound`, checking every `interval`.
    pub fn new(what: impl Into<String>, bound: Duration, interval: Duration) -> Wait {
        Wait {
            what: what.into(),
            bound,
            interval,
        }
    }

    fn backoff(&self, start: Instant) -> UntilBound<impl Iterator<Item = Duration> + use<>> {
        UntilBound {
            every: ConstantBuilder::new()
                .with_delay(self.interval)
                .without_max_times()
                .build(),
            start,
            bound: self.bound,
        }
    }

    fn ended<T, S, E>(
        &self,
        start: Instant,
        r: Result<T, Attempt<S, E>>,
    ) -> Result<T, WaitError<S, E>> {
        match r {
            Ok(v) => Ok(v),
            Err(Attempt::NotYet(last)) => Err(WaitError::TimedOut(TimedOut {
                what: self.what.clone(),
                bound: self.bound,
                waited: start.elapsed(),
                last,
            })),
            Err(Attempt::Failed(e)) => Err(WaitError::Failed(e)),
        }
    }

    /// Polls `check` on this thread (sleeping between checks) until it is done, fails, or the
    /// bound runs out. `on_pending(state, elapsed)` sees each state that is not yet done before
    /// the pause that follows it (for progress lines; not the last one, which the error carries).
    ///
    /// # Errors
    /// [`WaitError::TimedOut`] with the last state seen, or the check's own error.
    pub fn blocking<T, S, E>(
        &self,
        mut check: impl FnMut() -> Result<Check<T, S>, E>,
        mut on_pending: impl FnMut(&S, Duration),
    ) -> Result<T, WaitError<S, E>> {
        let start = Instant::now();
        let r = (|| match check() {
            Ok(Check::Done(v)) => Ok(v),
            Ok(Check::NotYet(s)) => Err(Attempt::NotYet(s)),
            Err(e) => Err(Attempt::Failed(e)),
        })
        .retry(self.backoff(start))
        .when(|a| matches!(a, Attempt::NotYet(_)))
        .notify(|a, _| {
            if let Attempt::NotYet(s) = a {
                on_pending(s, start.elapsed());
            }
        })
        .call();
        self.ended(start, r)
    }

    /// [`Wait::blocking`] in async code: `check` returns a future; the pauses are `sleep(d)`
    /// (`tokio::time::sleep` in the lab).
    ///
    /// # Errors
    /// [`WaitError::TimedOut`] with the last state seen, or the check's own error.
    pub async fn run<T, S, E, Fut, Sl>(
        &self,
        mut check: impl FnMut() -> Fut,
        mut on_pending: impl FnMut(&S, Duration),
        sleep: impl Fn(Duration) -> Sl + 'static,
    ) -> Result<T, WaitError<S, E>>
    where
        Fut: Future<Output = Result<Check<T, S>, E>>,
        Sl: Future<Output = ()>,
    {
        let start = Instant::now();
        let r = (|| {
            let attempt = check();
            async move {
                match attempt.await {
                    Ok(Check::Done(v)) => Ok(v),
                    Ok(Check::NotYet(s)) => Err(Attempt::NotYet(s)),
                    Err(e) => Err(Attempt::Failed(e)),
                }
            }
        })
        .retry(self.backoff(start))
        .sleep(sleep)
        .when(|a| matches!(a, Attempt::NotYet(_)))
        .notify(|a, _| {
            if let Attempt::NotYet(s) = a {
                on_pending(s, start.elapsed());
            }
        })
        .await;
        self.ended(start, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_that_runs_out_keeps_the_last_state_and_what_it_waited_for() {
        let mut n = 0;
        let mut seen = Vec::new();
        let w = Wait::new(
            "the thing",
            Duration::from_millis(60),
            Duration::from_millis(10),
        );
        let e = w
            .blocking(
                || -> Result<Check<(), String>, ()> {
                    n += 1;
                    Ok(Check::NotYet(format!("probe {n} saw 0/1 ready")))
                },
                |s, _| seen.push(s.clone()),
            )
            .unwrap_err();
        let WaitError::TimedOut(t) = e else {
            panic!("not a timeout")
        };
        assert_eq!(t.what, "the thing");
        assert!(t.waited >= Duration::from_millis(60), "{t:?}");
        assert_eq!(t.last, format!("probe {n} saw 0/1 ready"));
        assert_eq!(
            seen.len(),
            n - 1,
            "every state but the last goes to on_pending"
        );
        let lab: LabError = t.into();
        assert!(
            lab.to_string().starts_with("waited ")
                && lab.to_string().ends_with(&format!(
                    "for the thing; last state: probe {n} saw 0/1 ready"
                )),
            "{lab}"
        );
    }

    #[test]
    fn a_wait_returns_what_the_check_found_and_stops_on_a_failed_check() {
        let mut n = 0;
        let w = Wait::new("x", Duration::from_secs(5), Duration::from_millis(1));
        let v = w.blocking(
            || -> Result<Check<u32, u32>, ()> {
                n += 1;
                Ok(if n == 3 {
                    Check::Done(n * 10)
                } else {
                    Check::NotYet(n)
                })
            },
            |_, _| {},
        );
        assert_eq!(v.unwrap(), 30);
        let mut m = 0;
        let e = w.blocking(
            || -> Result<Check<(), ()>, &str> {
                m += 1;
                if m == 2 {
                    Err("gone")
                } else {
                    Ok(Check::NotYet(()))
                }
            },
            |_, _| {},
        );
        assert!(matches!(e, Err(WaitError::Failed("gone"))));
        assert_eq!(m, 2, "a failed check ends the wait at once");
    }

    #[test]
    fn the_last_check_runs_at_the_bound_not_later() {
        // Interval longer than the bound: one check at once, one at the bound, none after.
        let mut at = Vec::new();
        let start = Instant::now();
        let w = Wait::new("x", Duration::from_millis(200), Duration::from_secs(10));
        let r = w.blocking(
            || -> Result<Check<(), ()>, ()> {
                at.push(start.elapsed());
                Ok(Check::NotYet(()))
            },
            |_, _| {},
        );
        assert!(matches!(r, Err(WaitError::TimedOut(_))));
        assert_eq!(at.len(), 2, "{at:?}");
        assert!(at[1] >= Duration::from_millis(200), "{at:?}");
        // Not after a full 10 s interval: the last pause was cut at the bound (5 s is only a
        // generous ceiling for a loaded machine; the cut pause is 0.2 s).
        assert!(at[1] < Duration::from_secs(5), "{at:?}");
    }

    /// Runs a future on this thread (its sleeps are blocking, so it never waits for a wake).
    fn block_on<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        loop {
            if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    async fn sleep(d: Duration) {
        std::thread::sleep(d)
    }

    #[test]
    fn the_async_wait_behaves_the_same() {
        let mut n = 0;
        let w = Wait::new("y", Duration::from_secs(5), Duration::from_millis(1));
        let v = block_on(w.run(
            || {
                n += 1;
                let k = n;
                async move {
                    Ok::<_, ()>(if k == 2 {
                        Check::Done(k)
                    } else {
                        Check::NotYet(k)
                    })
                }
            },
            |_, _| {},
            sleep,
        ));
        assert_eq!(v.unwrap(), 2);
        let w = Wait::new("y", Duration::from_millis(30), Duration::from_millis(5));
        let e = block_on(w.run(
            || async { Ok::<Check<(), &str>, ()>(Check::NotYet("still 0")) },
            |_, _| {},
            sleep,
        ));
        assert!(matches!(
            e,
            Err(WaitError::TimedOut(TimedOut {
                last: "still 0",
                ..
            }))
        ));
    }
}
