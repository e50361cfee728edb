//! The JSON of OpenAI's Chat Completions, both ways.
//!
//! Outgoing: [`request_body`] turns metron's [`ChatRequest`] (Ollama's shape, which the
//! rest of metron speaks) into a Chat Completions body. The differences that matter:
//! call `arguments` go back as a JSON *string*, tool results answer by `tool_call_id`,
//! `num_predict` is `max_tokens`, and `num_ctx` has no field at all (the window is the
//! server's). Incoming: [`Chunk`] and its parts take every field as optional, since
//! llama-server, LM Studio, vLLM and Ollama's `/v1` each omit different ones.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::ollama::wire::{ChatRequest, Message, Role};

/// The body of `POST /v1/chat/completions`.
#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<OutMessage<'a>>,
    /// The same definitions as Ollama's (`{"type":"function","function":{...}}`).
    /// `tool_choice` is not sent: every server's default with tools is `auto`, and vLLM
    /// refuses an explicit one it was not started for.
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    max_tokens: u64,
    temperature: f64,
    top_p: f64,
    /// llama-server: reuse the KV cache of the longest common prefix (its default on
    /// recent builds, sent for older ones); other servers ignore unknown fields.
    cache_prompt: bool,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    /// Asks for a last chunk carrying `usage` (the token counts).
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct OutMessage<'a> {
    role: Role,
    content: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<OutCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct OutCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutFunction<'a>,
}

#[derive(Debug, Serialize)]
struct OutFunction<'a> {
    name: &'a str,
    /// A JSON document in a string, as the protocol has it.
    arguments: String,
}

fn out_message(message: &Message) -> OutMessage<'_> {
    OutMessage {
        role: message.role,
        content: &message.content,
        tool_calls: message
            .tool_calls
            .iter()
            .map(|call| OutCall {
                id: &call.id,
                kind: "function",
                function: OutFunction {
                    name: &call.function.name,
                    arguments: call.function.arguments.to_string(),
                },
            })
            .collect(),
        tool_call_id: match message.role {
            Role::Tool => message.tool_call_id.as_deref(),
            _ => None,
        },
    }
}

/// The Chat Completions body for `request`. Reasoning is not sent back: no server of this
/// kind reads it from history, and some reject unknown message fields.
pub(crate) fn request_body(request: &ChatRequest<'_>) -> Result<Vec<u8>, serde_json::Error> {
    let body = Body {
        model: request.model,
        messages: request.messages.iter().map(out_message).collect(),
        tools: request.tools,
        stream: request.stream,
        stream_options: request.stream.then_some(StreamOptions {
            include_usage: true,
        }),
        max_tokens: request.options.num_predict,
        temperature: request.options.temperature,
        top_p: request.options.top_p,
        cache_prompt: true,
    };
    serde_json::to_vec(&body)
}

/// One `data:` event of the stream, or the whole answer when not streaming.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Chunk {
    /// Usually one; empty on the usage chunk.
    pub choices: Vec<Choice>,
    /// The token counts, on the last chunk when `include_usage` was honoured.
    pub usage: Option<Usage>,
    /// An error reported after streaming began (llama-server, vLLM).
    pub error: Option<Value>,
}

/// One choice of a [`Chunk`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Choice {
    /// The streamed piece of the message.
    pub delta: Option<ChoiceMessage>,
    /// The whole message, when not streaming.
    pub message: Option<ChoiceMessage>,
    /// `stop`, `length`, `tool_calls`, on the last content chunk.
    pub finish_reason: Option<String>,
}

/// The message part of a [`Choice`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChoiceMessage {
    /// Reply text (`null` on call-only chunks).
    pub content: Option<String>,
    /// Reasoning: llama-server and vLLM's name.
    pub reasoning_content: Option<String>,
    /// Reasoning: the name some other servers (and Ollama's `/v1`) use.
    pub reasoning: Option<String>,
    /// Call pieces, merged by `index`.
    pub tool_calls: Option<Vec<CallPiece>>,
}

/// A piece of a tool call: the first carries the id and name, later ones more of the
/// arguments string.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CallPiece {
    /// Which call this piece belongs to; missing on servers that send calls whole.
    pub index: Option<usize>,
    /// On the first piece only.
    pub id: Option<String>,
    /// The name and a piece of the arguments.
    pub function: Option<FunctionPiece>,
}

/// The function part of a [`CallPiece`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FunctionPiece {
    /// On the first piece (some servers repeat it).
    pub name: Option<String>,
    /// A piece of the arguments' JSON text; a few servers send an object whole.
    pub arguments: Option<Value>,
}

/// The token counts.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Usage {
    /// Prompt tokens (the whole prompt, cached ones included).
    pub prompt_tokens: Option<u64>,
    /// Tokens generated.
    pub completion_tokens: Option<u64>,
    /// Where the cached share is.
    pub prompt_tokens_details: Option<PromptDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PromptDetails {
    /// Of the prompt tokens, those served from the prompt cache.
    pub cached_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ollama::wire::{FunctionCall, Options, ToolCall};
    use serde_json::json;

    #[test]
    fn the_request_is_chat_completions_shaped() {
        let call = ToolCall {
            id: "call_1".into(),
            function: FunctionCall {
                index: 0,
                name: "view_slice".into(),
                arguments: json!({"path": "a.go"}),
            },
        };
        let mut assistant = Message::new(Role::Assistant, "");
        assistant.tool_calls = vec![call.clone()];
        assistant.thinking = Some("hm".into());
        let messages = vec![
            Message::new(Role::System, "sys"),
            assistant,
            Message::tool_result(&call, "x"),
        ];
        let tools = RawValue::from_string("[]".to_owned()).expect("raw");
        let request = ChatRequest {
            model: "m",
            messages: &messages,
            tools: Some(&tools),
            stream: true,
            // Ollama's alone: never sent on Chat Completions.
            truncate: Some(false),
            options: Options {
                num_ctx: 8192,
                num_predict: 100,
                temperature: 0.2,
                top_p: 0.9,
            },
        };
        let body: Value =
            serde_json::from_slice(&request_body(&request).expect("body")).expect("json");
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "view_slice", "arguments": "{\"path\":\"a.go\"}"}}
                    ]},
                    {"role": "tool", "content": "x", "tool_call_id": "call_1"}
                ],
                "tools": [],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100,
                "temperature": 0.2,
                "top_p": 0.9,
                "cache_prompt": true
            })
        );
        assert!(body.get("num_ctx").is_none() && body.get("tool_choice").is_none());
    }
}
