//! `kca-webhook-lab grade-many DIR… [-o table|csv|json|html] [--reports DIR]`: grades a class's
//! work directories offline (no cluster access) and writes one table, a row per directory
//! ([`lab_core::report::class`]).
//!
//! Memory is bounded by one work directory: each is read ([`GradeInput::load`]), graded, its
//! report written (with `--reports`), its row written to the output and flushed, and everything
//! of it dropped before the next is read; only the names already given to reports are kept (a
//! few bytes per student). A directory that cannot be read (missing, not a directory, a listing
//! refused) is a row of its own with the error, and the rest go on. A progress line goes to
//! stderr ([`Progress`]).
//!
//! The directories are the students' own, and `grade-many` often runs as root: each is read
//! through a copy made by descriptor ([`snapshot`]): the path walked from `/` with
//! `O_DIRECTORY | O_NOFOLLOW` at every component, then its `*.json` files and `evidence/*.json`
//! opened relative to those fds with `O_NOFOLLOW` (a symlink anywhere is refused, so no file
//! outside a student's directory reaches a report), each at most [`lab_core::files::JSON_BOUND`]
//! bytes and at most [`MAX_FILES`] of them, into a private temporary directory graded in its
//! place (docs/student.md, "Scripts, CI and a class").
//!
//! Which lab: `--lab`, else each directory's own (its first readable evidence file), else lab B,
//! as `grade` does. Exit code: 0 when every row passed, 1 otherwise.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use lab_core::evidence::Lab;
use lab_core::grade::{self, GradeInput};
use lab_core::messages::class as words;
use lab_core::report::class::{self, ClassRow, Format, Totals};
use lab_core::text::Lang;
use lab_core::workdir::Workdir;

use crate::error::LabError;

/// What `grade-many` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// The work directories, in the order given.
    pub dirs: Vec<PathBuf>,
    /// `--lab`, else each directory's own.
    pub lab: Option<Lab>,
    /// `-o`.
    pub format: Format,
    /// Language of the cells and lines.
    pub lang: Lang,
    /// `--reports DIR`: write each student's one-page report there as `<student>.html` and link
    /// it (relative to DIR); without it, a directory's own `report.html` is linked when present.
    pub reports: Option<PathBuf>,
}

/// The progress line on stderr: on a terminal one line rewritten in place; otherwise (a log) a
/// line at every tenth of the directories and at the last.
#[derive(Debug)]
pub struct Progress {
    /// Whether stderr is a terminal.
    pub terminal: bool,
    /// The language of the line.
    pub lang: Lang,
}

impl Progress {
    fn show(&self, done: usize, total: usize, name: &str) {
        let line = words::progress(done, total, name);
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[K{}", line.get(self.lang));
            if done == total {
                let _ = writeln!(err);
            }
        } else if done == total || done.is_multiple_of(total.div_ceil(10).max(1)) {
            let _ = writeln!(err, "{}", line.get(self.lang));
        }
    }
}

/// Grades every directory of `opts` in turn, writing the table to `out` as it goes; returns the
/// exit code (0 every row passed, 1 otherwise) and the totals.
///
/// Errors: `out` cannot be written (a closed pipe ends the table early without an error), or
/// `--reports`' directory cannot be created or written.
pub fn run(
    opts: &Options,
    out: &mut dyn Write,
    progress: &Progress,
) -> Result<(i32, Totals), LabError> {
    let stdout = |e| LabError::io("<stdout>")(e);
    if let Some(r) = &opts.reports {
        std::fs::create_dir_all(r).map_err(LabError::io(r))?;
    }
    let mut totals = Totals::default();
    let mut used = BTreeSet::new();
    let emit = |out: &mut dyn Write, text: &str| -> Result<bool, LabError> {
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(stdout(e)),
        }
    };
    if !emit(out, &class::header(opts.format, opts.lang))? {
        return Ok((1, totals));
    }
    for (i, dir) in opts.dirs.iter().enumerate() {
        let row = grade_one(dir, opts, &mut used)?;
        totals.add(&row);
        progress.show(i + 1, opts.dirs.len(), &row.student);
        if !emit(out, &class::row(opts.format, &row, i, opts.lang))? {
            return Ok((1, totals));
        }
    }
    emit(out, &class::footer(opts.format, totals, opts.lang))?;
    let all = totals.rows > 0 && totals.passed == totals.rows;
    Ok((if all { 0 } else { 1 }, totals))
}

/// `grade-many` as the command line asks: the table to stdout, the progress line and the closing
/// line to stderr; returns the exit code ([`run`]).
///
/// Errors: as [`run`].
pub fn main(
    dirs: &[PathBuf],
    lab: Option<Lab>,
    format: Format,
    lang: Lang,
    reports: Option<&Path>,
) -> Result<i32, LabError> {
    use std::io::IsTerminal;
    let opts = Options {
        dirs: dirs.to_vec(),
        lab,
        format,
        lang,
        reports: reports.map(Path::to_path_buf),
    };
    let progress = Progress {
        terminal: std::io::stderr().is_terminal(),
        lang,
    };
    let mut stdout = std::io::stdout().lock();
    let (code, totals) = run(&opts, &mut stdout, &progress)?;
    if matches!(format, Format::Csv | Format::Json) {
        let line = words::summary(totals.rows, totals.passed, totals.failed, totals.unreadable);
        eprintln!("{}", line.get(lang));
    }
    Ok(code)
}

/// The directory's own name, e.g. `alice` of `class/alice/`.
fn student(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Why `dir` cannot be graded, if it cannot: missing, not a directory, or its listing refused.
fn unreadable(dir: &Path) -> Option<String> {
    match std::fs::metadata(dir) {
        Err(e) => Some(e.to_string()),
        Ok(m) if !m.is_dir() => Some("not a directory".to_owned()),
        Ok(_) => std::fs::read_dir(dir).err().map(|e| e.to_string()),
    }
}

/// The most files [`snapshot`] copies from one work directory (its inputs and evidence are about
/// twenty; more is not a work directory).
pub const MAX_FILES: usize = 64;

/// Opens `path` as a directory by walking from `/` (or from the current directory for a relative
/// path) one component at a time with `O_DIRECTORY | O_NOFOLLOW`, so that no symlink on the way
/// is followed. `..` is refused.
///
/// Errors: a text naming the component and why (e.g. `ELOOP`: a symlink).
fn open_dir_nofollow(path: &Path) -> Result<rustix::fd::OwnedFd, String> {
    use rustix::fs::{CWD, Mode, OFlags, openat};
    use std::path::Component;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let start = if path.is_absolute() { "/" } else { "." };
    let mut fd = openat(CWD, start, flags, Mode::empty()).map_err(|e| format!("{start}: {e}"))?;
    let mut walked = PathBuf::from(start);
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => {
                walked.push(n);
                fd = openat(&fd, n, flags, Mode::empty()).map_err(|e| {
                    format!(
                        "{}: {e} (not followed: a symlink or not a directory)",
                        walked.display()
                    )
                })?;
            }
            Component::ParentDir | Component::Prefix(_) => {
                return Err(format!(
                    "{}: `..` is not walked; give the directory itself",
                    path.display()
                ));
            }
        }
    }
    Ok(fd)
}

/// Copies the regular `*.json` files of the open directory `from` (opened relative to it with
/// `O_NOFOLLOW | O_NONBLOCK`, each at most [`lab_core::files::JSON_BOUND`] bytes) into `to`.
/// `shown` names the directory in errors; `count` is the running total against [`MAX_FILES`].
///
/// Errors: a text naming the file and why (a symlink, not a regular file, too large, too many).
fn copy_json_files(
    from: &rustix::fd::OwnedFd,
    shown: &Path,
    to: &Path,
    count: &mut usize,
) -> Result<(), String> {
    use rustix::fs::{Mode, OFlags, openat};
    use std::io::Read;
    let listing =
        rustix::fs::Dir::read_from(from).map_err(|e| format!("{}: {e}", shown.display()))?;
    for entry in listing {
        let entry = entry.map_err(|e| format!("{}: {e}", shown.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name.starts_with('.') {
            continue;
        }
        let file_shown = shown.join(&name);
        *count += 1;
        if *count > MAX_FILES {
            return Err(format!(
                "{}: more than {MAX_FILES} JSON files",
                shown.display()
            ));
        }
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = openat(from, entry.file_name(), flags, Mode::empty()).map_err(|e| {
            format!(
                "{}: {e} (not followed: a symlink is refused)",
                file_shown.display()
            )
        })?;
        let file = std::fs::File::from(fd);
        let meta = file
            .metadata()
            .map_err(|e| format!("{}: {e}", file_shown.display()))?;
        let bound = lab_core::files::JSON_BOUND;
        if !meta.is_file() {
            return Err(format!("{}: not a regular file", file_shown.display()));
        }
        if meta.len() > bound {
            return Err(format!(
                "{}: {} bytes, more than {bound}",
                file_shown.display(),
                meta.len()
            ));
        }
        let mut bytes = Vec::new();
        file.take(bound + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{}: {e}", file_shown.display()))?;
        if bytes.len() as u64 > bound {
            return Err(format!(
                "{}: grew past {bound} bytes while read",
                file_shown.display()
            ));
        }
        std::fs::write(to.join(&name), bytes).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    Ok(())
}

/// A private copy of what grading reads from the work directory `dir` (its `*.json` and
/// `evidence/*.json`), made by descriptor as the module docs say, in a new temporary directory
/// (`0700`, removed when the value is dropped). A missing `evidence/` is copied as missing.
///
/// Errors: a text for the class table's row: the component or file refused and why.
fn snapshot(dir: &Path) -> Result<tempfile::TempDir, String> {
    use rustix::fs::{Mode, OFlags, openat};
    let root = open_dir_nofollow(dir)?;
    let copy = tempfile::Builder::new()
        .prefix(".kca-grade-many-")
        .tempdir()
        .map_err(|e| format!("a temporary directory: {e}"))?;
    let mut count = 0;
    copy_json_files(&root, dir, copy.path(), &mut count)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match openat(&root, "evidence", flags, Mode::empty()) {
        Ok(ev) => {
            let to = copy.path().join("evidence");
            std::fs::create_dir(&to).map_err(|e| format!("{}: {e}", to.display()))?;
            copy_json_files(&ev, &dir.join("evidence"), &to, &mut count)?;
        }
        Err(rustix::io::Errno::NOENT) => {}
        Err(e) => {
            return Err(format!(
                "{}: {e} (not followed: a symlink or not a directory)",
                dir.join("evidence").display()
            ));
        }
    }
    Ok(copy)
}

/// The lab of the first readable evidence file of `wd`, else lab B.
fn lab_of(wd: &Workdir) -> Lab {
    (1..=lab_core::acts::max_count())
        .find_map(|act| wd.read_evidence(act).ok().map(|l| l.evidence.lab))
        .unwrap_or(Lab::B)
}

/// A file name for `student`'s report: `[A-Za-z0-9._-]` kept, anything else `_`, and `-2`, `-3`…
/// when taken already.
fn report_name(student: &str, used: &mut BTreeSet<String>) -> String {
    let base: String = student
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut name = base.clone();
    let mut n = 1;
    while !used.insert(name.clone()) {
        n += 1;
        name = format!("{base}-{n}");
    }
    name
}

/// Reads, grades and (with `--reports`) writes the report of one directory, and returns its row;
/// nothing of the directory is kept after.
fn grade_one(
    dir: &Path,
    opts: &Options,
    used: &mut BTreeSet<String>,
) -> Result<ClassRow, LabError> {
    let name = student(dir);
    let shown = dir.display().to_string();
    if let Some(e) = unreadable(dir) {
        return Ok(ClassRow::unreadable(&name, &shown, e));
    }
    let copy = match snapshot(dir) {
        Ok(c) => c,
        Err(e) => return Ok(ClassRow::unreadable(&name, &shown, e)),
    };
    let wd = Workdir::new(copy.path());
    let lab = opts.lab.unwrap_or_else(|| lab_of(&wd));
    let input = GradeInput::load(&wd, lab);
    let grades = grade::grade_all(lab, &input);
    let report = match &opts.reports {
        Some(r) => {
            let file = format!("{}.html", report_name(&name, used));
            let page = lab_core::report::render(lab, &input, &grades, opts.lang);
            lab_core::report::write_file(&r.join(&file), page.as_bytes())?;
            Some(file)
        }
        None => {
            let own = dir.join("report.html");
            own.is_file().then(|| own.display().to_string())
        }
    };
    Ok(ClassRow::graded(
        &name,
        &shown,
        lab.as_str(),
        &grades,
        report,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symlink in a student's directory (to a file the student could not read, as root grades
    /// it) is refused: the row is unreadable and nothing of the target is copied.
    #[test]
    fn a_symlinked_evidence_file_is_refused_and_never_read() {
        let secret = tempfile::tempdir().unwrap();
        std::fs::write(secret.path().join("01.json"), r#"{"secret": "root-only"}"#).unwrap();
        let student = tempfile::tempdir().unwrap();
        std::fs::create_dir(student.path().join("evidence")).unwrap();
        std::os::unix::fs::symlink(
            secret.path().join("01.json"),
            student.path().join("evidence/01.json"),
        )
        .unwrap();
        let e = snapshot(student.path()).unwrap_err();
        assert!(
            e.contains("evidence/01.json") && e.contains("symlink"),
            "{e}"
        );
        // The work directory itself reached through a link is refused the same way.
        let link = secret.path().join("via-link");
        std::os::unix::fs::symlink(student.path(), &link).unwrap();
        let e = snapshot(&link).unwrap_err();
        assert!(e.contains("via-link"), "{e}");
        // A plain directory is copied: its inputs and evidence, nothing else.
        let plain = tempfile::tempdir().unwrap();
        std::fs::create_dir(plain.path().join("evidence")).unwrap();
        std::fs::write(plain.path().join("scope.json"), "{}").unwrap();
        std::fs::write(plain.path().join("evidence/01.json"), "{}").unwrap();
        std::fs::write(plain.path().join("notes.txt"), "x").unwrap();
        let copy = snapshot(plain.path()).unwrap();
        assert!(copy.path().join("scope.json").is_file());
        assert!(copy.path().join("evidence/01.json").is_file());
        assert!(!copy.path().join("notes.txt").exists());
    }

    #[test]
    fn report_names_are_safe_and_distinct() {
        let mut used = BTreeSet::new();
        assert_eq!(report_name("alice", &mut used), "alice");
        assert_eq!(report_name("alice", &mut used), "alice-2");
        assert_eq!(report_name("山田 太郎/../x", &mut used), "______.._x");
    }
}
