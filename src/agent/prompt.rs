//! What the model is told on every request: the system prompt and the tool definitions.
//!
//! Both are sent with every single request, so every byte is paid for on every round
//! trip. A test keeps the prompt plus the schemas of all six tools under 2,500 bytes.
//!
//! The prompt names no tool: a tool that is withdrawn in this session must not be
//! suggested, and the advertised definitions already describe each one.

use serde_json::value::RawValue;

use crate::tools::ToolSpec;

/// The system prompt: the rules the tool surface enforces, stated so the model works with
/// them instead of against them.
pub const SYSTEM_PROMPT: &str = "\
You are metron, a coding agent in one software project, which you know only through your tools.
- Never guess names, paths or code: look them up first.
- Never ask for whole files: locate the place, then view just the lines you need.
- To edit, send one unified diff with 3 context lines, built from lines you viewed this turn.
- Tool output is budgeted; a [truncated ...] note means: narrow the request.
- A refusal or error says what went wrong: fix the call, do not repeat it.
- File slices are removed after each answer; view them again if needed.
- End with a short answer: what you found or changed, with file:line.";

/// The note that goes with the person's next line once compaction has trimmed history, so
/// the model knows earlier context is gone rather than assuming it still holds it. It
/// goes there, not in the system message, so that one stays byte-identical for the whole
/// session and the server can keep reusing its evaluation.
pub(crate) const DROPPED_NOTE: &str = "(Note from metron: earlier messages were dropped to save context; look things up again if you need them.)";

/// The `tools` array of the request for these tools, as JSON text.
pub fn tool_definitions(specs: &[&ToolSpec]) -> String {
    let mut json = String::from("[");
    for (i, spec) in specs.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(r#"{"type":"function","function":{"name":"#);
        json.push_str(&serde_json::Value::from(spec.name).to_string());
        json.push_str(r#","description":"#);
        json.push_str(&serde_json::Value::from(spec.description).to_string());
        json.push_str(r#","parameters":"#);
        json.push_str(spec.parameters);
        json.push_str("}}");
    }
    json.push(']');
    json
}

/// The tool definitions as a raw JSON value ready to embed in every request, or `None`
/// when no tool is offered.
pub(crate) fn raw_tool_definitions(specs: &[&ToolSpec]) -> Option<Box<RawValue>> {
    if specs.is_empty() {
        return None;
    }
    RawValue::from_string(tool_definitions(specs)).ok()
}

/// A rough token count for `bytes` of JSON or English (about four bytes per token), for
/// the cost shown in `/config`.
pub(crate) fn approx_tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::REGISTRY;

    #[test]
    fn prompt_and_all_six_schemas_stay_under_2500_bytes() {
        let total = SYSTEM_PROMPT.len() + tool_definitions(REGISTRY).len();
        assert!(
            total < 2500,
            "system prompt ({} bytes) + tool definitions ({} bytes) = {total} bytes",
            SYSTEM_PROMPT.len(),
            tool_definitions(REGISTRY).len()
        );
    }

    #[test]
    fn tool_definitions_are_valid_json_in_ollamas_shape() {
        let json: serde_json::Value =
            serde_json::from_str(&tool_definitions(REGISTRY)).unwrap_or_default();
        let tools = json.as_array().cloned().unwrap_or_default();
        assert_eq!(tools.len(), REGISTRY.len());
        for tool in tools {
            assert_eq!(tool["type"], "function");
            assert!(tool["function"]["name"].is_string());
            assert_eq!(tool["function"]["parameters"]["type"], "object");
            assert!(tool["function"]["parameters"]["properties"].is_object());
        }
    }

    #[test]
    fn the_prompt_names_no_tool() {
        for spec in REGISTRY {
            assert!(!SYSTEM_PROMPT.contains(spec.name), "{}", spec.name);
        }
    }
}
