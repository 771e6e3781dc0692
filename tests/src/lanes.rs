//! Lanes: ordered cluster tests that run beside each other in one test binary.
//!
//! cargo runs test binaries one after another, so cluster tests that mostly wait (freeze windows,
//! Lease takeovers, Kyverno starts) can only overlap inside one binary. A [`Lane`] is one ordered
//! list of rows (one libtest-mimic trial each) on one cluster of its own, and an end (artifacts,
//! heal, teardown). [`run`] gives every selected row of every lane its own harness thread, and a
//! row first waits for its turn: the lane's previous selected row has ended (passed, failed or
//! panicked). So each lane runs in its order, as with `--test-threads 1` alone, while the lanes
//! run at the same time. A lane's last selected row runs the lane's end once its body returned,
//! so a lane that is done tears its cluster down while the others still run; [`run`] runs the
//! ends left (a lane with no row selected, or whose last row panicked) at the same time.
//!
//! A row's trial is named `<lane>::<row>`, so `cargo test -p tests --test labs -- lab_b::` runs lab
//! B's lane alone and `-- fault_row` every lane's rows whose name holds `fault_row`
//! (libtest-mimic's own filter, [`Arguments::is_filtered_out`]); a lane with no row selected never
//! brings its cluster up.
//!
//! The clusters of one process share one machine lock ([`shared_lock`]): the lock keeps other
//! processes (another checkout, `cargo xtask lab run`) off the machine, not this process's lanes
//! off each other; what each cluster's `up` and teardown change host-wide runs alone (`up` until
//! its node is Ready: `xtask::cluster`'s host steps; Kyverno's start runs beside the others),
//! and each lane's cluster has a name, netns and state dir of its own.

use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};

use libtest_mimic::{Arguments, Conclusion, Failed, Trial};

/// One row's body: what the trial runs once it is the lane's turn.
pub type Row = Box<dyn FnOnce() -> Result<(), Failed> + Send>;

/// A lane's end, run once: keeps artifacts, heals, tears the cluster down. [`run`] runs it after
/// every row of every lane has ended, unless the lane was joined to a next one ([`Lane::then`]),
/// whose first row that runs runs it. `Err` (a teardown that failed, said in the message) fails
/// the binary, or that row.
pub type End = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// One ordered list of rows on one cluster, and its end.
pub struct Lane {
    /// The lane's name: in messages and as its rows' names' prefix (`lab_a`).
    pub label: &'static str,
    rows: Vec<(String, Row)>,
    end: End,
}

impl Lane {
    /// A lane named `label` (a Rust identifier, e.g. `lab_a`) with no rows yet, ending with `end`.
    pub fn new(label: &'static str, end: End) -> Lane {
        Lane {
            label,
            rows: Vec::new(),
            end,
        }
    }

    /// This lane, then `next` in the same turn: `next`'s first row that runs first runs this
    /// lane's end (its cluster torn down before `next` brings its own up; an end that fails
    /// fails that row, whose body is then not run), and the joined lane's end runs whichever of
    /// the two ends has not run. The rows keep their names; messages use this lane's label.
    pub fn then(mut self, next: Lane) -> Lane {
        let first: Arc<Mutex<Option<End>>> = Arc::new(Mutex::new(Some(self.end)));
        for (name, f) in next.rows {
            let first = first.clone();
            let label = self.label;
            let row: Row = Box::new(move || {
                let end = first.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(end) = end {
                    end().map_err(|e| format!("not run: the end of lane {label} failed: {e}"))?;
                }
                f()
            });
            self.rows.push((name, row));
        }
        let then_end = next.end;
        self.end = Box::new(move || {
            let end = first.lock().unwrap_or_else(PoisonError::into_inner).take();
            let a = end.map_or(Ok(()), |end| end());
            let b = then_end();
            match (a, b) {
                (Ok(()), b) => b,
                (Err(a), Ok(())) => Err(a),
                (Err(a), Err(b)) => Err(format!("{a}; {b}")),
            }
        });
        self
    }

    /// Adds a row after the rows already added; its trial's name is `<label>::<name>`.
    pub fn row(
        &mut self,
        name: impl std::fmt::Display,
        f: impl FnOnce() -> Result<(), Failed> + Send + 'static,
    ) {
        self.rows
            .push((format!("{}::{name}", self.label), Box::new(f)));
    }
}

/// Whose turn it is in one lane: the index among the lane's selected rows of the row that may
/// run now.
#[derive(Default)]
struct Turn {
    next: Mutex<usize>,
    changed: Condvar,
}

impl Turn {
    /// Blocks until it is row `i`'s turn. No bound: the row before it is running on a thread of
    /// its own (every selected row has one, [`run`]) and bounds its own waits.
    fn wait_for(&self, i: usize) {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        while *next != i {
            next = self
                .changed
                .wait(next)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Gives the turn to the next row.
    fn pass(&self) {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.changed.notify_all();
    }
}

/// Passes the turn on when dropped: also when the row panics.
struct Passes(Arc<Turn>);

impl Drop for Passes {
    fn drop(&mut self) {
        self.0.pass();
    }
}

/// Whether libtest-mimic's filter (`args`: the filter, `--exact`, `--skip`) keeps a trial named
/// `name`; the same function the harness applies to the trials it is given.
fn selected(args: &Arguments, name: &str) -> bool {
    !args.is_filtered_out(&Trial::test(name.to_owned(), || Ok(())))
}

/// A lane's end, until someone runs it: the lane's last selected row, right after its body, or
/// [`run`] after every row (a lane with no row selected, or whose last row panicked).
type EndSlot = Arc<Mutex<Option<End>>>;

/// Runs the end in `slot` unless it already ran; `Ok` when it did or it succeeded.
fn run_end(label: &str, slot: &EndSlot) -> Result<(), String> {
    let end = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    let Some(end) = end else {
        return Ok(());
    };
    let began = since_start();
    let r = end();
    eprintln!(
        "lanes: {label}'s end: +{began:.1} s to +{:.1} s",
        since_start()
    );
    r
}

/// The trials of `lanes`, lane after lane, each row wrapped to wait for its turn, the last
/// selected row of each lane to run the lane's end once its body returned (so a lane that is
/// done tears its cluster down while the others still run; an end that fails fails that row);
/// how many are selected by `args`; and each lane's end slot.
fn trials(
    args: &Arguments,
    lanes: &mut [Lane],
) -> (Vec<Trial>, usize, Vec<(&'static str, EndSlot)>) {
    let mut out = Vec::new();
    let mut count = 0;
    let mut ends = Vec::new();
    for lane in lanes.iter_mut() {
        let turn = Arc::new(Turn::default());
        let end: End = std::mem::replace(&mut lane.end, Box::new(|| Ok(())));
        let slot: EndSlot = Arc::new(Mutex::new(Some(end)));
        let lane_label = lane.label;
        let last = lane
            .rows
            .iter()
            .filter(|(name, _)| selected(args, name))
            .count()
            .checked_sub(1);
        let mut i = 0;
        for (name, f) in lane.rows.drain(..) {
            if !selected(args, &name) {
                // The harness drops it unrun (counted as filtered out); it holds no turn.
                out.push(Trial::test(name, f));
                continue;
            }
            let (turn, mine, slot) = (turn.clone(), i, slot.clone());
            i += 1;
            let label = name.clone();
            out.push(Trial::test(name, move || {
                turn.wait_for(mine);
                let _passes = Passes(turn);
                let began = since_start();
                let r = f();
                let ended = since_start();
                eprintln!(
                    "lanes: {label}: +{began:.1} s to +{ended:.1} s ({:.1} s)",
                    ended - began
                );
                if Some(mine) != last {
                    return r;
                }
                match (r, run_end(lane_label, &slot)) {
                    (r, Ok(())) => r,
                    (Ok(()), Err(e)) => {
                        Err(format!("the end of lane {lane_label} failed: {e}").into())
                    }
                    (Err(r), Err(e)) => Err(format!(
                        "{}; and the end of lane {lane_label} failed: {e}",
                        r.message().unwrap_or("failed")
                    )
                    .into()),
                }
            }));
        }
        count += i;
        ends.push((lane_label, slot));
    }
    (out, count, ends)
}

/// Runs `lanes` side by side under libtest-mimic with `args` (one harness thread per selected
/// row; `--test-threads` is not used: a lane's order is its own; each lane's last selected row
/// runs the lane's end, [`trials`]), then every end that has not run, at the same time, and
/// exits: 0 when every row passed and every end succeeded, 101 otherwise (an end that failed
/// after the rows is said on stderr with its lane's name).
pub fn run(mut args: Arguments, mut lanes: Vec<Lane>) -> ! {
    since_start();
    let (trials, selected, ends) = trials(&args, &mut lanes);
    args.test_threads = Some(selected.max(2));
    let conclusion: Conclusion = libtest_mimic::run(&args, trials);
    let failed_ends = std::thread::scope(|s| {
        let handles: Vec<_> = ends
            .iter()
            .map(|(label, slot)| (label, s.spawn(move || run_end(label, slot))))
            .collect();
        let mut failed = 0;
        for (label, h) in handles {
            let r = h.join().unwrap_or_else(|_| Err("its end panicked".into()));
            if let Err(e) = r {
                eprintln!("{label}: {e}");
                failed += 1;
            }
        }
        failed
    });
    if failed_ends > 0 {
        std::process::exit(101);
    }
    conclusion.exit()
}

/// Seconds since [`run`] began (the first call): each row's span is said on stderr as
/// `lanes: <lane>::<row>: +<from> s to +<to> s (<length> s)`, a lane's end likewise, so a run's
/// log shows which lane bounds the binary (docs/tests.md). A record, never asserted.
fn since_start() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}

/// The machine lock for this process's clusters: taken on the first call, handed out shared
/// after, and released when the last holder drops it (a later call takes it again).
///
/// # Errors
/// Taking the lock failed ([`crate::ClusterLock::acquire`]: its bound passed, naming the holder).
pub fn shared_lock(state_root: &std::path::Path) -> anyhow::Result<Arc<crate::ClusterLock>> {
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(lock) = held.upgrade() {
        return Ok(lock);
    }
    let lock = Arc::new(crate::ClusterLock::acquire(state_root)?);
    *held = Arc::downgrade(&lock);
    Ok(lock)
}

/// The machine lock of this process, while anything holds it.
static HELD: Mutex<Weak<crate::ClusterLock>> = Mutex::new(Weak::new());

/// A machine lock the caller took itself (to snapshot the host before any cluster exists), made
/// the one [`shared_lock`] hands out while it is held, so that a later cluster of this process
/// does not wait for it.
pub fn adopt(lock: crate::ClusterLock) -> Arc<crate::ClusterLock> {
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    let lock = Arc::new(lock);
    if held.upgrade().is_none() {
        *held = Arc::downgrade(&lock);
    }
    lock
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// `libtest_mimic::run` with its output in a file of its own, in a fresh private temporary
    /// directory removed after (never a fixed path in /tmp another user could have made), so
    /// that the inner harness's lines (a row failed on purpose, its summary) do not mix with this
    /// test binary's own.
    fn run_quietly(args: &Arguments, trials: Vec<Trial>) -> Conclusion {
        let dir = tempfile::tempdir().expect("a private temporary directory");
        let log = dir.path().join("inner-harness.log");
        let args = Arguments {
            logfile: Some(log.to_string_lossy().into_owned()),
            ..args.clone()
        };
        libtest_mimic::run(&args, trials)
    }

    /// Rows of two lanes, each recording (lane, row) when it runs and sleeping in between, with
    /// the third row of the second lane filtered out: each lane's rows run in order, the lanes
    /// overlap, the filtered row never runs and holds no turn.
    #[test]
    fn each_lane_runs_in_order_and_the_lanes_overlap() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut lanes = Vec::new();
        for lane in ["x", "y"] {
            let mut l = Lane::new(lane, Box::new(|| Ok(())));
            for row in 0..4 {
                let (log, running, most) = (log.clone(), running.clone(), most.clone());
                let name = if lane == "y" && row == 2 {
                    "skipped_row".to_owned()
                } else {
                    format!("{lane}_{row}")
                };
                l.row(name, move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    log.lock().unwrap().push((lane, row));
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                });
            }
            lanes.push(l);
        }
        let mut args = Arguments {
            skip: vec!["skipped".into()],
            ..Arguments::default()
        };
        let (trials, selected, _) = trials(&args, &mut lanes);
        assert_eq!(selected, 7);
        args.test_threads = Some(selected);
        args.quiet = true;
        let c = run_quietly(&args, trials);
        assert_eq!((c.num_passed, c.num_failed, c.num_filtered_out), (7, 0, 1));
        let log = log.lock().unwrap();
        for lane in ["x", "y"] {
            let rows: Vec<usize> = log
                .iter()
                .filter(|(l, _)| *l == lane)
                .map(|(_, r)| *r)
                .collect();
            let want: Vec<usize> = if lane == "x" {
                vec![0, 1, 2, 3]
            } else {
                vec![0, 1, 3]
            };
            assert_eq!(
                rows, want,
                "lane {lane} in its order, the filtered row never run"
            );
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "one row of each lane at a time, both lanes at once"
        );
    }

    /// A row that panics still passes the turn on (the harness catches the panic; the guard
    /// passes the turn while unwinding), so the lane's next row runs.
    #[test]
    fn a_row_that_panics_passes_its_turn_on() {
        let turn = Arc::new(Turn::default());
        let t = turn.clone();
        let r = std::thread::spawn(move || {
            t.wait_for(0);
            let _passes = Passes(t);
            panic!("the row's own panic");
        })
        .join();
        assert!(r.is_err());
        turn.wait_for(1);
    }

    /// A lane joined to another with [`Lane::then`]: the first lane's end runs once, after its
    /// rows and before the second lane's first row that runs; the joined end runs the second's,
    /// in the last row, so nothing is left for [`run`] to end.
    #[test]
    fn a_joined_lane_ends_the_first_before_the_second_starts() {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let say = |s: &'static str| {
            let log = log.clone();
            move || {
                log.lock().unwrap().push(s.to_owned());
                Ok(())
            }
        };
        let end = |s: &'static str| -> End {
            let log = log.clone();
            Box::new(move || {
                log.lock().unwrap().push(s.to_owned());
                Ok(())
            })
        };
        let mut a = Lane::new("a", end("a end"));
        let mut b = Lane::new("b", end("b end"));
        a.row("one", say("a one"));
        b.row("skipped", say("b skipped"));
        b.row("two", say("b two"));
        let mut lanes = vec![a.then(b)];
        let args = Arguments {
            skip: vec!["skipped".into()],
            quiet: true,
            ..Arguments::default()
        };
        let (trials, selected, ends) = trials(&args, &mut lanes);
        assert_eq!(selected, 2);
        let c = run_quietly(&args, trials);
        assert_eq!((c.num_passed, c.num_failed), (2, 0));
        assert_eq!(*log.lock().unwrap(), ["a one", "a end", "b two", "b end"]);
        assert!(ends.iter().all(|(_, slot)| slot.lock().unwrap().is_none()));
    }

    /// Each lane's end runs right after its own last row, while another lane's rows still run;
    /// an end that fails fails that last row (named in its message); a lane with no row selected
    /// keeps its end for [`run`].
    #[test]
    fn a_lane_ends_after_its_last_row_while_others_run() {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let push = |s: &'static str| {
            let log = log.clone();
            move || log.lock().unwrap().push(s.to_owned())
        };
        let (p_end, p_row, p_long) = (push("short end"), push("short row"), push("long row"));
        let mut short = Lane::new(
            "short",
            Box::new(move || {
                p_end();
                Err("teardown refused".into())
            }),
        );
        short.row("row", move || {
            p_row();
            Ok(())
        });
        let mut long = Lane::new("long", Box::new(|| Ok(())));
        long.row("row", move || {
            std::thread::sleep(Duration::from_millis(300));
            p_long();
            Ok(())
        });
        let mut idle = Lane::new("idle", Box::new(|| Ok(())));
        idle.row("skipped", || Ok(()));
        let mut lanes = vec![short, long, idle];
        let mut args = Arguments {
            skip: vec!["skipped".into()],
            quiet: true,
            ..Arguments::default()
        };
        let (trials, selected, ends) = trials(&args, &mut lanes);
        args.test_threads = Some(selected);
        let c = run_quietly(&args, trials);
        assert_eq!(
            (c.num_passed, c.num_failed),
            (1, 1),
            "the short row failed by its end"
        );
        assert_eq!(*log.lock().unwrap(), ["short row", "short end", "long row"]);
        let left: Vec<&str> = ends
            .iter()
            .filter(|(_, slot)| slot.lock().unwrap().is_some())
            .map(|(label, _)| *label)
            .collect();
        assert_eq!(left, ["idle"]);
    }
}
