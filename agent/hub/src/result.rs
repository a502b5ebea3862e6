//! A tool's `CallToolResult` turned into the one string the model sees.
//!
//! Text blocks are joined with newlines. Nothing is dropped silently: an
//! image, an audio clip, a blob resource or a resource link becomes a one-line
//! description (`[image: image/png, 12345 bytes]`), and an embedded text
//! resource keeps its text under a `[resource: URI]` line. When no block
//! carries text, the structured content is given as JSON. `isError: true`
//! puts `ERROR: ` in front. The result is clamped to the hub's output cap.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What the model sees for a successful call that returned nothing.
pub const NO_OUTPUT: &str = "(no output)";

/// Renders `result` for the model (see the module docs), clamped to
/// `max_output` bytes.
pub fn render(result: &CallToolResult, max_output: usize) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len() + 1);
    let mut has_text = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                parts.push(text.text.clone());
            }
            ContentBlock::Image(image) => parts.push(format!(
                "[image: {}, {} bytes]",
                image.mime_type,
                base64_decoded_len(&image.data)
            )),
            ContentBlock::Audio(audio) => parts.push(format!(
                "[audio: {}, {} bytes]",
                audio.mime_type,
                base64_decoded_len(&audio.data)
            )),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    has_text = true;
                    parts.push(format!("[resource: {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => parts.push(format!(
                    "[resource: {uri}, {}, {} bytes]",
                    mime_type.as_deref().unwrap_or("unknown type"),
                    base64_decoded_len(blob)
                )),
                other => parts.push(format!("[resource: {}]", resource_uri(other))),
            },
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("[resource link: {}", link.uri);
                if link.name != link.uri {
                    line.push_str(&format!(" ({})", link.name));
                }
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(", {mime}"));
                }
                if let Some(size) = link.size {
                    line.push_str(&format!(", {size} bytes"));
                }
                if let Some(description) = &link.description {
                    line.push_str(&format!(": {description}"));
                }
                line.push(']');
                parts.push(line);
            }
            other => parts.push(format!(
                "[content of an unknown kind: {}]",
                serde_json::to_string(other).unwrap_or_default()
            )),
        }
    }
    if !has_text && let Some(structured) = &result.structured_content {
        parts.push(structured.to_string());
    }
    let body = parts.join("\n");
    let text = if result.is_error == Some(true) {
        if body.trim().is_empty() {
            "ERROR: the tool failed without a message".to_string()
        } else {
            format!("ERROR: {body}")
        }
    } else if body.is_empty() {
        NO_OUTPUT.to_string()
    } else {
        body
    };
    mcp_tools::clamp(&text, max_output)
}

fn resource_uri(resource: &ResourceContents) -> String {
    serde_json::to_value(resource)
        .ok()
        .and_then(|v| v.get("uri").and_then(|u| u.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The length of the data a base64 string encodes, without decoding it.
fn base64_decoded_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count().min(2);
    (data.len() / 4 * 3 + (data.len() % 4) * 3 / 4).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use rmcp::model::{Resource, ResourceContents};
    use serde_json::json;

    use super::*;

    const MAX: usize = mcp_tools::DEFAULT_MAX_OUTPUT;

    #[test]
    fn text_blocks_are_joined_with_newlines() {
        let result =
            CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(render(&result, MAX), "a\nb");
    }

    #[test]
    fn an_error_result_starts_with_error() {
        let result = CallToolResult::error(vec![ContentBlock::text("no such file: x.rs")]);
        assert_eq!(render(&result, MAX), "ERROR: no such file: x.rs");
    }

    #[test]
    fn an_error_without_text_still_says_error() {
        assert_eq!(
            render(&CallToolResult::error(vec![]), MAX),
            "ERROR: the tool failed without a message"
        );
    }

    #[test]
    fn an_empty_success_says_so() {
        assert_eq!(render(&CallToolResult::success(vec![]), MAX), NO_OUTPUT);
    }

    #[test]
    fn images_and_audio_are_described_with_type_and_size() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("chart:"),
            // "hello" (5 bytes) in base64.
            ContentBlock::image("aGVsbG8=", "image/png"),
            // 3 bytes, no padding.
            ContentBlock::audio("AAAA", "audio/wav"),
        ]);
        assert_eq!(
            render(&result, MAX),
            "chart:\n[image: image/png, 5 bytes]\n[audio: audio/wav, 3 bytes]"
        );
    }

    #[test]
    fn base64_lengths_account_for_padding() {
        assert_eq!(base64_decoded_len(""), 0);
        assert_eq!(base64_decoded_len("YQ=="), 1);
        assert_eq!(base64_decoded_len("YWI="), 2);
        assert_eq!(base64_decoded_len("YWJj"), 3);
        assert_eq!(base64_decoded_len("YWJjZA"), 4, "unpadded");
    }

    #[test]
    fn embedded_resources_keep_text_and_describe_blobs() {
        let result = CallToolResult::success(vec![
            ContentBlock::embedded_text("file:///a.txt", "alpha"),
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: "file:///b.bin".into(),
                mime_type: Some("application/octet-stream".into()),
                blob: "AAAA".into(),
                meta: None,
            }),
        ]);
        assert_eq!(
            render(&result, MAX),
            "[resource: file:///a.txt]\nalpha\n[resource: file:///b.bin, application/octet-stream, 3 bytes]"
        );
    }

    #[test]
    fn resource_links_are_described() {
        let link = Resource::new("file:///log.txt", "log")
            .with_mime_type("text/plain")
            .with_size(42);
        let result = CallToolResult::success(vec![ContentBlock::resource_link(link)]);
        assert_eq!(
            render(&result, MAX),
            "[resource link: file:///log.txt (log), text/plain, 42 bytes]"
        );
    }

    #[test]
    fn structured_content_is_used_when_there_is_no_text() {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(json!({"count": 3}));
        assert_eq!(render(&result, MAX), r#"{"count":3}"#);
    }

    #[test]
    fn structured_content_is_not_repeated_after_its_text() {
        let result = CallToolResult::structured(json!({"count": 3}));
        assert_eq!(render(&result, MAX), r#"{"count":3}"#);
    }

    #[test]
    fn long_output_is_clamped() {
        let result = CallToolResult::success(vec![ContentBlock::text("x".repeat(100))]);
        let out = render(&result, 10);
        assert!(
            out.starts_with("xxxxxxxxxx\n[... 90 more bytes omitted]"),
            "{out}"
        );
    }
}
