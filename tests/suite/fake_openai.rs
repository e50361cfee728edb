//! The fake server speaking OpenAI's Chat Completions, as llama-server, LM Studio, vLLM
//! and Ollama's `/v1` do: the same HTTP server as [`FakeOllama`] in its OpenAI mode
//! ([`FakeBuilder::openai`]), and builders for SSE replies with each server's quirks
//! (arguments in many pieces, a separate `finish_reason` chunk, a missing usage chunk,
//! error bodies in OpenAI's shape).
#![allow(dead_code)]

use serde_json::{Value, json};

use super::fake_ollama::{Chunk, FakeBuilder, FakeOllama, OpenAiMode, Reply};

/// A builder for an OpenAI-compatible fake with no key, serving `DEFAULT_MODEL`.
pub fn openai_builder() -> FakeBuilder {
    FakeOllama::builder().openai(OpenAiMode::default())
}

/// An OpenAI-compatible fake answering `replies`.
pub fn start_openai(replies: Vec<Reply>) -> FakeOllama {
    openai_builder().chat(replies).start()
}

/// The endpoint metron is given: the server's `/v1`.
pub fn v1(fake: &FakeOllama) -> String {
    format!("{}/v1", fake.base_url())
}

/// One SSE event holding `value`.
pub fn event(value: Value) -> Chunk {
    Chunk::Raw(format!("data: {value}\n\n"))
}

/// The end of the stream.
pub fn done_event() -> Chunk {
    Chunk::Raw("data: [DONE]\n\n".to_owned())
}

/// A content delta.
pub fn delta_text(text: &str) -> Chunk {
    event(
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
    )
}

/// The chunk carrying only `finish_reason`.
pub fn finish(reason: &str) -> Chunk {
    event(
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
    )
}

/// The usage chunk `stream_options.include_usage` asks for.
pub fn usage(prompt: u64, completion: u64, cached: Option<u64>) -> Chunk {
    let mut usage = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
    if let Some(cached) = cached {
        usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
    }
    event(json!({"object": "chat.completion.chunk", "choices": [], "usage": usage}))
}

/// A text answer streamed word by word, then `stop`, the usage and `[DONE]`.
pub fn openai_answer(text: &str, prompt: u64, completion: u64) -> Reply {
    let mut chunks: Vec<Chunk> = text.split_inclusive(' ').map(delta_text).collect();
    chunks.push(finish("stop"));
    chunks.push(usage(prompt, completion, None));
    chunks.push(done_event());
    Reply::Stream(chunks)
}

/// One call whose `arguments` text arrives in `pieces` chunks (the id and name on the
/// first only, as vLLM and llama-server send them), then `finish_reason: tool_calls`,
/// the usage and `[DONE]`.
pub fn openai_call_split(id: &str, name: &str, arguments: &Value, pieces: usize) -> Reply {
    let text = arguments.to_string();
    let mut chunks = vec![event(
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
        "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]}),
    )];
    let size = text.len().div_ceil(pieces.max(1)).max(1);
    let bytes: Vec<char> = text.chars().collect();
    for piece in bytes.chunks(size) {
        let piece: String = piece.iter().collect();
        chunks.push(event(json!({"choices": [{"index": 0, "delta": {
            "tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]})));
    }
    chunks.push(finish("tool_calls"));
    chunks.push(usage(300, 20, None));
    chunks.push(done_event());
    Reply::Stream(chunks)
}

/// An error status with an OpenAI-shaped JSON body.
pub fn openai_error(status: u16, body: Value) -> Reply {
    Reply::Raw(status, "application/json", body.to_string())
}
