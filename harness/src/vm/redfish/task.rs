//! An action a BMC accepts to do later (202 Accepted with a task monitor in `Location`, as
//! iDRAC and iLO answer an insertion of virtual media): the monitor is asked until the task is
//! over, and a task that ended badly is an error quoting its messages. The caller bounds the
//! whole wait.

use std::time::Duration;

use http::{header, Method, StatusCode};
use serde_json::Value;

use super::error::{clip, extended_messages, Problem, RequestError};
use super::http::{json_of, Answer, Transport};

/// How often a task monitor is asked.
const POLL: Duration = Duration::from_secs(1);

/// The states of a task that ended without doing its work (Redfish's TaskState).
const FAILED_STATES: [&str; 4] = ["Exception", "Killed", "Cancelled", "Interrupted"];

/// The states of a task still under way.
const RUNNING_STATES: [&str; 7] = [
    "New",
    "Starting",
    "Running",
    "Pending",
    "Stopping",
    "Suspended",
    "Service",
];

/// Returns once the action `what` answered with `answer` is done: at once unless the answer is
/// 202 with a monitor to ask.
pub async fn finished(
    transport: &Transport,
    what: &str,
    answer: Answer,
) -> Result<(), Box<RequestError>> {
    if answer.status != StatusCode::ACCEPTED {
        return Ok(());
    }
    let Some(monitor) = answer
        .headers
        .get(header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .and_then(|l| transport.endpoint().path_on_this_bmc(l))
    else {
        // Accepted with nothing to ask: the BMC's word is all there is.
        return Ok(());
    };
    loop {
        tokio::time::sleep(POLL).await;
        let answer = transport
            .call(Method::GET, &monitor, None, &[], transport.limits.request)
            .await?;
        if answer.status == StatusCode::ACCEPTED {
            continue;
        }
        match state(&answer.body) {
            TaskState::Running => continue,
            TaskState::Done => return Ok(()),
            TaskState::Failed { state, message } => {
                return Err(transport.error(what, Problem::TaskFailed { state, message }))
            }
        }
    }
}

enum TaskState {
    Running,
    Done,
    Failed { state: String, message: String },
}

/// What a monitor's final answer says: a Task resource (its TaskState and Messages), or the
/// action's own result (done).
fn state(body: &[u8]) -> TaskState {
    let Ok(task) = json_of(body) else {
        return TaskState::Done;
    };
    let Some(state) = task.get("TaskState").and_then(Value::as_str) else {
        return TaskState::Done;
    };
    if RUNNING_STATES.contains(&state) {
        return TaskState::Running;
    }
    if FAILED_STATES.contains(&state) {
        let message = extended_messages(&task).unwrap_or_else(|| "no message".into());
        return TaskState::Failed {
            state: clip(state),
            message: clip(&message),
        };
    }
    TaskState::Done
}
