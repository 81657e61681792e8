//! The name checks of the install-config: the cluster name and the base domain as RFC 1123
//! subdomains, with the messages of Kubernetes' validation helpers.

/// The real tool's limit: a DNS label (63) less the 9 characters it appends to the name.
const CLUSTER_NAME_MAX: usize = 54;
const SUBDOMAIN_MAX: usize = 253;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// One label of the subdomain pattern: alphanumerics and inner dashes, no length limit (the
/// pattern has none; only the whole name's length is limited).
fn is_label(label: &str) -> bool {
    let b = label.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-'),
        _ => false,
    }
}

/// The messages Kubernetes' subdomain check gives for `v` (none when it is fine).
fn subdomain_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > SUBDOMAIN_MAX {
        errs.push(max_len(SUBDOMAIN_MAX));
    }
    if !v.split('.').all(is_label) {
        errs.push(SUBDOMAIN_MSG.to_string());
    }
    errs
}

/// The check of `metadata.name` on platform none.
pub fn cluster_name(v: &str) -> Option<String> {
    if v.len() > CLUSTER_NAME_MAX {
        return Some(max_len(CLUSTER_NAME_MAX));
    }
    let errs = subdomain_errors(v);
    (!errs.is_empty()).then(|| super::field::aggregate(&errs))
}

/// The check of `baseDomain` (and of `<name>.<baseDomain>`): a trailing dot is accepted.
pub fn domain_name(v: &str) -> Option<String> {
    let errs = subdomain_errors(v.strip_suffix('.').unwrap_or(v));
    (!errs.is_empty()).then(|| super::field::aggregate(&errs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(cluster_name("sno"), None);
        assert_eq!(cluster_name("").as_deref(), Some(SUBDOMAIN_MSG));
        assert_eq!(cluster_name("Sno").as_deref(), Some(SUBDOMAIN_MSG));
        assert_eq!(
            cluster_name(&"a".repeat(55)).as_deref(),
            Some("must be no more than 54 characters")
        );
        assert_eq!(domain_name("example.test."), None);
        assert_eq!(domain_name("a..b").as_deref(), Some(SUBDOMAIN_MSG));
        assert_eq!(domain_name(&"a".repeat(70)), None);
    }
}
