//! `mcp_tools::spawn` without the subreaper: orphans go to init, and the
//! tree is found by the marker in every /proc entry.

mod spawn_support;

use mcp_tools::spawn::{self, EnvPolicy};
use spawn_support::{attacks, eventually, unique_sleep, with_token};

#[tokio::test]
async fn killing_a_tree_kills_every_marked_orphan_without_the_subreaper() {
    for (name, _) in attacks("x") {
        let token = unique_sleep();
        let script = attacks(&token)
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
        cmd.arg("-c").arg(&script);
        let (mut child, tree) = cmd.spawn().unwrap();
        assert!(child.wait().await.unwrap().success());
        assert!(
            eventually(|| !with_token(&token).is_empty()),
            "{name}: the attack did not start"
        );
        tree.kill();
        assert!(
            eventually(|| with_token(&token).is_empty()),
            "{name}: left behind {:?}",
            with_token(&token)
        );
    }
}
