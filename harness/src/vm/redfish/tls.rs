//! Whom the client trusts on https. BMCs mostly carry self-signed certificates, so besides the
//! system's roots the user may name a CA file, or the BMC's own certificate by its SHA-256
//! fingerprint (as `openssl x509 -fingerprint -sha256` prints it). There is no way to trust
//! anything: a BMC that cannot be verified is not talked to.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

use super::error::SetupError;
use crate::util::input_file;

/// How the BMC's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Trust {
    /// Signed by a CA the system trusts, for the URL's host.
    #[default]
    System,
    /// Signed by a CA of this PEM file, for the URL's host.
    CaFile(PathBuf),
    /// This very certificate, whatever its names and dates.
    Fingerprint(Fingerprint),
}

/// A certificate's SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// `AB:CD:...` (32 pairs, colons optional, either case), as openssl and browsers show it.
    pub fn parse(given: &str) -> Result<Fingerprint, SetupError> {
        let hex: String = given.chars().filter(|c| *c != ':').collect();
        let fail = |why: &str| SetupError::Fingerprint {
            given: given.into(),
            why: why.into(),
        };
        let bytes = hex::decode(&hex)
            .map_err(|_| fail("not hexadecimal (expected 32 pairs such as AB:CD:...)"))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| fail("not 32 bytes: a SHA-256 fingerprint has 64 hex digits"))?;
        Ok(Fingerprint(bytes))
    }

    pub fn of(cert: &[u8]) -> Fingerprint {
        Fingerprint(Sha256::digest(cert).into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self.0.iter().map(|b| format!("{b:02X}")).collect();
        f.write_str(&pairs.join(":"))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// A CA file is a few certificates.
const CA_FILE_CAP: input_file::Cap = input_file::Cap {
    what: "a CA file",
    bytes: 1 << 20,
};

/// The TLS client configuration for `trust`.
pub fn client_config(trust: &Trust) -> Result<Arc<ClientConfig>, SetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let config = match trust {
        Trust::System => builder
            .with_root_certificates(system_roots()?)
            .with_no_client_auth(),
        Trust::CaFile(path) => builder
            .with_root_certificates(ca_file_roots(path)?)
            .with_no_client_auth(),
        Trust::Fingerprint(want) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinnedCertificate {
                want: *want,
                provider,
            }))
            .with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

fn system_roots() -> Result<RootCertStore, SetupError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = found.errors.first().map(ToString::to_string);
        return Err(SetupError::SystemRoots(format!(
            "none could be read ({}): name a CA file or the BMC's certificate fingerprint",
            why.unwrap_or_else(|| "no certificates".into())
        )));
    }
    Ok(roots)
}

fn ca_file_roots(path: &Path) -> Result<RootCertStore, SetupError> {
    let fail = |why: String| SetupError::CaFile {
        path: path.to_path_buf(),
        why,
    };
    let bytes =
        input_file::read_bytes(path, CA_FILE_CAP).map_err(|e| fail(e.problem.to_string()))?;
    let mut roots = RootCertStore::empty();
    for (n, cert) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
        let cert = cert.map_err(|e| fail(format!("PEM block {}: {e}", n + 1)))?;
        roots
            .add(cert)
            .map_err(|e| fail(format!("certificate {}: {e}", n + 1)))?;
    }
    if roots.is_empty() {
        return Err(fail("holds no PEM CERTIFICATE block".into()));
    }
    Ok(roots)
}

/// Accepts the one certificate whose fingerprint was given; the handshake's signatures are
/// still checked with its key, so a peer must hold the private key of that certificate.
#[derive(Debug)]
struct PinnedCertificate {
    want: Fingerprint,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got = Fingerprint::of(end_entity);
        if got == self.want {
            return Ok(ServerCertVerified::assertion());
        }
        Err(rustls::Error::General(format!(
            "the BMC's certificate has the SHA-256 fingerprint {got}, not the {} given",
            self.want
        )))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_as_openssl_prints_them_and_print_back() {
        let s = "AB:".repeat(31) + "CD";
        let f = Fingerprint::parse(&s).unwrap();
        assert_eq!(f.to_string(), s);
        assert_eq!(
            Fingerprint::parse(&s.replace(':', "").to_lowercase()).unwrap(),
            f
        );
        let e = Fingerprint::parse("AB:CD").unwrap_err().to_string();
        assert!(e.contains("64 hex digits"), "{e}");
        let e = Fingerprint::parse("not a fingerprint")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not hexadecimal"), "{e}");
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ca.pem");
        std::fs::write(&p, "not pem\n").unwrap();
        let e = client_config(&Trust::CaFile(p.clone()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ca.pem") && e.contains("no PEM CERTIFICATE"),
            "{e}"
        );
    }
}
