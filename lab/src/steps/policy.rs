//! [`acts::Step::SwitchPolicy`](crate::acts::Step::SwitchPolicy): the lab's policy switched in
//! place (same UID) to failurePolicy Ignore, its new registration awaited, and a healthy deny
//! (act 6 of labs B and C).

use crate::cluster::{self, Cluster};
use crate::cri::CriClient;
use crate::error::LabError;
use crate::evidence::{Lab, Outcome, RequestRecord};
use crate::facts::{Act2Facts, WebhookFacts};
use crate::inputs::{self, StudentInput};
use crate::labs::common::{
    self, ActRecorder, ActSummary, Env, Ui, describe, expect_same, live_context, read_facts,
    read_input, to_value, violating_until_deny, wait_for_webhook, webhook_facts,
};
use crate::messages::act as m;
use crate::steps::investigate::check_fault_preconditions;

/// The string at JSON pointer `at` in `v` (empty when absent or not a string).
pub(crate) fn json_str(v: &serde_json::Value, at: &str) -> String {
    v.pointer(at)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The live ValidatingPolicy of the lab, required to have act 2's UID (act 6 updates it in place).
pub(crate) async fn policy_with_uid(
    cluster: &Cluster,
    uid_before: &str,
) -> Result<Option<serde_json::Value>, LabError> {
    let live = cluster.policy(cluster::POLICY_NAME).await?;
    let live_uid = common::uid_of(live.as_ref()).unwrap_or("");
    let what = format!("uid of ValidatingPolicy {}", cluster::POLICY_NAME);
    expect_same(what, uid_before, live_uid)?;
    Ok(live)
}

/// Act 6, step 1: the policy updated to `failurePolicy: Ignore` in place (same UID), and its
/// fine-grained Ignore webhook registered. Returns the stored policy, the webhook's name and
/// facts; `partial` keeps what was seen.
pub(crate) async fn update_to_ignore(
    env: &Env,
    cluster: &Cluster,
    rec: &mut ActRecorder,
    policy: &serde_json::Value,
    uid_before: &str,
    partial: &mut serde_json::Value,
) -> Result<(serde_json::Value, String, WebhookFacts), LabError> {
    let ui = env.ui;
    ui.step(m::UPDATING_TO_IGNORE);
    let stored = cluster.replace_policy_spec(policy).await?;
    rec.raw("policy-stored", &stored);
    partial["policy"] = stored.clone();
    let stored_uid = json_str(&stored, "/metadata/uid");
    expect_same("policy uid after the update", uid_before, &stored_uid)?;
    let ignore_name = cluster::fine_grained_webhook_name("Ignore", cluster::POLICY_NAME);
    let (cfg, wh) = wait_for_webhook(cluster, &ui, &ignore_name, env.registration_bound, |wh| {
        wh.failure_policy.as_deref() == Some("Ignore")
    })
    .await?;
    rec.raw("webhook-configuration-ignore", &cfg);
    let webhook = webhook_facts(&cfg, &wh)?;
    partial["webhook"] = to_value(&webhook)?;
    common::step_registered(&ui, &webhook);
    Ok((stored, ignore_name, webhook))
}

/// Act 6, step 2: with a healthy webhook under Ignore, violating requests until an explicit deny
/// (every outcome kept). Returns the last one, the deny; none within the bound is an error.
pub(crate) async fn healthy_deny_under_ignore(
    cluster: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    tag: &str,
) -> Result<RequestRecord, LabError> {
    ui.step(m::HEALTHY_DENY_IGNORE);
    let (name, bound) = (format!("{tag}-healthy-bad"), common::ANSWER_BOUND);
    let healthy = violating_until_deny(cluster, ui, rec, (&name, "healthy-bad"), (bound, bound));
    let healthy = healthy.await?;
    let healthy_bad = healthy
        .last()
        .cloned()
        .expect("until_explicit_deny sends at least one request");
    partial["healthy_bad"] = to_value(&healthy_bad)?;
    if healthy_bad.outcome != Outcome::ExplicitDeny {
        return Err(LabError::WaitTimedOut {
            what: "an explicit deny under Ignore with a healthy webhook".into(),
            waited_ms: common::ANSWER_BOUND.as_millis() as u64,
            last_state: healthy_bad.outcome.as_str().into(),
        });
    }
    Ok(healthy_bad)
}

/// What act 6 did before its freeze (the switch to Ignore and its healthy deny): its facts, its
/// lines, and the metrics window begun before the healthy deny.
pub(crate) struct Head {
    /// The partial facts so far (`policy_uid_before`, `policy`, `webhook`, `healthy_bad`).
    pub facts: serde_json::Value,
    /// The switch's summary lines (the policy's UID, the Ignore webhook, the healthy deny).
    pub lines: Vec<String>,
    /// The act's admission-metrics window, begun after the switch.
    pub window: crate::metrics::Window,
}

/// Act 6 after its [`Step::SwitchPolicy`](crate::acts::Step::SwitchPolicy), the same in labs B
/// and C: what the freeze steps that follow work with.
pub(crate) struct Switched<A3> {
    /// The cluster.
    pub cluster: Cluster,
    /// The node's CRI.
    pub cri: CriClient,
    /// The act's evidence recorder (inputs, lab mark, healed faults, the policy before and the
    /// switch's raw answers recorded).
    pub rec: ActRecorder,
    /// Act 3's facts (the existing pod; lab C's replicas).
    pub act3: A3,
    /// The fine-grained Ignore webhook's name.
    pub ignore_name: String,
    /// What the switch did.
    pub head: Head,
}

/// Act 6's opening in labs B and C: reads `policy-ignore.json` and the lab's freeze plan `P`
/// (`uids` gives its node and deployment UIDs, checked with the lab mark:
/// [`check_fault_preconditions`]), act 2's policy UID (the live policy must still have it) and
/// act 3's facts, opens CRI and the recorder, then switches the policy to Ignore in place
/// ([`update_to_ignore`]), begins the metrics window and sends the healthy deny
/// ([`healthy_deny_under_ignore`], request names `<lab>6-…`).
///
/// Errors: `Err(Err(e))` before the recorder began (nothing written); `Err(summary)` once it has:
/// the act's interrupted evidence, written by [`common::finish`], for the act to return as is.
pub(crate) async fn open_act6<P: StudentInput, A3: serde::de::DeserializeOwned>(
    env: &Env,
    lab: Lab,
    uids: for<'a> fn(&'a P) -> (&'a str, &'a str),
) -> Result<Switched<A3>, Result<ActSummary, LabError>> {
    let ui = env.ui;
    let cluster = env.cluster().await.map_err(Err)?;
    let opened = async {
        let ctx = live_context(&cluster, &env.workdir).await?;
        let (_pi, loaded) = read_input::<inputs::PolicyIgnore>(&env.workdir, &ctx)?;
        let (plan, plan_loaded) = read_input::<P>(&env.workdir, &ctx)?;
        let mark = check_fault_preconditions(&cluster, uids(&plan)).await?;
        let act2: Act2Facts = read_facts(&env.workdir, 2)?;
        let act3: A3 = read_facts(&env.workdir, 3)?;
        let policy_uid_before = json_str(&act2.policy, "/metadata/uid");
        let live = policy_with_uid(&cluster, &policy_uid_before).await?;
        let healed = crate::faults::heal::recent();
        let cri = env.cri().await?;
        let mut rec = env.begin_audited(lab, 6)?.with_input(&loaded);
        rec.input(&plan_loaded);
        rec.raw("lab-mark", &mark);
        rec.raw("healed-earlier-faults", &healed);
        rec.raw("policy-before", &live);
        Ok::<_, LabError>((rec, cri, act3, policy_uid_before, loaded))
    }
    .await;
    let (mut rec, cri, act3, uid, loaded) = opened.map_err(Err)?;
    let mut partial = serde_json::json!({"policy_uid_before": uid});
    let switched = async {
        let (policy, p) = (&loaded.value, &mut partial);
        let (stored, ignore_name, wh) =
            update_to_ignore(env, &cluster, &mut rec, policy, &uid, p).await?;
        let window = crate::metrics::Window::begin(&cluster).await;
        let tag = common::request_tag(lab, 6);
        let bad = healthy_deny_under_ignore(&cluster, &ui, &mut rec, p, &tag).await?;
        let lines = vec![
            ui.text(m::policy_unchanged(&json_str(&stored, "/metadata/uid"))),
            ui.text(m::webhook_failure_policy(&wh.name, &wh.failure_policy)),
            describe(&ui, m::req::HEALTHY_BAD_IGNORE, &bad),
        ];
        Ok::<_, LabError>((ignore_name, lines, window))
    }
    .await;
    let (ignore_name, lines, window) = match switched {
        Ok(x) => x,
        Err(e) => return Err(common::finish(rec, partial, Err(e))),
    };
    if let Err(e) = rec.save_progress(partial.clone()) {
        return Err(Err(e));
    }
    let head = Head {
        facts: partial,
        lines,
        window,
    };
    Ok(Switched {
        cluster,
        cri,
        rec,
        act3,
        ignore_name,
        head,
    })
}
