//! `addr/prefix` networks as Go's `net.ParseCIDR` reads them and `net.IPNet` prints them (the
//! address as written, not masked).

use std::net::IpAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Parses like Go's `net.ParseCIDR`, with its error text.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let err = || format!("invalid CIDR address: {s}");
        let (addr, prefix) = s.split_once('/').ok_or_else(err)?;
        let addr: IpAddr = addr.parse().map_err(|_| err())?;
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) || prefix.len() > 3 {
            return Err(err());
        }
        let prefix: u8 = prefix.parse().map_err(|_| err())?;
        if u32::from(prefix) > Cidr::bits_of(&addr) {
            return Err(err());
        }
        Ok(Cidr { addr, prefix })
    }

    fn bits_of(addr: &IpAddr) -> u32 {
        if addr.is_ipv6() {
            128
        } else {
            32
        }
    }

    pub fn is_ipv6(&self) -> bool {
        self.addr.is_ipv6()
    }

    /// 32 or 128.
    pub fn bits(&self) -> u32 {
        Cidr::bits_of(&self.addr)
    }

    /// The address with the host bits cleared.
    pub fn network(&self) -> IpAddr {
        let keep = |bits: u32| -> u128 {
            match u32::from(self.prefix) {
                0 => 0,
                p => (!0u128) << (bits - p),
            }
        };
        match self.addr {
            IpAddr::V4(a) => {
                let m = keep(32) as u32;
                IpAddr::V4((u32::from(a) & m).into())
            }
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & keep(128)).into()),
        }
    }

    /// The network as `net.IPNet` would print it after masking.
    pub fn masked(&self) -> Cidr {
        Cidr {
            addr: self.network(),
            prefix: self.prefix,
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_like_go() {
        let c = Cidr::parse("10.0.0.1/16").unwrap();
        assert_eq!(c.to_string(), "10.0.0.1/16");
        assert_eq!(c.masked().to_string(), "10.0.0.0/16");
        assert!(Cidr::parse("fd00::1/64").unwrap().is_ipv6());
        assert_eq!(
            Cidr::parse("fd00::1/64").unwrap().masked().to_string(),
            "fd00::/64"
        );
        assert_eq!(
            Cidr::parse("0.0.0.0/0").unwrap().masked().to_string(),
            "0.0.0.0/0"
        );
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "fd00::/129",
            "nope/8",
            "10.0.0.0/",
            "1.2.3.4/+8",
        ] {
            assert_eq!(
                Cidr::parse(bad).unwrap_err(),
                format!("invalid CIDR address: {bad}")
            );
        }
    }
}
