//! The fault timeline as inline SVG, drawn only from evidence timestamps (RFC 3339 UTC, ms).
//!
//! Marks carry data attributes so a browser test can count them: every request bar has
//! `data-request="<name>"` and `data-outcome="<outcome>"`, a freeze window `data-window="freeze"`,
//! each lab A step `data-step="<key>"`. Lab C's charts have one group `data-replica="<pod>"` per
//! replica row, holding its freeze window, its Lease spans (`data-holder="<pod>"`) and its endpoint
//! spans (`data-endpoint="ready|not-ready|absent"`), each with `data-from` and `data-to` in ms since
//! SIGSTOP; and one group `data-wave="<n>"` per wave of requests. A request appears once even when the facts hold it twice
//! (lab B's `first_explicit_deny` is also the last entry of `after_resume`). Lab A's recovery probes
//! are drawn one row per run of equal outcomes (every bar kept), so the chart stays a page long.

use maud::{Markup, html};
use serde_json::Value;

use super::text as tx;
use crate::text::Lang;

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp at `ptr` in `v`.
pub(crate) fn ms_at(v: &Value, ptr: &str) -> Option<i64> {
    super::s(v, ptr)
        .and_then(crate::facts::parse_rfc3339)
        .map(|t| t.timestamp_millis())
}

/// CSS class of a request bar by outcome (colours are in the page's style sheet).
pub(crate) fn outcome_class(outcome: &str) -> &'static str {
    match outcome {
        "explicit-deny" => "o-deny",
        "webhook-timeout" => "o-timeout",
        "stored" => "o-stored",
        "dry-run-admitted" => "o-dryrun",
        "connection-refused" | "dns-error" | "no-endpoints" => "o-callfail",
        _ => "o-other",
    }
}

/// Every outcome with its class, for the legend.
pub(crate) const LEGEND: &[&str] = &[
    "explicit-deny",
    "webhook-timeout",
    "stored",
    "dry-run-admitted",
    "connection-refused",
    "other-error",
];

enum Mark {
    /// Requests on one row, each a bar from `sent_at` to `answered_at` (and its `data-request`),
    /// labelled after the last bar with its outcome and time (and `note`); a `run` (several
    /// requests of one outcome, lab A's run of dry-run probes) counts them.
    Requests {
        bars: Vec<Bar>,
        run: bool,
        note: Option<String>,
    },
    /// The freeze window.
    Window { from: i64, to: i64, note: String },
    /// One instant (a lab A step, the freeze healer arming); `None`: a step that was not seen
    /// (its wait ran out).
    Step {
        at: Option<i64>,
        key: &'static str,
        note: String,
    },
    /// Lab C: one admission-controller replica over the freeze: its frozen window (when it is
    /// the frozen one), the intervals in which the Lease named it, its endpoint's readiness per
    /// sample interval, and a note (role, admission counter, restarts) in the right margin.
    Replica {
        pod: String,
        frozen: Option<(i64, i64)>,
        holder: Vec<Span>,
        endpoint: Vec<Span>,
        note: String,
    },
    /// Requests sent together (lab C's wave): one thin lane per request, coloured by its outcome.
    Lanes {
        key: String,
        bars: Vec<Bar>,
        note: String,
    },
}

/// An interval of a replica row with what held in it (the Lease holder's leaseTransitions, or
/// the endpoint's state `ready` / `not-ready` / `absent`).
struct Span {
    from: i64,
    to: i64,
    what: String,
}

struct Row {
    label: String,
    mark: Mark,
}

/// Height of a lane of [`Mark::Lanes`] (px).
const LANE_H: f64 = 5.0;
/// Height of a [`Mark::Replica`] row (px): the Lease band and the endpoint strip under it.
const REPLICA_H: f64 = 32.0;

impl Row {
    /// The row's height: [`ROW_H`], a replica row's [`REPLICA_H`], or one lane per request.
    fn height(&self) -> f64 {
        match &self.mark {
            Mark::Replica { .. } => REPLICA_H,
            Mark::Lanes { bars, .. } => (6.0 + LANE_H * bars.len() as f64).max(ROW_H),
            _ => ROW_H,
        }
    }
}

/// A request row's note from its bar (the first deny's time after the resume).
type Note<'a> = dyn Fn(&Bar) -> Option<String> + 'a;

/// One request's bar (inside [`Mark::Requests`] and [`Mark::Lanes`]).
struct Bar {
    from: i64,
    to: i64,
    name: String,
    outcome: String,
    elapsed_ms: Option<u64>,
}

struct VLine {
    at: i64,
    label: String,
    class: &'static str,
}

impl VLine {
    /// A plain vertical line at `at`, labelled `label`.
    fn at(at: i64, label: &str) -> VLine {
        let (label, class) = (label.to_owned(), "vline");
        VLine { at, label, class }
    }
}

struct Chart {
    origin: i64,
    rows: Vec<Row>,
    vlines: Vec<VLine>,
}

const LEFT: f64 = 360.0;
const PLOT: f64 = 500.0;
const RIGHT: f64 = 320.0;
const ROW_H: f64 = 22.0;
const TOP: f64 = 38.0;

/// A row for the request `r` (`None` without both its times), noted as `note` says.
fn request_row(label: String, r: &Value, note: &Note) -> Option<Row> {
    let bar = bar(r)?;
    let (label, note) = (format!("{label}: {}", bar.name), note(&bar));
    let (bars, run) = (vec![bar], false);
    let mark = Mark::Requests { bars, run, note };
    Some(Row { label, mark })
}

/// A row for each request `(key, label)` of `keys` that `facts` holds ([`request_row`]).
fn request_rows(facts: &Value, keys: &[(&str, tx::Text)], lang: Lang) -> Vec<Row> {
    let row = |(key, label): &(&str, tx::Text)| {
        request_row(label.get(lang).to_owned(), facts.get(*key)?, &|_| None)
    };
    keys.iter().filter_map(row).collect()
}

fn secs_signed(ms: i64) -> String {
    format!("{:+.1} s", ms as f64 / 1000.0)
}

impl Chart {
    /// The chart of `rows` under `vlines`, its axis in seconds since `origin` (ms).
    fn draw(origin: i64, rows: Vec<Row>, vlines: Vec<VLine>) -> Markup {
        Chart {
            origin,
            rows,
            vlines,
        }
        .render()
    }

    fn span(&self) -> Option<(i64, i64)> {
        let mut ts: Vec<i64> = Vec::new();
        for r in &self.rows {
            match r.mark {
                Mark::Window { from, to, .. } => ts.extend([from, to]),
                Mark::Requests { ref bars, .. } | Mark::Lanes { ref bars, .. } => {
                    ts.extend(bars.iter().flat_map(|b| [b.from, b.to]))
                }
                Mark::Step { at, .. } => ts.extend(at),
                Mark::Replica {
                    frozen,
                    ref holder,
                    ref endpoint,
                    ..
                } => {
                    ts.extend(frozen.iter().flat_map(|(f, t)| [*f, *t]));
                    ts.extend(holder.iter().chain(endpoint).flat_map(|s| [s.from, s.to]));
                }
            }
        }
        ts.extend(self.vlines.iter().map(|v| v.at));
        let (lo, hi) = (*ts.iter().min()?, *ts.iter().max()?);
        let pad = ((hi - lo) / 30).max(200);
        Some((lo - pad, hi + pad))
    }

    fn render(&self) -> Markup {
        let Some((t0, t1)) = self.span() else {
            return html! {};
        };
        let x = |t: i64| LEFT + (t - t0) as f64 * PLOT / (t1 - t0) as f64;
        // Each row's top: rows have their own heights (replica rows and waves are taller; every
        // height is whole pixels, so the sums are exact).
        let mut tops = Vec::new();
        let rows_h = self.rows.iter().fold(0.0, |h, r| {
            tops.push(TOP + h);
            h + r.height()
        });
        let (height, width) = (TOP + rows_h + 30.0, LEFT + PLOT + RIGHT);
        // Axis ticks relative to the origin: the smallest step giving at most 12 ticks.
        let span = t1 - t0;
        let step = [500i64, 1000, 2000, 5000, 10000, 20000, 30000, 60000]
            .into_iter()
            .find(|s| span / s <= 12)
            .unwrap_or(120_000);
        let first = (t0 - self.origin).div_euclid(step) * step + step;
        let ticks: Vec<i64> = (0..)
            .map(|k| self.origin + first + k * step)
            .take_while(|t| *t <= t1)
            .collect();
        let axis_y = TOP + rows_h + 6.0;
        html! {
            svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img"
                viewBox=(format!("0 0 {width} {height}")) width=(width) height=(height) {
                @for t in &ticks {
                    line class="tick" x1=(fmt(x(*t))) x2=(fmt(x(*t))) y1=(fmt(TOP - 4.0)) y2=(fmt(axis_y)) {}
                    text class="ticklabel" x=(fmt(x(*t))) y=(fmt(axis_y + 14.0)) text-anchor="middle" { (secs_signed(t - self.origin)) }
                }
                @for (i, v) in self.vlines.iter().enumerate() {
                    // Labels alternate between two heights so close lines stay readable.
                    @let ly = TOP - 16.0 - 12.0 * (i % 2) as f64;
                    line class=(v.class) x1=(fmt(x(v.at))) x2=(fmt(x(v.at))) y1=(fmt(ly + 2.0)) y2=(fmt(axis_y)) {}
                    text class=(v.class) x=(fmt(x(v.at) + 3.0)) y=(fmt(ly)) { (v.label) }
                }
                @for (r, y) in self.rows.iter().zip(tops.iter().copied()) {
                    text class="rowlabel" x="4" y=(fmt(y + 14.0)) { (r.label) }
                    (self.mark(&r.mark, y, &x))
                }
            }
        }
    }

    /// One row's mark at the row's top `y`, with `x` the time → abscissa of the chart.
    fn mark(&self, mark: &Mark, y: f64, x: &dyn Fn(i64) -> f64) -> Markup {
        html! {
            @match mark {
                Mark::Requests { bars, run, note } => {
                    @for b in bars { (bar_rect(b, y + 4.0, "13", x)) }
                    @if let Some(last) = bars.last() {
                        text class="barlabel" x=(fmt(bar_end(last, x) + 4.0)) y=(fmt(y + 14.0)) {
                            (last.outcome) @if *run { " ×" (bars.len()) } " · " (elapsed_range(bars))
                            @if let Some(n) = note { " · " (n) }
                        }
                    }
                }
                Mark::Window { from, to, note } => {
                    rect class="window" data-window="freeze" x=(fmt(x(*from))) y=(fmt(y + 2.0))
                        width=(fmt((x(*to) - x(*from)).max(2.0))) height="17" {}
                    text class="barlabel" x=(fmt(x(*to) + 4.0)) y=(fmt(y + 14.0)) { (note) }
                }
                Mark::Step { at: Some(at), key, note } => {
                    circle class="step" data-step=(key) cx=(fmt(x(*at))) cy=(fmt(y + 10.5)) r="5" {}
                    text class="barlabel" x=(fmt(x(*at) + 9.0)) y=(fmt(y + 14.0)) { (note) }
                }
                Mark::Step { at: None, key, note } => {
                    text class="missing" data-step=(key) x=(fmt(LEFT)) y=(fmt(y + 14.0)) { (note) }
                }
                Mark::Replica { pod, frozen, holder, endpoint, note } => {
                    g data-replica=(pod) {
                        line class="lane" x1=(fmt(LEFT)) x2=(fmt(LEFT + PLOT)) y1=(fmt(y + REPLICA_H - 1.0)) y2=(fmt(y + REPLICA_H - 1.0)) {}
                        @if let Some((from, to)) = frozen {
                            rect class="window" data-window="freeze" data-from=(from - self.origin) data-to=(to - self.origin)
                                x=(fmt(x(*from))) y=(fmt(y + 2.0)) width=(fmt((x(*to) - x(*from)).max(2.0))) height="20" {}
                        }
                        @for h in holder {
                            rect class="holder" data-holder=(pod) data-from=(h.from - self.origin) data-to=(h.to - self.origin)
                                x=(fmt(x(h.from))) y=(fmt(y + 7.0)) width=(fmt((x(h.to) - x(h.from)).max(2.0))) height="10" {
                                title { "Lease: " (pod) " · leaseTransitions " (h.what) }
                            }
                        }
                        @for e in endpoint {
                            rect class=(format!("ep ep-{}", e.what)) data-endpoint=(e.what) data-from=(e.from - self.origin) data-to=(e.to - self.origin)
                                x=(fmt(x(e.from))) y=(fmt(y + 24.0)) width=(fmt((x(e.to) - x(e.from)).max(1.0))) height="5" {}
                        }
                        text class="barlabel" x=(fmt(LEFT + PLOT + 6.0)) y=(fmt(y + 16.0)) { (note) }
                    }
                }
                Mark::Lanes { key, bars, note } => {
                    g data-wave=(key) {
                        @for (k, b) in bars.iter().enumerate() {
                            (bar_rect(b, y + 3.0 + LANE_H * k as f64, &fmt(LANE_H - 1.0), x))
                        }
                        @let end = bars.iter().map(|b| bar_end(b, x)).fold(LEFT, f64::max);
                        text class="barlabel" x=(fmt(end + 4.0)) y=(fmt(y + 14.0)) { (note) }
                    }
                }
            }
        }
    }
}

/// A request's bar `b`, coloured by its outcome, with its top at `y` and `height` high; its
/// title names the request, the outcome and the time to the answer.
fn bar_rect(b: &Bar, y: f64, height: &str, x: &dyn Fn(i64) -> f64) -> Markup {
    html! {
        rect class=(format!("bar {}", outcome_class(&b.outcome))) data-request=(b.name) data-outcome=(b.outcome)
            x=(fmt(x(b.from))) y=(fmt(y)) width=(fmt((x(b.to) - x(b.from)).max(2.0))) height=(height) {
            title { (b.name) " · " (b.outcome) " · " (b.elapsed_ms.map(|m| format!("{m} ms")).unwrap_or_default()) }
        }
    }
}

/// The abscissa where bar `b` ends (bars are at least 2 px wide).
fn bar_end(b: &Bar, x: &dyn Fn(i64) -> f64) -> f64 {
    x(b.to).max(x(b.from) + 2.0)
}

/// `min–max ms` of the bars' elapsed times (`? ms` when none recorded one).
fn elapsed_range(bars: &[Bar]) -> String {
    let ms: Vec<u64> = bars.iter().filter_map(|b| b.elapsed_ms).collect();
    match (ms.iter().min(), ms.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("{lo} ms"),
        (Some(lo), Some(hi)) => format!("{lo}–{hi} ms"),
        _ => "? ms".into(),
    }
}

/// Rows for a series of requests: with `runs`, each run of consecutive requests with the same
/// outcome becomes one row labelled `{label} #first–#last` (a run of one keeps its own row and
/// label `#n`), so a recovery with sixty admitted probes and one deny reads as two rows, not
/// sixty-one; without, one row per request. A request on a row of its own is noted as `note` says.
fn request_runs(label: &str, requests: &[Value], runs: bool, note: &Note) -> Vec<Row> {
    let outcome = |r: &Value| r["outcome"].as_str().unwrap_or("?").to_owned();
    let (mut rows, mut last) = (Vec::new(), 0);
    for run in requests.chunk_by(|a, b| runs && outcome(a) == outcome(b)) {
        let (first, bars) = (last + 1, run.iter().filter_map(bar).collect::<Vec<_>>());
        last += run.len();
        if let [r] = run {
            rows.extend(request_row(format!("{label} #{first}"), r, note));
        } else if !bars.is_empty() {
            let (label, run, note) = (format!("{label} #{first}–#{last}"), true, None);
            let mark = Mark::Requests { bars, run, note };
            rows.push(Row { label, mark });
        }
    }
    rows
}

fn fmt(v: f64) -> String {
    format!("{v:.1}")
}

/// The first deny's note: its time after the resume, from the facts or else from its `answered`
/// time (ms).
fn first_deny_note(facts: &Value, resumed: i64, answered: i64, lang: Lang) -> String {
    let ms = facts["first_deny_after_resume_ms"].as_i64();
    let ms = ms.unwrap_or(answered - resumed);
    format!("{} +{ms} ms", tx::FIRST_DENY.get(lang))
}

/// Lab A: scale to 0 (act 5) and the recovery timeline (act 6). `None` when act 5 recorded no
/// scale-down. Rows: act 5's steps (the watcher armed, the scale-down, the pods gone, the
/// registration checked), then the target's and the control's requests; act 6's recovery steps,
/// then the deny probes ([`step_rows`]).
pub(crate) fn scale(f5: &Value, f6: &Value, lang: Lang) -> Option<Markup> {
    let w = |t: tx::Text| t.get(lang);
    let scaled = ms_at(f5, "/scaled_at")?;
    let restore = ms_at(f6, "/replicas_restored/at");
    let reg = match f5["policy_webhook_present"].as_bool() {
        Some(false) => w(tx::REGISTRATION_ABSENT),
        Some(true) => w(tx::REGISTRATION_PRESENT),
        None => w(tx::REGISTRATION_UNKNOWN),
    };
    let act5 = [
        ("watcher-armed", w(tx::WATCHER_ARMED), "/watcher/armed_at"),
        ("scaled", w(tx::SCALED_TO_0), "/scaled_at"),
        ("pods-gone", w(tx::PODS_GONE), "/pods_gone_at"),
        ("registration-checked", reg, "/registrations_checked_at"),
    ];
    let mut rows = step_rows(f5, &act5, restore, lang);
    let requests = [
        ("target_bad", tx::ROW_TARGET_BAD_SCALED),
        ("control", tx::ROW_CONTROL),
    ];
    rows.extend(request_rows(f5, &requests, lang));
    let by = tx::evidence_word(f6["restored_by"].as_str().unwrap_or("?"), lang);
    let restored = format!("{} ({}: {by})", w(tx::RESTORE), w(tx::RESTORED_BY));
    let (registered, first) = (w(tx::WEBHOOK_REGISTERED), w(tx::FIRST_EXPLICIT_DENY));
    let act6 = [
        ("replicas-restored", restored.as_str(), "/replicas_restored"),
        ("pod-created", w(tx::NEW_POD_CREATED), "/pod_created"),
        ("pod-running", w(tx::NEW_POD_RUNNING), "/pod_running"),
        ("lease-acquired", w(tx::LEASE_ACQUIRED), "/lease_acquired"),
        ("webhook-registered", registered, "/webhook_registered"),
        ("first-deny", first, "/first_explicit_deny"),
    ];
    rows.extend(step_rows(f6, &act6, restore, lang));
    if let Some(probes) = f6["deny_probes"].as_array() {
        rows.extend(request_runs(w(tx::PROBES), probes, true, &|_| None));
    }
    let vlines = scale_vlines(f5, restore, lang);
    Some(Chart::draw(restore.unwrap_or(scaled), rows, vlines))
}

/// Lab A's step rows of an act's facts `f`, each `(key, label, ptr)` that `f` holds: a time (act
/// 5's steps) at that time; a recovery step (act 6's, an object) at its `at` when confirmed, else
/// missing with what was last seen. A step is noted with its time since the `restore` when the
/// replicas were restored (the chart's origin then).
fn step_rows(
    f: &Value,
    steps: &[(&'static str, &str, &str)],
    restore: Option<i64>,
    lang: Lang,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for &(key, label, ptr) in steps {
        let Some(s) = f.pointer(ptr) else { continue };
        let at = match s.is_object() {
            true => ms_at(s, "/at").filter(|_| s["status"] == "confirmed"),
            false => ms_at(f, ptr),
        };
        let note = match at {
            Some(at) => {
                let since = |r| format!("{} {}", secs_signed(at - r), tx::SINCE_RESTORE.get(lang));
                restore.map(since).unwrap_or_default()
            }
            None if s.is_object() => {
                let last_seen = s["last_seen"].as_str().unwrap_or("?");
                format!("{}: {last_seen}", tx::NOT_CONFIRMED.get(lang))
            }
            None => continue,
        };
        let (label, mark) = (label.to_owned(), Mark::Step { at, key, note });
        rows.push(Row { label, mark });
    }
    rows
}

/// Lab A's vertical lines: the watcher's deadline and the restore.
fn scale_vlines(f5: &Value, restore: Option<i64>, lang: Lang) -> Vec<VLine> {
    let after = &f5["watcher"]["restore_after_sec"];
    let label = format!("{} {after} s", tx::WATCHER_DEADLINE.get(lang));
    let class = "vline deadline";
    let deadline = ms_at(f5, "/watcher/deadline_at").map(|at| VLine { at, label, class });
    let restore = restore.map(|r| VLine::at(r, tx::RESTORE.get(lang)));
    deadline.into_iter().chain(restore).collect()
}

/// The array `facts[key]` (empty when absent or not an array).
fn list<'a>(facts: &'a Value, key: &str) -> &'a [Value] {
    facts[key].as_array().map_or(&[][..], Vec::as_slice)
}

/// A request record's bar (`None` without both times).
fn bar(r: &Value) -> Option<Bar> {
    Some(Bar {
        from: ms_at(r, "/sent_at")?,
        to: ms_at(r, "/answered_at")?,
        name: r["name"].as_str().unwrap_or("?").to_owned(),
        outcome: r["outcome"].as_str().unwrap_or("?").to_owned(),
        elapsed_ms: r["elapsed_ms"].as_u64(),
    })
}

/// Reads in time order, each holding from its time until the next read (the last for one
/// sample period), merged into spans of equal value; a read without a value (`None`: not this
/// row's, or the read failed) leaves a gap.
fn spans(reads: &[(i64, Option<String>)], period: i64) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for (i, (at, v)) in reads.iter().enumerate() {
        let to = reads.get(i + 1).map_or(at + period, |(next, _)| *next);
        let (from, Some(what)) = (*at, v.clone()) else {
            continue;
        };
        match out.last_mut() {
            Some(last) if last.to == from && last.what == what => last.to = to,
            _ => out.push(Span { from, to, what }),
        }
    }
    out
}

/// One Lease read: when (ms), the holder (none when the read failed), leaseTransitions.
type LeaseRead = (i64, Option<String>, Option<u64>);

/// Lab C's Lease reads around a freeze, in time order: `lease_before` (when read before the
/// first sample), then each sample.
fn lease_reads(facts: &Value) -> Vec<LeaseRead> {
    let samples = list(facts, "lease_samples");
    let read = |v: &Value, at: i64| {
        let holder = v["holder"].as_str().map(str::to_owned);
        (at, holder, v["lease_transitions"].as_u64())
    };
    let read_at = |s: &Value| Some(read(s, ms_at(s, "/at")?));
    let mut out: Vec<_> = samples.iter().filter_map(read_at).collect();
    if let Some(at) = ms_at(facts, "/lease_before/at")
        && out.first().is_none_or(|(first, ..)| at < *first)
    {
        out.insert(0, read(&facts["lease_before"], at));
    }
    out
}

/// The freeze of one admission-controller replica of N: lab B's one (acts 5 and 6, Fail then
/// Ignore) is N = 1, lab C's leader (act 5, Fail) and follower (act 6, Ignore) of three N > 1.
/// `None` when no freeze is recorded.
///
/// Rows, top to bottom: the healer's arming; the replicas ([`replica_rows`], `pods` first: act
/// 4's leader then its followers) or, N = 1, the freeze window alone; the healthy deny, then N = 1
/// the target's good and violating pods and the control pod, N > 1 the waves ([`wave_rows`]); the
/// requests after the resume. Requests are not placed on replica rows: the API server's record
/// does not say which replica answered. Vertical lines: SIGSTOP, SIGCONT and each Lease read that
/// names another holder than the read before it ([`lease_moves`]).
pub(crate) fn freeze(facts: &Value, pods: &[String], lang: Lang) -> Option<Markup> {
    let frozen = ms_at(facts, "/freeze/frozen_at")?;
    let resumed = ms_at(facts, "/freeze/resumed_at")?;
    // Lab B's evidence names no target pod: its one replica is the freeze window's row.
    let replicas = !pods.is_empty() || facts.get("target_pod").is_some();
    let mut rows: Vec<Row> = healer_row(facts, lang).into_iter().collect();
    if replicas {
        rows.extend(replica_rows(facts, pods, (frozen, resumed), lang));
    } else {
        rows.push(window_row(facts, (frozen, resumed), lang));
    }
    let during = [
        ("healthy_bad", tx::ROW_HEALTHY_BAD),
        ("target_good", tx::ROW_TARGET_GOOD),
        ("target_bad", tx::ROW_TARGET_BAD),
        ("control", tx::ROW_CONTROL),
    ];
    // N > 1: the healthy deny alone (the waves follow).
    let during = if replicas { &during[..1] } else { &during[..] };
    rows.extend(request_rows(facts, during, lang));
    if replicas {
        rows.extend(wave_rows(facts, lang));
    }
    rows.extend(after_resume_rows(facts, resumed, replicas, lang));
    let mut vlines = vec![VLine::at(frozen, "SIGSTOP"), VLine::at(resumed, "SIGCONT")];
    vlines.extend(lease_moves(&lease_reads(facts), frozen, lang));
    Some(Chart::draw(frozen, rows, vlines))
}

/// The freeze's first row: the healer armed (its pid), when the evidence says when.
fn healer_row(facts: &Value, lang: Lang) -> Option<Row> {
    let at = Some(ms_at(facts, "/freeze/watchdog_armed_at")?);
    let note = format!("pid {}", facts["freeze"]["watchdog_pid"]);
    let (label, key) = (tx::HEALER_ARMED.get(lang).to_owned(), "watchdog-armed");
    let mark = Mark::Step { at, key, note };
    Some(Row { label, mark })
}

/// The one replica's freeze window (N = 1): SIGSTOP through the pidfd, SIGCONT by whom, its
/// length.
fn window_row(facts: &Value, (from, to): (i64, i64), lang: Lang) -> Row {
    let resumer = tx::evidence_word(super::sq(facts, "/freeze/resumed_by"), lang);
    let (pidfd, ms) = (tx::VIA_PIDFD.get(lang), to - from);
    let note = format!("SIGSTOP ({pidfd}) → SIGCONT ({resumer}) · {ms} ms");
    let label = tx::FREEZE_WINDOW.get(lang).to_owned();
    let mark = Mark::Window { from, to, note };
    Row { label, mark }
}

/// Every pod the freeze's evidence names, once each, in order: `pods`, the target, the Lease's
/// holders, the pods of the endpoint samples, the pods of the replicas' counters.
fn replica_names(facts: &Value, pods: &[String], target: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |n: &str| {
        if !n.is_empty() && !names.iter().any(|p| p == n) {
            names.push(n.to_owned());
        }
    };
    pods.iter().for_each(|p| add(p));
    add(target);
    lease_reads(facts)
        .iter()
        .filter_map(|(_, h, _)| h.as_deref())
        .for_each(&mut add);
    for s in list(facts, "endpoint_samples") {
        for e in list(s, "endpoints") {
            add(e["pod"].as_str().unwrap_or(""));
        }
    }
    for r in list(facts, "replica_requests") {
        add(r["pod"].as_str().unwrap_or(""));
    }
    names
}

/// One row per replica (N > 1, [`replica_names`]): its frozen window when it is the target, the
/// intervals in which the Lease named it (from the reads each second), its endpoint's state per
/// sample interval, and its note ([`replica_note`]).
fn replica_rows(facts: &Value, pods: &[String], window: (i64, i64), lang: Lang) -> Vec<Row> {
    let period = crate::rules::c::SAMPLE_PERIOD.as_millis() as i64;
    let target = facts["target_pod"].as_str().unwrap_or("?");
    let lease = lease_reads(facts);
    let endpoint_reads: Vec<(i64, &Value)> = list(facts, "endpoint_samples")
        .iter()
        .filter_map(|s| Some((ms_at(s, "/at")?, s)))
        .collect();
    let lease_holder_before = super::s(facts, "/lease_before/holder");
    let mut rows = Vec::new();
    for pod in replica_names(facts, pods, target) {
        let held = |(at, h, n): &LeaseRead| {
            let n = n.map_or("?".to_owned(), |n| n.to_string());
            (*at, (h.as_deref() == Some(pod.as_str())).then_some(n))
        };
        let holder_reads: Vec<_> = lease.iter().map(held).collect();
        let state = |(at, s): &(i64, &Value)| (*at, endpoint_state(s, &pod).map(str::to_owned));
        let ep_reads: Vec<_> = endpoint_reads.iter().map(state).collect();
        rows.push(Row {
            label: pod.clone(),
            mark: Mark::Replica {
                frozen: (pod == target).then_some(window),
                holder: spans(&holder_reads, period),
                endpoint: spans(&ep_reads, period),
                note: replica_note(facts, &pod, target, lease_holder_before, lang),
                pod,
            },
        });
    }
    rows
}

/// `pod`'s endpoint in one EndpointSlice sample: `ready`, `not-ready` or `absent` (`None`: the
/// read failed).
fn endpoint_state(sample: &Value, pod: &str) -> Option<&'static str> {
    if sample.get("error").is_some_and(|e| !e.is_null()) {
        return None;
    }
    let mine = |e: &&Value| e["pod"].as_str() == Some(pod);
    let e = list(sample, "endpoints").iter().find(mine);
    Some(match e {
        Some(e) if e["ready"] == false => "not-ready",
        Some(_) => "ready",
        None => "absent",
    })
}

/// Each wave of violating requests during the freeze on one row (N > 1): a lane per request and
/// the wave's control pod last, the note counting the outcomes in the legend's order; control
/// pods beyond one per wave (not expected) still get their own bar.
fn wave_rows(facts: &Value, lang: Lang) -> Vec<Row> {
    let w = |t: tx::Text| t.get(lang);
    let (bad, control) = (list(facts, "bad"), list(facts, "control"));
    let size = facts["wave_size"]
        .as_u64()
        .filter(|n| *n > 0)
        .map_or(bad.len().max(1), |n| n as usize);
    let mut rows = Vec::new();
    for (k, wave) in bad.chunks(size).enumerate() {
        let mut bars: Vec<Bar> = wave.iter().filter_map(bar).collect();
        // In the legend's order (else as first seen), so that every wave's note reads the same way.
        let rank = |o: &str| LEGEND.iter().position(|l| *l == o).unwrap_or(LEGEND.len());
        let first = |o: &str| (rank(o), bars.iter().position(|b| b.outcome == o));
        let mut outcomes: Vec<&str> = bars.iter().map(|b| b.outcome.as_str()).collect();
        outcomes.sort_by_key(|o| first(o));
        let counts = outcomes.chunk_by(|a, b| a == b);
        let mut note: Vec<String> = counts.map(|c| format!("{} ×{}", c[0], c.len())).collect();
        if let Some(b) = control.get(k).and_then(bar) {
            note.push(format!("{}: {}", w(tx::CONTROL_SHORT), b.outcome));
            bars.push(b);
        }
        let (key, note) = ((k + 1).to_string(), note.join(" · "));
        let label = format!("{} {key}", w(tx::WAVE));
        let mark = Mark::Lanes { key, bars, note };
        rows.push(Row { label, mark });
    }
    let control_label = w(tx::ROW_CONTROL);
    for (i, c) in control.iter().enumerate().skip(bad.chunks(size).len()) {
        let label = format!("{control_label} #{}", i + 1);
        rows.extend(request_row(label, c, &|_| None));
    }
    rows
}

/// The requests after the resume: N = 1 one row each, N > 1 one row per run of one outcome
/// ([`request_runs`]); the first explicit deny carries its note, on its own row when the series
/// does not hold it.
fn after_resume_rows(facts: &Value, resumed: i64, runs: bool, lang: Lang) -> Vec<Row> {
    let (after, deny) = (list(facts, "after_resume"), &facts["first_explicit_deny"]);
    let first = |b: &Bar| Some(first_deny_note(facts, resumed, b.to, lang));
    let note = |b: &Bar| first(b).filter(|_| deny["name"].as_str() == Some(b.name.as_str()));
    let mut rows = request_runs(tx::AFTER_RESUME.get(lang), after, runs, &note);
    let is_first = |r: &Value| r["name"].is_string() && r["name"] == deny["name"];
    if !after.iter().any(is_first) && deny.is_object() {
        rows.extend(request_row(tx::FIRST_DENY.get(lang).into(), deny, &first));
    }
    rows
}

/// A vertical line at each Lease read that names another holder than the read before it.
fn lease_moves(lease: &[LeaseRead], frozen: i64, lang: Lang) -> Vec<VLine> {
    let holders: Vec<(i64, &str)> = lease
        .iter()
        .filter_map(|(at, h, _)| Some((*at, h.as_deref()?)))
        .collect();
    let moves = holders.windows(2).filter(|w| w[0].1 != w[1].1);
    let line = |(at, h): (i64, &str)| {
        let (lease, since) = (tx::LEASE.get(lang), secs_signed(at - frozen));
        let label = format!("{lease} → {} ({since})", short_pod(h));
        let class = "vline lease";
        VLine { at, label, class }
    };
    moves.map(|w| line(w[1])).collect()
}

/// A pod name's last segment (`kyverno-admission-controller-6d9c7b8f5d-b8n3r` → `b8n3r`), for
/// labels inside the chart; the rows carry the full name.
fn short_pod(name: &str) -> &str {
    name.rsplit('-').next().unwrap_or(name)
}

/// The right-margin note of a replica row: frozen (and its role) or the Lease holder when the
/// freeze began, the change of its admission counter during the act, and for the frozen one its
/// restarts and pod UID after the resume.
fn replica_note(
    facts: &Value,
    pod: &str,
    target: &str,
    lease_holder_before: Option<&str>,
    lang: Lang,
) -> String {
    let w = |t: tx::Text| t.get(lang);
    let mut parts = Vec::new();
    if pod == target {
        let role = tx::evidence_word(facts["target_role"].as_str().unwrap_or("?"), lang);
        parts.push(format!("{} ({role})", w(tx::FROZEN)));
    } else if lease_holder_before == Some(pod) {
        parts.push(w(tx::HELD_LEASE_BEFORE).to_owned());
    }
    let counters = list(facts, "replica_requests");
    let counter = counters.iter().find(|r| r["pod"].as_str() == Some(pod));
    let counter_w = w(tx::ADMISSION_COUNTER);
    let reads = counter.map(|c| (c["before"].as_u64(), c["after"].as_u64()));
    parts.push(match reads {
        Some((Some(b), Some(a))) if a >= b => format!("{counter_w} {:+}", a - b),
        // A counter that went down was reset: the replica's process started again (its
        // counters live in the process); the change is unknown, the two reads are shown.
        Some((Some(b), Some(a))) => format!("{counter_w} {b} → {a} ({})", w(tx::COUNTER_RESET)),
        Some(_) => format!("{counter_w} ?"),
        None => format!("{counter_w} —"),
    });
    if pod == target {
        let t = &facts["target_after"];
        let (before, after) = (&t["restart_count_before"], &t["restart_count_after"]);
        if let (Some(b), Some(a)) = (before.as_u64(), after.as_u64()) {
            parts.push(format!("{} {b}→{a}", w(tx::RESTARTS)));
        }
        match (t["pod_uid_before"].as_str(), t["pod_uid_after"].as_str()) {
            (Some(b), Some(a)) if a != b => parts.push(w(tx::NEW_POD_UID).to_owned()),
            (Some(_), None) if t.is_object() => parts.push(w(tx::POD_GONE).to_owned()),
            _ => {}
        }
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(at: i64, v: Option<&str>) -> (i64, Option<String>) {
        (at, v.map(str::to_owned))
    }

    #[test]
    fn reads_become_spans_until_the_next_read_merged_and_gapped() {
        let reads = [
            read(0, Some("a")),
            read(1000, Some("a")),
            read(2000, None),
            read(3100, Some("a")),
            read(4000, Some("b")),
        ];
        let got: Vec<(i64, i64, String)> = spans(&reads, 1000)
            .into_iter()
            .map(|s| (s.from, s.to, s.what))
            .collect();
        assert_eq!(
            got,
            [
                (0, 2000, "a".to_owned()),
                (3100, 4000, "a".to_owned()),
                // The last read holds for one period.
                (4000, 5000, "b".to_owned()),
            ]
        );
        assert!(spans(&[], 1000).is_empty());
    }

    #[test]
    fn a_replica_chart_needs_a_freeze() {
        assert!(freeze(&serde_json::json!({"target_pod": "p"}), &[], Lang::En).is_none());
    }
}
