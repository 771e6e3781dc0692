//! kca-webhook-lab: observe, honestly, what a policy engine's admission webhook does
//! when its admission controller is scaled away (lab A), frozen (lab B) or one of three replicas
//! frozen (lab C), and how it recovers.
//!
//! The crate is both the student tool `kca-webhook-lab` (`inspect`, `act N`,
//! `grade N`, `digest PATH`, `schema NAME`, `check FILE`) and the library the
//! maintainers' `xtask` and the integration tests call.
//!
//! Pure parts live in the `lab-core` crate (no kube client, no tokio) and are re-exported here
//! under their own names: [`json`] (the one reader of input and evidence files), [`digest`], [`derive`](mod@derive),
//! [`inputs`], [`evidence`], [`facts`], [`classify`], [`explain`], [`admission`], [`rules`] (what acts and
//! graders share), [`grade`], [`text`] and [`messages`], [`report`] (the HTML record, JUnit), [`audit`],
//! [`error`], [`workdir`] and [`files`] (bounded reads, trusted directories). Edge parts, here: [`cluster`] (the only code that talks to
//! the API server), [`cri`] (the node's container runtime), [`metrics`] and [`diagnostics`]
//! (the reads; their pure halves are in the core), [`probe`], [`faults`], the acts in [`labs`] and the runners of their step kinds in [`steps`];
//! [`audit_cmd`] is `audit` (reads every webhook registration; the judging is [`webhook_audit`]);
//! [`help`] is the student tool's Japanese `--help`; [`version`] (`version -o json|yaml`),
//! [`shell`] (completions, man pages), [`grade_out`] (`grade -o json|junit`) and [`grade_many`]
//! (a class's work directories in one table) are the commands scripts and packagers use.

pub use lab_core::{
    acts, admission, audit, classify, derive, digest, error, evidence, explain, facts, files,
    grade, inputs, json, messages, policy_audit, report, rules, text, wait, webhook_audit, workdir,
};

pub mod audit_cmd;
pub mod cluster;
pub mod cri;
pub mod diagnostics;
pub mod faults;
pub mod grade_many;
pub mod grade_out;
pub mod help;
pub mod labs;
pub mod metrics;
pub mod pidmap;
pub mod probe;
pub mod shell;
pub mod signals;
pub mod steps;
pub mod version;
