//! The BMC's URL as the user gives it (`--bmc`): `https://HOST[:PORT]`, optionally naming the
//! system (`https://HOST/redfish/v1/Systems/ID`, as metal3's BMC addresses do) when the BMC
//! has several. Credentials never go into it (they would be in the process list and in every
//! message that shows the URL).

use http::uri::{Scheme, Uri};

use super::error::SetupError;
use crate::util::url::redacted;

/// Where the BMC listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub https: bool,
    /// The host as TLS and the resolver take it (an IPv6 address without brackets).
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// `scheme://host:port`, as messages show the BMC.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme(), self.authority())
    }

    /// `host:port` for the Host header (an IPv6 address in brackets).
    pub fn authority(&self) -> String {
        match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }

    fn scheme(&self) -> &'static str {
        match self.https {
            true => "https",
            false => "http",
        }
    }

    /// The path of `location` (a redirect's target, an `@odata.id`) if it is on this BMC: a
    /// path, or an absolute URL of the same scheme, host and port. `None` for anything else.
    pub fn path_on_this_bmc(&self, location: &str) -> Option<String> {
        if location.starts_with('/') && !location.starts_with("//") {
            return Some(location.to_string());
        }
        let uri: Uri = location.parse().ok()?;
        let (endpoint, _) = from_uri(&uri).ok()?;
        (endpoint == *self).then(|| {
            uri.path_and_query()
                .map_or("/".into(), |p| p.as_str().to_string())
        })
    }
}

/// The endpoint of `url` and the system it names, if any (its path, `/redfish/v1/Systems/ID`).
pub fn parse(url: &str) -> Result<(Endpoint, Option<String>), SetupError> {
    let fail = |why: &str| SetupError::Url {
        url: redacted(url),
        why: why.into(),
    };
    let uri: Uri = url.parse().map_err(|_| {
        fail("not a URL: give https://HOST[:PORT] or https://HOST/redfish/v1/Systems/ID")
    })?;
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(fail(
            "credentials do not go into the URL: give them in a file or in SNO_BMC_USER and SNO_BMC_PASSWORD",
        ));
    }
    if uri.query().is_some() {
        return Err(fail("a BMC URL has no query"));
    }
    let (endpoint, path) = from_uri(&uri).map_err(|why| fail(&why))?;
    let path = path.trim_end_matches('/');
    let system = match path {
        "" | "/redfish" | "/redfish/v1" => None,
        p => {
            let id = p
                .strip_prefix("/redfish/v1/Systems/")
                .filter(|id| !id.is_empty() && !id.contains('/') && !id.contains(".."));
            id.ok_or_else(|| {
                fail("its path is neither empty nor /redfish/v1/Systems/ID (the system to use)")
            })?;
            Some(p.to_string())
        }
    };
    Ok((endpoint, system))
}

/// The error of a URL that parsed but cannot be used (`why`).
pub fn url_error(url: &str, why: &str) -> SetupError {
    SetupError::Url {
        url: redacted(url),
        why: why.into(),
    }
}

fn from_uri(uri: &Uri) -> Result<(Endpoint, String), String> {
    let https = match uri.scheme() {
        Some(s) if *s == Scheme::HTTPS => true,
        Some(s) if *s == Scheme::HTTP => false,
        Some(s) => return Err(format!("the scheme {s} is neither https nor http")),
        None => return Err("no scheme: give https://HOST (or http://HOST)".into()),
    };
    let host = uri.host().filter(|h| !h.is_empty()).ok_or("no host")?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok((Endpoint { https, host, port }, uri.path().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_bmc_or_one_naming_its_system() {
        let (e, s) = parse("https://10.0.0.5").unwrap();
        assert_eq!(e.origin(), "https://10.0.0.5:443");
        assert_eq!(s, None);
        let (e, s) = parse("http://[fd00::5]:8000/redfish/v1/Systems/abc-1/").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.https), ("fd00::5", 8000, false));
        assert_eq!(e.authority(), "[fd00::5]:8000");
        assert_eq!(s.as_deref(), Some("/redfish/v1/Systems/abc-1"));
        assert_eq!(parse("https://bmc/redfish/v1/").unwrap().1, None);
    }

    #[test]
    fn urls_that_cannot_be_a_bmc_are_refused_saying_why_and_never_echoing_a_password() {
        for (url, why) in [
            ("bmc.example", "no scheme"),
            ("ftp://bmc", "neither https nor http"),
            (
                "https://root:calvin@bmc",
                "credentials do not go into the URL",
            ),
            ("https://bmc/?token=x", "no query"),
            ("https://bmc/redfish/v1/Managers/1", "neither empty nor"),
            ("https://bmc/redfish/v1/Systems/", "neither empty nor"),
            ("https://bmc/redfish/v1/Systems/a/b", "neither empty nor"),
        ] {
            let e = parse(url).unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains("calvin"), "{e}");
        }
    }

    #[test]
    fn only_paths_and_urls_of_the_same_bmc_are_followed() {
        let (e, _) = parse("https://bmc:8443").unwrap();
        assert_eq!(
            e.path_on_this_bmc("/redfish/v1/Systems/1").as_deref(),
            Some("/redfish/v1/Systems/1")
        );
        assert_eq!(
            e.path_on_this_bmc("https://bmc:8443/x?y=1").as_deref(),
            Some("/x?y=1")
        );
        assert_eq!(e.path_on_this_bmc("https://bmc/x"), None, "another port");
        assert_eq!(
            e.path_on_this_bmc("http://bmc:8443/x"),
            None,
            "another scheme"
        );
        assert_eq!(e.path_on_this_bmc("//evil/x"), None);
        assert_eq!(e.path_on_this_bmc("https://evil:8443/x"), None);
    }
}
