//! One progress line per program: a spinner with the elapsed time and the
//! package Go is compiling on a terminal; plain lines (start, a heartbeat
//! every 30 s, end) otherwise, so CI logs show that a long build is alive.

use std::io::IsTerminal as _;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often plain mode prints a "still building" line.
const HEARTBEAT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Shared {
    compiled: usize,
    last: String,
}

/// The progress of one task (building one program). Dropped without
/// [`Task::ok`], it reports a failure line.
pub struct Task {
    name: String,
    started: Instant,
    bar: Option<ProgressBar>,
    shared: Arc<Mutex<Shared>>,
    stop: Option<mpsc::Sender<()>>,
    heartbeat: Option<thread::JoinHandle<()>>,
    done: bool,
}

impl Task {
    /// Starts a task line: `name` (e.g. `kube-apiserver`), `detail` (e.g.
    /// `k8s.io/kubernetes v1.35.8`).
    pub fn start(name: &str, detail: &str) -> Task {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let tty = std::io::stderr().is_terminal();
        let mut task = Task {
            name: name.to_string(),
            started: Instant::now(),
            bar: None,
            shared: shared.clone(),
            stop: None,
            heartbeat: None,
            done: false,
        };
        if tty {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            let style =
                ProgressStyle::with_template(" {spinner} {prefix:<24} {elapsed:>4} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
            bar.set_style(style);
            bar.set_prefix(name.to_string());
            bar.set_message(format!("building ({detail})"));
            bar.enable_steady_tick(Duration::from_millis(200));
            task.bar = Some(bar);
        } else {
            eprintln!(" • building {name} ({detail}) ...");
            let (tx, rx) = mpsc::channel::<()>();
            let name = name.to_string();
            let started = task.started;
            task.stop = Some(tx);
            task.heartbeat = Some(thread::spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(HEARTBEAT) {
                    let (n, last) = match shared.lock() {
                        Ok(s) => (s.compiled, s.last.clone()),
                        Err(_) => (0, String::new()),
                    };
                    eprintln!(
                        "   … still building {name}: {:.0}s, {n} packages compiled, last {last}",
                        started.elapsed().as_secs_f64()
                    );
                }
            }));
        }
        task
    }

    /// Records a package Go reported compiling (`go build -v` prints one
    /// import path per line).
    pub fn compiled(&self, package: &str) {
        let n = match self.shared.lock() {
            Ok(mut s) => {
                s.compiled += 1;
                s.last = package.to_string();
                s.compiled
            }
            Err(_) => 0,
        };
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{n} packages compiled, {package}"));
        }
    }

    /// Seconds since the task started.
    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Ends the line as a success: `✓ name built in 12.3s (note)`.
    pub fn ok(mut self, note: &str) {
        self.done = true;
        let n = self.shared.lock().map(|s| s.compiled).unwrap_or(0);
        let msg = format!(
            "✓ {} built in {:.1}s ({n} packages compiled{}{note})",
            self.name,
            self.elapsed_secs(),
            if note.is_empty() { "" } else { ", " }
        );
        self.finish(&msg);
    }

    fn finish(&mut self, msg: &str) {
        self.stop.take();
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
        match self.bar.take() {
            Some(bar) => {
                bar.set_style(
                    ProgressStyle::with_template(" {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.finish_with_message(msg.to_string());
            }
            None => eprintln!(" {msg}"),
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if !self.done {
            let msg = format!("✗ {} failed after {:.1}s", self.name, self.elapsed_secs());
            self.finish(&msg);
        }
    }
}

/// Prints a one-line note for something already in the cache.
pub fn cached(name: &str, path: &std::path::Path) {
    eprintln!(" ✓ {name} (cached: {})", path.display());
}
