//! The embedded cluster: owned by the cluster work (issue 5). Placeholder so the workspace compiles.

/// `cargo xtask cluster …`
#[derive(clap::Args, Debug)]
pub struct ClusterCmd {}

impl ClusterCmd {
    /// Runs the subcommand.
    pub fn run(self) -> anyhow::Result<()> {
        anyhow::bail!("the embedded cluster is not implemented yet")
    }
}
