//! The published JSON Schemas under `lab/schemas/<lab>/<file>.schema.json` are the ones the types
//! generate (`kca-webhook-lab schema NAME` prints the same), and so are the output schemas
//! `lab/schemas/version.schema.json` (`version -o json`), `grade.schema.json` (`grade -o json`)
//! and `grade-many.schema.json` (`grade-many -o json`). `UPDATE_SCHEMAS=1` rewrites the stale
//! ones, and the test still fails that run (as rust-analyzer's `ensure_file_contents` does), so an
//! update is never reported as a pass.

use std::path::Path;

use lab::inputs::{InputFile, schema};

#[test]
fn published_schemas_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let mut stale = Vec::new();
    // One directory per lab of the registry, named by its wire name.
    for lab in lab::acts::LABS {
        let dir = lab.as_str();
        for file in InputFile::all(lab) {
            let name = file.file_name().replace(".json", ".schema.json");
            let path = root.join(dir).join(&name);
            let text = format!("{}\n", serde_json::to_string_pretty(&schema(file)).unwrap());
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(format!("{dir}/{name}"));
                if std::env::var_os("UPDATE_SCHEMAS").is_some() {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, &text).unwrap();
                }
            }
        }
    }
    // No directory of a lab the registry does not have: the nightly workflow runs a lab per
    // directory here (its `labs` job's output).
    let labs: Vec<&str> = lab::acts::LABS.iter().map(|l| l.as_str()).collect();
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() && !labs.contains(&name.as_str()) {
            stale.push(format!(
                "{name}/ (no lab {name} in the registry: remove it)"
            ));
        }
    }
    for (name, schema) in [
        ("version.schema.json", lab::version::schema()),
        ("grade.schema.json", lab::report::grades::schema()),
        ("grade-many.schema.json", lab::report::class::schema()),
    ] {
        let path = root.join(name);
        let text = format!("{}\n", serde_json::to_string_pretty(&schema).unwrap());
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(name.to_owned());
            if std::env::var_os("UPDATE_SCHEMAS").is_some() {
                std::fs::write(&path, &text).unwrap();
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale schemas {stale:?} ({}): UPDATE_SCHEMAS=1 cargo test -p lab --test schemas rewrites them, then run it again",
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            "rewritten now"
        } else {
            "not rewritten"
        }
    );
}
