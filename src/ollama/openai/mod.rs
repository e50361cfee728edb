//! OpenAI's Chat Completions, as llama-server, LM Studio, vLLM and Ollama's `/v1` speak it:
//! the request body ([`wire`]), the SSE framing ([`sse`]) and the reply assembled from
//! it ([`stream`]). The HTTP side is the shared `Client`, which picks this protocol when
//! the endpoint's kind is `ServerKind::OpenAi`.

pub(crate) mod sse;
pub(crate) mod stream;
pub(crate) mod wire;

pub(crate) use stream::OpenAiParser;
