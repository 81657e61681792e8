//! The VM's collectors: what the screen shows, what QEMU says of the machine and its disks,
//! and how the VM was defined (the QEMU command line or the domain XML).

use std::time::Duration;

use super::{Collector, Failure};
use crate::vm::running::{RunningVmHandle, VmQuery};
use crate::vm::Capabilities;

/// The collectors of what the backend can show (`can`): a screenshot, QMP's replies, and the
/// VM's definition always (for a machine the harness did not boot, what it knows of it).
pub fn collectors(
    vm: RunningVmHandle,
    (definition, can): (String, &Capabilities),
    limit: Duration,
) -> Vec<Collector> {
    let query = |file: &'static str, q: VmQuery| {
        let vm = vm.clone();
        Collector::new(file, limit, move |sink| {
            Box::pin(async move {
                let reply = vm.query(q).await.map_err(|e| e.to_string())?;
                let text = serde_json::to_string_pretty(&reply).map_err(|e| e.to_string())?;
                sink.write(file, format!("{text}\n").as_bytes())?;
                Ok(None)
            })
        })
    };
    let screen = vm.clone();
    let mut all = Vec::new();
    if can.screenshots {
        all.push(Collector::new("vm/screenshot.png", limit, move |sink| {
            Box::pin(async move { screenshot(&screen, &sink).await })
        }));
    }
    if can.qmp {
        all.push(query("vm/query-status.json", VmQuery::Status));
        all.push(query("vm/blockstats.json", VmQuery::BlockStats));
    }
    all.push(Collector::new("vm/definition.txt", limit, move |sink| {
        Box::pin(async move {
            sink.write("vm/definition.txt", format!("{definition}\n").as_bytes())?;
            Ok(None)
        })
    }));
    all
}

/// QEMU (or libvirt) writes the picture into a scratch file first; the sink then keeps it
/// like every other file, owner-only and listed.
async fn screenshot(vm: &RunningVmHandle, sink: &super::Sink) -> Result<Option<String>, Failure> {
    let scratch = tempfile::Builder::new()
        .prefix("sno-harness-screen")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let png = scratch.path().join("screen.png");
    let shot = vm.screenshot(&png).await;
    // QEMU without PNG support writes a PPM beside it and says so (see qmp::screendump).
    let ppm = png.with_extension("ppm");
    let (file, path) = match (png.exists(), ppm.exists()) {
        (true, _) => ("vm/screenshot.png", png),
        (false, true) => ("vm/screenshot.ppm", ppm),
        (false, false) => {
            return Err(shot
                .err()
                .map_or_else(|| "no picture written".to_string(), |e| e.to_string())
                .into())
        }
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    sink.write(file, &bytes)?;
    Ok(None)
}
