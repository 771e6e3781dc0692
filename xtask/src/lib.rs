//! `xtask`: the maintainers' side of kca-webhook-lab, as a library so that the
//! integration tests in `tests/` provision clusters through the same code as
//! `cargo xtask`.
//!
//! - [`upstream`]: builds the real upstream programs (Kubernetes, kine,
//!   containerd, runc, CNI plugins, crictl, Helm, Kyverno) from their Go
//!   modules into a machine-level cache, makes the OCI images and assembles
//!   the Kyverno chart.
//! - [`cluster`]: the embedded backend, a real single-node cluster in its own
//!   network namespace (`up`, `down`, `status`) and a test fixture.
//! - [`backend`]: where a lab run's cluster comes from: embedded, an existing cluster
//!   (kubeconfig), or k3s in Docker.
//! - [`bench`](mod@bench): `cargo xtask bench`, the labs N times against their floors.
//! - [`guest`]: `cargo xtask guest run`, the node in a Debian 12 cgroup v2 guest under qemu.
//! - [`dist`]: `cargo xtask dist`, the student tool as a static release binary with checksums;
//!   [`packaging`]: its archive, krew manifest and SBOM.
//! - [`flags`]: the command line, every subcommand's clap types.
//! - [`lock`]: the machine lock, one cluster at a time on this machine.
//! - [`matrix`]: `cargo xtask matrix`, the chosen labs on Kubernetes × Kyverno cells and the drift
//!   table of the taught facts.

pub mod backend;
pub mod bench;
pub mod cluster;
pub mod command;
pub mod conformance;
pub mod dist;
pub mod flags;
pub mod guest;
pub mod lab_run;
pub mod lock;
pub mod matrix;
pub mod packaging;
pub mod status;
pub mod upstream;
