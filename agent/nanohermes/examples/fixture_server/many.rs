//! `--many N`: N generated tools with realistic names, descriptions and
//! schemas (`jira_create_issue`, `slack_list_channels`, ...), as a big
//! third-party server would offer, for the deferred-tool tests and bench.
//! A call answers with its name and arguments.

use std::sync::Arc;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::json;

use super::Fixture;

const SERVICES: [(&str, &str); 10] = [
    ("jira", "Jira"),
    ("github", "GitHub"),
    ("slack", "Slack"),
    ("postgres", "the PostgreSQL database"),
    ("s3", "Amazon S3"),
    ("kube", "the Kubernetes cluster"),
    ("stripe", "Stripe"),
    ("calendar", "Google Calendar"),
    ("notion", "Notion"),
    ("sentry", "Sentry"),
];

const RESOURCES: [(&str, &str); 10] = [
    ("issue", "issues"),
    ("comment", "comments"),
    ("project", "projects"),
    ("user", "users"),
    ("label", "labels"),
    ("webhook", "webhooks"),
    ("file", "files"),
    ("branch", "branches"),
    ("report", "reports"),
    ("channel", "channels"),
];

const VERBS: [&str; 6] = ["create", "get", "list", "update", "delete", "search"];

/// The `i`-th generated tool (cycling through services, resources and
/// verbs; past 600 a numeric suffix keeps names unique).
pub(crate) fn generated_tool(i: usize) -> Tool {
    let (service, product) = SERVICES[i % SERVICES.len()];
    let (one, many) = RESOURCES[(i / SERVICES.len()) % RESOURCES.len()];
    let verb = VERBS[(i / (SERVICES.len() * RESOURCES.len())) % VERBS.len()];
    let round = i / (SERVICES.len() * RESOURCES.len() * VERBS.len());
    let suffix = if round == 0 {
        String::new()
    } else {
        format!("_{}", round + 1)
    };
    let (name, description, properties, required) = match verb {
        "create" => (
            format!("{service}_create_{one}{suffix}"),
            format!(
                "Create a new {one} in {product}. Give the parent project and a title; the body \
                 accepts Markdown. Returns the new {one}'s id and its web URL."
            ),
            json!({
                "project": {"type": "string", "description": format!("The project or workspace the {one} belongs to")},
                "title": {"type": "string", "description": format!("A short title for the {one}")},
                "body": {"type": "string", "description": "The text, in Markdown"},
            }),
            json!(["project", "title"]),
        ),
        "get" => (
            format!("{service}_get_{one}{suffix}"),
            format!(
                "Get one {one} from {product} by its id, with every field, its author and the \
                 time it was last changed."
            ),
            json!({"id": {"type": "string", "description": format!("The {one}'s id")}}),
            json!(["id"]),
        ),
        "list" => (
            format!("{service}_list_{many}{suffix}"),
            format!(
                "List the {many} of a {product} project, newest first, at most `limit` per page; \
                 pass the returned cursor to read the next page."
            ),
            json!({
                "project": {"type": "string", "description": "The project or workspace"},
                "limit": {"type": "integer", "description": "At most this many (1 to 100, default 30)"},
                "cursor": {"type": "string", "description": "The cursor a previous page returned"},
            }),
            json!(["project"]),
        ),
        "update" => (
            format!("{service}_update_{one}{suffix}"),
            format!(
                "Update fields of an existing {one} in {product}; fields you leave out keep their \
                 value. Returns the {one} as it is now."
            ),
            json!({
                "id": {"type": "string", "description": format!("The {one}'s id")},
                "title": {"type": "string", "description": "A new title"},
                "body": {"type": "string", "description": "A new text, in Markdown"},
            }),
            json!(["id"]),
        ),
        "delete" => (
            format!("{service}_delete_{one}{suffix}"),
            format!(
                "Delete a {one} from {product} for good. This cannot be undone; the {one}'s id is \
                 not reused."
            ),
            json!({"id": {"type": "string", "description": format!("The {one}'s id")}}),
            json!(["id"]),
        ),
        _ => (
            format!("{service}_search_{many}{suffix}"),
            format!(
                "Search the {many} of {product} by words in their title and text, best match \
                 first. Supports quoted phrases and -word to exclude."
            ),
            json!({
                "query": {"type": "string", "description": "The words to look for"},
                "limit": {"type": "integer", "description": "At most this many (default 20)"},
            }),
            json!(["query"]),
        ),
    };
    let schema = json!({"type": "object", "properties": properties, "required": required});
    let schema: JsonObject = match schema {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, Arc::new(schema))
}

/// A router serving `n` generated tools.
pub(crate) fn many_router(n: usize) -> ToolRouter<Fixture> {
    let mut router = ToolRouter::new();
    for i in 0..n {
        let tool = generated_tool(i);
        router.add_route(ToolRoute::new_dyn(tool, |context| {
            let text = format!(
                "{} done with {}",
                context.name,
                serde_json::Value::Object(context.arguments.clone().unwrap_or_default())
            );
            Box::pin(
                async move { Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into()) },
            )
        }));
    }
    router
}
