//! External servers' resources and prompts, for the model: four meta-tools.
//!
//! | tool | what it does |
//! |---|---|
//! | `mcp_list_resources` | every resource of every server (or of `server`), following pagination |
//! | `mcp_read_resource` | one resource of `server` by `uri` |
//! | `mcp_list_prompts` | every prompt of every server (or of `server`), with its arguments |
//! | `mcp_get_prompt` | one prompt of `server` by `name`, filled in with `arguments` |
//!
//! The resource pair is declared only while some running server advertises
//! the `resources` capability, the prompt pair only while one advertises
//! `prompts` (checked at each rebuild of the declarations: start and every
//! refresh). Their names cannot collide with a server's tools: they are
//! claimed before any tool is named (a built-in tool of the same name would
//! become `NAME_2`), and external tools are all `SERVER__TOOL`. All four
//! only read, so the policy counts them read-only ([`FACTS`]).
//!
//! Lists are fetched live on every call, so they are never stale. Results
//! are rendered as text and clamped to the hub's output cap; every problem
//! is an `ERROR: ...` string.

use std::time::Duration;

use rmcp::model::{
    CallToolResult, GetPromptRequestParams, GetPromptResult, Prompt, ReadResourceRequestParams,
    Resource, ResourceContents, Role,
};
use rmcp::service::ServiceError;
use serde_json::{Map, Value, json};

use super::connection::Connection;
use super::{Hub, result};
use nanohermes_core::toolbox::ToolFacts;

/// Lists resources.
pub const LIST_RESOURCES: &str = "mcp_list_resources";
/// Reads one resource.
pub const READ_RESOURCE: &str = "mcp_read_resource";
/// Lists prompts.
pub const LIST_PROMPTS: &str = "mcp_list_prompts";
/// Gets one prompt.
pub const GET_PROMPT: &str = "mcp_get_prompt";

/// The four meta-tool names.
pub const NAMES: [&str; 4] = [LIST_RESOURCES, READ_RESOURCE, LIST_PROMPTS, GET_PROMPT];

/// What the policy knows about every meta-tool: it only reads.
pub const FACTS: ToolFacts = ToolFacts {
    read_only: true,
    destructive: false,
    builtin: false,
    server: String::new(),
    raw_name: String::new(),
};

/// Which servers (indices in the hub's order) offer resources and prompts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Offered {
    resources: Vec<usize>,
    prompts: Vec<usize>,
}

impl Offered {
    /// Asks each running server's advertised capabilities.
    pub(crate) fn of(servers: &[Connection]) -> Offered {
        let mut offered = Offered::default();
        for (i, server) in servers.iter().enumerate() {
            let Some(info) = server.watch().and_then(|(peer, _, _)| peer.peer_info()) else {
                continue;
            };
            if info.capabilities.resources.is_some() {
                offered.resources.push(i);
            }
            if info.capabilities.prompts.is_some() {
                offered.prompts.push(i);
            }
        }
        offered
    }

    /// Whether meta-tool `name` is declared.
    pub(crate) fn declares(&self, name: &str) -> bool {
        match name {
            LIST_RESOURCES | READ_RESOURCE => !self.resources.is_empty(),
            LIST_PROMPTS | GET_PROMPT => !self.prompts.is_empty(),
            _ => false,
        }
    }
}

/// The declarations of the meta-tools `offered` calls for; `server` is an
/// enum of the servers that offer the kind.
pub(crate) fn declarations(offered: &Offered, servers: &[Connection]) -> Vec<Value> {
    let names =
        |indices: &[usize]| -> Vec<&str> { indices.iter().map(|i| servers[*i].name()).collect() };
    let mut out = Vec::new();
    if !offered.resources.is_empty() {
        let servers = names(&offered.resources);
        out.push(declaration(
            LIST_RESOURCES,
            "List the resources (documents, files, data) that MCP servers offer, with their URIs; \
             read one with mcp_read_resource",
            json!({"server": server_property(&servers, "Only this server's resources")}),
            &[],
        ));
        out.push(declaration(
            READ_RESOURCE,
            "Read one resource of an MCP server by the URI mcp_list_resources gave",
            json!({
                "server": server_property(&servers, "The server that lists the resource"),
                "uri": {"type": "string", "description": "The resource's URI"},
            }),
            &["server", "uri"],
        ));
    }
    if !offered.prompts.is_empty() {
        let servers = names(&offered.prompts);
        out.push(declaration(
            LIST_PROMPTS,
            "List the prompt templates that MCP servers offer, with their arguments; \
             get one with mcp_get_prompt",
            json!({"server": server_property(&servers, "Only this server's prompts")}),
            &[],
        ));
        out.push(declaration(
            GET_PROMPT,
            "Get one prompt template of an MCP server, filled in with its arguments",
            json!({
                "server": server_property(&servers, "The server that lists the prompt"),
                "name": {"type": "string", "description": "The prompt's name"},
                "arguments": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Argument values by name, as strings",
                },
            }),
            &["server", "name"],
        ));
    }
    out
}

fn declaration(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        }
    })
}

fn server_property(servers: &[&str], description: &str) -> Value {
    json!({"type": "string", "enum": servers, "description": description})
}

/// The two kinds of listable things.
#[derive(Clone, Copy)]
enum Kind {
    Resources,
    Prompts,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Resources => "resources",
            Kind::Prompts => "prompts",
        }
    }
}

impl Hub {
    /// Runs meta-tool `name` if it is declared now; `None` otherwise.
    pub(super) async fn call_meta(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<String> {
        if !self.catalog.meta.declares(name) {
            return None;
        }
        let answer = match name {
            LIST_RESOURCES => self.list(Kind::Resources, arguments).await,
            READ_RESOURCE => self.read_resource(arguments).await,
            LIST_PROMPTS => self.list(Kind::Prompts, arguments).await,
            GET_PROMPT => self.get_prompt(arguments).await,
            _ => return None,
        };
        Some(mcp_tools::clamp(&answer, self.max_output))
    }

    /// The servers offering `kind`, by index.
    fn offering(&self, kind: Kind) -> &[usize] {
        match kind {
            Kind::Resources => &self.catalog.meta.resources,
            Kind::Prompts => &self.catalog.meta.prompts,
        }
    }

    /// The index of the server the `server` argument names, among those
    /// offering `kind`.
    fn pick(&self, kind: Kind, tool: &str, server: Option<&str>) -> Result<usize, String> {
        let offering = self.offering(kind);
        let listed = || {
            offering
                .iter()
                .map(|i| self.connections[*i].name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(server) = server else {
            return Err(format!(
                "ERROR: {tool} needs `server`, one of: {}",
                listed()
            ));
        };
        offering
            .iter()
            .copied()
            .find(|i| self.connections[*i].name() == server)
            .ok_or_else(|| {
                format!(
                    "ERROR: server {server} offers no {}; servers with {}: {}",
                    kind.noun(),
                    kind.noun(),
                    listed()
                )
            })
    }

    async fn list(&self, kind: Kind, arguments: &Map<String, Value>) -> String {
        let tool = match kind {
            Kind::Resources => LIST_RESOURCES,
            Kind::Prompts => LIST_PROMPTS,
        };
        let chosen: Vec<usize> = match string_arg(arguments, "server") {
            Some(server) => match self.pick(kind, tool, Some(server)) {
                Ok(i) => vec![i],
                Err(e) => return e,
            },
            None => self.offering(kind).to_vec(),
        };
        let sections = futures::future::join_all(chosen.into_iter().map(|i| async move {
            let server = &self.connections[i];
            let timeout = self.call_timeouts[i];
            let listed = match kind {
                Kind::Resources => {
                    request(server, timeout, |peer| async move {
                        peer.list_all_resources()
                            .await
                            .map(|r| render_resources(&r))
                    })
                    .await
                }
                Kind::Prompts => {
                    request(server, timeout, |peer| async move {
                        peer.list_all_prompts().await.map(|p| render_prompts(&p))
                    })
                    .await
                }
            };
            match listed {
                Ok(body) => format!("server {}:\n{body}", server.name()),
                Err(e) => format!(
                    "server {}:\nERROR: listing its {} failed: {e}",
                    server.name(),
                    kind.noun()
                ),
            }
        }))
        .await;
        sections.join("\n\n")
    }

    async fn read_resource(&self, arguments: &Map<String, Value>) -> String {
        let i = match self.pick(
            Kind::Resources,
            READ_RESOURCE,
            string_arg(arguments, "server"),
        ) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let Some(uri) = string_arg(arguments, "uri") else {
            return format!(
                "ERROR: {READ_RESOURCE} needs `uri`; call {LIST_RESOURCES} to see the URIs"
            );
        };
        let server = &self.connections[i];
        let params = ReadResourceRequestParams::new(uri);
        match request(server, self.call_timeouts[i], |peer| async move {
            peer.read_resource(params).await
        })
        .await
        {
            Ok(read) => render_contents(&read.contents),
            Err(e) => format!(
                "ERROR: server {} could not read resource {uri}: {e}",
                server.name()
            ),
        }
    }

    async fn get_prompt(&self, arguments: &Map<String, Value>) -> String {
        let i = match self.pick(Kind::Prompts, GET_PROMPT, string_arg(arguments, "server")) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let Some(name) = string_arg(arguments, "name") else {
            return format!("ERROR: {GET_PROMPT} needs `name`; call {LIST_PROMPTS} to see them");
        };
        let mut params = GetPromptRequestParams::new(name);
        match arguments.get("arguments") {
            None | Some(Value::Null) => {}
            Some(Value::Object(values)) => {
                // Prompt arguments are strings on the wire; a number the
                // model sent is passed as its text.
                let strings = values
                    .iter()
                    .map(|(k, v)| {
                        let text = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), Value::String(text))
                    })
                    .collect();
                params = params.with_arguments(strings);
            }
            Some(_) => {
                return format!(
                    "ERROR: `arguments` of {GET_PROMPT} must be an object of strings, such as {{\"topic\": \"tests\"}}"
                );
            }
        }
        let server = &self.connections[i];
        match request(server, self.call_timeouts[i], |peer| async move {
            match peer.get_prompt_once(params).await? {
                rmcp::model::GetPromptResponse::Complete(result) => Ok(result),
                // An MRTR round (the server asks the user for input): the
                // agent cannot answer one here.
                _ => Err(ServiceError::UnexpectedResponse),
            }
        })
        .await
        {
            Ok(prompt) => render_prompt(&prompt, self.max_output),
            Err(e) => format!(
                "ERROR: server {} could not get prompt {name}: {e}",
                server.name()
            ),
        }
    }
}

/// Runs one request on `server`'s live connection (restarting a dead
/// server as a tool call would) within `timeout`; the error is text.
async fn request<T, F, Fut>(server: &Connection, timeout: Duration, send: F) -> Result<T, String>
where
    F: FnOnce(rmcp::service::Peer<rmcp::service::RoleClient>) -> Fut,
    Fut: std::future::Future<Output = Result<T, ServiceError>>,
{
    let peer = server
        .peer()
        .await
        .map_err(|e| e.strip_prefix("ERROR: ").map(str::to_string).unwrap_or(e))?;
    match tokio::time::timeout(timeout, send(peer)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(ServiceError::McpError(e))) => {
            Err(format!("{} (JSON-RPC error {})", e.message, e.code.0))
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "no answer within {} s; the request was cancelled",
            timeout.as_secs_f64()
        )),
    }
}

fn string_arg<'a>(arguments: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(Value::as_str)
}

/// One line per resource: `URI  name (MIME, N bytes): description`.
fn render_resources(resources: &[Resource]) -> String {
    if resources.is_empty() {
        return "(no resources)".to_string();
    }
    resources
        .iter()
        .map(|r| {
            let mut line = format!("- {}", r.uri);
            let label = r.title.as_deref().unwrap_or(&r.name);
            let mut facts = Vec::new();
            if label != r.uri {
                facts.push(label.to_string());
            }
            if let Some(mime) = &r.mime_type {
                facts.push(mime.clone());
            }
            if let Some(size) = r.size {
                facts.push(format!("{size} bytes"));
            }
            if !facts.is_empty() {
                line.push_str(&format!(" ({})", facts.join(", ")));
            }
            if let Some(description) = r.description.as_deref().filter(|d| !d.is_empty()) {
                line.push_str(&format!(": {description}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line per prompt: `name(arg*, other): description`, `*` = required.
fn render_prompts(prompts: &[Prompt]) -> String {
    if prompts.is_empty() {
        return "(no prompts)".to_string();
    }
    prompts
        .iter()
        .map(|p| {
            let arguments: Vec<String> = p
                .arguments
                .iter()
                .flatten()
                .map(|a| {
                    let star = if a.required == Some(true) { "*" } else { "" };
                    match a.description.as_deref().filter(|d| !d.is_empty()) {
                        Some(d) => format!("{}{star} ({d})", a.name),
                        None => format!("{}{star}", a.name),
                    }
                })
                .collect();
            let mut line = format!("- {}({})", p.name, arguments.join(", "));
            if let Some(description) = p.description.as_deref().filter(|d| !d.is_empty()) {
                line.push_str(&format!(": {description}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n(* = required argument)"
}

/// A resource's contents: the text of each part, a one-line description of
/// each binary part.
fn render_contents(contents: &[ResourceContents]) -> String {
    if contents.is_empty() {
        return result::NO_OUTPUT.to_string();
    }
    let single = contents.len() == 1;
    contents
        .iter()
        .map(|part| match part {
            ResourceContents::TextResourceContents { text, .. } if single => text.clone(),
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[binary resource: {uri}, {}, about {} bytes; not shown]",
                mime_type.as_deref().unwrap_or("unknown type"),
                blob.len() / 4 * 3
            ),
            other => format!("[resource part of an unknown kind: {other:?}]"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A prompt's messages, each under its role: `[user]` then its content as a
/// tool result would render it.
fn render_prompt(prompt: &GetPromptResult, max_output: usize) -> String {
    let mut parts = Vec::new();
    if let Some(description) = prompt.description.as_deref().filter(|d| !d.is_empty()) {
        parts.push(format!("({description})"));
    }
    for message in &prompt.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let content = result::render(
            &CallToolResult::success(vec![message.content.clone()]),
            max_output,
        );
        parts.push(format!("[{role}]\n{content}"));
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{PromptArgument, PromptMessage};

    #[test]
    fn resources_render_one_line_each_with_uri_label_type_and_description() {
        let mut readme = Resource::new("fixture://readme", "readme");
        readme.mime_type = Some("text/markdown".into());
        readme.description = Some("What the fixture is".into());
        let bare = Resource::new("fixture://bare", "fixture://bare");
        assert_eq!(
            render_resources(&[readme, bare]),
            "- fixture://readme (readme, text/markdown): What the fixture is\n- fixture://bare"
        );
        assert_eq!(render_resources(&[]), "(no resources)");
    }

    #[test]
    fn prompts_render_their_arguments_with_required_ones_starred() {
        let mut prompt = Prompt::new("greet", Some("Greets someone"), None);
        let mut who = PromptArgument::new("who");
        who.required = Some(true);
        prompt.arguments = Some(vec![who, PromptArgument::new("style")]);
        assert_eq!(
            render_prompts(&[prompt]),
            "- greet(who*, style): Greets someone\n(* = required argument)"
        );
    }

    #[test]
    fn a_blob_part_is_described_not_dumped() {
        let parts = vec![
            ResourceContents::text("hello", "fixture://a"),
            ResourceContents::BlobResourceContents {
                uri: "fixture://b".into(),
                mime_type: Some("image/png".into()),
                blob: "aGVsbG8h".into(),
                meta: None,
            },
        ];
        assert_eq!(
            render_contents(&parts),
            "[resource: fixture://a]\nhello\n[binary resource: fixture://b, image/png, about 6 bytes; not shown]"
        );
    }

    #[test]
    fn prompt_messages_keep_their_roles() {
        let prompt = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "Say hi to Ada"),
            PromptMessage::new_text(Role::Assistant, "Hi Ada"),
        ]);
        assert_eq!(
            render_prompt(&prompt, 10_000),
            "[user]\nSay hi to Ada\n\n[assistant]\nHi Ada"
        );
    }
}
