//! Placeholder: the freeze fault and its watchdog (owned by the lab-B work).

/// Entry point of the detached freeze watchdog process (`kca-webhook-lab watchdog-freeze ARGS…`).
/// Returns the process exit code.
pub fn watchdog_main(args: &[String]) -> i32 {
    let _ = args;
    eprintln!("watchdog-freeze: not implemented yet");
    2
}
