//! `[access]`: the user's public keys for `core`, read and checked now (so that `plan` refuses
//! what a run would), each refusal at the entry's line in the scenario and, for a key file, at
//! the file's line too.

use super::{Ctx, ScenarioError};
use crate::scenario::files::authorized_keys::{
    entry_keys, refused_by_fips, AuthorizedKey, IN_THE_SCENARIO,
};
use crate::scenario::model::*;

pub(super) fn authorized_keys(
    cx: &Ctx,
    f: &ScenarioFile,
) -> Result<Vec<AuthorizedKey>, ScenarioError> {
    let mut keys: Vec<AuthorizedKey> = Vec::new();
    for entry in &f.access.authorized_keys {
        let found = entry_keys(cx.file, entry.get_ref())
            .map_err(|e| cx.at(entry, format!("access.authorized_keys: {e}")))?;
        for k in found {
            if f.install.fips && refused_by_fips(&k) {
                let place = match k.from.as_str() {
                    IN_THE_SCENARIO => String::new(),
                    file_line => format!("{file_line}: "),
                };
                return Err(cx.at(
                    entry,
                    format!(
                        "access.authorized_keys: {place}an ed25519 key, which a FIPS node's sshd refuses (install.fips = true; the installer refuses one as sshKey for this reason): use an rsa or ecdsa key"
                    ),
                ));
            }
            // The same key twice (a file and its line, say) is one line of authorized_keys.
            if !keys.iter().any(|x| x.fingerprint == k.fingerprint) {
                keys.push(k);
            }
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests;
