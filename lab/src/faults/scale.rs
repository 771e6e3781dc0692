//! Placeholder: the scale-down fault and its recovery watcher (owned by the lab-A work).

/// Entry point of the detached recovery watcher process (`kca-webhook-lab watcher-scale ARGS…`).
/// Returns the process exit code.
pub fn watcher_main(args: &[String]) -> i32 {
    let _ = args;
    eprintln!("watcher-scale: not implemented yet");
    2
}
