//! The cluster PKI: a CA (`kube-apiserver-lb-signer`, as the real admin kubeconfig trusts) and
//! the admin client certificate it signs (`system:admin`, group `system:masters`). ECDSA P-256.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};
use time::{Duration, OffsetDateTime};

/// Validity of both certificates (the real ones are 10 years too).
const VALIDITY: Duration = Duration::days(3650);
/// Backdating of `notBefore`, against a guest clock slightly behind the host's.
const BACKDATE: Duration = Duration::hours(1);

pub const CA_CN: &str = "kube-apiserver-lb-signer";
pub const CA_OU: &str = "openshift";
pub const ADMIN_CN: &str = "system:admin";
pub const ADMIN_O: &str = "system:masters";

/// PEM texts of the generated PKI. The keys are secrets: never log them.
pub struct Pki {
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

fn serial() -> SerialNumber {
    let mut bytes: [u8; 16] = rand::random();
    bytes[0] &= 0x7f; // positive
    bytes[0] |= 0x01; // no leading zero byte
    SerialNumber::from_slice(&bytes)
}

fn base_params(now: OffsetDateTime) -> CertificateParams {
    let mut p = CertificateParams::default();
    p.not_before = now - BACKDATE;
    p.not_after = now + VALIDITY;
    p.serial_number = Some(serial());
    p
}

/// Generates a fresh CA and admin client certificate.
pub fn generate() -> Result<Pki, rcgen::Error> {
    let now = OffsetDateTime::now_utc();

    let ca_key = KeyPair::generate()?;
    let mut ca = base_params(now);
    ca.distinguished_name = DistinguishedName::new();
    ca.distinguished_name
        .push(DnType::OrganizationalUnitName, CA_OU);
    ca.distinguished_name.push(DnType::CommonName, CA_CN);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key)?;

    let admin_key = KeyPair::generate()?;
    let mut admin = base_params(now);
    admin.distinguished_name = DistinguishedName::new();
    admin
        .distinguished_name
        .push(DnType::OrganizationName, ADMIN_O);
    admin.distinguished_name.push(DnType::CommonName, ADMIN_CN);
    admin.is_ca = IsCa::ExplicitNoCa;
    admin.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    admin.use_authority_key_identifier_extension = true;
    let issuer = Issuer::new(ca, &ca_key);
    let admin_cert = admin.signed_by(&admin_key, &issuer)?;

    Ok(Pki {
        ca_cert_pem: ca_cert.pem(),
        ca_key_pem: ca_key.serialize_pem(),
        admin_cert_pem: admin_cert.pem(),
        admin_key_pem: admin_key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::pem::parse_x509_pem;

    #[test]
    fn admin_chains_to_ca() {
        let pki = generate().unwrap();
        let (_, ca_pem) = parse_x509_pem(pki.ca_cert_pem.as_bytes()).unwrap();
        let ca = ca_pem.parse_x509().unwrap();
        let (_, admin_pem) = parse_x509_pem(pki.admin_cert_pem.as_bytes()).unwrap();
        let admin = admin_pem.parse_x509().unwrap();

        assert!(ca.is_ca());
        let ca_cn = ca.subject().iter_common_name().next().unwrap();
        assert_eq!(ca_cn.as_str().unwrap(), CA_CN);
        let ca_ou = ca.subject().iter_organizational_unit().next().unwrap();
        assert_eq!(ca_ou.as_str().unwrap(), CA_OU);
        ca.verify_signature(None).unwrap();

        assert_eq!(admin.issuer(), ca.subject());
        let cn = admin.subject().iter_common_name().next().unwrap();
        assert_eq!(cn.as_str().unwrap(), ADMIN_CN);
        let o = admin.subject().iter_organization().next().unwrap();
        assert_eq!(o.as_str().unwrap(), ADMIN_O);
        admin.verify_signature(Some(ca.public_key())).unwrap();
        let eku = admin.extended_key_usage().unwrap().unwrap();
        assert!(eku.value.client_auth);
        assert!(!admin.is_ca());

        let years = (ca.validity().not_after.timestamp() - ca.validity().not_before.timestamp())
            / (365 * 24 * 3600);
        assert!(years >= 9, "{years}");
        assert!(pki.ca_key_pem.contains("PRIVATE KEY"));
        assert!(pki.admin_key_pem.contains("PRIVATE KEY"));
    }
}
