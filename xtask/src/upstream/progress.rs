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
    /// Packages in the program's build graph (`go list -deps`), 0 when unknown.
    total: usize,
}

/// `n/N packages, ETA ~Ms` from the packages compiled so far and the elapsed time: the rate so
/// far times the packages left. An upper bound: packages Go finds in its build cache are never
/// printed by `go build -v`, so they count as left until the build ends. Without a total (0) or
/// before the first package, no ETA.
pub fn eta_text(compiled: usize, total: usize, elapsed_secs: f64) -> String {
    if total == 0 {
        return format!("{compiled} packages compiled");
    }
    if compiled == 0 || compiled >= total {
        return format!("{compiled}/{total} packages");
    }
    let left = (total - compiled) as f64 * elapsed_secs / compiled as f64;
    format!("{compiled}/{total} packages, ETA ≤ {}", human_secs(left))
}

/// `75` → `1m15s`, `40` → `40s`.
fn human_secs(s: f64) -> String {
    let s = s.round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
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
            crate::status_line!(" • building {name} ({detail}) ...");
            let (tx, rx) = mpsc::channel::<()>();
            let name = name.to_string();
            let started = task.started;
            task.stop = Some(tx);
            task.heartbeat = Some(thread::spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(HEARTBEAT) {
                    let (n, total, last) = match shared.lock() {
                        Ok(s) => (s.compiled, s.total, s.last.clone()),
                        Err(_) => (0, 0, String::new()),
                    };
                    let secs = started.elapsed().as_secs_f64();
                    crate::status_line!(
                        "   … still building {name}: {secs:.0}s, {}, last {last}",
                        eta_text(n, total, secs)
                    );
                }
            }));
        }
        task
    }

    /// Sets the number of packages in the program's build graph (for the ETA).
    pub fn set_total(&self, total: usize) {
        if let Ok(mut s) = self.shared.lock() {
            s.total = total;
        }
    }

    /// Records a package Go reported compiling (`go build -v` prints one
    /// import path per line).
    pub fn compiled(&self, package: &str) {
        let (n, total) = match self.shared.lock() {
            Ok(mut s) => {
                s.compiled += 1;
                s.last = package.to_string();
                (s.compiled, s.total)
            }
            Err(_) => (0, 0),
        };
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{}, {package}",
                eta_text(n, total, self.elapsed_secs())
            ));
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
            None => crate::status_line!(" {msg}"),
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
    crate::status::line(&format!(" ✓ {name} (cached: {})", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_is_the_rate_so_far_times_what_is_left() {
        assert_eq!(eta_text(100, 400, 60.0), "100/400 packages, ETA ≤ 3m00s");
        assert_eq!(eta_text(300, 400, 60.0), "300/400 packages, ETA ≤ 20s");
        assert_eq!(eta_text(0, 400, 5.0), "0/400 packages");
        assert_eq!(eta_text(400, 400, 5.0), "400/400 packages");
        assert_eq!(eta_text(7, 0, 5.0), "7 packages compiled");
    }
}
