//! kine: the etcd API over SQLite (k3s's default datastore), on the node namespace's loopback.

use anyhow::Result;

use super::{Args, Daemon, DaemonSpec, Readiness, TICK, p, spec};
use crate::cluster::config::{KINE_PORT, Runtime};
use crate::cluster::{netns, ready};

/// kine in the registry: first to start, last to stop; ready when its port accepts a connection.
pub const DAEMON: Daemon = Daemon {
    name: "kine",
    programs: &["kine"],
    spec: daemon,
    after: &[],
    before_start: None,
    ready: Some(Readiness {
        what: |_| format!("kine (127.0.0.1:{KINE_PORT} in the node namespace)"),
        probe: listening,
        tick: TICK,
        timing: None,
        on_ready: None,
    }),
    host_wide: false,
    stop_order: 60,
};

/// A TCP connect to kine's port inside the node's network namespace.
fn listening(rt: &Runtime) -> Result<String> {
    netns::in_netns(&rt.netns, || ready::tcp(&format!("127.0.0.1:{KINE_PORT}")))?;
    Ok(String::new())
}

/// kine's flags (`pkg/app/app.go`, kine v0.17.5).
pub fn args(rt: &Runtime) -> Args {
    let db = p(rt.path("kine/state.db"));
    Args::from([
        ("listen-address", format!("127.0.0.1:{KINE_PORT}")),
        // The DSN kine uses by default for SQLite, with our path (kine's `pkg/drivers/sqlite`).
        (
            "endpoint",
            format!(
                "sqlite://{db}?_journal=WAL&cache=shared&_busy_timeout=30000&_txlock=immediate"
            ),
        ),
        // "set 0 to disable metrics serving" (kine's flag help); avoids a listener on :8080.
        ("metrics-bind-address", "0".into()),
    ])
}

/// The kine daemon, with umask `0o077`: SQLite creates `state.db` and its `-wal`/`-shm` files
/// with mode `0644 & ~umask`, and the database holds every Secret of the cluster.
pub fn daemon(rt: &Runtime) -> DaemonSpec {
    let mut d = spec(rt, "kine", "kine", &args(rt));
    d.umask = Some(0o077);
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn kine_args() {
        let a = args(&crate::cluster::daemons::test_runtime());
        assert_eq!(a["listen-address"], "127.0.0.1:2379");
        assert!(a["endpoint"].starts_with("sqlite:///s/t/kine/state.db?"));
        assert_eq!(a["metrics-bind-address"], "0");
    }
}
