//! The real lab runs under `fixtures/recorded/` (each a run's work directory copied verbatim; its
//! README says which run).
//!
//! A recording holds the acts the registry ([`lab::acts`]) had when it was recorded: its
//! `evidence/NN.json` files are acts 1..=K. An act added to the registry later is not in it, and
//! cannot be: a recording is what a real cluster answered. So the tests of a recording grade and
//! render the acts it has ([`Recording::acts`], read from its evidence files, never a list kept by
//! hand), and the acts after K are covered by the generated fixture (`fixtures/{a,b}/pass/`, one
//! evidence file per registry act). One test states that rule and prints what each recording does
//! not cover: `grade_recorded.rs`, `recordings_cover_acts_1_to_k_and_the_generated_fixture_the_rest`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lab::evidence::Lab;
use lab::grade::{self, Findings, GradeInput};
use lab::workdir::Workdir;
use serde_json::Value;

/// One recorded real run.
#[derive(Debug, Clone)]
pub struct Recording {
    /// `fixtures/recorded/<name>`.
    pub dir: PathBuf,
    /// The lab its evidence names.
    pub lab: Lab,
    /// The acts it has, `1..=K` in order (from its `evidence/NN.json` files).
    pub acts: Vec<u8>,
}

impl Recording {
    /// Opens `fixtures/<rel>` (e.g. `recorded/b-20261129T153816Z`).
    ///
    /// Panics (a broken fixture) unless its evidence files are `evidence/01.json` to `NN.json`
    /// with no gap, each naming its own act and one lab, and every act is one the registry has.
    pub fn open(rel: &str) -> Recording {
        let dir = super::fixtures_dir().join(rel);
        let mut found: Vec<(u8, Lab)> = Vec::new();
        let evidence = dir.join("evidence");
        for e in
            std::fs::read_dir(&evidence).unwrap_or_else(|e| panic!("{}: {e}", evidence.display()))
        {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let Some(n) = name
                .strip_suffix(".json")
                .and_then(|n| n.parse::<u8>().ok())
            else {
                panic!("{}: not an evidence/NN.json file", p.display());
            };
            let v = lab::json::parse(&std::fs::read(&p).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let lab: Lab = serde_json::from_value(v["lab"].clone())
                .unwrap_or_else(|e| panic!("{}: lab: {e}", p.display()));
            assert_eq!(v["act"], Value::from(n), "{}: act", p.display());
            found.push((n, lab));
        }
        found.sort_by_key(|(n, _)| *n);
        let acts: Vec<u8> = found.iter().map(|(n, _)| *n).collect();
        let Some(&(_, lab)) = found.first() else {
            panic!("{}: no evidence", dir.display());
        };
        assert!(
            found.iter().all(|(_, l)| *l == lab),
            "{}: evidence of two labs: {found:?}",
            dir.display()
        );
        let k = acts.len() as u8;
        assert_eq!(
            acts,
            (1..=k).collect::<Vec<u8>>(),
            "{}: a recording holds acts 1..=K with no gap",
            dir.display()
        );
        assert!(
            acts.iter().all(|a| lab::acts::spec(lab, *a).is_some()),
            "{}: acts {acts:?}, but lab {lab} has {} in the registry",
            dir.display(),
            lab::acts::count(lab)
        );
        Recording { dir, lab, acts }
    }

    /// Every recording under `fixtures/recorded/`, by name.
    pub fn all() -> Vec<Recording> {
        let root = super::fixtures_dir().join("recorded");
        let mut names: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
            .iter()
            .map(|n| Recording::open(&format!("recorded/{n}")))
            .collect()
    }

    /// Its JSON files (relative path → value), for a test that copies and changes them.
    pub fn files(&self) -> BTreeMap<String, Value> {
        super::read_tree(&self.dir)
    }

    /// A copy in a fresh directory with `change` applied to its files, read as `grade` does.
    pub fn copy_with(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, Value>),
    ) -> (tempfile::TempDir, GradeInput) {
        let mut files = self.files();
        change(&mut files);
        let tmp = tempfile::tempdir().unwrap();
        super::write_tree(tmp.path(), &files);
        let input = GradeInput::load(&Workdir::new(tmp.path()), self.lab);
        (tmp, input)
    }

    /// Reads it in place as `grade` does.
    pub fn grade_input(&self) -> GradeInput {
        GradeInput::load(&Workdir::new(&self.dir), self.lab)
    }

    /// The grades of the acts it has, in order (what a test of it asserts on).
    pub fn grade(&self, input: &GradeInput) -> Vec<Findings> {
        self.acts
            .iter()
            .map(|a| grade::grade(self.lab, *a, input))
            .collect()
    }

    /// The registry's acts after its last one (not run when it was recorded).
    pub fn uncovered(&self) -> Vec<u8> {
        lab::acts::numbers(self.lab)
            .filter(|a| !self.acts.contains(a))
            .collect()
    }

    /// Its name (`b-20261129T153816Z`).
    pub fn name(&self) -> String {
        self.dir.file_name().unwrap().to_string_lossy().into_owned()
    }
}
