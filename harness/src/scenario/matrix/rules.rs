//! `[[exclude]]` and `[[expect]]` rules: conditions naming axis values, as value-index tuples.
//! `"vm.firmware" = "bios"` names one value; a list of labels means any of them.

use std::ops::Range;

use toml::{Spanned, Value};

use super::error::MatrixError;
use super::file::{Conditions, ExpectRule};
use super::ids::scalar_label;
use super::space::{Space, Tuple};
use super::spec::{AxisSpec, Ctx, Expectation};
use crate::flow::phase::Phase;
use crate::scenario::model::ExpectSection;

/// The tuples a rule's conditions stand for: each condition names an axis and one or more of
/// its labels; a list means any of them.
pub fn tuples(
    cx: &Ctx,
    rule: &Spanned<Conditions>,
    axes: &[AxisSpec],
) -> Result<Vec<Tuple>, MatrixError> {
    let mut choices: Vec<(usize, Vec<usize>)> = Vec::new();
    for (key, value) in flatten(rule.get_ref()) {
        let at = |m: String| MatrixError::Invalid {
            at: cx.at(value.1.clone()),
            message: m,
        };
        let Some(a) = axes.iter().position(|x| x.key == key) else {
            let keys: Vec<&str> = axes.iter().map(|x| x.key.as_str()).collect();
            return Err(at(format!(
                "{key:?} is not an axis of this matrix; the axes are {}",
                keys.join(", ")
            )));
        };
        if choices.iter().any(|(b, _)| *b == a) {
            return Err(at(format!("{key} is named twice in one rule")));
        }
        let wanted: Vec<&Value> = match &value.0 {
            Value::Array(list) if !list.is_empty() => list.iter().collect(),
            v => vec![v],
        };
        let mut indexes = Vec::new();
        for w in wanted {
            let label = scalar_label(w);
            let found = label
                .as_ref()
                .and_then(|l| axes[a].values.iter().position(|v| &v.label == l));
            match found {
                Some(i) => indexes.push(i),
                None => {
                    let labels: Vec<String> = axes[a]
                        .values
                        .iter()
                        .map(|v| format!("{:?}", v.label))
                        .collect();
                    return Err(at(format!(
                        "{key} = {w}: not a value of the axis; its values are {}",
                        labels.join(", ")
                    )));
                }
            }
        }
        choices.push((a, indexes));
    }
    // The cartesian product of the choices.
    let mut out: Vec<Tuple> = vec![vec![]];
    for (a, indexes) in &choices {
        out = out
            .iter()
            .flat_map(|t| {
                indexes.iter().map(move |&v| {
                    let mut t = t.clone();
                    t.push((*a, v));
                    t
                })
            })
            .collect();
    }
    Ok(out)
}

/// Conditions as (dotted key, (value, span)): an unquoted dotted key (`vm.firmware = "bios"`)
/// is a nested table in TOML, which this joins back into `vm.firmware`.
fn flatten(conditions: &Conditions) -> Vec<(String, (Value, Range<usize>))> {
    fn walk(
        prefix: &str,
        v: &Value,
        span: &Range<usize>,
        out: &mut Vec<(String, (Value, Range<usize>))>,
    ) {
        match v {
            Value::Table(t) => {
                for (k, inner) in t {
                    walk(&format!("{prefix}.{k}"), inner, span, out);
                }
            }
            _ => out.push((prefix.to_string(), (v.clone(), span.clone()))),
        }
    }
    let mut out = Vec::new();
    for (k, v) in conditions {
        walk(k.get_ref(), v.get_ref(), &v.span(), &mut out);
    }
    out
}

pub fn expectation(
    cx: &Ctx,
    rule: &Spanned<ExpectRule>,
    axes: &[AxisSpec],
    space: &Space,
) -> Result<Expectation, MatrixError> {
    let r = rule.get_ref();
    if r.when.get_ref().is_empty() {
        return Err(cx.err(&r.when, "[[expect]] needs a when = { \"axis key\" = \"value\" }; an expectation for every permutation belongs in the base scenario's [expect]"));
    }
    let when = tuples(cx, &r.when, axes)?;
    let allowed = when.iter().any(|t| {
        let mut partial = vec![None; axes.len()];
        for &(a, v) in t {
            partial[a] = Some(v);
        }
        space.completable(&partial)
    });
    if !allowed {
        return Err(cx.err(
            &r.when,
            "this [[expect]] matches no permutation that the [[exclude]] rules leave",
        ));
    }
    let verdict = r.verdict.get_ref();
    if !["pass", "fail", "error"].contains(&verdict.as_str()) {
        return Err(cx.err(
            &r.verdict,
            format!("verdict = {verdict:?}: use \"pass\", \"fail\" or \"error\""),
        ));
    }
    if let Some(p) = &r.failed_phase {
        if Phase::from_name(p.get_ref()).is_none() {
            return Err(cx.err(
                p,
                format!(
                    "failed_phase = {:?}: phases are {}",
                    p.get_ref(),
                    Phase::names().join(", ")
                ),
            ));
        }
    }
    Ok(Expectation {
        when,
        expect: ExpectSection {
            verdict: verdict.clone(),
            failed_phase: r.failed_phase.as_ref().map(|p| p.get_ref().clone()),
            reason_contains: r.reason_contains.clone(),
            warning_contains: None,
        },
    })
}
