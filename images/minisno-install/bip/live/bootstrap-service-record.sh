#!/usr/bin/env bash
# Service records of the bootstrap services, as /var/log/openshift/<service>.json: a JSON array
# of {timestamp, phase, stage, result, errorLine, errorMessage} objects. Sourced by bootkube.sh
# and install-to-disk.sh; the record name is the calling script's service.
SERVICE_RECORDS_DIR=/var/log/openshift
SERVICE_SCRIPT=${0##*/}
SERVICE_NAME=${SERVICE_NAME:-${SERVICE_SCRIPT%.sh}}
SERVICE_RECORD_ENTRIES="$SERVICE_RECORDS_DIR/.$SERVICE_NAME.entries"
CURRENT_STAGE=""

json_escape() { # VAR STRING: sets VAR to STRING escaped for a JSON string (no subshell)
    local s=${2//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    printf -v "$1" '%s' "$s"
}

# Builtins only, but for one mv per event: under TCG every fork costs tens of milliseconds, and
# bootkube records some forty events.
record_service_event() { # PHASE STAGE RESULT ERROR_LINE ERROR_MESSAGE
    local now stage line message entries
    TZ=UTC printf -v now '%(%Y-%m-%dT%H:%M:%SZ)T' -1
    json_escape stage "$2"
    json_escape line "$4"
    json_escape message "$5"
    printf '{"timestamp":"%s","phase":"%s","stage":"%s","result":"%s","errorLine":"%s","errorMessage":"%s"}\n' \
        "$now" "$1" "$stage" "$3" "$line" "$message" >> "$SERVICE_RECORD_ENTRIES"
    mapfile -t entries < "$SERVICE_RECORD_ENTRIES"
    local IFS=,
    printf '[\n%s\n]\n' "${entries[*]}" > "$SERVICE_RECORDS_DIR/$SERVICE_NAME.json.tmp"
    mv "$SERVICE_RECORDS_DIR/$SERVICE_NAME.json.tmp" "$SERVICE_RECORDS_DIR/$SERVICE_NAME.json"
}

record_service_stage_start() {
    CURRENT_STAGE=$1
    record_service_event "stage start" "$CURRENT_STAGE" "" "" ""
}

record_service_stage_success() {
    record_service_event "stage end" "$CURRENT_STAGE" "success" "" ""
    CURRENT_STAGE=""
}

record_service_stage_failure() { # ERROR_LINE ERROR_MESSAGE
    record_service_event "stage end" "$CURRENT_STAGE" "failure" "$1" "$2"
}

# As the real get_error_info: the error's message is the unit's last three journal lines.
on_service_error() {
    local line=$1 command=$2 status=$3 message
    message=$(journalctl --unit="$SERVICE_NAME.service" --lines=3 --output=cat 2>/dev/null) || true
    [ -n "$message" ] || message="exit status $status"
    record_service_stage_failure "$line: $command" "$message"
    record_service_event "service end" "" "failure" "$line: $command" "$message"
}

on_service_exit() {
    local status=$?
    if [ "$status" = 0 ]; then
        record_service_event "service end" "" "success" "" ""
    fi
}

mkdir -p "$SERVICE_RECORDS_DIR"
record_service_event "service start" "" "" "" ""
trap 'on_service_error "$LINENO" "$BASH_COMMAND" "$?"' ERR
trap on_service_exit EXIT
