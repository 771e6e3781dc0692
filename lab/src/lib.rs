//! kca-webhook-lab: observe, honestly, what a policy engine's admission webhook does
//! when it disappears (lab A), freezes (lab B) or recovers.
//!
//! The crate is both the student tool `kca-webhook-lab` (`inspect`, `act N`,
//! `grade N`, `digest PATH`, `schema NAME`, `check FILE`) and the library the
//! maintainers' `xtask` and the integration tests call.
//!
//! Pure parts (no I/O with the cluster): [`json`] (the one reader of input and evidence files),
//! [`digest`], [`inputs`], [`evidence`],
//! [`classify`], [`rules`] (what acts and graders share), [`grade`], [`messages`], [`report`] (the HTML record, JUnit). Edge parts: [`workdir`] (files),
//! [`cluster`] (the only code that talks to the API server), [`cri`] (the node's
//! container runtime), [`probe`], [`faults`] and the acts in [`labs`].

pub mod audit;
pub mod classify;
pub mod cluster;
pub mod cri;
pub mod diagnostics;
pub mod digest;
pub mod error;
pub mod evidence;
pub mod explain;
pub mod facts;
pub mod faults;
pub mod grade;
pub mod inputs;
pub mod json;
pub mod labs;
pub mod messages;
pub mod metrics;
pub mod pidmap;
pub mod probe;
pub mod report;
pub mod rules;
pub mod signals;
pub mod workdir;
