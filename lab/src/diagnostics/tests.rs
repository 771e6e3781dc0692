//! The picker ([`telling_lines`]) on recorded observations (`lab/tests/fixtures/diagnostics/`,
//! each an `observations.json` a real failure wrote: `scaled-to-zero-act-2.json` is
//! `tests/tests/diagnostics.rs`'s run of 2026-11-30T21:19Z on the embedded cluster, verbatim) and
//! on small variants of them.

use super::*;

fn recorded(name: &str) -> Observations {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/diagnostics")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn scaled_to_zero_before_act_2_names_the_wait_replicas_0_no_endpoints_and_no_registration() {
    let o = recorded("scaled-to-zero-act-2.json");
    let lines = telling_lines(&o);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[0].starts_with("lab a act 2 failed: waited 90 s for webhook vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label; last state: no webhook"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1]
            .contains("kyverno/kyverno-admission-controller: replicas 0 (ready 0, available 0)"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].contains("kyverno-svc: no ready endpoints"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("registration absent"), "{}", lines[1]);
    // The recording's newest Warnings are kubelet's standing MissingClusterDNS notes; the
    // admission controller's own Warning is the one shown.
    assert!(
        lines[2].contains("Pod/kyverno-admission-controller-") && lines[2].contains("Unhealthy"),
        "{}",
        lines[2]
    );
}

#[test]
fn a_healthy_controller_gives_its_place_to_the_newest_warning_and_the_last_error_line() {
    let mut o = recorded("scaled-to-zero-act-2.json");
    o.controller = Some(ControllerState {
        deployment: Some(Replicas {
            spec: 1,
            ready: 1,
            available: 1,
        }),
        pods: vec![PodState {
            name: "kyverno-admission-controller-6d9f-abcde".into(),
            phase: "Running".into(),
            terminating: false,
            containers: vec![ContainerState {
                name: "kyverno".into(),
                restarts: 0,
                ready: true,
                last_terminated: None,
            }],
        }],
        ready_endpoints: Some(1),
        lab_webhooks: Some(vec![
            "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label".into(),
        ]),
    });
    let warn = |time: &str, reason: &str| EventRow {
        time: time.into(),
        type_: "Warning".into(),
        namespace: "kyverno".into(),
        object: "Pod/kyverno-admission-controller-6d9f-abcde".into(),
        reason: reason.into(),
        message: format!("{reason} message"),
        count: 1,
    };
    // Out of time order on purpose: the newest by time wins, not the last in the list.
    o.events.push(warn("2026-11-30T21:30:05.000Z", "Unhealthy"));
    o.events.push(warn("2026-11-30T21:30:01.000Z", "BackOff"));
    o.admission_log = vec![
        "2026-11-30T21:00:00.100Z E1130 21:00:00.100000       1 controller.go:42] \"failed to sync\" err=\"first\"".into(),
        "2026-11-30T21:00:00.200Z 2026-11-30T21:00:00Z\tERROR\twebhooks\tserver/server.go:99\tfailed to reconcile\t{\"error\": \"second\"}".into(),
        "2026-11-30T21:00:00.300Z I1130 21:00:00.300000       1 controller.go:50] \"all fine\"".into(),
    ];
    let lines = telling_lines(&o);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[1].contains("2026-11-30T21:30:05.000Z") && lines[1].contains("Unhealthy message"),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains("failed to reconcile"), "{}", lines[2]);
}

#[test]
fn without_a_wait_the_first_line_is_the_error_and_restarts_are_abnormal() {
    let o = Observations {
        failed_step: "lab b act 5".into(),
        error: "kubernetes api: pods is forbidden (403 Forbidden)\nsecond line".into(),
        controller: Some(ControllerState {
            deployment: Some(Replicas {
                spec: 1,
                ready: 1,
                available: 1,
            }),
            pods: vec![PodState {
                name: "p".into(),
                phase: "Running".into(),
                terminating: false,
                containers: vec![ContainerState {
                    name: "kyverno".into(),
                    restarts: 2,
                    ready: true,
                    last_terminated: Some("OOMKilled".into()),
                }],
            }],
            ready_endpoints: Some(1),
            lab_webhooks: None,
        }),
        ..Default::default()
    };
    let lines = telling_lines(&o);
    assert_eq!(
        lines,
        vec![
            "lab b act 5 failed: kubernetes api: pods is forbidden (403 Forbidden)".to_owned(),
            "kyverno/kyverno-admission-controller: replicas 1 (ready 1, available 1); p/kyverno restarted 2× (last: OOMKilled); kyverno-svc: 1 ready endpoints".to_owned(),
        ]
    );
}

#[test]
fn error_lines_are_recognised_in_each_logger_format_and_info_is_not() {
    for l in [
        "2026-11-30T21:00:00.123456789Z E1130 21:00:00.123456       1 x.go:1] \"boom\"",
        "E1130 21:00:00.123456       1 x.go:1] \"boom\"",
        "2026-11-30T21:00:00Z\tERROR\tsetup\tboom",
        "{\"level\":\"error\",\"msg\":\"boom\"}",
        "time=2026-11-30T21:00:00Z level=error msg=boom",
    ] {
        assert!(is_error_line(l), "{l}");
    }
    for l in [
        "2026-11-30T21:00:00.123456789Z I1130 21:00:00.123456       1 x.go:1] \"error budget fine\"",
        "{\"level\":\"info\",\"msg\":\"no error\"}",
        "Everything is fine",
        "E11",
    ] {
        assert!(!is_error_line(l), "{l}");
    }
}

/// A context wrapper as `anyhow`'s `.context()` makes: its source is the wrapped error.
#[derive(Debug)]
struct Context(&'static str, LabError);

impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Context {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.1)
    }
}

fn chain<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Vec<&'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |e| e.source()).collect()
}

#[test]
fn wait_state_is_found_through_a_context_chain() {
    let e = Context(
        "lab a act 2",
        LabError::WaitTimedOut {
            what: "webhook w".into(),
            waited_ms: 90_000,
            last_state: "no webhook w".into(),
        },
    );
    let w = wait_state_in(chain(&e)).expect("the wait state is in the chain");
    assert_eq!(w.last_state, "no webhook w");
    let plain = Context("lab a act 2", LabError::Kube("x".into()));
    assert!(wait_state_in(chain(&plain)).is_none());
}

#[test]
fn tail_file_keeps_the_last_lines() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("x.log");
    std::fs::write(
        &p,
        (1..=500).map(|i| format!("line {i}\n")).collect::<String>(),
    )
    .unwrap();
    let t = tail_file(&p, 3).unwrap();
    assert_eq!(t, "line 498\nline 499\nline 500\n");
}

#[test]
fn tail_file_reads_only_the_last_bytes_of_a_regular_file_and_refuses_the_rest_naming_it() {
    let d = tempfile::tempdir().unwrap();
    // Longer than the bound: only the end is read, and its last lines come back.
    let big = d.path().join("big.log");
    let line = format!("{}\n", "x".repeat(1023));
    let mut text = line.repeat((DAEMON_TAIL_BYTES / 1024) as usize + 10);
    text.push_str("the last line\n");
    std::fs::write(&big, &text).unwrap();
    assert_eq!(tail_file(&big, 1).unwrap(), "the last line\n");
    let all = tail_file(&big, usize::MAX).unwrap();
    assert!(all.len() as u64 <= DAEMON_TAIL_BYTES + 1, "{}", all.len());

    let target = d.path().join("target.log");
    std::fs::write(&target, "secret\n").unwrap();
    let link = d.path().join("link.log");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = tail_file(&link, 3).unwrap_err().to_string();
    assert!(e.contains("link.log"), "{e}");

    let fifo = d.path().join("fifo.log");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let e = tail_file(&fifo, 3).unwrap_err().to_string();
    assert!(e.contains("fifo.log") && e.contains("FIFO"), "{e}");
    let e = tail_file(d.path(), 3).unwrap_err().to_string();
    assert!(e.contains("directory"), "{e}");
}

#[test]
fn the_report_page_shows_the_lines_escaped_and_links_the_rest_only_when_given() {
    let d = tempfile::tempdir().unwrap();
    let input = crate::grade::GradeInput::load(
        &crate::workdir::Workdir::new(d.path()),
        crate::evidence::Lab::A,
    );
    let grades = crate::grade::grade_all(crate::evidence::Lab::A, &input);
    let lang = crate::text::Lang::En;
    let plain = crate::report::render(crate::evidence::Lab::A, &input, &grades, lang);
    assert_eq!(
        plain,
        crate::report::render_with_diagnostics(
            crate::evidence::Lab::A,
            &input,
            &grades,
            lang,
            None
        )
    );
    assert!(!plain.contains("data-diagnostics"));
    let summary = Summary {
        failed_step: "lab a act 2".into(),
        telling: vec!["<script>x</script> replicas 0".into()],
        ..Default::default()
    };
    let page = crate::report::render_with_diagnostics(
        crate::evidence::Lab::A,
        &input,
        &grades,
        lang,
        Some(crate::report::DiagnosticsLink {
            summary: &summary,
            href: "diagnostics/summary.txt",
        }),
    );
    assert!(page.contains("data-diagnostics=\"lab a act 2\""));
    assert!(page.contains("&lt;script&gt;x&lt;/script&gt; replicas 0"));
    assert!(!page.contains("<script>x"));
    assert!(page.contains("href=\"diagnostics/summary.txt\""));
}

#[test]
fn the_students_words_exist_in_both_languages_and_name_the_directory() {
    use crate::messages;
    use crate::text::Lang;
    assert_ne!(
        messages::diagnostics_header(Lang::Ja),
        messages::diagnostics_header(Lang::En)
    );
    let dir = Path::new("/root/kca-webhook/diagnostics/act-02");
    for lang in [Lang::Ja, Lang::En] {
        assert!(
            messages::diagnostics_written(lang, dir)
                .contains("/root/kca-webhook/diagnostics/act-02")
        );
    }
    assert_eq!(
        act_dir(Path::new("/w"), 2),
        Path::new("/w/diagnostics/act-02")
    );
}

#[test]
fn standing_warnings_alone_give_no_warning_line_and_leave_room_for_the_log() {
    let mut o = recorded("scaled-to-zero-act-2.json");
    o.events
        .retain(|e| e.type_ != "Warning" || e.reason == "MissingClusterDNS");
    assert!(o.events.iter().any(|e| e.reason == "MissingClusterDNS"));
    o.admission_log = vec!["2026-11-30T21:00:00Z\tERROR\tsetup\tboom".into()];
    let lines = telling_lines(&o);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines.iter().all(|l| !l.contains("MissingClusterDNS")),
        "{lines:#?}"
    );
    assert!(lines[2].contains("boom"), "{lines:#?}");
}

/// The error of `up` when kubelet exits at once on a cgroup v2 host without its controllers (the
/// research trial's run 3, 2026-12-01, verbatim but for the checkout path).
const KUBELET_EXITED: &str = "while waiting for node kca-labb Ready: kubelet (pid 630) exited; last lines of /w/target/lab/labb/logs/kubelet.log:
I1201 14:24:14.700101     630 server.go:1418] \"Using cgroup driver setting received from the CRI runtime\" cgroupDriver=\"cgroupfs\"
E1201 14:24:14.783584     630 run.go:72] \"command failed\" err=\"failed to run Kubelet: invalid configuration: cgroup [\\\"kca-labb\\\"] has some missing controllers: cpu, cpuset, hugetlb\"
I1201 14:24:14.790000     630 server.go:900] \"shutting down\"";

#[test]
fn a_daemon_that_exited_puts_its_own_last_error_line_on_the_first_line() {
    let o = Observations {
        failed_step: "cluster up".into(),
        error: KUBELET_EXITED.into(),
        ..Default::default()
    };
    let lines = telling_lines(&o);
    assert!(
        lines[0].starts_with("cluster up failed: while waiting for node kca-labb Ready: kubelet (pid 630) exited; last lines of /w/target/lab/labb/logs/kubelet.log: E1201 14:24:14.783584"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].ends_with("has some missing controllers: cpu, cpuset, hugetlb\""),
        "{}",
        lines[0]
    );
    // A fatal klog line counts too; an error that does not hand over to a log is left as it is.
    let fatal = "x exited; last lines of /l:\nF1201 00:00:00.000000 1 main.go:1] boom\nI1201 ok";
    assert_eq!(
        daemon_error_line(fatal),
        Some("F1201 00:00:00.000000 1 main.go:1] boom")
    );
    assert_eq!(
        daemon_error_line("waited 90 s for x:\nE1201 not a log tail"),
        None
    );
    assert_eq!(
        daemon_error_line("x exited; last lines of /l:\nI1201 fine"),
        None
    );
}
