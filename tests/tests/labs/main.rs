//! The labs' ordered cluster tests, side by side: each lane's rows in their order on a fresh
//! embedded cluster of its own, the four lanes' clusters up at the same time ([`tests::lanes`]).
//!
//! - `lab_a::…` ([`lab_a`]): the smoke rows, lab A's acts and its fault rows, on cluster
//!   `test-a-shared`;
//! - `lab_b::…` ([`lab_b`]): lab B's acts, Kyverno's logs, the runner SIGKILLed mid-freeze and the
//!   fault rows, on `test-lab-b`;
//! - `lab_c::…` ([`lab_c`]): lab C's acts and the heal of an abandoned lab C, on `test-lab-c`;
//! - `audit::…` ([`audit`]): `kca-webhook-lab audit`, then lab A's forced act 2 failure, on
//!   `test-audit`; then, on a cluster of its own once `test-audit` is down, `kubeconfig::…`
//!   ([`kubeconfig`]): lab B through the `kubeconfig` backend on an existing cluster `kcfg-b`.
//!
//! Four lanes, so at most four clusters at once, with about even row times (2026-12-03, the rows
//! after each cluster's `up`: lab A about 185 s, lab B 200 s, lab C 165 s, audit then kubeconfig
//! 160 s; docs/tests.md), so the binary is bounded by its longest lane, not by a sum.
//!
//! Each lab waits most of its time (freeze windows, scale-downs, Lease takeovers, Kyverno
//! starts), so the labs overlap here rather than one binary after another. `cargo test -p tests
//! --test labs -- lab_b::` runs one lab alone; a lab none of whose rows is selected brings no
//! cluster up. Needs Linux and root; fails (never skips) otherwise.

mod audit;
mod kubeconfig;
mod lab_a;
mod lab_b;
mod lab_c;

fn main() {
    if let Some(code) = lab_b::runner_child() {
        std::process::exit(code);
    }
    let args = libtest_mimic::Arguments::from_args();
    let lanes = vec![
        lab_a::lane(),
        lab_b::lane(),
        lab_c::lane(),
        audit::lane().then(kubeconfig::lane()),
    ];
    tests::lanes::run(args, lanes);
}
