//! An act that has seen a signal inside its fault section ([`lab::labs::common::or_signal`])
//! finishes its exit path (undo, `interrupted` evidence) under [`lab::signals::until_signal`],
//! even when its awaits after `or_signal` yield before `until_signal` sees the signal itself.
//!
//! The race (issue 12; seen in `lab_run_interrupt` on 2026-12-01 09:12 UTC: act 5's evidence
//! never written, the freeze resumed by the healer's `runner-exit`): the signal lands during a poll
//! of the act, after `until_signal` polled its own signal branch; the act's `or_signal` sees it
//! first and returns, releasing its guard; the act's next await yields; `until_signal` then sees
//! the signal with no guard held and drops the act at once. Made deterministic here: the act
//! raises SIGTERM to its own process inside its first poll and waits (bounded) until the
//! handler published it, then enters `or_signal`.
//!
//! One test in this binary: a signal stays pending for the rest of the process.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lab::error::LabError;

#[test]
fn an_act_that_saw_the_signal_in_or_signal_finishes_its_exit_path() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let exit_path_done = Arc::new(AtomicBool::new(false));
    let done = exit_path_done.clone();
    let act = async move {
        // Inside the act's first poll, after until_signal polled its signal branch.
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM)
            .expect("SIGTERM to this test process");
        let t = Instant::now();
        while lab::signals::pending().is_none() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the handler did not publish SIGTERM within 10 s"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let seen = lab::labs::common::or_signal(std::future::pending::<()>()).await;
        assert_eq!(seen, Err("SIGTERM"), "or_signal should see the signal");
        // The exit path: awaits that yield, as the acts' API calls and evidence writes do.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        done.store(true, Ordering::SeqCst);
        Err::<(), LabError>(LabError::Interrupted {
            signal: "SIGTERM".into(),
            act: 5,
            healed: "the act's own undo".into(),
        })
    };
    let r = rt.block_on(lab::signals::until_signal(act, 5));
    assert!(
        exit_path_done.load(Ordering::SeqCst),
        "until_signal dropped the act before its exit path ran (result {r:?})"
    );
    match r {
        Err(LabError::Interrupted { healed, .. }) => assert_eq!(healed, "the act's own undo"),
        other => panic!("the act's own Interrupted error expected, got {other:?}"),
    }
    assert!(
        !lab::signals::guarded(),
        "no section should be guarded once the act ended"
    );
}
