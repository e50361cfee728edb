//! The JSON that crosses the wire to Ollama's `/api/chat`, and back.
//!
//! Outgoing types ([`Message`], [`ChatRequest`]) are exactly what Ollama's Go decoder
//! accepts: `content` is always a string, tool-call `arguments` always an object, and
//! tool results carry both `tool_name` and `tool_call_id` (older servers use the first,
//! newer ones the second). Incoming types ([`Chunk`]) tolerate every version's shape:
//! every field is optional, arguments may arrive as a JSON-encoded string, ids may be
//! missing.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt (and the note that earlier exchanges were dropped).
    System,
    /// The person at the keyboard.
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering one of the model's calls.
    Tool,
}

/// One message of the conversation, as sent back to Ollama on every request (and read
/// back from a saved session, see `crate::sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text (always sent, even when empty: Ollama requires the field).
    pub content: String,
    /// The model's reasoning, sent back within a turn so it keeps its train of thought;
    /// dropped by compaction once the turn is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// The tools an assistant message asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On a tool result: the tool that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// On a tool result: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message with only a role and text.
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            thinking: None,
            tool_calls: Vec::new(),
            tool_name: None,
            tool_call_id: None,
        }
    }

    /// A tool's result answering `call`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Message {
        Message {
            tool_name: Some(call.function.name.clone()),
            tool_call_id: Some(call.id.clone()),
            ..Message::new(Role::Tool, content)
        }
    }

    /// Bytes this message adds to every request that carries it (its text parts).
    pub(crate) fn carried_bytes(&self) -> usize {
        self.content.len()
            + self.thinking.as_ref().map_or(0, String::len)
            + self
                .tool_calls
                .iter()
                .map(|c| c.function.name.len() + c.function.arguments.to_string().len())
                .sum::<usize>()
    }
}

/// A tool call, complete (Ollama never streams partial calls on `/api/chat`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id: the server's when it sent one, otherwise one metron made up.
    pub id: String,
    /// What to call.
    pub function: FunctionCall,
}

/// The function half of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The call's position within its assistant message.
    pub index: usize,
    /// The tool's name.
    pub name: String,
    /// The arguments. Always an object when sent back: Ollama rejects anything else, so
    /// arguments that were not an object are recorded as `{}` (the tool's refusal tells
    /// the model what was wrong).
    pub arguments: Value,
}

/// Sampling and size options. `num_ctx` must not change within a session: a different
/// value makes Ollama reload the model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Options {
    /// The context window, in tokens.
    pub num_ctx: u64,
    /// The most tokens one reply may generate (`max_output_tokens`).
    pub num_predict: u64,
    /// Sampling temperature.
    pub temperature: f64,
    /// Nucleus sampling cutoff.
    pub top_p: f64,
}

/// The body of `POST /api/chat`.
#[derive(Debug, Serialize)]
pub struct ChatRequest<'a> {
    /// The model name, as configured.
    pub model: &'a str,
    /// The whole conversation, system prompt first.
    pub messages: &'a [Message],
    /// The tool definitions, serialised once per session (they are identical on every
    /// request, and re-serialising them would be wasted work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<&'a RawValue>,
    /// Stream the reply as NDJSON (always sent: Ollama's default is `true`).
    pub stream: bool,
    /// Sampling and size options.
    pub options: Options,
    /// `Some(false)` asks the server to refuse a prompt longer than `num_ctx` (HTTP 400)
    /// instead of cutting it silently; sent only to servers that honour it (Ollama 0.12.4
    /// and later), omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncate: Option<bool>,
}

/// One line of a streamed reply, or the whole non-streamed reply. Every field is optional
/// because servers of different versions omit different ones.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Chunk {
    /// The message delta.
    pub message: Option<ChunkMessage>,
    /// True on the last line.
    pub done: Option<bool>,
    /// Why generation stopped (`stop`, `length`), on the last line.
    pub done_reason: Option<String>,
    /// Prompt tokens the model evaluated for this request.
    pub prompt_eval_count: Option<u64>,
    /// Of those, the tokens Ollama served from its prompt cache (recent versions only).
    pub prompt_eval_cached_count: Option<u64>,
    /// Tokens generated.
    pub eval_count: Option<u64>,
    /// An error reported after streaming began.
    pub error: Option<Value>,
}

/// The message part of a [`Chunk`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChunkMessage {
    /// Reply text.
    pub content: String,
    /// Reasoning text.
    pub thinking: Option<String>,
    /// Complete tool calls.
    pub tool_calls: Option<Vec<WireToolCall>>,
}

/// A tool call as it arrives.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WireToolCall {
    /// Missing on servers before v0.12.10.
    pub id: Option<String>,
    /// The function.
    pub function: WireFunction,
}

/// The function of a [`WireToolCall`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WireFunction {
    /// The tool's name.
    pub name: String,
    /// An object on `/api/chat`, but proxies and look-alike servers send a JSON string.
    pub arguments: Value,
}

/// Normalises arguments: a JSON-encoded string is decoded, `null` becomes `{}`. Anything
/// else is returned as it is (and the tool will say it is not an object).
pub(crate) fn normalize_arguments(arguments: Value) -> Value {
    match arguments {
        Value::Null => Value::Object(Default::default()),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => value,
            _ => Value::String(text),
        },
        other => other,
    }
}

/// How a model the server marks with `remote_model` but no `remote_host` is described.
pub(crate) const UNNAMED_REMOTE: &str = "a remote host the server does not name";

/// What `/api/show` says about a model, reduced to what metron needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ModelDetails {
    /// The capabilities list; `None` on servers before v0.6.4, which do not send it.
    pub capabilities: Option<Vec<String>>,
    /// The context length the model was trained for, when the server reports it.
    pub context_length: Option<u64>,
    /// The prompt template (used to guess tool support on old servers).
    pub template: String,
    /// Where the server passes the model on to, for a cloud model (Ollama 0.12 and later
    /// proxy those to ollama.com and say so in `remote_host`, with `remote_model`); `None`
    /// for a model the server runs itself. A `remote_model` without a host is still
    /// remote, and is described as such.
    pub remote_host: Option<String>,
}

impl ModelDetails {
    /// Whether the model can be given tools: its capabilities say so, or, on an old server
    /// that lists none, its template mentions them.
    pub(crate) fn supports_tools(&self) -> bool {
        match &self.capabilities {
            Some(capabilities) => capabilities.iter().any(|c| c == "tools"),
            None => self.template.contains(".Tools") || self.template.contains("tool_call"),
        }
    }

    /// Reads the interesting parts of a `/api/show` response.
    pub(crate) fn from_show(body: &Value) -> ModelDetails {
        let capabilities = body.get("capabilities").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        });
        let info = body.get("model_info");
        let context_length = info
            .and_then(|i| i.get("general.architecture"))
            .and_then(Value::as_str)
            .and_then(|arch| info?.get(format!("{arch}.context_length")))
            .and_then(Value::as_u64);
        let template = body
            .get("template")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let text = |key: &str| {
            body.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let remote_host = match (text("remote_host"), text("remote_model")) {
            (Some(host), _) => Some(host.to_owned()),
            (None, Some(_)) => Some(UNNAMED_REMOTE.to_owned()),
            (None, None) => None,
        };
        ModelDetails {
            capabilities,
            context_length,
            template,
            remote_host,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_arguments_are_decoded_and_null_becomes_empty() {
        assert_eq!(
            normalize_arguments(json!("{\"path\":\"a\"}")),
            json!({"path": "a"})
        );
        assert_eq!(normalize_arguments(Value::Null), json!({}));
        assert_eq!(normalize_arguments(json!("not json")), json!("not json"));
    }

    #[test]
    fn messages_serialise_the_way_ollama_decodes_them() {
        let call = ToolCall {
            id: "call_1".into(),
            function: FunctionCall {
                index: 0,
                name: "view_slice".into(),
                arguments: json!({"path": "a.go"}),
            },
        };
        let result = Message::tool_result(&call, "    1 | x");
        assert_eq!(
            serde_json::to_value(&result).unwrap_or_default(),
            json!({"role": "tool", "content": "    1 | x", "tool_name": "view_slice", "tool_call_id": "call_1"})
        );
        let user = Message::new(Role::User, "");
        assert_eq!(
            serde_json::to_value(&user).unwrap_or_default(),
            json!({"role": "user", "content": ""})
        );
    }

    #[test]
    fn show_details_find_context_length_and_tools() {
        let body = json!({
            "capabilities": ["completion", "tools"],
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}
        });
        let details = ModelDetails::from_show(&body);
        assert!(details.supports_tools());
        assert_eq!(details.context_length, Some(40960));
        let old = ModelDetails::from_show(&json!({"template": "{{ if .Tools }}x{{ end }}"}));
        assert_eq!(old.capabilities, None);
        assert!(old.supports_tools());
        let no = ModelDetails::from_show(&json!({"capabilities": ["completion"]}));
        assert!(!no.supports_tools());
        assert_eq!(no.remote_host, None);
    }

    #[test]
    fn show_details_find_a_cloud_models_remote_host() {
        let cloud = ModelDetails::from_show(&json!({
            "capabilities": ["completion", "tools"],
            "remote_model": "qwen3-coder:480b",
            "remote_host": "https://ollama.com:443"
        }));
        assert_eq!(cloud.remote_host.as_deref(), Some("https://ollama.com:443"));
        let unnamed = ModelDetails::from_show(&json!({"remote_model": "x"}));
        assert_eq!(unnamed.remote_host.as_deref(), Some(UNNAMED_REMOTE));
        let empty = ModelDetails::from_show(&json!({"remote_host": ""}));
        assert_eq!(empty.remote_host, None);
    }
}
