//! The lab record page (`lab::report::render`) and the JUnit suite on fixture evidence:
//! golden files (`fixtures/report/*.html`; `UPDATE_GOLDEN=1` rewrites the stale ones and fails that run), escaping of untrusted
//! evidence text, and one test that loads the pages in real headless Chromium (Debian's
//! `chromium`, installed by the test itself through xtask's installer when missing, root on
//! Debian: `common::ensure_report_page_packages`; `KCA_CHROMIUM` names another browser binary) and
//! checks that the page has no script errors and that the timeline has one mark per recorded request.
//! A recorded run's page shows the acts the recording has (`common/recorded.rs`).

mod common;
#[path = "report/lab_c.rs"]
mod lab_c;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::recorded::Recording;
use lab::acts::Target;
use lab::evidence::Lab;
use lab::grade::{self, GradeInput};
use lab::text::Lang;
use lab::workdir::Workdir;
use serde_json::{Value, json};

const RECORDED_B: &str = "recorded/b-20261129T153816Z";
/// A real lab A run whose act 6 recorded 58 dry-run probes (56 admitted, 1 no-endpoints, 1 deny).
const RECORDED_A: &str = "recorded/a-20261130T194643Z";
/// A real lab C run, acts 1-8 (`lab/tests/fixtures/recorded/c-20261201T234822Z/README.md`).
const RECORDED_C: &str = "recorded/c-20261201T234822Z";

fn fixture(rel: &str) -> PathBuf {
    common::fixtures_dir().join(rel)
}

/// The tool's page of the work directory `dir`: every act of the registry.
fn page(dir: &Path, lab: Lab, lang: Lang) -> String {
    let input = GradeInput::load(&Workdir::new(dir), lab);
    let grades = grade::grade_all(lab, &input);
    lab::report::render(lab, &input, &grades, lang)
}

/// The page of recording `rec` read from `dir` (the recording itself or a changed copy of it):
/// the acts the recording has.
fn recorded_page(rec: &Recording, dir: &Path, lang: Lang) -> String {
    let input = GradeInput::load(&Workdir::new(dir), rec.lab);
    lab::report::render(rec.lab, &input, &rec.grade(&input), lang)
}

/// Lab C with acts 5-8 built from the facts types (`report/lab_c.rs`), not a directory under
/// `fixtures/`: [`fixture_page`] and [`fixture_dir`] write it to a temporary directory.
const LAB_C_FREEZES: &str = "generated/c-freezes";

/// The work directory of the fixture `rel` (a temporary one for [`LAB_C_FREEZES`], kept while
/// the returned guard lives).
fn fixture_dir(rel: &str) -> (PathBuf, Option<tempfile::TempDir>) {
    if rel == LAB_C_FREEZES {
        let tmp = tempfile::tempdir().unwrap();
        common::write_tree(tmp.path(), &lab_c::files());
        (tmp.path().to_path_buf(), Some(tmp))
    } else {
        (fixture(rel), None)
    }
}

/// The page of the fixture `rel`: a recording's acts, or every act for a generated fixture.
fn fixture_page(rel: &str, lab: Lab, lang: Lang) -> String {
    if rel == LAB_C_FREEZES {
        let (dir, _tmp) = fixture_dir(rel);
        return page(&dir, lab, lang);
    }
    if rel.starts_with("recorded/") {
        let rec = Recording::open(rel);
        assert_eq!(rec.lab, lab, "{rel}");
        recorded_page(&rec, &rec.dir, lang)
    } else {
        page(&fixture(rel), lab, lang)
    }
}

/// Requests recorded in the evidence the timelines cover, found by walking the facts (any object
/// with `name`, `sent_at`, `answered_at` and `outcome`), independently of the renderer: lab B acts
/// 5-6, lab A acts 5-6.
fn recorded_requests(dir: &Path) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                if m.contains_key("sent_at")
                    && m.contains_key("answered_at")
                    && m.contains_key("outcome")
                    && let Some(n) = m.get("name").and_then(Value::as_str)
                {
                    out.insert(n.to_owned());
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    for act in [5, 6] {
        let text = std::fs::read_to_string(dir.join(format!("evidence/{act:02}.json"))).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        walk(&v["facts"], &mut out);
    }
    out
}

/// Values of attribute `attr` in `html` (`attr="value"`), in order.
fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let key = format!(" {attr}=\"");
    html.match_indices(&key)
        .map(|(i, _)| {
            let rest = &html[i + key.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}

#[test]
fn golden_pages() {
    let cases = [
        (RECORDED_B, Lab::B, Lang::En, "b-recorded.en.html"),
        (RECORDED_B, Lab::B, Lang::Ja, "b-recorded.ja.html"),
        ("a/pass", Lab::A, Lang::En, "a-pass.en.html"),
        ("a/pass", Lab::A, Lang::Ja, "a-pass.ja.html"),
        ("c/pass", Lab::C, Lang::En, "c-pass.en.html"),
        ("c/pass", Lab::C, Lang::Ja, "c-pass.ja.html"),
    ];
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut stale = Vec::new();
    for (dir, lab, lang, golden) in cases {
        let html = fixture_page(dir, lab, lang);
        let path = fixture("report").join(golden);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(html.as_str()) {
            stale.push(golden);
            if update {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &html).unwrap();
            }
        }
    }
    // An update rewrites the stale files and still fails this run (rust-analyzer's
    // `ensure_file_contents`): a rewrite is never reported as a pass.
    assert!(
        stale.is_empty(),
        "pages differ from their golden files: {stale:?} ({}); look at the diff, then UPDATE_GOLDEN=1 cargo test -p lab --test report rewrites them; run it again",
        if update {
            "rewritten now"
        } else {
            "not rewritten"
        }
    );
}

#[test]
fn pages_show_grades_findings_digests_and_observations() {
    let rec = Recording::open(RECORDED_B);
    let dir = rec.dir.clone();
    let k = rec.acts.len();
    let en = recorded_page(&rec, &dir, Lang::En);
    assert!(en.contains(&format!(r#"data-grades-passed="{k}""#)));
    assert!(en.starts_with("<!DOCTYPE html><html lang=\"en\""));
    let ja = recorded_page(&rec, &dir, Lang::Ja);
    assert!(ja.starts_with("<!DOCTYPE html><html lang=\"ja\""));
    assert!(ja.contains("4つの観測"));
    // Every evidence file's canonical digest and the raw text are on the page.
    let input = GradeInput::load(&Workdir::new(&dir), Lab::B);
    for (act, d) in input.digests() {
        assert!(en.contains(&d), "digest of act {act}");
    }
    assert_eq!(attr_values(&en, "data-raw").len(), k);
    // The four observations in four phases: the Fail freeze's violating request did not get an
    // answer from the webhook (webhook-timeout), while the pod kept its UID.
    assert!(
        en.contains("kca-b5-frozen-bad-154012-dfa63b → webhook-timeout"),
        "{en}"
    );
    // A grader's findings appear with code, file, JSON path.
    let files = common::read_tree(&dir);
    let tmp = tempfile::tempdir().unwrap();
    let mut broken = files.clone();
    broken.get_mut("evidence/05.json").unwrap()["facts"]["target_bad"]["elapsed_ms"] = json!(200);
    common::write_tree(tmp.path(), &broken);
    let html = recorded_page(&rec, tmp.path(), Lang::En);
    // Act 5's grade fails, and act 8's too (the report's digest of 05.json no longer matches).
    assert!(
        html.contains(&format!(r#"data-grades-passed="{}""#, k - 2)),
        "{}",
        attr_values(&html, "data-grades-passed")[0]
    );
    let codes = attr_values(&html, "data-finding");
    assert!(codes.contains(&"timeout-too-fast".to_owned()), "{codes:?}");
    assert!(
        html.contains(
            "<td class=\"mono\">evidence/05.json</td><td class=\"mono\">facts.target_bad"
        ),
        "finding without file and path"
    );
}

#[test]
fn untrusted_evidence_text_is_escaped() {
    let rec = Recording::open(RECORDED_B);
    let mut files = rec.files();
    let evil = r#"</pre></details><script>alert(1)</script><img src=x onerror=alert(2)>"#;
    {
        let f = &mut files.get_mut("evidence/05.json").unwrap()["facts"];
        f["target_bad"]["message"] = json!(evil);
        f["target_bad"]["name"] = json!(format!("x\"><script>alert(3)</script>"));
        f["target_bad"]["outcome"] = json!("<b>stored</b>");
    }
    let tmp = tempfile::tempdir().unwrap();
    common::write_tree(tmp.path(), &files);
    let html = recorded_page(&rec, tmp.path(), Lang::En);
    assert!(!html.contains("<script"), "unescaped script");
    assert!(!html.contains("<img"), "unescaped img");
    assert!(!html.contains("<b>stored"), "unescaped outcome");
    assert!(
        html.contains("&lt;script&gt;alert(1)"),
        "the text itself is kept"
    );
}

#[test]
fn pages_are_self_contained() {
    for (dir, lab) in [
        (RECORDED_B, Lab::B),
        ("a/pass", Lab::A),
        (LAB_C_FREEZES, Lab::C),
    ] {
        let html = fixture_page(dir, lab, Lang::En);
        // Nothing is fetched: no script, no external style sheet, font or image, no link out of
        // the page (URLs in the evidence are text, escaped, never attributes).
        for needle in [
            "<script", "<link", "<img", "<iframe", "src=", "@import", "url(",
        ] {
            assert_eq!(html.matches(needle).count(), 0, "{dir}: {needle}");
        }
        // Links stay on the page: each goes to an anchor the page has (the condition table's
        // links to the raw evidence).
        let hrefs = attr_values(&html, "href");
        assert!(
            !hrefs.is_empty(),
            "{dir}: the condition table links its evidence"
        );
        let ids = attr_values(&html, "id");
        for h in &hrefs {
            assert!(
                h.strip_prefix('#')
                    .is_some_and(|id| ids.iter().any(|i| i == id)),
                "{dir}: link {h} leaves the page or has no anchor"
            );
        }
    }
}

#[test]
fn timeline_has_one_mark_per_recorded_request() {
    for (dir, lab) in [
        (RECORDED_B, Lab::B),
        ("b/pass", Lab::B),
        ("a/pass", Lab::A),
        (RECORDED_A, Lab::A),
        (LAB_C_FREEZES, Lab::C),
    ] {
        let html = fixture_page(dir, lab, Lang::En);
        let (dir, _tmp) = fixture_dir(dir);
        let marks = attr_values(&html, "data-request");
        let unique: BTreeSet<String> = marks.iter().cloned().collect();
        assert_eq!(
            marks.len(),
            unique.len(),
            "{}: a request drawn twice",
            dir.display()
        );
        assert_eq!(unique, recorded_requests(&dir), "{}", dir.display());
    }
}

#[test]
fn junit_suite_has_a_case_per_act_and_grade() {
    let rec = Recording::open(RECORDED_B);
    let input = rec.grade_input();
    let grades = rec.grade(&input);
    let mut errors = BTreeMap::new();
    let suite = lab::report::junit::suite(Lab::B, &input, &grades, &errors);
    let mut report = quick_junit::Report::new("run");
    report.add_test_suite(suite);
    let xml = report.to_string().unwrap();
    assert_eq!(
        xml.matches("<testcase ").count(),
        2 * rec.acts.len(),
        "{xml}"
    );
    assert!(!xml.contains("<failure"), "{xml}");
    // act 5 took finished_at - started_at = 20.086 s.
    assert!(
        xml.contains(
            r#"<testcase name="lab b act 5" classname="kca-webhook-lab.lab-b.acts" time="20.086""#
        ),
        "{xml}"
    );
    // A failed act and a finding become failures; an act without evidence is skipped.
    let (_tmp, input) = rec.copy_with(|files| {
        files.get_mut("evidence/05.json").unwrap()["facts"]["target_bad"]["elapsed_ms"] =
            json!(200);
        files.remove("evidence/08.json");
    });
    let grades = rec.grade(&input);
    errors.insert(8, "waiting for the report: bound ran out".to_owned());
    let mut report = quick_junit::Report::new("run");
    report.add_test_suite(lab::report::junit::suite(Lab::B, &input, &grades, &errors));
    let xml = report.to_string().unwrap();
    assert!(xml.contains("timeout-too-fast"), "{xml}");
    assert!(
        xml.contains("waiting for the report: bound ran out"),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<failure").count(),
        3,
        "act 8, grade 5, grade 8: {xml}"
    );
}

// ---------------------------------------------------------------------------------------------
// In a real browser.

fn chromium() -> PathBuf {
    common::ensure_report_page_packages();
    if let Some(p) = std::env::var_os("KCA_CHROMIUM") {
        return PathBuf::from(p);
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && out.status.success()
        {
            return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        }
    }
    panic!(
        "no headless browser: install Debian's chromium (as root, `cargo test` installs it) or set KCA_CHROMIUM"
    );
}

/// Loads `file` in headless Chromium; returns the DOM after load and the console errors
/// (`Uncaught …` and `console.error` lines Chromium logs with `--enable-logging=stderr`).
fn load_in_browser(file: &Path) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("running chromium");
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("ERROR")))
        .map(str::to_owned)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), errors)
}

#[test]
fn pages_render_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    // The detector works: a page with a throwing script reports the error.
    let bad = tmp.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><script>throw new Error('kca-probe')</script></body></html>",
    )
    .unwrap();
    let (_, errors) = load_in_browser(&bad);
    assert!(
        errors.iter().any(|e| e.contains("kca-probe")),
        "the console error detector saw nothing: {errors:?}"
    );

    for (dir, lab, lang) in [
        (RECORDED_B, Lab::B, Lang::En),
        (RECORDED_B, Lab::B, Lang::Ja),
        ("a/pass", Lab::A, Lang::En),
        (LAB_C_FREEZES, Lab::C, Lang::En),
        (RECORDED_C, Lab::C, Lang::En),
    ] {
        let html = fixture_page(dir, lab, lang);
        let (dir, _tmp) = fixture_dir(dir);
        let file = tmp.path().join(format!(
            "{}-{lang:?}.html",
            dir.file_name().unwrap().to_string_lossy()
        ));
        std::fs::write(&file, html).unwrap();
        let (dom, errors) = load_in_browser(&file);
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
        // The DOM the browser built (not our text): the marks are SVG elements inside the timeline.
        let svgs: Vec<&str> = dom
            .split("<svg")
            .skip(1)
            .map(|s| &s[..s.find("</svg>").unwrap()])
            .collect();
        let in_svg: BTreeSet<String> = svgs
            .iter()
            .flat_map(|s| attr_values(s, "data-request"))
            .collect();
        let marks: usize = svgs
            .iter()
            .map(|s| attr_values(s, "data-request").len())
            .sum();
        let want = recorded_requests(&dir);
        assert_eq!(marks, want.len(), "{}", file.display());
        assert_eq!(in_svg, want, "{}", file.display());
        // What the page draws is read from the registry's fault steps (`report::timeline`): a
        // scale-down's chart with its steps, or one shaded window per freeze, a freeze of a
        // replica by its role on a chart of its own with a row per replica.
        let freezes = lab::acts::freezes(lab);
        if lab::acts::scale_down(lab).is_some() {
            let steps: BTreeSet<String> = svgs
                .iter()
                .flat_map(|s| attr_values(s, "data-step"))
                .collect();
            for k in [
                "scaled",
                "pods-gone",
                "registration-checked",
                "replicas-restored",
                "pod-running",
                "lease-acquired",
                "webhook-registered",
                "first-deny",
            ] {
                assert!(steps.contains(k), "step {k} missing: {steps:?}");
            }
            assert!(svgs[0].contains("watcher deadline 55 s"));
        } else if freezes.iter().all(|(_, t)| *t == Target::One) {
            assert_eq!(
                svgs.iter()
                    .map(|s| s.matches("data-window=\"freeze\"").count())
                    .sum::<usize>(),
                freezes.len()
            );
        } else {
            // A chart per freeze, each with the replica rows (act 4's leader, then its
            // followers) and one shaded freeze.
            assert_eq!(svgs.len(), freezes.len(), "{}", file.display());
            let a4: Value =
                serde_json::from_slice(&std::fs::read(dir.join("evidence/04.json")).unwrap())
                    .unwrap();
            let mut rows = vec![a4["facts"]["leader"]["pod_name"].as_str().unwrap()];
            for f in a4["facts"]["followers"].as_array().unwrap() {
                rows.push(f["pod_name"].as_str().unwrap());
            }
            for s in &svgs {
                assert_eq!(attr_values(s, "data-replica"), rows);
                assert_eq!(s.matches("data-window=\"freeze\"").count(), 1);
                assert!(!attr_values(s, "data-holder").is_empty());
            }
        }
    }
}

#[test]
fn each_request_sending_act_shows_its_admission_webhook_counters() {
    // The real lab B run: act 5 (Fail, frozen) made the API server count two calling_webhook_error
    // rejections on the policy's Fail webhook; act 6 (Ignore, frozen) two fail-open admissions.
    let html = fixture_page("recorded/b-20261130T210502Z", Lab::B, Lang::En);
    assert_eq!(attr_values(&html, "data-metrics"), ["3", "5", "6", "7"]);
    let row = |act: &str| {
        let start = html.find(&format!("data-metrics=\"{act}\"")).unwrap();
        let end = html[start..].find("</table>").unwrap();
        html[start..start + end].to_owned()
    };
    // A small table: webhook × counter × change (the webhook in its own column, not a label).
    let counter = |act: &str, webhook: &str, counter: &str, change: &str| {
        row(act).contains(&format!(
            "<tr data-counter=\"{counter}\"><td class=\"mono\">{webhook}</td><td class=\"mono\">{counter}</td><td class=\"mono\">{change}</td></tr>"
        ))
    };
    assert!(
        counter(
            "5",
            "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label",
            "rejection_count{error_type=calling_webhook_error,operation=CREATE,rejection_code=503,type=validating}",
            "+2"
        ),
        "{}",
        row("5")
    );
    assert!(
        counter(
            "6",
            "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label",
            "fail_open_count{type=validating}",
            "+2"
        ),
        "{}",
        row("6")
    );
    // Evidence recorded before the tool read /metrics shows no such row.
    let old = fixture_page(RECORDED_B, Lab::B, Lang::En);
    assert!(attr_values(&old, "data-metrics").is_empty());
}

/// A reader meets what was observed first: the condition table, then the fault timeline, then
/// the acts (key facts after them); and lab A's recovery probes take one chart row per run of
/// equal outcomes (the recorded run: 56 admitted, 1 no-endpoints, 1 deny → three rows, not 58),
/// each bar still drawn.
#[test]
fn observations_come_first_and_probe_runs_share_a_row() {
    let html = fixture_page(RECORDED_A, Lab::A, Lang::En);
    let conditions = html
        .find("What was observed, per condition")
        .expect("a condition table heading");
    let chart = html.find("data-timeline").expect("a timeline");
    let acts = html
        .find("Acts: status and grade")
        .expect("an acts heading");
    let key = html.find("Key facts").expect("a key facts heading");
    assert!(
        conditions < chart && chart < acts && acts < key,
        "conditions at {conditions}, chart at {chart}, acts at {acts}, key facts at {key}"
    );
    // The lab's own headers, not the nightly summary's combined "(A) / (B)" ones.
    assert!(
        html.contains("<th>Lease takeover</th>"),
        "lab A's key facts headers"
    );
    assert!(
        !html[key..]
            .split("<h2>")
            .next()
            .unwrap_or("")
            .contains("(B)"),
        "lab B words on lab A's key facts"
    );
    let b = fixture_page(RECORDED_B, Lab::B, Lang::Ja);
    assert!(
        b.contains("<th>凍結中 (failurePolicy Fail)</th>"),
        "lab B's key facts headers in Japanese"
    );
    let probe_rows: Vec<&str> = html
        .match_indices(">dry-run probes #")
        .map(|(i, _)| &html[i + 1..i + 40])
        .map(|s| s.split(['<', ':']).next().unwrap_or(s))
        .collect();
    assert_eq!(
        probe_rows,
        [
            "dry-run probes #1–#56",
            "dry-run probes #57",
            "dry-run probes #58"
        ],
        "probe rows of the recorded lab A run"
    );
    assert!(
        html.contains("dry-run-admitted ×56 · "),
        "the run's label counts its bars"
    );
}

/// The condition table of a recorded run holds what the evidence observed, cell by cell (outcome,
/// time to answer, link to the evidence's JSON path), and follows the evidence when it changes.
#[test]
fn the_condition_table_is_filled_with_what_was_observed() {
    let cell = |html: &str, key: &str| -> String {
        let start = html
            .find(&format!("data-cell=\"{key}\""))
            .unwrap_or_else(|| panic!("no cell {key}"));
        let end = html[start..].find("</td>").unwrap();
        html[start..start + end].to_owned()
    };
    let b = fixture_page("recorded/b-20261130T210502Z", Lab::B, Lang::En);
    // Act 5, frozen under Fail: both target requests timed out after timeoutSeconds (3 s), the
    // control request was stored.
    let bad = cell(&b, "05:facts.target_bad");
    assert!(
        bad.contains(">webhook-timeout</span> · 3.0 s")
            && bad.contains("href=\"#evidence-05\"")
            && bad.contains("evidence/05.json facts.target_bad"),
        "{bad}"
    );
    assert!(cell(&b, "05:facts.control").contains(">stored</span> · 11 ms"));
    // Act 6, frozen under Ignore: the unlabelled pod was stored after the timeout.
    assert!(cell(&b, "06:facts.target_bad").contains(">stored</span> · 3.1 s"));
    assert!(cell(&b, "07:facts.healthy_bad").contains(">explicit-deny</span>"));
    assert_eq!(attr_values(&b, "data-condition").len(), 7);
    // Lab A: scaled to 0, the violating pod was stored; the recovery's first deny is probe #58.
    let a = fixture_page(RECORDED_A, Lab::A, Lang::En);
    assert!(cell(&a, "05:facts.target_bad").contains(">stored</span>"));
    assert!(
        cell(&a, "06:facts.deny_probes[57]").contains(">explicit-deny</span>"),
        "{a}"
    );
    assert!(cell(&a, "07:facts.good").contains(">dry-run-admitted</span>"));
    // The cell follows the evidence.
    let rec = Recording::open("recorded/b-20261130T210502Z");
    let mut files = rec.files();
    files.get_mut("evidence/05.json").unwrap()["facts"]["control"]["outcome"] =
        json!("explicit-deny");
    let tmp = tempfile::tempdir().unwrap();
    common::write_tree(tmp.path(), &files);
    let changed = recorded_page(&rec, tmp.path(), Lang::En);
    assert!(cell(&changed, "05:facts.control").contains(">explicit-deny</span>"));
}

/// Words that may stay in Latin letters on the Japanese page: field terms the course uses in
/// Japanese too, the evidence's outcome names, units, signal and product names.
const LATIN_ON_JA: &[&str] = &[
    "act",
    "webhook",
    "failurePolicy",
    "Fail",
    "Ignore",
    "pidfd",
    "healer",
    "watcher",
    "SIGSTOP",
    "SIGCONT",
    "Lease",
    "Pod",
    "Running",
    "uid",
    "UID",
    "JSON",
    "Kyverno",
    "API",
    "ms",
    "s",
    "UTC",
    "sideEffects",
    "stored",
    "dry",
    "run",
    "HTML",
    "SHA",
    "evidence",
    "json",
    "pid",
    "admission",
    "replicas",
    "A",
    "B",
    "C",
];

/// Latin-letter words of `dom`'s visible text that are not values (no digit, `-`, `.`, `/`,
/// `_`, `:`, `=` or brace in the token) and not in [`LATIN_ON_JA`]: text inside `<style>`,
/// `<pre>`, `<summary>` and elements of class `mono` (values verbatim) is left out.
fn english_words(dom: &str) -> BTreeSet<String> {
    let mut text = String::new();
    let mut skip: Vec<String> = Vec::new();
    let mut rest = dom;
    while let Some(lt) = rest.find('<') {
        if skip.is_empty() {
            text.push_str(&rest[..lt]);
            text.push(' ');
        }
        let gt = rest[lt..]
            .find('>')
            .map(|g| lt + g)
            .unwrap_or(rest.len() - 1);
        let tag = &rest[lt + 1..gt];
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if tag.starts_with('/') {
            if skip.last() == Some(&name) {
                skip.pop();
            }
        } else if !skip.is_empty() && !tag.ends_with('/') {
            if skip.last() == Some(&name) {
                skip.push(name);
            }
        } else if matches!(name.as_str(), "style" | "pre" | "summary" | "title")
            || tag.contains("class=\"mono")
            || tag.contains(" mono\"")
        {
            skip.push(name);
        }
        rest = &rest[gt + 1..];
    }
    text.split(|c: char| c.is_whitespace() || !c.is_ascii())
        .filter(|tok| {
            !tok.chars()
                .any(|c| c.is_ascii_digit() || "-./_:={}#@".contains(c))
        })
        .map(|tok| tok.trim_matches(|c: char| !c.is_ascii_alphabetic()))
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic()))
        .filter(|w| !LATIN_ON_JA.contains(w))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_english_word_detector_sees_words_and_skips_values() {
    let found = english_words(
        "<p>完了 completed <span class=\"mono\">not a word</span> kca-b5-bad <b>frozen</b></p><pre>raw</pre>",
    );
    assert_eq!(
        found,
        BTreeSet::from(["completed".to_owned(), "frozen".to_owned()])
    );
}

/// The Japanese pages, as Chromium builds them with a Japanese font installed
/// (`fonts-noto-cjk`, installed by the test when missing): every word outside values is Japanese (or a field term,
/// [`LATIN_ON_JA`]), from the condition table to the timeline's row labels and bands.
#[test]
fn japanese_pages_are_japanese_in_headless_chromium() {
    common::ensure_report_page_packages();
    let fonts = Command::new("fc-list")
        .args([":lang=ja", "family"])
        .output()
        .expect("running fc-list (fontconfig)");
    let families = String::from_utf8_lossy(&fonts.stdout).into_owned();
    assert!(
        !families.trim().is_empty(),
        "no Japanese font: the page renders as boxes; install fonts-noto-cjk (as root, `cargo test` installs it)"
    );
    let tmp = tempfile::tempdir().unwrap();
    for (dir, lab) in [
        ("recorded/b-20261130T210502Z", Lab::B),
        (RECORDED_A, Lab::A),
        ("a/pass", Lab::A),
        (LAB_C_FREEZES, Lab::C),
    ] {
        let file = tmp.path().join(format!("{}.ja.html", lab.as_str()));
        std::fs::write(&file, fixture_page(dir, lab, Lang::Ja)).unwrap();
        let (dom, errors) = load_in_browser(&file);
        assert!(errors.is_empty(), "{dir}: {errors:?}");
        assert!(dom.contains("条件ごとに観測した結果"), "{dir}");
        let words = english_words(&dom);
        assert!(
            words.is_empty(),
            "{dir}: English words on the Japanese page: {words:?}"
        );
        // The English page of the same run does have them (the check can fail).
        let en = tmp.path().join(format!("{}.en.html", lab.as_str()));
        std::fs::write(&en, fixture_page(dir, lab, Lang::En)).unwrap();
        let (dom, _) = load_in_browser(&en);
        assert!(
            english_words(&dom).len() > 20,
            "{dir}: the detector sees English"
        );
    }
}

#[test]
fn lab_c_generated_page_has_eight_passing_grades_and_two_freeze_charts() {
    // The generated lab C work directory (the graders' fixture) holds all eight acts.
    let en = fixture_page("c/pass", Lab::C, Lang::En);
    assert!(en.contains("Lab C record: three admission-controller replicas"));
    assert!(
        en.contains(r#"data-grades-passed="8""#),
        "{}",
        attr_values(&en, "data-grades-passed")[0]
    );
    let mut charts = attr_values(&en, "data-timeline");
    charts.sort();
    assert_eq!(charts, ["5", "6"], "one chart per freeze");
    assert!(en.contains("<th>leader frozen, failurePolicy Fail</th>"));
    assert!(en.contains("03:facts.bad[0]"), "act 3's condition row");
    let ja = fixture_page("c/pass", Lab::C, Lang::Ja);
    assert!(ja.contains("ラボC 記録"));
}

/// The SVG of the chart of act `act` (`data-timeline="act"`).
fn chart(html: &str, act: u8) -> &str {
    let start = html
        .find(&format!("data-timeline=\"{act}\""))
        .unwrap_or_else(|| panic!("no chart of act {act}"));
    let end = html[start..].find("</svg>").unwrap();
    &html[start..start + end]
}

/// Each start tag of `html` that has attribute `attr`.
fn tags_with<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    html.match_indices(&format!(" {attr}=\""))
        .map(|(i, _)| {
            let from = html[..i].rfind('<').unwrap();
            let to = i + html[i..].find('>').unwrap();
            &html[from..=to]
        })
        .collect()
}

/// `(value of attr, data-from, data-to)` of each tag with `attr`, in order (ms since SIGSTOP).
fn spans(svg: &str, attr: &str) -> Vec<(String, i64, i64)> {
    tags_with(svg, attr)
        .into_iter()
        .map(|t| {
            let n = |a: &str| attr_values(t, a)[0].parse::<i64>().unwrap();
            (
                attr_values(t, attr)[0].clone(),
                n("data-from"),
                n("data-to"),
            )
        })
        .collect()
}

/// The part of `svg` that is replica `pod`'s row.
fn replica_row<'a>(svg: &'a str, pod: &str) -> &'a str {
    let start = svg
        .find(&format!("data-replica=\"{pod}\""))
        .unwrap_or_else(|| panic!("no row of {pod}"));
    let end = svg[start..].find("</g>").unwrap();
    &svg[start..start + end]
}

#[test]
fn lab_c_timeline_has_a_row_per_replica_its_freeze_and_the_lease_holder() {
    use lab_c::{FOLLOWER_1, FOLLOWER_2, LEADER};
    let en = fixture_page(LAB_C_FREEZES, Lab::C, Lang::En);
    let pods = [LEADER, FOLLOWER_1, FOLLOWER_2];

    // Act 5: the leader frozen 20.003 s; the Lease named it from the read before the freeze
    // (-0.1 s) until the read at +13.2 s named b8n3r, which held it to the last read (+20.2 s,
    // drawn for one read period).
    let c5 = chart(&en, 5);
    assert_eq!(attr_values(c5, "data-replica"), pods);
    let frozen: Vec<_> = tags_with(c5, "data-window");
    assert_eq!(frozen.len(), 1);
    assert!(replica_row(c5, LEADER).contains("data-window=\"freeze\""));
    assert!(
        frozen[0].contains(r#"data-from="0" data-to="20003""#),
        "{}",
        frozen[0]
    );
    assert_eq!(
        spans(c5, "data-holder"),
        [
            (LEADER.to_owned(), -100, 13_200),
            (FOLLOWER_1.to_owned(), 13_200, 21_200)
        ]
    );
    assert!(replica_row(c5, FOLLOWER_1).contains("data-holder"));
    assert!(!replica_row(c5, FOLLOWER_2).contains("data-holder"));
    assert!(
        c5.contains("Lease → b8n3r (+13.2 s)"),
        "the holder change line"
    );
    // Every replica stayed a ready endpoint (read each second from +0.3 s to +20.3 s).
    for p in pods {
        assert_eq!(
            spans(replica_row(c5, p), "data-endpoint"),
            [("ready".to_owned(), 300, 21_300)],
            "{p}"
        );
    }
    // The per-replica counters and the former leader's restart, on the rows.
    let leader = replica_row(c5, LEADER);
    assert!(
        leader.contains("frozen (leader) · admission counter +5 · restarts 0→1"),
        "{leader}"
    );
    assert!(replica_row(c5, FOLLOWER_1).contains("admission counter +7"));
    // Three waves of six violating pods and their control pod, one lane each.
    assert_eq!(attr_values(c5, "data-wave"), ["1", "2", "3"]);
    assert!(c5.contains("explicit-deny ×4 · webhook-timeout ×2 · control: stored"));
    assert_eq!(
        attr_values(c5, "data-outcome")
            .iter()
            .filter(|o| *o == "webhook-timeout")
            .count(),
        5
    );

    // Act 6: the follower k5v9t frozen 10.002 s; the Lease stayed with b8n3r.
    let c6 = chart(&en, 6);
    assert_eq!(attr_values(c6, "data-replica"), pods);
    assert!(
        replica_row(c6, FOLLOWER_2)
            .contains(r#"data-window="freeze" data-from="0" data-to="10002""#)
    );
    assert_eq!(tags_with(c6, "data-window").len(), 1);
    assert_eq!(
        spans(c6, "data-holder"),
        [(FOLLOWER_1.to_owned(), -100, 11_150)]
    );
    assert!(!c6.contains("Lease →"), "no holder change");
    assert!(replica_row(c6, FOLLOWER_1).contains("Lease holder before the freeze"));
    assert!(
        replica_row(c6, FOLLOWER_2)
            .contains("frozen (follower) · admission counter +4 · restarts 0→0")
    );

    // No request on a replica row, and the page says why.
    for p in pods {
        assert!(!replica_row(c5, p).contains("data-request"));
    }
    assert!(en.contains("does not name the replica that answered a request"));

    // The key facts, in the report's words (`rules::c`).
    for cell in [
        "<td class=\"mono\">webhook-timeout 5/18, explicit-deny 13/18</td>",
        "<td class=\"mono\">Lease taken over by kyverno-admission-controller-6d9c7b8f5d-b8n3r, first read 13.2 s after the freeze; former leader restarted (restarts 0→1)</td>",
        "<td class=\"mono\">stored 4/18 (unvalidated), explicit-deny 14/18</td>",
    ] {
        assert!(en.contains(cell), "{cell}");
    }
    // The four observations: during each freeze the webhook did not answer every violating
    // request.
    assert!(en.contains(
        "<th>leader frozen, Fail (act 5)</th><td class=\"unk\">—</td><td class=\"yes\">✓ <span class=\"mono\">vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label (Fail)</span></td><td class=\"no\">✗ <span class=\"mono\">explicit-deny 13/18</span></td>"
    ));
    assert!(en.contains("<td class=\"no\">✗ <span class=\"mono\">explicit-deny 14/18</span></td>"));
    let ja = fixture_page(LAB_C_FREEZES, Lab::C, Lang::Ja);
    assert!(ja.contains("<th>リーダー凍結中 (failurePolicy Fail)</th>"));
    assert!(ja.contains("凍結から 13.2 s 後の読み取りで kyverno-admission-controller-6d9c7b8f5d-b8n3r が Lease を保持"));
    assert!(ja.contains("凍結 (リーダー) · admission カウンタ +5 · 再起動回数 0→1"));
}

#[test]
fn lab_c_timeline_and_key_facts_follow_the_evidence() {
    use lab_c::{FOLLOWER_1, LEADER};
    let mut files = lab_c::files();
    {
        let f = &mut files.get_mut("evidence/05.json").unwrap()["facts"];
        // No read named another holder, one read failed, and the leader's endpoint was not
        // ready from +10.3 s.
        for s in f["lease_samples"].as_array_mut().unwrap() {
            s["holder"] = json!(LEADER);
            s["lease_transitions"] = json!(0);
        }
        f["lease_samples"][5] = json!({"at": lab_c_ts(206_200), "holder": null, "renew_time": null,
            "lease_transitions": null, "error": "Get … context deadline exceeded"});
        for s in f["endpoint_samples"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .skip(10)
        {
            s["endpoints"][0]["ready"] = json!(false);
        }
        // Kept running: no restart, and CRI shows the frozen container after the resume.
        f["target_after"]["restart_count_after"] = json!(0);
        f["target_after"]["identity_after"] = f["freeze"]["identity"].clone();
        f["lease_after"]["holder"] = json!(LEADER);
    }
    let tmp = tempfile::tempdir().unwrap();
    common::write_tree(tmp.path(), &files);
    let en = page(tmp.path(), Lab::C, Lang::En);
    let c5 = chart(&en, 5);
    assert_eq!(
        spans(c5, "data-holder"),
        [
            (LEADER.to_owned(), -100, 5_200),
            (LEADER.to_owned(), 6_200, 21_200)
        ],
        "a gap where the read failed"
    );
    assert!(!replica_row(c5, FOLLOWER_1).contains("data-holder"));
    assert!(!c5.contains("Lease →"));
    assert_eq!(
        spans(replica_row(c5, LEADER), "data-endpoint"),
        [
            ("ready".to_owned(), 300, 10_300),
            ("not-ready".to_owned(), 10_300, 21_300)
        ]
    );
    assert!(en.contains(&format!(
        "<td class=\"mono\">Lease kept by {LEADER}; former leader kept running (restarts 0→0)</td>"
    )));
}

/// The fixtures' time origin plus `ms`.
fn lab_c_ts(ms: i64) -> String {
    common::fixtures::ts(ms)
}
