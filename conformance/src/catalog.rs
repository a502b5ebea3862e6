//! The suite's fixture resources, resource template, prompts and completion
//! values (`src/scenarios/server/{resources,prompts}.ts` and the
//! completion scenario).

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, ErrorData,
    GetPromptRequestParams, GetPromptResult, ImageContent, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Reference, Resource, ResourceContents, ResourceTemplate, Role,
};
use serde_json::{Value, json};

use crate::tools::IMAGE_PNG;

/// The static resources.
pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new("test://static-text", "Static Text Resource")
            .with_description("A static text resource for testing")
            .with_mime_type("text/plain"),
        Resource::new("test://static-binary", "Static Binary Resource")
            .with_description("A static binary/blob resource for testing")
            .with_mime_type("image/png"),
    ]
}

/// The one resource template, `test://template/{id}/data`.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("test://template/{id}/data", "Dynamic Resource")
            .with_description("A dynamic resource with parameter substitution")
            .with_mime_type("application/json"),
    ]
}

/// Reads `uri`. An unknown URI is `-32602` with the URI in `data`
/// (SEP-2164: resource-not-found is invalid params in 2026-07-28).
pub fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        "test://static-text" => ResourceContents::TextResourceContents {
            uri: uri.into(),
            mime_type: Some("text/plain".into()),
            text: "This is the content of the static text resource.".into(),
            meta: None,
        },
        "test://static-binary" => ResourceContents::BlobResourceContents {
            uri: uri.into(),
            mime_type: Some("image/png".into()),
            blob: IMAGE_PNG.into(),
            meta: None,
        },
        _ => {
            let Some(id) = uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            else {
                return Err(ErrorData::resource_not_found(
                    format!("Resource not found: {uri}"),
                    Some(json!({ "uri": uri })),
                ));
            };
            let body =
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
            ResourceContents::TextResourceContents {
                uri: uri.into(),
                mime_type: Some("application/json".into()),
                text: body.to_string(),
                meta: None,
            }
        }
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The prompts, the input-required one last.
pub fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "test_simple_prompt",
            Some("A simple test prompt with no arguments"),
            None,
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("A test prompt that accepts arguments"),
            Some(vec![
                PromptArgument::new("arg1")
                    .with_description("First test argument")
                    .with_required(true),
                PromptArgument::new("arg2")
                    .with_description("Second test argument")
                    .with_required(false),
            ]),
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("A test prompt that includes an embedded resource"),
            None,
        ),
        Prompt::new(
            "test_prompt_with_image",
            Some("A test prompt that includes an image"),
            None,
        ),
        Prompt::new(
            crate::mrtr::PROMPT,
            Some("A prompt that needs an elicited context first (SEP-2322)"),
            None,
        ),
    ]
}

/// Renders one of the one-round prompts.
pub fn prompt(request: &GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
    let user = |text: &str| PromptMessage::new_text(Role::User, text);
    Ok(match request.name.as_str() {
        "test_simple_prompt" => GetPromptResult::new(vec![user("This is a simple test prompt.")])
            .with_description("A simple test prompt"),
        "test_prompt_with_arguments" => {
            let args = request.arguments.clone().unwrap_or_default();
            let arg = |key: &str| {
                args.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            let text = format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            );
            GetPromptResult::new(vec![user(&text)]).with_description("A prompt with arguments")
        }
        "test_prompt_with_embedded_resource" => GetPromptResult::new(vec![
            user("Here is a resource:"),
            PromptMessage::new_resource(
                Role::User,
                "test://static-text".into(),
                Some("text/plain".into()),
                Some("Resource content for prompt".into()),
                None,
                None,
                None,
            ),
        ])
        .with_description("A prompt with an embedded resource"),
        "test_prompt_with_image" => GetPromptResult::new(vec![
            user("Here is an image:"),
            PromptMessage::new(
                Role::User,
                ContentBlock::Image(ImageContent::new(IMAGE_PNG, "image/png")),
            ),
        ])
        .with_description("A prompt with an image"),
        other => {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt {other}; prompts/list names the prompts this server has"),
                None,
            ));
        }
    })
}

/// `completion/complete`: fixed candidates per argument name.
pub fn complete(request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let argument = request.argument.name.as_str();
    let values: Vec<String> = match &request.r#ref {
        Reference::Resource(_) if argument == "id" => vec!["1".into(), "2".into(), "3".into()],
        Reference::Prompt(_) if argument == "name" => {
            vec!["Alice".into(), "Bob".into(), "Charlie".into()]
        }
        Reference::Prompt(_) if argument == "style" => {
            vec!["friendly".into(), "formal".into(), "casual".into()]
        }
        Reference::Prompt(prompt) => vec![prompt.name.clone()],
        _ => Vec::new(),
    };
    let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
    Ok(CompleteResult::new(info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_uris_read_and_unknown_uris_are_not_found_with_the_uri() {
        let found = read("test://template/42/data").unwrap();
        let text = serde_json::to_value(&found.contents[0]).unwrap();
        assert!(
            text["text"].as_str().unwrap().contains("\"id\":\"42\""),
            "{text}"
        );
        let err = read("test://nope").unwrap_err();
        assert_eq!(err.data, Some(json!({ "uri": "test://nope" })));
    }
}
