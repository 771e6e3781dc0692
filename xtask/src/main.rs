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
    /// The labs end to end on fresh clusters: `lab run [--lab <lab>|all]`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// `bin` run with `args` and `file`: `Err` naming it when it failed or wrote to stderr.
    fn parses(bin: &str, args: &[&str], file: &Path) -> Result<(), String> {
        let mut cmd = Command::new(bin);
        cmd.args(args).arg(file);
        let out = xtask::command::run_unchecked(cmd).map_err(|e| format!("{e}"))?;
        if out.status.success() && out.stderr.is_empty() {
            Ok(())
        } else {
            Err(format!("{bin} {args:?} {}: {}", file.display(), out.stderr))
        }
    }

    /// What `cargo xtask dist` writes for `cargo xtask` itself (`xtask_shell_files`): a completion
    /// script per shell, parsed by its own shell, and a man page per command, rendered by groff
    /// without a warning (as `lab/tests/scripting.rs` checks the student tool's).
    #[test]
    fn cargo_xtasks_completions_and_man_pages_parse() {
        use xtask::upstream::debian;
        if debian::is_debian() {
            debian::ensure(
                debian::SCRIPTING,
                "cargo xtask's completion and man page test",
                false,
            )
            .unwrap();
        }
        let tmp = tempfile::tempdir().unwrap();
        xtask::dist::xtask_shell_files(Flags::command(), tmp.path()).unwrap();
        let comp = tmp.path().join("completions");
        for (shell, file, args) in [
            ("bash", "cargo-xtask.bash", &["-n"][..]),
            ("zsh", "_cargo-xtask", &["-n"]),
            ("fish", "cargo-xtask.fish", &["--no-execute"]),
        ] {
            let script = std::fs::read_to_string(comp.join(file)).unwrap();
            assert!(
                script.contains("matrix") && script.contains("upstream"),
                "{shell}: the subcommands are completed"
            );
            parses(shell, args, &comp.join(file)).unwrap();
        }
        let man = tmp.path().join("man/man1");
        let mut pages: Vec<String> = std::fs::read_dir(&man)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        pages.sort();
        for want in [
            "cargo-xtask.1",
            "cargo-xtask-dist.1",
            "cargo-xtask-matrix.1",
        ] {
            assert!(pages.iter().any(|p| p == want), "{want} in {pages:?}");
        }
        for p in &pages {
            parses(
                "groff",
                &["-k", "-man", "-Tutf8", "-ww", "-z"],
                &man.join(p),
            )
            .unwrap();
        }
    }
}
