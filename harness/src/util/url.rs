//! URLs as the harness shows them: credentials a user put into a URL (`https://user:token@host/`,
//! a presigned query such as `?X-Amz-Signature=...`) never reach a report, a log or the
//! terminal. The URL itself is still used as given.

/// `url` with its user information and its query replaced by `<redacted>`; anything that is
/// not a URL with an authority is returned as it is.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (before_fragment, fragment) = match rest.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (rest, None),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (before_fragment, None),
    };
    let (authority, path) = match before_query.find('/') {
        Some(i) => before_query.split_at(i),
        None => (before_query, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("<redacted>@{host}"),
        None => authority.to_string(),
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if query.is_some_and(|q| !q.is_empty()) {
        out.push_str("?<redacted>");
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn user_information_and_queries_are_redacted_and_the_rest_kept() {
        assert_eq!(
            redacted("https://me:s3cr3t@mirror.example/rhcos/live.iso"),
            "https://<redacted>@mirror.example/rhcos/live.iso"
        );
        assert_eq!(
            redacted("https://bucket.s3.example/live.iso?X-Amz-Signature=abc&X-Amz-Credential=k"),
            "https://bucket.s3.example/live.iso?<redacted>"
        );
        assert_eq!(
            redacted("https://token@h:8443?x=1#frag"),
            "https://<redacted>@h:8443?<redacted>#frag"
        );
        for kept in [
            "https://mirror.example/live.iso",
            "file:///srv/iso/rhcos%20live.iso",
            "/plain/path.iso",
            "https://h/p@q",
        ] {
            assert_eq!(redacted(kept), kept, "nothing to redact in {kept}");
        }
    }
}
