//! `cargo xtask`: one CLI declaration (the subcommands' clap types are in `xtask::flags`), one
//! `match`.

use clap::{CommandFactory, Parser, Subcommand};

/// Maintainers' tasks for kca-webhook-lab.
#[derive(Parser, Debug)]
#[command(name = "cargo xtask", version)]
struct Flags {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Build the upstream programs, images and chart into the machine-level cache.
    Upstream(xtask::flags::UpstreamCmd),
    /// The embedded single-node cluster: up, down, status.
    Cluster(xtask::flags::ClusterCmd),
    /// The labs end to end on fresh clusters: `lab run [--lab a|b|c|all]`.
    Lab(xtask::flags::LabCmd),
    /// Run the labs N times and write a table of every phase against its floor
    /// (`target/bench/<run-id>.{json,md}`).
    Bench(xtask::flags::BenchCmd),
    /// A Debian 12 cgroup v2 guest under qemu running `cluster up` / `lab run` inside
    /// (docs/cgroup.md): `guest run [--step up|lab-a|lab-b|exec:CMD]…`.
    Guest(xtask::flags::GuestCmd),
    /// Build the student tool for release: optimised, statically linked, in an archive with
    /// LICENSE, completions and man pages, with an SBOM, a krew manifest and SHA256SUMS, and
    /// check it runs without a C library (`target/dist-files/`).
    Dist(xtask::flags::DistCmd),
    /// The chosen labs (`--lab`) on each Kubernetes × Kyverno cell and the drift table of the taught facts.
    Matrix(xtask::matrix::MatrixCmd),
    /// Upstream's own admission e2e tests (`e2e.test` of the pinned Kubernetes) on a fresh
    /// embedded node without Kyverno, or any cluster (`--cluster kubeconfig`); last line
    /// `N passed, N failed, N skipped`.
    Conformance(xtask::flags::ConformanceCmd),
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    match flags.cmd {
        Cmd::Upstream(cmd) => cmd.run(),
        Cmd::Cluster(cmd) => cmd.run(),
        Cmd::Lab(cmd) => cmd.run(),
        Cmd::Bench(cmd) => cmd.run(),
        Cmd::Guest(cmd) => cmd.run(),
        // dist writes `cargo xtask`'s own completions and man pages too.
        Cmd::Dist(cmd) => cmd.run(Flags::command()),
        Cmd::Matrix(cmd) => cmd.run(),
        Cmd::Conformance(cmd) => cmd.run(),
    }
}
