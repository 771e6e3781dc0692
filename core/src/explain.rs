//! `kca-webhook-lab explain`: what an API answer means, by the same classifier the graders use
//! ([`crate::classify::classify`] with [`crate::classify::LAB_POLICY`] (the probes' markers)), so what `explain` says is what
//! `grade` says.
//!
//! Three inputs are understood ([`parse_answer`]):
//! - a `Status` object as JSON (`{"kind":"Status","code":500,"reason":"InternalError","message":…}`);
//! - a request record from evidence (`{"http_status":…,"reason":…,"message":…,"get":{…},"dry_run":…}`),
//!   also reached by `--evidence FILE --path JSON_POINTER` ([`answer_at`]);
//! - kubectl's text, e.g. `Error from server (InternalError): error when creating "pod.yaml":
//!   Internal error occurred: failed calling webhook …` (the reason in parentheses gives the HTTP
//!   status: kubectl prints the `Status.reason`, not the code; the mapping is the API server's
//!   `StatusReason` → code table, k8s.io/apimachinery `metav1.StatusReason*`).
//!
//! Without a follow-up GET (pasted text, a `Status`) a success is never called `stored`: the
//! classifier needs the GET to find the object with a UID, and `explain` says so.
//!
//! `lab/tests/explain.rs` holds the classifier's table cases and fails when either drifts.

use serde_json::Value;

use crate::classify::classify;
use crate::error::LabError;
use crate::evidence::{GetResult, Lab, Outcome};
use crate::text::Lang;

/// One API answer as the classifier takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// HTTP status code (201 on success).
    pub http_status: u16,
    /// `Status.reason` (`None` when absent or empty in the text).
    pub reason: Option<String>,
    /// `Status.message`, or the pasted text.
    pub message: Option<String>,
    /// The follow-up GET, when known (evidence only).
    pub get: Option<GetResult>,
    /// Whether the request was a server-side dry-run (false when unknown).
    pub dry_run: bool,
    /// The outcome the evidence recorded, when the answer comes from evidence.
    pub recorded: Option<String>,
}

/// The HTTP status of a `Status.reason` as kubectl prints it (`Error from server (Reason)`), from
/// k8s.io/apimachinery's `StatusReason` constants; `None` for a reason without a fixed code.
pub fn code_of_reason(reason: &str) -> Option<u16> {
    Some(match reason {
        "BadRequest" => 400,
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "NotFound" => 404,
        "MethodNotAllowed" => 405,
        "NotAcceptable" => 406,
        "AlreadyExists" | "Conflict" => 409,
        "Gone" => 410,
        "RequestEntityTooLarge" => 413,
        "UnsupportedMediaType" => 415,
        "Invalid" => 422,
        "TooManyRequests" => 429,
        "InternalError" => 500,
        "ServiceUnavailable" => 503,
        "Timeout" => 504,
        _ => return None,
    })
}

/// Parses pasted text: JSON (`Status` or a request record) or kubectl's error text.
///
/// Errors: empty input ([`LabError::Usage`]).
pub fn parse_answer(text: &str) -> Result<Answer, LabError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(LabError::Usage(
            "explain: nothing to explain (paste an API error as an argument or on stdin, or give --evidence FILE --path POINTER)".into(),
        ));
    }
    if let Ok(v) = serde_json::from_str::<Value>(text)
        && v.is_object()
    {
        return from_json(&v, "<stdin>");
    }
    // kubectl: `Error from server (Reason): …`; a deny without a reason (code 0 raised to 400)
    // prints `Error from server: …`.
    let (code, reason) = if let Some(rest) = text.split("Error from server (").nth(1)
        && let Some(end) = rest.find(')')
    {
        let reason = &rest[..end];
        (code_of_reason(reason), Some(reason.to_owned()))
    } else {
        (None, None)
    };
    let code = code.unwrap_or_else(|| {
        if text.contains("denied the request") {
            400
        } else if text.contains("Internal error occurred") {
            500
        } else if text.contains("already exists") {
            409
        } else if !text.contains("Error")
            && (text.ends_with(" created") || text.contains(" created (server dry run)"))
        {
            201
        } else {
            500
        }
    });
    let dry_run = text.contains("(server dry run)");
    Ok(Answer {
        http_status: code,
        reason,
        message: (code >= 300).then(|| text.to_owned()),
        get: None,
        dry_run,
        recorded: None,
    })
}

fn from_json(v: &Value, origin: &str) -> Result<Answer, LabError> {
    if v.get("http_status").is_some() {
        let get = v
            .get("get")
            .filter(|g| g.is_object())
            .map(|g| serde_json::from_value::<GetResult>(g.clone()))
            .transpose()
            .map_err(|e| LabError::Usage(format!("{origin}: get: expected a GET result ({e})")))?;
        let code = v["http_status"].as_u64().ok_or_else(|| {
            LabError::Usage(format!(
                "{origin}: http_status: expected a number, found {}",
                v["http_status"]
            ))
        })?;
        return Ok(Answer {
            http_status: u16::try_from(code).unwrap_or(0),
            reason: v["reason"].as_str().map(str::to_owned),
            message: v["message"].as_str().map(str::to_owned),
            get,
            dry_run: v["dry_run"].as_bool().unwrap_or(false),
            recorded: v["outcome"].as_str().map(str::to_owned),
        });
    }
    if v["kind"] == "Status" {
        let code = v["code"].as_u64().unwrap_or(0);
        return Ok(Answer {
            // A deny's code 0 is raised to 400 by the API server (k8s.io/apiserver
            // `pkg/admission/plugin/webhook/errors/statuserror.go`, `ToStatusErr`).
            http_status: if code == 0 {
                400
            } else {
                u16::try_from(code).unwrap_or(0)
            },
            reason: v["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
                .map(str::to_owned),
            message: v["message"].as_str().map(str::to_owned),
            get: None,
            dry_run: false,
            recorded: None,
        });
    }
    Err(LabError::Usage(format!(
        "{origin}: expected a Status object or a request record (with http_status), found an object with keys {:?}",
        v.as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    )))
}

/// The request record at `pointer` (RFC 6901, e.g. `/facts/target_bad`; a dotted
/// `facts.target_bad`, `facts.after_resume.0` or, as the graders print it, `facts.bad[7]` is
/// accepted too) in the evidence file `path`.
///
/// Errors: unreadable file or not JSON ([`LabError::Usage`] naming the file), nothing at the
/// pointer, or not a request record there (naming the file, the path, expected and found).
pub fn answer_at(path: &std::path::Path, pointer: &str) -> Result<Answer, LabError> {
    let text =
        crate::files::read_regular(path, crate::files::JSON_BOUND).map_err(LabError::io(path))?;
    let v: Value = serde_json::from_slice(&text)
        .map_err(|e| LabError::Usage(format!("{}: not JSON: {e}", path.display())))?;
    let ptr = if pointer.starts_with('/') || pointer.is_empty() {
        pointer.to_owned()
    } else {
        // The graders' form too: `facts.bad[7]` is `facts.bad.7`.
        let dotted = pointer.replace('[', ".").replace(']', "");
        format!("/{}", dotted.replace('.', "/"))
    };
    let at = v
        .pointer(&ptr)
        .ok_or_else(|| LabError::Usage(format!("{}: {ptr}: nothing there", path.display())))?;
    from_json(at, &format!("{} {ptr}", path.display()))
}

/// Which classifier rule decided (the numbers of [`crate::classify::classify`]'s doc).
fn rule(a: &Answer, o: Outcome) -> (u8, crate::text::Text) {
    use crate::messages::explain as m;
    let msg = a.message.as_deref().unwrap_or("");
    match o {
        Outcome::Stored | Outcome::DryRunAdmitted => (1, m::RULE_2XX_GET),
        Outcome::AlreadyExists => (2, m::RULE_CONFLICT),
        Outcome::ExplicitDeny => (3, m::RULE_DENY),
        Outcome::WebhookTimeout
        | Outcome::ConnectionRefused
        | Outcome::DnsError
        | Outcome::NoEndpoints => (4, m::RULE_CALL_FAILED),
        Outcome::OtherError if (200..300).contains(&a.http_status) => (1, m::RULE_2XX_UNCONFIRMED),
        Outcome::OtherError if msg.contains("denied the request") => (3, m::RULE_DENY_UNMARKED),
        Outcome::OtherError if msg.contains("failed calling webhook") => {
            (4, m::RULE_CALL_FAILED_OTHER)
        }
        Outcome::OtherError => (5, m::RULE_OTHER),
    }
}

/// What `outcome` means in `lab`, in `lang` (the words are in [`crate::messages::explain`]).
pub fn meaning(lab: Lab, o: Outcome, lang: Lang) -> &'static str {
    crate::messages::explain::meaning(lab, o).get(lang)
}

/// The classification of an answer and its explanation.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The classifier's outcome.
    pub outcome: Outcome,
    /// The rule number (1-5) and its short name (English; the lines carry it in their language).
    pub rule: (u8, &'static str),
    /// Lines to print.
    pub lines: Vec<String>,
}

/// Classifies `a` with the graders' classifier and explains it for `lab` in `lang`.
pub fn explain(a: &Answer, lab: Lab, lang: Lang) -> Explanation {
    let missing_get = GetResult {
        exists: false,
        uid: None,
        phase: None,
        at: String::new(),
    };
    let get = a.get.as_ref().unwrap_or(&missing_get);
    let outcome = classify(
        a.http_status,
        a.reason.as_deref(),
        a.message.as_deref(),
        get,
        a.dry_run,
        &crate::classify::LAB_POLICY,
    );
    let (rule_n, rule_name) = rule(a, outcome);
    let rule = (rule_n, rule_name.en);
    let words = |t: crate::text::Text| t.get(lang);
    let mut lines = vec![
        format!(
            "{}: {}",
            words(crate::messages::explain::OUTCOME),
            outcome.as_str()
        ),
        format!(
            "{}: {} ({}) · HTTP {}{}",
            words(crate::messages::explain::RULE),
            rule_n,
            rule_name.get(lang),
            a.http_status,
            a.reason
                .as_deref()
                .map(|r| format!(" {r}"))
                .unwrap_or_default()
        ),
        format!(
            "{} {}: {}",
            words(crate::messages::explain::LAB),
            lab,
            meaning(lab, outcome, lang)
        ),
    ];
    if a.get.is_none() && (200..300).contains(&a.http_status) && !a.dry_run {
        lines.push(words(crate::messages::explain::NOTE_2XX).to_owned());
    }
    if let Some(r) = &a.recorded
        && r != outcome.as_str()
    {
        lines.push(format!(
            "{}: {r} ≠ {}",
            words(crate::messages::explain::RECORDED_OTHER),
            outcome.as_str()
        ));
    }
    Explanation {
        outcome,
        rule,
        lines,
    }
}
