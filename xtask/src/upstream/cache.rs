//! The machine-level cache: content keys, atomic entries, one builder at a time.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};

use super::components::Family;

/// A family whose binaries are in the cache.
#[derive(Debug, Clone)]
pub struct BuiltFamily {
    /// The family.
    pub family: &'static Family,
    /// Its cache entry, holding one file per program.
    pub dir: PathBuf,
    /// The full cache key (64 hex digits).
    pub key: String,
}

/// A cache key: SHA-256 over named fields, each written as
/// `len(name) name len(value) value` (lengths as 8-byte little-endian), so
/// no two different field lists hash alike. The first field is the entry kind
/// and a format version, so changing how an entry is made invalidates it.
#[derive(Clone)]
pub struct CacheKey {
    hasher: Sha256,
}

impl CacheKey {
    /// Starts a key for entries of `kind` (e.g. `go-family/v1`).
    pub fn new(kind: &str) -> CacheKey {
        let mut k = CacheKey {
            hasher: Sha256::new(),
        };
        k.field("kind", kind.as_bytes());
        k
    }

    /// Adds one named input.
    pub fn field(&mut self, name: &str, value: &[u8]) -> &mut CacheKey {
        for part in [name.as_bytes(), value] {
            self.hasher.update((part.len() as u64).to_le_bytes());
            self.hasher.update(part);
        }
        self
    }

    /// Adds a file's contents under its name.
    ///
    /// # Errors
    /// The file cannot be read (the error names it).
    pub fn file(&mut self, name: &str, path: &Path) -> anyhow::Result<&mut CacheKey> {
        let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(self.field(name, &bytes))
    }

    /// The full SHA-256, 64 lowercase hex digits.
    pub fn hex(&self) -> String {
        hex::encode(self.hasher.clone().finalize())
    }

    /// The short form used in directory names: the first 16 hex digits.
    pub fn short(&self) -> String {
        self.hex()[..16].to_string()
    }
}

/// An opened cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

/// Holds the cache's exclusive lock until dropped.
pub struct CacheLock {
    _file: fs::File,
}

impl Cache {
    /// Creates the cache directory if needed.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn open(root: &Path) -> anyhow::Result<Cache> {
        fs::create_dir_all(root)
            .with_context(|| format!("creating the upstream cache {}", root.display()))?;
        let root = root
            .canonicalize()
            .with_context(|| format!("resolving the upstream cache {}", root.display()))?;
        Ok(Cache { root })
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the exclusive lock on `<root>/.lock`, waiting (and saying so)
    /// while another build holds it. Released on drop or process exit.
    ///
    /// # Errors
    /// The lock file cannot be opened or locked.
    pub fn lock(&self) -> anyhow::Result<CacheLock> {
        let path = self.root.join(".lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                crate::status_line!(
                    " • waiting for another upstream build to finish (lock {}) ...",
                    path.display()
                );
                file.lock()
                    .with_context(|| format!("locking {}", path.display()))?;
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        Ok(CacheLock { _file: file })
    }

    /// Removes what an interrupted build left in `<root>/.tmp` (call with
    /// the lock held: then no other build is writing there).
    ///
    /// # Errors
    /// The directory cannot be removed or recreated.
    pub fn clear_tmp(&self) -> anyhow::Result<()> {
        let tmp = self.root.join(".tmp");
        if tmp.exists() {
            make_writable(&tmp)?;
            fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
        }
        Ok(())
    }

    /// The final path of entry `<prefix>-<key>`.
    pub fn entry(&self, prefix: &str, key: &CacheKey) -> PathBuf {
        self.root.join(format!("{prefix}-{}", key.short()))
    }

    /// A fresh, empty staging directory for entry `name` under `<root>/.tmp`.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn staging(&self, name: &str) -> anyhow::Result<Staging> {
        let dir = self.root.join(".tmp").join(name);
        if dir.exists() {
            make_writable(&dir)?;
            fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Staging { dir: Some(dir) })
    }
}

/// A staging directory: removed on drop unless [`Staging::commit`] renamed it
/// into place, so an error leaves nothing half-written behind.
pub struct Staging {
    dir: Option<PathBuf>,
}

impl Staging {
    /// The staging directory.
    pub fn path(&self) -> &Path {
        self.dir.as_deref().unwrap_or(Path::new(""))
    }

    /// Renames the staging directory to `dest` (same file system, atomic).
    /// An existing `dest` is left as it is (entries never change once made).
    ///
    /// # Errors
    /// The rename fails for another reason than an existing `dest`.
    pub fn commit(mut self, dest: &Path) -> anyhow::Result<()> {
        let Some(dir) = self.dir.take() else {
            anyhow::bail!("internal: staging directory committed twice");
        };
        if dest.exists() {
            let _ = make_writable(&dir);
            let _ = fs::remove_dir_all(&dir);
            return Ok(());
        }
        fs::rename(&dir, dest)
            .with_context(|| format!("renaming {} to {}", dir.display(), dest.display()))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = make_writable(&dir);
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

/// Adds owner write permission to every directory under `path` (copies from
/// Go's read-only module cache cannot be deleted otherwise).
///
/// # Errors
/// A directory's permissions cannot be read or set.
pub fn make_writable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        let mut perm = meta.permissions();
        if perm.mode() & 0o200 == 0 {
            perm.set_mode(perm.mode() | 0o700);
            fs::set_permissions(path, perm)
                .with_context(|| format!("making {} writable", path.display()))?;
        }
        for entry in fs::read_dir(path).with_context(|| format!("listing {}", path.display()))? {
            make_writable(&entry?.path())?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` (used inside staging directories only).
///
/// # Errors
/// The file cannot be written.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut f = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    f.sync_all()
        .with_context(|| format!("syncing {}", path.display()))
}

/// Makes (or finds) `bin-<key>/`: a symlink per program of every family, and
/// `bin-<key>/cni/` with the CNI plugins only. Returns `(bin_dir, cni_bin_dir)`.
///
/// # Errors
/// The symlinks cannot be created.
pub fn ensure_bin_dir(cache: &Cache, built: &[BuiltFamily]) -> anyhow::Result<(PathBuf, PathBuf)> {
    let mut key = CacheKey::new("bin-dir/v1");
    for b in built {
        key.field(b.family.name, b.dir.as_os_str().as_encoded_bytes());
    }
    let dest = cache.entry("bin", &key);
    if !dest.exists() {
        let staging = cache.staging(&format!("bin-{}", key.short()))?;
        let cni = staging.path().join("cni");
        fs::create_dir(&cni).with_context(|| format!("creating {}", cni.display()))?;
        for b in built {
            for prog in b.family.programs {
                let target = b.dir.join(prog.name);
                let link = staging.path().join(prog.name);
                std::os::unix::fs::symlink(&target, &link).with_context(|| {
                    format!("linking {} to {}", link.display(), target.display())
                })?;
                if b.family.cni {
                    let link = cni.join(prog.name);
                    std::os::unix::fs::symlink(&target, &link).with_context(|| {
                        format!("linking {} to {}", link.display(), target.display())
                    })?;
                }
            }
        }
        staging.commit(&dest)?;
    }
    Ok((dest.clone(), dest.join("cni")))
}

/// `cargo xtask upstream status`: the cache root, its entries and sizes.
///
/// # Errors
/// The cache directory cannot be listed.
pub fn print_status(root: &Path) -> anyhow::Result<()> {
    println!("cache {}", root.display());
    if !root.exists() {
        println!("  (does not exist yet; `cargo xtask upstream build` creates it)");
        return Ok(());
    }
    let mut entries: Vec<_> = fs::read_dir(root)
        .with_context(|| format!("listing {}", root.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    entries.sort();
    for e in entries {
        let what = entry_version(&e)
            .map(|v| format!("  ({v})"))
            .unwrap_or_default();
        println!("  {:>10}  {}{what}", human_size(dir_size(&e)), e.display());
    }
    Ok(())
}

/// What version an entry holds, from its record: a family's `build.json` (`module version`), a
/// chart's `assembly.json` (`kyverno chart X, appVersion Y`), or a generated wrapper's `go.mod`
/// (`require` line); `None` for entries without one (images, pause, bin dirs).
pub fn entry_version(entry: &Path) -> Option<String> {
    let json = |f: &str| -> Option<serde_json::Value> {
        serde_json::from_slice(&fs::read(entry.join(f)).ok()?).ok()
    };
    if let Some(b) = json("build.json") {
        let module = b["module"].as_str()?;
        return Some(format!(
            "{module} {}",
            b["versions"][module].as_str().unwrap_or("?")
        ));
    }
    if let Some(a) = json("assembly.json") {
        return Some(format!(
            "kyverno chart {}, appVersion {}",
            a["chart_version"].as_str().unwrap_or("?"),
            a["chart_app_version"].as_str().unwrap_or("?")
        ));
    }
    let go_mod = fs::read_to_string(entry.join("go.mod")).ok()?;
    go_mod
        .lines()
        .find_map(|l| l.strip_prefix("require ").filter(|r| !r.starts_with('(')))
        .map(|r| format!("wrapper for {r}"))
}

/// Total size in bytes of the regular files under `path` (symlinks not followed).
pub fn dir_size(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_dir() {
        fs::read_dir(path)
            .map(|rd| rd.filter_map(Result::ok).map(|e| dir_size(&e.path())).sum())
            .unwrap_or(0)
    } else if meta.is_file() {
        meta.len()
    } else {
        0
    }
}

/// `123456789` → `117.7 MiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_stable_and_sensitive_to_every_field() {
        let base = || {
            let mut k = CacheKey::new("go-family/v1");
            k.field("go.mod", b"module x\n").field("ldflags", b"-s -w");
            k
        };
        assert_eq!(base().hex(), base().hex());
        assert_eq!(base().hex().len(), 64);
        assert_eq!(base().short().len(), 16);
        let mut other = base();
        other.field("go version", b"go1.26.8");
        assert_ne!(other.hex(), base().hex());
        let mut changed = CacheKey::new("go-family/v1");
        changed
            .field("go.mod", b"module x\n")
            .field("ldflags", b"-s -w -X a=b");
        assert_ne!(changed.hex(), base().hex());
        assert_ne!(
            CacheKey::new("go-family/v2").hex(),
            CacheKey::new("go-family/v1").hex()
        );
    }

    #[test]
    fn key_fields_cannot_be_shifted_into_each_other() {
        let mut a = CacheKey::new("k");
        a.field("ab", b"c");
        let mut b = CacheKey::new("k");
        b.field("a", b"bc");
        assert_ne!(a.hex(), b.hex());
    }

    #[test]
    fn staging_is_removed_unless_committed() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(tmp.path()).unwrap();
        let s = cache.staging("x-1").unwrap();
        let p = s.path().to_path_buf();
        write_file(&p.join("f"), b"half").unwrap();
        drop(s);
        assert!(!p.exists());

        let s = cache.staging("x-2").unwrap();
        write_file(&s.path().join("f"), b"whole").unwrap();
        let dest = cache.root().join("x-2");
        s.commit(&dest).unwrap();
        assert_eq!(fs::read(dest.join("f")).unwrap(), b"whole");
    }

    #[test]
    fn read_only_trees_can_be_cleared() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(tmp.path()).unwrap();
        let s = cache.staging("ro").unwrap();
        let sub = s.path().join("sub");
        fs::create_dir(&sub).unwrap();
        write_file(&sub.join("f"), b"x").unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o555)).unwrap();
        std::mem::forget(s);
        cache.clear_tmp().unwrap();
        assert!(!cache.root().join(".tmp").exists());
    }

    #[test]
    fn entries_name_their_versions() {
        let tmp = tempfile::tempdir().unwrap();
        let fam = tmp.path().join("kubernetes-0123");
        fs::create_dir(&fam).unwrap();
        write_file(
            &fam.join("build.json"),
            br#"{"module":"k8s.io/kubernetes","versions":{"k8s.io/kubernetes":"v1.36.3"}}"#,
        )
        .unwrap();
        assert_eq!(
            entry_version(&fam).as_deref(),
            Some("k8s.io/kubernetes v1.36.3")
        );
        let w = tmp.path().join("wrapper-kyverno-v1.18.2-0123");
        fs::create_dir(&w).unwrap();
        write_file(
            &w.join("go.mod"),
            b"module x\n\ngo 1.26.6\n\nrequire github.com/kyverno/kyverno v1.18.2\n",
        )
        .unwrap();
        assert_eq!(
            entry_version(&w).as_deref(),
            Some("wrapper for github.com/kyverno/kyverno v1.18.2")
        );
        assert_eq!(entry_version(tmp.path()), None);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 * 1024 * 1024 * 1024), "3.0 GiB");
    }
}
