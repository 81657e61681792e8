//! Field errors in the shape of Kubernetes' `field.Error` (what the real installer's validation
//! returns), and the aggregate that prints a list of them.

/// A bad value as Go's field errors print it: strings quoted, numbers bare.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Str(&'a str),
    Int(i64),
}

impl std::fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Str(s) => f.write_str(&go_quote(s)),
            Value::Int(n) => write!(f, "{n}"),
        }
    }
}

/// `path: Invalid value: <value>: detail`.
pub fn invalid(path: &str, value: Value, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

/// `path: Required value: detail`.
pub fn required(path: &str, detail: &str) -> String {
    format!("{path}: Required value: {detail}")
}

/// `path: Forbidden: detail`.
pub fn forbidden(path: &str, detail: &str) -> String {
    format!("{path}: Forbidden: {detail}")
}

/// A list of errors as Go's aggregate error prints it: repeats dropped, a single one bare,
/// several as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A string quoted as Go's `%q` does for the text an install-config holds.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(
            invalid("controlPlane.replicas", Value::Int(3), "why"),
            "controlPlane.replicas: Invalid value: 3: why"
        );
        assert_eq!(
            invalid("networking.networkType", Value::Str("Kuryr"), "why"),
            "networking.networkType: Invalid value: \"Kuryr\": why"
        );
        assert_eq!(required("a.b", "why"), "a.b: Required value: why");
        assert_eq!(forbidden("fips", "why"), "fips: Forbidden: why");
    }

    #[test]
    fn aggregates_like_go() {
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
        assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a \"b\"\n"), "\"a \\\"b\\\"\\n\"");
        assert_eq!(go_quote("\u{1}é"), "\"\\x01é\"");
    }
}
