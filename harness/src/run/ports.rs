//! Ports on 127.0.0.1 for the VM's forwards.

/// A free port on 127.0.0.1 that no other run of this process was given. The kernel can hand
/// the same ephemeral port to two probes once the first probe's socket is closed, and the
/// QEMU of a parallel run binds it only later; ports are therefore never given out twice.
pub fn free_port() -> std::io::Result<u16> {
    static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    for _ in 0..64 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut taken = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if taken.insert(port) {
            return Ok(port);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        "no port on 127.0.0.1 that this process has not used already",
    ))
}

#[cfg(test)]
mod port_tests {
    #[test]
    fn ports_are_never_handed_out_twice_in_a_process() {
        let ports: Vec<u16> = (0..300).map(|_| super::free_port().unwrap()).collect();
        let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
        assert_eq!(distinct.len(), ports.len());
    }
}
