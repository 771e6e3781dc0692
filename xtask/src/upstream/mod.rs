//! Upstream builds: owned by the upstream-build work (issue 4). Placeholder so the workspace compiles.

/// `cargo xtask upstream …`
#[derive(clap::Args, Debug)]
pub struct UpstreamCmd {}

impl UpstreamCmd {
    /// Runs the subcommand.
    pub fn run(self) -> anyhow::Result<()> {
        anyhow::bail!("upstream builds are not implemented yet")
    }
}
