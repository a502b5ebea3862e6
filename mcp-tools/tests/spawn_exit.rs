//! `kill_all_spawned` (an owner's exit): its own test binary, because it
//! kills everything this process started.

mod spawn_support;

use mcp_tools::spawn::{self, EnvPolicy};
use spawn_support::{eventually, unique_sleep, unmarked_orphan, with_token};

#[tokio::test]
async fn kill_all_spawned_kills_live_trees_and_unmarked_orphans() {
    spawn::become_subreaper().unwrap();
    let (running, orphan) = (unique_sleep(), unique_sleep());
    let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    cmd.arg("-c")
        .arg(format!("setsid sleep {running} & sleep {running}"));
    let (_child, tree) = cmd.spawn().unwrap();
    let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    cmd.arg("-c").arg(unmarked_orphan(&orphan));
    let (mut child, _done) = cmd.spawn().unwrap();
    child.wait().await.unwrap();
    assert!(eventually(|| with_token(&running).len() == 2));
    assert!(eventually(|| with_token(&orphan).len() == 1));

    spawn::kill_all_spawned();
    assert!(eventually(|| with_token(&running).is_empty()));
    assert!(eventually(|| with_token(&orphan).is_empty()));
    assert!(!tree.is_live());
}
