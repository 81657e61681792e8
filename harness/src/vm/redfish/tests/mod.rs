//! The client against an in-process BMC (`fake_bmc`): every verb, every refusal, and a BMC
//! that is slow, huge, malformed, or redirects in circles or elsewhere.

mod fake_bmc;
mod tls;

use std::time::Duration;

use fake_bmc::{extended_error, FakeBmc, Faults, PASSWORD, SYSTEM, USER};
use serde_json::json;

use super::*;

fn settings(url: String) -> BmcSettings {
    BmcSettings {
        url,
        credentials: Credentials::new(USER, PASSWORD).unwrap(),
        trust: Trust::System,
        limits: Limits {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(5),
            insert: Duration::from_secs(10),
            body: 64 * 1024,
        },
    }
}

async fn connected(faults: Faults) -> (FakeBmc, Bmc) {
    let fake = FakeBmc::start(faults, None).await;
    let bmc = Bmc::connect(&settings(fake.url("http"))).await.unwrap();
    (fake, bmc)
}

async fn refused(faults: Faults) -> (FakeBmc, Problem, String) {
    let fake = FakeBmc::start(faults, None).await;
    let e = Bmc::connect(&settings(fake.url("http")))
        .await
        .err()
        .expect("connect fails");
    let text = e.to_string();
    (
        fake,
        e.problem().cloned().expect("a request's problem"),
        text,
    )
}

#[tokio::test]
async fn discovery_finds_the_one_system_its_cd_and_not_the_floppy_with_credentials_sent() {
    let (fake, bmc) = connected(Faults::default()).await;
    let t = bmc.target();
    assert_eq!(t.system, SYSTEM);
    assert_eq!(t.media, "/redfish/v1/Systems/1/VirtualMedia/Cd");
    assert_eq!(
        t.reset,
        "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
    );
    assert!(
        t.insert.ends_with("/Cd/Actions/VirtualMedia.InsertMedia"),
        "{t:?}"
    );
    let seen = fake.seen();
    assert!(seen.iter().all(|s| s
        .authorization
        .as_deref()
        .is_some_and(|a| a.starts_with("Basic "))));
    assert!(
        seen.iter().any(|s| s.path.ends_with("/Floppy")),
        "the floppy was looked at"
    );
}

#[tokio::test]
async fn virtual_media_of_the_manager_are_found_when_the_system_has_none() {
    let faults = Faults {
        media_on_manager_only: true,
        ..Faults::default()
    };
    let (_fake, bmc) = connected(faults).await;
    assert_eq!(
        bmc.target().media,
        "/redfish/v1/Managers/bmc/VirtualMedia/Cd"
    );
}

#[tokio::test]
async fn the_verbs_insert_boot_once_from_cd_power_on_and_off_and_eject() {
    let (fake, bmc) = connected(Faults::default()).await;
    let iso = "http://10.0.2.2:8080/token/live.iso";
    bmc.insert_media(iso).await.unwrap();
    assert_eq!(
        bmc.media().await.unwrap(),
        Media {
            inserted: true,
            image: iso.into()
        }
    );
    assert_eq!(fake.state.lock().unwrap().write_protected, Some(true));
    bmc.boot_once_from_cd().await.unwrap();
    let boot = bmc.boot_override().await.unwrap();
    assert_eq!(
        (boot.target.as_deref(), boot.enabled.as_deref()),
        (Some("Cd"), Some("Once"))
    );
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);
    bmc.reset(ResetType::On).await.unwrap();
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    bmc.reset(ResetType::ForceOff).await.unwrap();
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);
    bmc.eject_media().await.unwrap();
    assert!(!bmc.media().await.unwrap().inserted);
    let resets: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|s| s.path.ends_with("ComputerSystem.Reset"))
        .map(|s| s.body["ResetType"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(resets, ["On", "ForceOff"]);
}

#[tokio::test]
async fn a_refused_insertion_quotes_the_bmcs_extended_error() {
    let said = "The virtual media image at the URL could not be fetched: connection timed out";
    let faults = Faults {
        refuse_insert: Some((
            400,
            extended_error(said, "Base.1.8.ActionParameterValueError"),
        )),
        ..Faults::default()
    };
    let (_fake, bmc) = connected(faults).await;
    let e = bmc.insert_media("http://x/live.iso").await.unwrap_err();
    let problem = e.problem().unwrap();
    assert!(
        matches!(problem, Problem::Refused { status: 400, .. }),
        "{problem:?}"
    );
    assert_eq!(
        problem.bmc_message(),
        Some(format!("{said} (Base.1.8.ActionParameterValueError)").as_str())
    );
    let text = e.to_string();
    assert!(
        text.contains(
            "POST /redfish/v1/Systems/1/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"
        ),
        "{text}"
    );
    assert!(
        text.contains("answered 400") && text.contains(said),
        "{text}"
    );
}

#[tokio::test]
async fn a_refusal_without_extended_info_quotes_its_message_or_its_text() {
    let faults = Faults {
        refuse_insert: Some((
            500,
            json!({ "error": { "message": "Failed fetching image from URL" } }),
        )),
        ..Faults::default()
    };
    let (_fake, bmc) = connected(faults).await;
    let e = bmc.insert_media("http://x/live.iso").await.unwrap_err();
    assert_eq!(
        e.problem().unwrap().bmc_message(),
        Some("Failed fetching image from URL")
    );
}

#[tokio::test]
async fn wrong_credentials_are_named_as_such_and_the_password_shown_nowhere() {
    let fake = FakeBmc::start(Faults::default(), None).await;
    let mut s = settings(fake.url("http"));
    s.credentials = Credentials::new(USER, "wrong-password").unwrap();
    let e = Bmc::connect(&s).await.err().unwrap();
    assert!(
        matches!(e.problem(), Some(Problem::Unauthorized(_))),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains("refused the credentials (401 Unauthorized: Invalid username or password"),
        "{text}"
    );
    assert!(!text.contains("wrong-password") && !format!("{e:?}").contains("wrong-password"));
    assert!(
        !format!("{s:?}").contains("wrong-password"),
        "settings' Debug"
    );
}

#[tokio::test]
async fn a_slow_bmc_ends_the_request_at_its_deadline_which_the_error_names() {
    let fake = FakeBmc::start(
        Faults {
            delay: Some(Duration::from_secs(3)),
            ..Faults::default()
        },
        None,
    )
    .await;
    let mut s = settings(fake.url("http"));
    s.limits.request = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let e = Bmc::connect(&s).await.err().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        e.problem(),
        Some(&Problem::Deadline(Duration::from_millis(300)))
    );
    assert!(e.to_string().contains("no answer within 300ms"), "{e}");
}

#[tokio::test]
async fn a_huge_answer_is_cut_at_the_body_limit() {
    let (_f, problem, text) = refused(Faults {
        huge_root: Some(200 * 1024),
        ..Faults::default()
    })
    .await;
    assert_eq!(problem, Problem::TooLarge(64 * 1024));
    assert!(text.contains("longer than the 64 KiB"), "{text}");
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_named() {
    let (_f, problem, text) = refused(Faults {
        bad_json: true,
        ..Faults::default()
    })
    .await;
    assert!(
        matches!(problem, Problem::BadAnswer(ref w) if w.starts_with("not JSON")),
        "{problem:?}"
    );
    assert!(text.contains("GET /redfish/v1/"), "{text}");
}

#[tokio::test]
async fn a_redirect_loop_ends_after_the_limit_and_a_redirect_elsewhere_is_not_followed() {
    let (fake, problem, _) = refused(Faults {
        redirect_loop: true,
        ..Faults::default()
    })
    .await;
    assert!(
        matches!(problem, Problem::TooManyRedirects { limit: 5, .. }),
        "{problem:?}"
    );
    assert_eq!(fake.seen().len(), 6, "the request and five redirects");
    let (fake, problem, _) = refused(Faults {
        foreign_redirect: true,
        ..Faults::default()
    })
    .await;
    assert_eq!(
        problem,
        Problem::ForeignRedirect("https://elsewhere.example/redfish/v1/".into())
    );
    assert_eq!(fake.seen().len(), 1);
}

#[tokio::test]
async fn a_system_named_in_the_url_is_used_following_the_bmcs_redirect_to_it() {
    let fake = FakeBmc::start(
        Faults {
            systems: Some(3),
            ..Faults::default()
        },
        None,
    )
    .await;
    let e = Bmc::connect(&settings(fake.url("http")))
        .await
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(
        text.contains("has 3 members") && text.contains("/redfish/v1/Systems/2"),
        "{text}"
    );
    assert!(text.contains("name one in the URL"), "{text}");
    let url = format!("{}/redfish/v1/Systems/by-name", fake.url("http"));
    let bmc = Bmc::connect(&settings(url)).await.unwrap();
    assert_eq!(bmc.target().system, "/redfish/v1/Systems/by-name");
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);
}

#[tokio::test]
async fn a_bmc_without_a_cd_says_which_media_it_has() {
    let (_f, problem, _) = refused(Faults {
        no_cd: true,
        ..Faults::default()
    })
    .await;
    let Problem::Missing(why) = problem else {
        panic!("{problem:?}")
    };
    assert!(
        why.contains("no virtual media device takes a CD or DVD"),
        "{why}"
    );
    assert!(why.contains("/Floppy (Floppy, USBStick)"), "{why}");
}

#[tokio::test]
async fn an_insertion_as_a_task_is_awaited_and_a_failed_task_quotes_its_message() {
    let (fake, bmc) = connected(Faults {
        insert_task: Some((2, "Completed", "done")),
        ..Faults::default()
    })
    .await;
    bmc.insert_media("http://x/live.iso").await.unwrap();
    let polls = fake
        .seen()
        .iter()
        .filter(|s| s.path.ends_with("/Monitor"))
        .count();
    assert_eq!(polls, 3, "two while running, then the end");
    fake.state.lock().unwrap().faults.insert_task = Some((0, "Exception", "Image not reachable"));
    let e = bmc.insert_media("http://x/live.iso").await.unwrap_err();
    assert_eq!(
        e.problem(),
        Some(&Problem::TaskFailed {
            state: "Exception".into(),
            message: "Image not reachable (Task.1.0.Done)".into()
        })
    );
}

#[tokio::test]
async fn a_bmc_that_wants_if_match_gets_the_etag_of_the_system() {
    let (fake, bmc) = connected(Faults {
        require_etag: true,
        ..Faults::default()
    })
    .await;
    bmc.boot_once_from_cd().await.unwrap();
    let patches: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|s| s.method == ::http::Method::PATCH)
        .map(|s| s.if_match)
        .collect();
    assert_eq!(patches, [None, Some("W/\"42\"".to_string())]);
}

#[tokio::test]
async fn a_bmc_that_is_not_there_is_a_connection_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = Bmc::connect(&settings(format!("http://127.0.0.1:{port}")))
        .await
        .err()
        .unwrap();
    assert!(matches!(e.problem(), Some(Problem::Connect(_))), "{e:?}");
    assert!(
        e.to_string()
            .contains(&format!("at the BMC http://127.0.0.1:{port}")),
        "{e}"
    );
}
