//! `[expect]` and `[badness]`: the verdict a scenario expects, and the log lines it allows.

use toml::Spanned;

use super::{Ctx, ScenarioError};
use crate::flow::phase::Phase;
use crate::scenario::model::*;

pub(super) fn check_expect(
    cx: &Ctx,
    expect: &Option<Spanned<ExpectSection>>,
) -> Result<(), ScenarioError> {
    if let Some(spanned) = expect {
        let e = spanned.get_ref();
        if !["pass", "fail", "error"].contains(&e.verdict.as_str()) {
            return Err(cx.at(
                spanned,
                format!(
                    "expect.verdict = {:?}: use \"pass\", \"fail\" or \"error\"",
                    e.verdict
                ),
            ));
        }
        if let Some(p) = &e.failed_phase {
            if Phase::from_name(p).is_none() {
                return Err(cx.at(
                    spanned,
                    format!(
                        "expect.failed_phase = {p:?}: phases are {}",
                        Phase::names().join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn badness_allow(
    cx: &Ctx,
    badness: &BadnessSection,
) -> Result<Vec<String>, ScenarioError> {
    let mut badness_allow = Vec::new();
    for pattern in &badness.allow {
        if let Err(e) =
            crate::flow::badness::AllowList::new(std::slice::from_ref(pattern.get_ref()))
        {
            return Err(cx.at(
                pattern,
                format!(
                    "badness.allow: {:?} is not a valid regular expression: {}",
                    pattern.get_ref(),
                    e.to_string().lines().last().unwrap_or_default().trim()
                ),
            ));
        }
        badness_allow.push(pattern.get_ref().clone());
    }
    Ok(badness_allow)
}
