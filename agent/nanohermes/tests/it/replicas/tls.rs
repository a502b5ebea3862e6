//! TLS to the PostgreSQL store, against the server `scripts/replicas-env`
//! starts with `ssl = on`: a certificate for IP 127.0.0.1 signed by
//! `NANOHERMES_TEST_PG_CA`, and the role `nanohermes_tls`, which the
//! server admits over TLS only, so a replica that works as that role is
//! known to have encrypted its connections.

use std::time::Duration;

use serde_json::json;

use super::{Cluster, connect, ended, env, output, poll_until, start_task};
use crate::support::mock_model::text;

/// How long a refused store may take to fail a replica's start: the
/// refusal is a setting to fix, never waited out like an outage (60 s).
const REFUSAL_GUARD: Duration = Duration::from_secs(20);

/// `cluster`'s database as the TLS-only role, with `query` (TLS settings).
fn as_tls_role(cluster: &Cluster, host: &str, query: &str) -> String {
    let rest = cluster.db.split_once('@').unwrap().1;
    let (port_and_db, _) = rest.split_once('?').unwrap_or((rest, ""));
    let (_, port_and_db) = port_and_db.split_once(':').unwrap();
    format!("postgres://nanohermes_tls@{host}:{port_and_db}?{query}")
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_replica_verifies_the_stores_certificate_and_runs_a_task_over_tls() {
    let mut cluster = Cluster::start(0, 1, "goal", vec![text(&["over tls"]).into()]).await;
    let ca = env("NANOHERMES_TEST_PG_CA");
    cluster.store = as_tls_role(
        &cluster,
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let replica = cluster.replica("goal", false).await;
    assert!(
        replica.start_line.contains("TLS, verified"),
        "{}",
        replica.start_line
    );
    let client = connect(&replica.url, None).await;
    let id = start_task(&client, json!({"task": "work", "workspace": "w0"})).await;
    let out = output(&poll_until(&client, &id, ended).await);
    assert_eq!(out["final_text"], "over tls", "{out:?}");
    let rows = cluster
        .sql()
        .await
        .query("SELECT count(*) FROM nh_messages", &[])
        .await
        .unwrap();
    assert!(rows[0].get::<_, i64>(0) >= 2, "the session was written");
}

/// What makes the test above prove encryption: the same role in plain
/// text is turned away by the server.
#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn the_tls_only_role_is_refused_in_plain_text() {
    let cluster = Cluster::start(0, 1, "goal", vec![]).await;
    let stderr = refused_start(&as_tls_role(&cluster, "127.0.0.1", "sslmode=disable")).await;
    assert!(stderr.contains("no encryption"), "{stderr}");
}

/// A certificate from a CA the URL does not name, or one for another host
/// name, fails the replica's start at once, naming why.
#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_certificate_from_another_ca_or_for_another_name_fails_the_start_at_once() {
    let cluster = Cluster::start(0, 1, "goal", vec![]).await;
    let ca = env("NANOHERMES_TEST_PG_CA");
    let other = env("NANOHERMES_TEST_PG_OTHER_CA");
    for (url, says) in [
        (
            as_tls_role(
                &cluster,
                "127.0.0.1",
                &format!("sslmode=require&sslrootcert={other}"),
            ),
            "UnknownIssuer",
        ),
        // Connects to 127.0.0.1 but checks the name the URL gave.
        (
            as_tls_role(
                &cluster,
                "db.invalid",
                &format!("hostaddr=127.0.0.1&sslmode=require&sslrootcert={ca}"),
            ),
            "not valid for name \"db.invalid\"",
        ),
        // `prefer` falls back to nothing when the certificate fails.
        (
            as_tls_role(
                &cluster,
                "127.0.0.1",
                &format!("sslmode=prefer&sslrootcert={other}"),
            ),
            "UnknownIssuer",
        ),
    ] {
        let stderr = refused_start(&url).await;
        assert!(stderr.contains("certificate"), "{url}: {stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
    }
}

/// Starts `serve --store URL`, expects it to exit with the usage code
/// within [`REFUSAL_GUARD`], and returns its stderr.
async fn refused_start(url: &str) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = tokio::time::timeout(
        REFUSAL_GUARD,
        tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"))
            .args(["serve", "--http", "127.0.0.1:0", "--store", url])
            .env("NANOHERMES_HOME", home.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{url}: the start did not fail within {REFUSAL_GUARD:?}"))
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
    stderr
}
