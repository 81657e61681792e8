//! Labels and permutation ids: every axis value has a label (a scalar labels itself, anything
//! else is written `{ label = "...", value = ... }`), and an id is its values' labels joined
//! with '.', in axis order (`virtio.4k.uefi.by-id`), safe as a directory name and a nextest
//! test name.

use toml::Value;

/// An axis value that cannot name its part of a permutation id.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LabelError {
    #[error("an empty label: labels name values in permutation ids")]
    Empty,
    /// A list, a table or an empty string, written without `{ label, value }`.
    #[error(
        "{0} needs a label for the permutation ids: write {{ label = \"NAME\", value = {0} }}"
    )]
    Missing(Value),
}

/// The label and value of an axis value: a scalar labels itself; anything else is written
/// `{ label = "...", value = ... }`.
pub fn split_label(raw: &Value) -> Result<(String, Value), LabelError> {
    if let Some(label) = scalar_label(raw) {
        return Ok((label, raw.clone()));
    }
    let labelled = raw.as_table().filter(|t| {
        t.len() == 2 && t.contains_key("value") && t.get("label").is_some_and(Value::is_str)
    });
    match labelled {
        Some(t) => {
            let label = t["label"].as_str().unwrap_or_default().to_string();
            if label.is_empty() {
                return Err(LabelError::Empty);
            }
            Ok((label, t["value"].clone()))
        }
        None => Err(LabelError::Missing(raw.clone())),
    }
}

/// How a scalar is written in ids and rules: strings as they are, numbers and booleans as
/// TOML writes them.
pub fn scalar_label(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Integer(_) | Value::Float(_) | Value::Boolean(_) | Value::Datetime(_) => {
            Some(v.to_string())
        }
        _ => None,
    }
}

/// A label as a part of an id: characters outside `[A-Za-z0-9_-]` become '_'. '.' is among
/// them, so the only dots of an id separate its parts.
pub fn id_part(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The id of the permutation with these labels, in axis order.
pub fn permutation_id<S: AsRef<str>>(labels: &[S]) -> String {
    labels
        .iter()
        .map(|l| id_part(l.as_ref()))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_label_themselves_and_other_values_need_a_label() {
        let v = |s: &str| -> Value {
            toml::from_str::<toml::Table>(&format!("v = {s}")).unwrap()["v"].clone()
        };
        assert_eq!(split_label(&v("\"4k\"")).unwrap().0, "4k");
        assert_eq!(split_label(&v("4")).unwrap().0, "4");
        assert_eq!(split_label(&v("true")).unwrap().0, "true");
        let (label, value) =
            split_label(&v("{ label = \"by-id\", value = { by = \"id\" } }")).unwrap();
        assert_eq!(label, "by-id");
        assert!(value.is_table());
        assert_eq!(
            split_label(&v("[\"a\"]")).unwrap_err().to_string(),
            r#"["a"] needs a label for the permutation ids: write { label = "NAME", value = ["a"] }"#
        );
        assert_eq!(
            split_label(&v("\"\"")),
            Err(LabelError::Missing(Value::String(String::new())))
        );
        assert_eq!(
            split_label(&v("{ label = \"\", value = 1 }")),
            Err(LabelError::Empty)
        );
    }

    #[test]
    fn ids_join_safe_labels_with_dots() {
        assert_eq!(
            permutation_id(&["virtio", "4k", "uefi", "by-id"]),
            "virtio.4k.uefi.by-id"
        );
        assert_eq!(
            permutation_id(&["/dev/vdz", "10.0.2.0/24"]),
            "_dev_vdz.10_0_2_0_24"
        );
        assert_eq!(id_part("OVNKubernetes"), "OVNKubernetes");
        assert_eq!(id_part("a b:c"), "a_b_c");
    }
}
