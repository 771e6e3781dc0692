//! Step status lines (kind's `Start`/`End`): `• msg ...` then `✓ msg (12.3s)` or `✗ msg`.
//!
//! A [`Step`] prints its start, and prints `✗` if dropped without [`Step::ok`],
//! so an early `?` return is visible. Output goes to stderr.
//!
//! A step that runs longer than [`SPINNER_AFTER`] shows a progress line on a terminal (indicatif:
//! spinner, elapsed time, and when this machine has run the same step before, its typical time
//! and an ETA). Typical times are measured: each successful step's duration is kept in
//! `~/.cache/kca-webhook-lab/step-times.json` (step message → seconds of the last 5 runs; the
//! median is shown). Off a terminal nothing extra is printed.
//!
//! The same steps are the timing source of `cargo xtask bench`: while [`start_recording`] is on,
//! every step that ends (ok or not) is kept as a [`Span`] (message, UTC start and end), and
//! [`record_span`] adds a span measured elsewhere (e.g. a pod's own start from its conditions).
//! [`take_recording`] returns them and stops recording.
//!
//! When several labs print at once (`lab run --at-once`, one thread per lab), each thread names
//! its lab at the start of its lines ([`label_lines`]: `[lab b] • msg ...`); the step's message,
//! which keys its typical time and the bench's spans, stays unlabelled.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a step runs before its progress line appears.
pub const SPINNER_AFTER: Duration = Duration::from_secs(2);
/// How many past durations per step are kept.
const KEEP: usize = 5;

/// One timed span: a [`Step`] (or one added by [`record_span`]), UTC times.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Span {
    /// The step's message, as printed.
    pub msg: String,
    /// When it started (UTC).
    pub start: chrono::DateTime<chrono::Utc>,
    /// When it ended (UTC).
    pub end: chrono::DateTime<chrono::Utc>,
    /// Whether it ended with [`Step::ok`] (false: dropped, e.g. by an early error).
    pub ok: bool,
}

impl Span {
    /// Duration in milliseconds (0 if `end` precedes `start`).
    pub fn ms(&self) -> u64 {
        (self.end - self.start).num_milliseconds().max(0) as u64
    }
}

/// The spans kept while recording (None: not recording).
static RECORDING: Mutex<Option<Vec<Span>>> = Mutex::new(None);

/// Starts keeping every ending step as a [`Span`] (process-wide; drops what was kept before).
pub fn start_recording() {
    if let Ok(mut r) = RECORDING.lock() {
        *r = Some(Vec::new());
    }
}

/// The spans kept since [`start_recording`], in the order they ended; stops recording.
pub fn take_recording() -> Vec<Span> {
    RECORDING
        .lock()
        .ok()
        .and_then(|mut r| r.take())
        .unwrap_or_default()
}

/// Adds a span measured elsewhere (only while recording): `msg` from `start` to `end` (UTC).
pub fn record_span(
    msg: impl Into<String>,
    start: chrono::DateTime<chrono::Utc>,
    end: chrono::DateTime<chrono::Utc>,
) {
    if let Ok(mut r) = RECORDING.lock()
        && let Some(v) = r.as_mut()
    {
        v.push(Span {
            msg: msg.into(),
            start,
            end,
            ok: true,
        });
    }
}

/// One visible step of a long task.
pub struct Step {
    msg: String,
    started: Instant,
    started_utc: chrono::DateTime<chrono::Utc>,
    done: bool,
    stop: Arc<AtomicBool>,
    spinner: Option<std::thread::JoinHandle<()>>,
}

/// `~/.cache/kca-webhook-lab/step-times.json`.
fn times_path() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("kca-webhook-lab").join("step-times.json"))
}

fn read_times() -> BTreeMap<String, Vec<f64>> {
    times_path()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The median of the measured durations of step `msg`, seconds.
pub fn typical_secs(msg: &str) -> Option<f64> {
    let mut v = read_times().remove(msg)?;
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Records a measured duration of step `msg` (best effort: a cache that cannot be written only
/// loses the ETA next time).
fn record(msg: &str, secs: f64) {
    let Some(path) = times_path() else { return };
    let mut all = read_times();
    let v = all.entry(msg.to_owned()).or_default();
    v.push(secs);
    if v.len() > KEEP {
        v.drain(..v.len() - KEEP);
    }
    if let Some(d) = path.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    if let Ok(text) = serde_json::to_string_pretty(&all) {
        let _ = std::fs::write(path, text);
    }
}

/// The progress line's text after `elapsed` with a `typical` time: `typical 95s, ETA 40s` (or
/// `typical 95s, over by 5s`).
pub fn eta_text(elapsed: Duration, typical: Option<f64>) -> String {
    match typical {
        None => String::new(),
        Some(t) => {
            let e = elapsed.as_secs_f64();
            if e <= t {
                format!(" · typical {t:.0}s, ETA {:.0}s", t - e)
            } else {
                format!(" · typical {t:.0}s, over by {:.0}s", e - t)
            }
        }
    }
}

thread_local! {
    /// The lab this thread's lines name ([`label_lines`]).
    static LABEL: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// From now on every line this thread prints through this module starts with `[lab {lab}]`
/// (`lab`: the registry's name, `b`): the labs of `lab run --at-once` print to one stderr.
pub fn label_lines(lab: &'static str) {
    LABEL.with(|l| l.set(Some(lab)));
}

/// The lab this thread's lines name ([`label_lines`]), if any.
pub fn line_label() -> Option<&'static str> {
    LABEL.with(std::cell::Cell::get)
}

/// `f`, to run on a thread this one spawns, with this thread's label ([`label_lines`]): the
/// cluster's `up` waits and installs on threads of their own.
pub fn with_label<T>(f: impl FnOnce() -> T) -> impl FnOnce() -> T {
    let label = line_label();
    move || {
        if let Some(l) = label {
            label_lines(l);
        }
        f()
    }
}

/// `eprintln!` for the lines of a step's inner work (the cluster's `up` and teardown, the
/// upstream builds): the same line, after the thread's label when it has one ([`line`](fn@line)).
#[macro_export]
macro_rules! status_line {
    ($($arg:tt)*) => {
        $crate::status::line(&format!($($arg)*))
    };
}

/// Prints `line` as it is, after the thread's label ([`label_lines`]) when it has one.
pub fn line(line: &str) {
    match line_label() {
        Some(l) => eprintln!("[lab {l}]{line}"),
        None => eprintln!("{line}"),
    }
}

/// `[lab b]` on a labelled thread ([`label_lines`]), else nothing.
fn prefix() -> String {
    line_label().map_or(String::new(), |l| format!("[lab {l}]"))
}

/// Prints a line that belongs to the step above it, indented (`      {line}`), labelled as
/// [`label_lines`] says; the lines go out in one write, so another thread's cannot come between.
pub fn details(lines: &[String]) {
    let p = prefix();
    let text: String = lines.iter().map(|l| format!("{p}      {l}\n")).collect();
    eprint!("{text}");
}

/// Set by [`no_progress_lines`]: steps print their start and end lines only.
static NO_PROGRESS_LINES: AtomicBool = AtomicBool::new(false);

/// From now on no step draws a progress line, also on a terminal: several steps run at once
/// (the labs of `lab run` side by side), and their progress lines would overwrite each other.
pub fn no_progress_lines() {
    NO_PROGRESS_LINES.store(true, Ordering::SeqCst);
}

impl Step {
    /// Prints `• {msg} ...` to stderr and starts the clock (and, on a terminal, a progress line
    /// after [`SPINNER_AFTER`], unless [`no_progress_lines`] was called).
    pub fn start(msg: impl Into<String>) -> Step {
        let msg = msg.into();
        eprintln!("{} • {msg} ...", prefix());
        let stop = Arc::new(AtomicBool::new(false));
        let drawn = std::io::stderr().is_terminal() && !NO_PROGRESS_LINES.load(Ordering::SeqCst);
        let spinner = drawn.then(|| {
            let (msg, stop) = (msg.clone(), stop.clone());
            std::thread::spawn(move || spin(&msg, &stop))
        });
        Step {
            msg,
            started: Instant::now(),
            started_utc: chrono::Utc::now(),
            done: false,
            stop,
            spinner,
        }
    }

    /// Seconds since the step started.
    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn end_spinner(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.spinner.take() {
            let _ = h.join();
        }
    }

    /// Keeps this step as a [`Span`] when recording.
    fn keep(&self, ok: bool) {
        if let Ok(mut r) = RECORDING.lock()
            && let Some(v) = r.as_mut()
        {
            v.push(Span {
                msg: self.msg.clone(),
                start: self.started_utc,
                end: chrono::Utc::now(),
                ok,
            });
        }
    }

    /// Marks the step as successful: prints `✓ {msg} ({elapsed}s)` and records the duration as
    /// this step's typical time.
    pub fn ok(mut self) {
        self.done = true;
        self.end_spinner();
        let secs = self.elapsed_secs();
        self.keep(true);
        record(&self.msg, secs);
        eprintln!("{} ✓ {} ({secs:.1}s)", prefix(), self.msg);
    }
}

/// The progress line of one step: waits [`SPINNER_AFTER`], then ticks until `stop`.
fn spin(msg: &str, stop: &AtomicBool) {
    let started = Instant::now();
    while started.elapsed() < SPINNER_AFTER {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let typical = typical_secs(msg);
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("   {spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    while !stop.load(Ordering::SeqCst) {
        let e = started.elapsed();
        bar.set_message(format!(
            "{msg}: {:.0}s{}",
            e.as_secs_f64(),
            eta_text(e, typical)
        ));
        bar.tick();
        std::thread::sleep(Duration::from_millis(250));
    }
    bar.finish_and_clear();
}

impl Drop for Step {
    fn drop(&mut self) {
        if !self.done {
            self.end_spinner();
            self.keep(false);
            eprintln!("{} ✗ {} ({:.1}s)", prefix(), self.msg, self.elapsed_secs());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_labelled_thread_names_its_lab_and_others_do_not() {
        assert_eq!(prefix(), "");
        std::thread::spawn(|| {
            label_lines("b");
            assert_eq!(line_label(), Some("b"));
            assert_eq!(prefix(), "[lab b]");
        })
        .join()
        .expect("the labelled thread");
        assert_eq!(line_label(), None, "the label is the thread's own");
        std::thread::spawn(|| {
            label_lines("c");
            let inherited = with_label(line_label);
            std::thread::spawn(inherited)
                .join()
                .expect("the spawned thread")
        })
        .join()
        .map(|l| assert_eq!(l, Some("c"), "a thread spawned through with_label"))
        .expect("the labelled thread");
    }

    #[test]
    fn eta_from_the_typical_time() {
        assert_eq!(eta_text(Duration::from_secs(10), None), "");
        assert_eq!(
            eta_text(Duration::from_secs(10), Some(95.0)),
            " · typical 95s, ETA 85s"
        );
        assert_eq!(
            eta_text(Duration::from_secs(100), Some(95.0)),
            " · typical 95s, over by 5s"
        );
    }
}
