//! kca-webhook-lab's pure core: everything that reads, checks and explains evidence without
//! talking to a cluster. It depends on neither the kube client nor tokio (see `Cargo.toml`), so
//! the compiler keeps cluster I/O out; file reads and writes of the work dir ([`workdir`]) and the
//! audit log reader ([`audit::Cursor`]) are the only I/O.
//!
//! - [`json`]: the one reader of input and evidence files; [`digest`]: canonical digests;
//!   [`files`]: bounded reads of regular files only, and the directories root may trust.
//! - [`inputs`] (and their schemas), [`evidence`], [`facts`]: the formats.
//! - [`derive`](mod@derive): each raw record kind → its fact, the one mapping the acts write and the graders
//!   recompute.
//! - [`classify`]: an API answer → outcome; [`explain`]: the same, in words.
//! - [`acts`]: the acts registry (every lab and its acts, its inputs, grader, test name).
//! - [`wait`]: the one bounded poll (backon), keeping the last state seen for its timeout error.
//! - [`rules`]: what acts and graders share; [`grade`]: the graders; [`admission`]: which
//!   requests a webhook registration is called for (the API server's matching rules).
//! - [`metrics`], [`audit`]: the API server's own account of each webhook call, parsed.
//! - [`diagnostics`]: the failure summary's format; [`report`]: the HTML record, JUnit.
//! - [`messages`]: the student-facing words (ja/en), by topic, in the vocabulary of [`text`];
//!   [`error`]: the one error type, the ground floor (ARCHITECTURE.md, "Layers").
//! - [`webhook_audit`]: `audit`'s judging of a cluster's webhook registrations; [`policy_audit`]:
//!   of its ValidatingAdmissionPolicies and MutatingAdmissionPolicies and their bindings.
//!
//! The `lab` crate re-exports every module under the same name (`lab::grade`, `lab::evidence`, …).

// The unit tests include xtask's answer keys (`xtask/src/lab_run/reference.rs`), written against
// `lab::…` paths (the `lab` crate re-exports this one's modules under the same names).
#[cfg(test)]
extern crate self as lab;

pub mod acts;
pub mod admission;
pub mod audit;
pub mod classify;
pub mod derive;
pub mod diagnostics;
pub mod digest;
pub mod error;
pub mod evidence;
pub mod explain;
pub mod facts;
pub mod files;
pub mod grade;
pub mod inputs;
pub mod json;
pub mod messages;
pub mod metrics;
pub mod policy_audit;
pub mod report;
pub mod rules;
pub mod text;
pub mod wait;
pub mod webhook_audit;
pub mod workdir;
