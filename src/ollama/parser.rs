//! One reply parser for either protocol, so the client's streaming loop (the watchdog,
//! the first-token time, the drain) is written once.

use std::time::Duration;

use super::openai::OpenAiParser;
use super::stream::StreamParser;
use super::{Delta, OllamaError, Reply};

/// The parser of the endpoint's kind.
#[derive(Debug)]
pub(crate) enum Parser {
    /// Ollama's NDJSON.
    Ollama(StreamParser),
    /// Chat Completions' SSE (or one JSON body).
    OpenAi(OpenAiParser),
}

impl Parser {
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, OllamaError> {
        match self {
            Parser::Ollama(p) => p.feed(bytes, on_delta),
            Parser::OpenAi(p) => p.feed(bytes, on_delta),
        }
    }

    pub(crate) fn finish(self, on_delta: &mut dyn FnMut(Delta<'_>)) -> Result<Reply, OllamaError> {
        match self {
            Parser::Ollama(p) => p.finish(on_delta),
            Parser::OpenAi(p) => p.finish(on_delta),
        }
    }

    pub(crate) fn note_first_token(&mut self, at: Duration) {
        match self {
            Parser::Ollama(p) => p.note_first_token(at),
            Parser::OpenAi(p) => p.note_first_token(at),
        }
    }

    pub(crate) fn progress(&self) -> usize {
        match self {
            Parser::Ollama(p) => p.progress(),
            Parser::OpenAi(p) => p.progress(),
        }
    }

    pub(crate) fn has_output(&self) -> bool {
        match self {
            Parser::Ollama(p) => p.has_output(),
            Parser::OpenAi(p) => p.has_output(),
        }
    }
}
