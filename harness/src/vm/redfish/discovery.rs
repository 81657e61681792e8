//! Finding what the harness drives on a BMC: from the service root, the one computer system
//! (or the one the URL named), its reset action, and a virtual media device that takes a CD:
//! the system's own `VirtualMedia` (Redfish 1.10 on), else its managers' (older BMCs, iDRAC).
//! Paths come from the BMC's answers and are followed only on the same BMC.

use serde_json::Value;

use super::error::{clip, Problem, RequestError};
use super::http::Transport;

/// The root of every Redfish service.
pub const SERVICE_ROOT: &str = "/redfish/v1/";

/// The most members of a collection looked at: a real BMC has a handful of systems, managers
/// and media; a hostile one is not walked through thousands.
const MAX_MEMBERS: usize = 16;

/// The media types a device must take to boot the live ISO from.
const CD_TYPES: [&str; 2] = ["CD", "DVD"];

/// The resources the verbs act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The computer system (`/redfish/v1/Systems/ID`).
    pub system: String,
    pub reset: String,
    /// The virtual media device that takes a CD.
    pub media: String,
    pub insert: String,
    pub eject: String,
}

/// Discovers the target on `transport`'s BMC; `named` is the system the URL named, if any.
pub async fn discover(
    transport: &Transport,
    named: Option<&str>,
) -> Result<Target, Box<RequestError>> {
    let system = match named {
        Some(path) => path.to_string(),
        None => the_one_system(transport).await?,
    };
    let system_json = transport.get_json(&system).await?;
    let reset = action_target(&system_json, "#ComputerSystem.Reset")
        .and_then(|t| on_bmc(transport, &t))
        .unwrap_or_else(|| format!("{system}/Actions/ComputerSystem.Reset"));
    let media = find_cd(transport, &system, &system_json).await?;
    let media_json = transport.get_json(&media).await?;
    let action = |name: &str, verb: &str| {
        action_target(&media_json, name)
            .and_then(|t| on_bmc(transport, &t))
            .unwrap_or_else(|| format!("{media}/Actions/VirtualMedia.{verb}"))
    };
    Ok(Target {
        reset,
        insert: action("#VirtualMedia.InsertMedia", "InsertMedia"),
        eject: action("#VirtualMedia.EjectMedia", "EjectMedia"),
        system,
        media,
    })
}

/// The only member of the Systems collection; several are an error naming them.
async fn the_one_system(transport: &Transport) -> Result<String, Box<RequestError>> {
    let root = transport.get_json(SERVICE_ROOT).await?;
    let missing =
        |why: String| transport.error("finding the computer system", Problem::Missing(why));
    let systems = link(&root, "Systems")
        .and_then(|l| on_bmc(transport, &l))
        .ok_or_else(|| missing("the service root links no Systems collection".into()))?;
    let members = members(transport, &transport.get_json(&systems).await?);
    match members.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(missing(format!("{systems} has no member"))),
        many => Err(missing(format!(
            "{systems} has {} members ({}): name one in the URL, https://HOST/redfish/v1/Systems/ID",
            many.len(),
            many.join(", ")
        ))),
    }
}

/// A virtual media device of `system` that takes a CD or DVD: the system's own, else its
/// managers' (asked only when the system's own have none).
async fn find_cd(
    transport: &Transport,
    system: &str,
    system_json: &Value,
) -> Result<String, Box<RequestError>> {
    let mut seen = Vec::new();
    if let Some(own) = link(system_json, "VirtualMedia").and_then(|c| on_bmc(transport, &c)) {
        if let Some(cd) = cd_in(transport, &own, &mut seen).await? {
            return Ok(cd);
        }
    }
    for manager in managers(transport, system_json).await? {
        let manager_json = transport.get_json(&manager).await?;
        let Some(collection) =
            link(&manager_json, "VirtualMedia").and_then(|c| on_bmc(transport, &c))
        else {
            continue;
        };
        if let Some(cd) = cd_in(transport, &collection, &mut seen).await? {
            return Ok(cd);
        }
    }
    let why = match seen.is_empty() {
        true => format!("{system} has no virtual media (neither its own nor its managers')"),
        false => format!(
            "no virtual media device takes a CD or DVD: {}",
            seen.join("; ")
        ),
    };
    Err(transport.error("finding the virtual CD", Problem::Missing(why)))
}

/// The first device of `collection` that takes a CD or DVD; the others noted in `seen`.
async fn cd_in(
    transport: &Transport,
    collection: &str,
    seen: &mut Vec<String>,
) -> Result<Option<String>, Box<RequestError>> {
    for device in members(transport, &transport.get_json(collection).await?) {
        if seen.iter().any(|s| s.starts_with(&format!("{device} ("))) {
            continue;
        }
        let types = media_types(&transport.get_json(&device).await?);
        if types.iter().any(|t| CD_TYPES.contains(&t.as_str())) {
            return Ok(Some(device));
        }
        seen.push(format!("{device} ({})", types.join(", ")));
    }
    Ok(None)
}

/// The managers of the system (`Links.ManagedBy`), else every manager of the service.
async fn managers(
    transport: &Transport,
    system_json: &Value,
) -> Result<Vec<String>, Box<RequestError>> {
    let managed_by: Vec<String> = system_json
        .pointer("/Links/ManagedBy")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| odata_id(m).and_then(|id| on_bmc(transport, &id)))
        .take(MAX_MEMBERS)
        .collect();
    if !managed_by.is_empty() {
        return Ok(managed_by);
    }
    let root = transport.get_json(SERVICE_ROOT).await?;
    match link(&root, "Managers").and_then(|l| on_bmc(transport, &l)) {
        Some(all) => Ok(members(transport, &transport.get_json(&all).await?)),
        None => Ok(Vec::new()),
    }
}

/// `v[key]["@odata.id"]`.
pub fn link(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(odata_id)
}

fn odata_id(v: &Value) -> Option<String> {
    v.get("@odata.id")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The paths of a collection's members (the first [`MAX_MEMBERS`], on this BMC).
fn members(transport: &Transport, collection: &Value) -> Vec<String> {
    collection
        .get("Members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| odata_id(m).and_then(|id| on_bmc(transport, &id)))
        .take(MAX_MEMBERS)
        .collect()
}

/// `Actions[name].target`.
fn action_target(v: &Value, name: &str) -> Option<String> {
    v.get("Actions")?
        .get(name)?
        .get("target")?
        .as_str()
        .map(str::to_string)
}

fn media_types(device: &Value) -> Vec<String> {
    device
        .get("MediaTypes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(MAX_MEMBERS)
        .map(clip)
        .collect()
}

/// `path` if it names a resource on this BMC (a path, or a URL of the same origin).
fn on_bmc(transport: &Transport, path: &str) -> Option<String> {
    transport.endpoint().path_on_this_bmc(path)
}
