//! Shell completions and man pages of a clap command, by clap's own generators
//! (`clap_complete`, `clap_mangen`): `kca-webhook-lab completion bash|zsh|fish` prints a script,
//! the hidden `kca-webhook-lab man-pages DIR` writes one roff page per visible command, and
//! `cargo xtask dist` calls both for the release (and the same functions for `cargo xtask`'s own
//! command). The command is the caller's (`main.rs`'s `Cli::command()`), so the scripts and pages
//! always match the parser.

use std::path::{Path, PathBuf};

use crate::error::LabError;

/// The shells `completion` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// bash (`source <(kca-webhook-lab completion bash)`).
    Bash,
    /// zsh (a `_kca-webhook-lab` file on `$fpath`).
    Zsh,
    /// fish (`~/.config/fish/completions/kca-webhook-lab.fish`).
    Fish,
}

impl Shell {
    /// Every shell, in the order `cargo xtask dist` writes them.
    pub const ALL: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

    /// The file name a package installs the script of `bin` under for this shell
    /// (`kca-webhook-lab.bash`, `_kca-webhook-lab`, `kca-webhook-lab.fish`).
    pub fn file_name(self, bin: &str) -> String {
        match self {
            Shell::Bash => format!("{bin}.bash"),
            Shell::Zsh => format!("_{bin}"),
            Shell::Fish => format!("{bin}.fish"),
        }
    }
}

/// The completion script of `cmd`, invoked as `bin`, for `shell`.
pub fn completion(mut cmd: clap::Command, bin: &str, shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    match shell {
        Shell::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, bin, &mut out),
        Shell::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, bin, &mut out),
        Shell::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, bin, &mut out),
    }
    out
}

/// Writes the man pages of `cmd` (section 1: `<name>.1`, and `<name>-<sub>.1` for each visible
/// subcommand, recursively) into `dir`, creating it; returns the files written, sorted.
///
/// Errors: `dir` cannot be created or a page cannot be written (named).
pub fn man_pages(cmd: clap::Command, dir: &Path) -> Result<Vec<PathBuf>, LabError> {
    std::fs::create_dir_all(dir).map_err(LabError::io(dir))?;
    clap_mangen::generate_to(cmd, dir).map_err(LabError::io(dir))?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(LabError::io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .collect();
    files.sort();
    Ok(files)
}
