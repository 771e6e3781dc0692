//! Step status lines (kind's `Start`/`End`): `• msg ...` then `✓ msg (12.3s)` or `✗ msg`.
//!
//! A [`Step`] prints its start, and prints `✗` if dropped without [`Step::ok`],
//! so an early `?` return is visible. Output goes to stderr.

use std::time::Instant;

/// One visible step of a long task.
pub struct Step {
    msg: String,
    started: Instant,
    done: bool,
}

impl Step {
    /// Prints `• {msg} ...` to stderr and starts the clock.
    pub fn start(msg: impl Into<String>) -> Step {
        let msg = msg.into();
        eprintln!(" • {msg} ...");
        Step {
            msg,
            started: Instant::now(),
            done: false,
        }
    }

    /// Seconds since the step started.
    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Marks the step as successful: prints `✓ {msg} ({elapsed}s)`.
    pub fn ok(mut self) {
        self.done = true;
        eprintln!(" ✓ {} ({:.1}s)", self.msg, self.elapsed_secs());
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if !self.done {
            eprintln!(" ✗ {} ({:.1}s)", self.msg, self.elapsed_secs());
        }
    }
}
