//! The `k3s` backend: `rancher/k3s:v1.35.8-k3s1` in Docker through testcontainers (the K3s module
//! of testcontainers-modules 0.15.0, whose default tag v1.28.8-k3s1 is replaced).
//!
//! Steps of [`acquire`]:
//! 1. a Docker engine must answer `GET /_ping` on `DOCKER_HOST` (default
//!    `unix:///var/run/docker.sock`) within 5 s, else it stops at once and says so ([`docker_engine`]);
//!    root is required (the freeze opens a pidfd on a host process, and the CRI socket is reached
//!    through `/proc/<pid>/root`);
//! 2. the container ([`container_request`]): privileged, host user namespace, the API port
//!    published on `127.0.0.1` only ([`publish_api_on_loopback`]; never on every interface),
//!    conf mount
//!    (`/etc/rancher/k3s` → `<state>/conf`, k3s writes `k3s.yaml` there), the built Kyverno images
//!    mounted read-only at `/kca-images`, traefik and metrics-server disabled, 180 s startup bound;
//!    The state directory is `0700` and the kubeconfig `0600` ([`make_private_dir`],
//!    [`write_private`]): it is cluster-admin of a privileged container, i.e. root on this host;
//! 3. the kubeconfig from the conf mount with its server rewritten to
//!    `https://127.0.0.1:<mapped 6443>` (the container's own address is not reachable everywhere;
//!    testcontainers-rs-modules-community#200);
//! 4. the CRI endpoint: the container's containerd socket through its init's root,
//!    `/proc/<host pid of the container's PID 1>/root/run/k3s/containerd/containerd.sock`, the host
//!    PID found with [`lab::pidmap::host_pid`]; [`lab::pidmap::set_node_container`] is given the
//!    container ID so that the freeze maps CRI's in-container PIDs to host PIDs;
//! 5. the built images imported with the container's `ctr` into `k8s.io` (as the embedded backend
//!    does), then the kubeconfig backend's checks and Kyverno install with `--install-kyverno
//!    --mark-as-lab` (the backend made this cluster itself, like the embedded one).
//!
//! Limitation: the PID mapping needs cgroup v2 with Docker's private cgroup namespace (the default
//! there), where pods' cgroups nest under the container's; GitHub's Ubuntu runners are so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use testcontainers::bollard::models::{HostConfig, PortBinding};
use testcontainers::core::{ExecCommand, Mount};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ContainerRequest, ImageExt};
use testcontainers_modules::k3s::{K3s, KUBE_SECURE_PORT};

use super::{ClusterHandle, Owned};
use crate::status::Step;

/// The rancher/k3s image tag of Kubernetes v1.35.8 (the `--k3s-tag` default).
pub use crate::flags::K3S_TAG;
/// Where the built images are mounted in the container.
pub const IMAGES_IN_CONTAINER: &str = "/kca-images";
/// k3s's containerd socket inside the container.
pub const CRI_SOCKET_IN_CONTAINER: &str = "/run/k3s/containerd/containerd.sock";
/// Bound of the container's start (image already pulled) until k3s logs
/// `Node controller sync successful` (the module's ready condition).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(180);

/// Settings of the k3s backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// rancher/k3s tag (default [`K3S_TAG`]).
    pub tag: String,
    /// Accept other versions (recorded).
    pub allow_other_versions: bool,
}

/// k3s's command: the module's `server --snapshotter=native` (native: overlayfs on overlayfs does
/// not work in every Docker) plus the two add-ons the labs never use.
pub fn k3s_cmd() -> Vec<String> {
    [
        "server",
        "--snapshotter=native",
        "--disable=traefik",
        "--disable=metrics-server",
    ]
    .map(String::from)
    .to_vec()
}

/// The container request: `rancher/k3s:<tag>`, privileged, host user namespace, conf mount at
/// `conf_dir`, `images_dir` read-only at [`IMAGES_IN_CONTAINER`], [`k3s_cmd`], a label naming the
/// lab run, [`STARTUP_TIMEOUT`]. No Docker is needed to build it.
pub fn container_request(
    opts: &Options,
    name: &str,
    conf_dir: &Path,
    images_dir: &Path,
) -> ContainerRequest<K3s> {
    K3s::default()
        .with_conf_mount(conf_dir)
        .with_tag(opts.tag.clone())
        .with_privileged(true)
        .with_userns_mode("host")
        .with_cmd(k3s_cmd())
        .with_mount(Mount::bind_mount(
            images_dir.display().to_string(),
            IMAGES_IN_CONTAINER,
        ))
        .with_label("kca-webhook-lab/run", name)
        .with_startup_timeout(STARTUP_TIMEOUT)
        .with_host_config_modifier(publish_api_on_loopback)
}

/// The address the API port is published on: loopback only.
pub const API_HOST_IP: &str = "127.0.0.1";

/// Publishes the container's API port (6443/tcp) on [`API_HOST_IP`] only, on a host port Docker
/// picks (`-p 127.0.0.1::6443`), and nothing else: testcontainers otherwise publishes every
/// exposed port on all interfaces, which would offer a privileged cluster's API to the network.
pub fn publish_api_on_loopback(host: &mut HostConfig) {
    host.publish_all_ports = Some(false);
    let mut bindings = std::collections::HashMap::new();
    bindings.insert(
        KUBE_SECURE_PORT.to_string(),
        Some(vec![PortBinding {
            host_ip: Some(API_HOST_IP.into()),
            host_port: Some(String::new()),
        }]),
    );
    host.port_bindings = Some(bindings);
}

/// Creates `dir` (and parents) and makes it `0700`: the backend's state (its kubeconfig is
/// cluster-admin of a privileged container) is root's alone.
pub fn make_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making {} 0700", dir.display()))
}

/// Writes `bytes` to `path` as a `0600` file (created so, and set so when it existed).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making {} 0600", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// Where the Docker engine should answer: `DOCKER_HOST` or `unix:///var/run/docker.sock`.
pub fn docker_host() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

/// Checks that a Docker engine answers `GET /_ping` with `OK` at [`docker_host`] (unix or tcp),
/// within 5 s. Returns the answer's `Server` header (e.g. `Docker/28.1.1 (linux)`).
///
/// Errors: no engine (the message says that the k3s backend needs a running Docker engine, that
/// the docker CLI alone is not one, and where it looked).
pub fn docker_engine() -> Result<String> {
    docker_engine_at(&docker_host())
}

/// [`docker_engine`] at `host` (`unix://PATH` or `tcp://ADDR`), without reading the environment.
pub fn docker_engine_at(host: &str) -> Result<String> {
    use std::io::{Read, Write};
    let timeout = Duration::from_secs(5);
    let req = b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n";
    let answer = (|| -> std::io::Result<String> {
        let mut buf = String::new();
        if let Some(path) = host.strip_prefix("unix://") {
            let mut s = std::os::unix::net::UnixStream::connect(path)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            s.write_all(req)?;
            s.read_to_string(&mut buf)?;
        } else if let Some(addr) = host.strip_prefix("tcp://") {
            use std::net::ToSocketAddrs;
            let sa = addr
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| std::io::Error::other("no address"))?;
            let mut s = std::net::TcpStream::connect_timeout(&sa, timeout)?;
            s.set_read_timeout(Some(timeout))?;
            s.write_all(req)?;
            s.read_to_string(&mut buf)?;
        } else {
            return Err(std::io::Error::other(
                "only unix:// and tcp:// DOCKER_HOST are supported",
            ));
        }
        Ok(buf)
    })();
    let no_engine = |why: String| {
        anyhow::anyhow!(
            "no Docker engine answers at {host} ({why}): the k3s backend runs rancher/k3s:{K3S_TAG} in Docker and needs a running Docker engine (a docker CLI alone is not one); use --cluster embedded or --cluster kubeconfig on this machine"
        )
    };
    let text = answer.map_err(|e| no_engine(e.to_string()))?;
    let ok = text.starts_with("HTTP/1.")
        && text.split_whitespace().nth(1) == Some("200")
        && text.ends_with("OK");
    if !ok {
        return Err(no_engine(format!(
            "answered {:?}",
            text.lines().next().unwrap_or_default()
        )));
    }
    Ok(text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Server: ")
                .or_else(|| l.strip_prefix("server: "))
        })
        .unwrap_or("")
        .trim()
        .to_string())
}

/// Rewrites every `clusters[].cluster.server` of a kubeconfig to `https://127.0.0.1:<port>`.
pub fn rewrite_server(kubeconfig_yaml: &str, port: u16) -> Result<String> {
    let mut kc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(kubeconfig_yaml).context("parsing k3s.yaml")?;
    let clusters = kc
        .get_mut("clusters")
        .and_then(|c| c.as_sequence_mut())
        .context("k3s.yaml: $.clusters: expected a list, found none")?;
    for c in clusters {
        let server = c
            .get_mut("cluster")
            .and_then(|c| c.get_mut("server"))
            .context("k3s.yaml: $.clusters[].cluster.server: expected a string, found none")?;
        *server = serde_yaml_ng::Value::String(format!("https://127.0.0.1:{port}"));
    }
    serde_yaml_ng::to_string(&kc).context("writing the kubeconfig")
}

/// A running k3s container, removed by [`Running::stop`] (or when dropped).
pub struct Running {
    rt: tokio::runtime::Runtime,
    container: Option<ContainerAsync<K3s>>,
    /// The container ID.
    pub container_id: String,
    /// The backend's state directory (`conf/`, `images/`, `logs/`, `kubeconfig.yaml`).
    pub state: PathBuf,
    /// kubelet's host sysctls as found before the container started (k3s's kubelet, privileged,
    /// writes them on the host's kernel: `crate::cluster::sysctl`); restored after it stops.
    pub host_sysctls: Vec<crate::cluster::sysctl::SavedSysctl>,
}

/// `<state>/host-sysctls.json`: the values found before the container started, kept until they
/// are restored (so the next `acquire` restores them after a crash).
fn sysctls_file(state: &Path) -> PathBuf {
    state.join("host-sysctls.json")
}

/// Puts back the recorded host sysctls still equal to kubelet's values, then forgets the record.
fn restore_host_sysctls(state: &Path, saved: &[crate::cluster::sysctl::SavedSysctl]) -> Result<()> {
    use crate::cluster::sysctl::{Restored, restore};
    let mut errors = Vec::new();
    for r in restore(saved) {
        match r {
            Ok(Restored::PutBack { key, from, to }) => {
                eprintln!("   host sysctl {key}: put back {to} (k3s's kubelet had set {from})")
            }
            Ok(_) => {}
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if !errors.is_empty() {
        bail!("restoring host sysctls: {}", errors.join("; "));
    }
    match std::fs::remove_file(sysctls_file(state)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", sysctls_file(state).display())),
    }
}

impl Running {
    /// Writes the container's stdout and stderr (k3s's log) to `<state>/logs/k3s.log`.
    pub fn write_logs(&self) -> Result<()> {
        let Some(c) = &self.container else {
            return Ok(());
        };
        let (out, err) = self
            .rt
            .block_on(async { (c.stdout_to_vec().await, c.stderr_to_vec().await) });
        let mut text = out.unwrap_or_default();
        text.extend(err.unwrap_or_default());
        let dir = self.state.join("logs");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("k3s.log"), text)
            .with_context(|| format!("writing {}", dir.join("k3s.log").display()))
    }

    /// Removes the container.
    pub fn stop(mut self) -> Result<()> {
        let step = Step::start(format!(
            "removing the k3s container {}",
            &self.container_id[..12.min(self.container_id.len())]
        ));
        if let Some(c) = self.container.take() {
            self.rt
                .block_on(c.rm())
                .context("removing the k3s container")?;
        }
        step.ok();
        restore_host_sysctls(&self.state, &self.host_sysctls)
    }

    /// Leaves the container running (`docker rm -f <id>` ends it).
    pub fn retain(mut self) {
        if let Some(c) = self.container.take() {
            eprintln!(
                "k3s container {} retained: kubeconfig {}; `docker rm -f {}` ends it",
                self.container_id,
                self.state.join("kubeconfig.yaml").display(),
                self.container_id
            );
            std::mem::forget(c);
        }
    }
}

fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        return Ok(());
    }
    std::fs::hard_link(from, to)
        .or_else(|_| std::fs::copy(from, to).map(|_| ()))
        .with_context(|| format!("placing {} at {}", from.display(), to.display()))
}

async fn exec_text(c: &ContainerAsync<K3s>, argv: &[&str]) -> Result<String> {
    let mut r = c
        .exec(ExecCommand::new(argv.iter().map(|s| s.to_string())))
        .await
        .with_context(|| format!("exec {argv:?} in the k3s container"))?;
    let out = r.stdout_to_vec().await.unwrap_or_default();
    let err = r.stderr_to_vec().await.unwrap_or_default();
    let code = r.exit_code().await.ok().flatten();
    if code.is_some_and(|c| c != 0) {
        bail!(
            "{argv:?} in the k3s container exited {code:?}: {}{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&err)
        );
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Starts k3s, imports the images, installs Kyverno and marks the cluster (see the module docs).
pub fn acquire(opts: &Options, name: &str) -> Result<ClusterHandle> {
    let server = docker_engine()?;
    crate::cluster::host::require_root()
        .context("the k3s backend freezes a host process through a pidfd")?;
    let inputs =
        crate::cluster::Inputs::resolve().context("the built Helm, chart and Kyverno images")?;
    let state = super::state_dir(&format!("k3s-{name}"))?;
    make_private_dir(&state)?;
    let conf = state.join("conf");
    let images = state.join("images");
    for d in [&conf, &images] {
        make_private_dir(d)?;
    }
    // A crashed earlier run's values first, then this run's, before k3s's kubelet starts.
    if let Ok(text) = std::fs::read_to_string(sysctls_file(&state)) {
        let saved: Vec<crate::cluster::sysctl::SavedSysctl> = serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", sysctls_file(&state).display()))?;
        restore_host_sysctls(&state, &saved)?;
    }
    let host_sysctls = crate::cluster::sysctl::record()?;
    crate::cluster::record::write_durably(
        &sysctls_file(&state),
        serde_json::to_string_pretty(&host_sysctls)?.as_bytes(),
    )?;
    let mut refs = Vec::new();
    for (i, img) in inputs.images.iter().enumerate() {
        let file = format!("{i:02}.tar");
        link_or_copy(&img.path, &images.join(&file))?;
        refs.push((img.reference.clone(), file));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    let step = Step::start(format!(
        "starting rancher/k3s:{} (Docker {server})",
        opts.tag
    ));
    let container = rt
        .block_on(container_request(opts, name, &conf, &images).start())
        .with_context(|| format!("starting rancher/k3s:{}", opts.tag))?;
    step.ok();
    let container_id = container.id().to_string();
    let mut running = Running {
        rt,
        container: Some(container),
        container_id: container_id.clone(),
        state: state.clone(),
        host_sysctls,
    };
    match finish(opts, name, &mut running, &refs) {
        Ok(mut handle) => {
            handle.owned = Owned::K3s(Box::new(running));
            Ok(handle)
        }
        Err(e) => {
            let _ = running.write_logs();
            let _ = running.stop();
            Err(e)
        }
    }
}

fn finish(
    opts: &Options,
    name: &str,
    running: &mut Running,
    refs: &[(String, String)],
) -> Result<ClusterHandle> {
    let c = running.container.as_ref().context("container present")?;
    let port = running
        .rt
        .block_on(c.get_host_port_ipv4(KUBE_SECURE_PORT))
        .context("the host port of 6443")?;
    let raw = std::fs::read_to_string(running.state.join("conf/k3s.yaml"))
        .with_context(|| format!("reading {}", running.state.join("conf/k3s.yaml").display()))?;
    let kubeconfig = running.state.join("kubeconfig.yaml");
    write_private(&kubeconfig, rewrite_server(&raw, port)?.as_bytes())?;
    let init = lab::pidmap::host_pid(&running.container_id, 1)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("finding the k3s container's init process on the host")?;
    let cri = PathBuf::from(format!(
        "/proc/{}/root{CRI_SOCKET_IN_CONTAINER}",
        init.host_pid
    ));
    lab::pidmap::set_node_container(&running.container_id);
    for (reference, file) in refs {
        let step = Step::start(format!("importing {reference} into the k3s container"));
        let path = format!("{IMAGES_IN_CONTAINER}/{file}");
        running.rt.block_on(exec_text(
            c,
            &["ctr", "-n", "k8s.io", "images", "import", &path],
        ))?;
        let list = running
            .rt
            .block_on(exec_text(c, &["ctr", "-n", "k8s.io", "images", "ls", "-q"]))?;
        if !list.lines().any(|l| l.trim() == reference) {
            bail!(
                "after importing {path} the k3s container's containerd does not list {reference}"
            );
        }
        step.ok();
    }
    let kopts = super::kubeconfig::Options {
        kubeconfig: kubeconfig.clone(),
        cri_endpoint: cri.clone(),
        install_kyverno: true,
        mark_as_lab: true,
        allow_other_versions: opts.allow_other_versions,
    };
    let mut handle = super::kubeconfig::acquire(&kopts, name)?;
    handle.backend = "k3s";
    handle.logs_dir = Some(running.state.join("logs"));
    if let Some(obj) = handle.facts.as_object_mut() {
        obj.insert("backend".into(), "k3s".into());
        obj.insert(
            "k3s".into(),
            serde_json::json!({
                "image": format!("rancher/k3s:{}", opts.tag),
                "container_id": running.container_id,
                "init_host_pid": init.host_pid,
                "pid_namespace_level": init.level,
                "api_port": port,
            }),
        );
    }
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_port_is_published_on_loopback_only() {
        let opts = Options {
            tag: K3S_TAG.into(),
            allow_other_versions: false,
        };
        let req = container_request(&opts, "t", Path::new("/c"), Path::new("/i"));
        let modify = req
            .host_config_modifier()
            .expect("the request publishes its port itself");
        let mut host = HostConfig {
            publish_all_ports: Some(true),
            ..Default::default()
        };
        modify(&mut host);
        assert_eq!(host.publish_all_ports, Some(false));
        let bindings = host.port_bindings.expect("port bindings");
        assert_eq!(bindings.len(), 1, "{bindings:?}");
        let b = bindings
            .get("6443/tcp")
            .cloned()
            .flatten()
            .expect("6443/tcp bound");
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].host_ip.as_deref(), Some("127.0.0.1"));
    }

    #[test]
    fn the_state_dir_is_0700_and_the_kubeconfig_0600() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("k3s-t");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
        make_private_dir(&state).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&state), 0o700);
        let kc = state.join("kubeconfig.yaml");
        std::fs::write(&kc, "old").unwrap();
        std::fs::set_permissions(&kc, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&kc, b"apiVersion: v1").unwrap();
        assert_eq!(mode(&kc), 0o600);
        assert_eq!(std::fs::read_to_string(&kc).unwrap(), "apiVersion: v1");
    }

    #[test]
    fn container_settings() {
        let opts = Options {
            tag: K3S_TAG.into(),
            allow_other_versions: false,
        };
        let req = container_request(
            &opts,
            "t",
            Path::new("/tmp/kca-conf"),
            Path::new("/tmp/kca-images"),
        );
        assert_eq!(req.descriptor(), "rancher/k3s:v1.35.8-k3s1");
        assert!(req.privileged());
        assert_eq!(req.userns_mode(), Some("host"));
        let cmd: Vec<String> = req.cmd().map(|c| c.into_owned()).collect();
        assert_eq!(
            cmd,
            [
                "server",
                "--snapshotter=native",
                "--disable=traefik",
                "--disable=metrics-server"
            ]
        );
        assert_eq!(req.startup_timeout(), Some(STARTUP_TIMEOUT));
        let mounts: Vec<(Option<&str>, Option<&str>)> =
            req.mounts().map(|m| (m.source(), m.target())).collect();
        assert!(
            mounts.contains(&(Some("/tmp/kca-conf"), Some("/etc/rancher/k3s/"))),
            "{mounts:?}"
        );
        assert!(
            mounts.contains(&(Some("/tmp/kca-images"), Some(IMAGES_IN_CONTAINER))),
            "{mounts:?}"
        );
        let env: Vec<(String, String)> = req
            .env_vars()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        assert!(
            env.contains(&("K3S_KUBECONFIG_MODE".into(), "644".into())),
            "{env:?}"
        );
        assert_eq!(
            req.labels().get("kca-webhook-lab/run").map(String::as_str),
            Some("t")
        );
    }

    #[test]
    fn kubeconfig_server_is_rewritten_to_the_mapped_port() {
        let raw = "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: AAAA\n    server: https://127.0.0.1:6443\n  name: default\ncontexts: []\nkind: Config\n";
        let out = rewrite_server(raw, 32771).unwrap();
        assert!(out.contains("server: https://127.0.0.1:32771"), "{out}");
        assert!(out.contains("certificate-authority-data: AAAA"), "{out}");
        assert!(
            rewrite_server("kind: Config\n", 1)
                .unwrap_err()
                .to_string()
                .contains("$.clusters")
        );
    }

    #[test]
    fn no_engine_is_an_error_that_says_what_is_missing() {
        // A socket path where nothing listens: the same answer as on this machine, where only the
        // docker CLI is installed.
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("docker.sock");
        // The host is passed, not set in the environment (other tests of this binary read it
        // on other threads).
        let e = docker_engine_at(&format!("unix://{}", sock.display()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no Docker engine answers") && e.contains("docker CLI alone"),
            "{e}"
        );
    }
}
