//! Server-sent events: bytes in, the `data` of each event out.
//!
//! Only what Chat Completions servers use is kept: `data:` fields (several in one event
//! are joined with a newline, as the format says), comment lines (`: ping`, which
//! llama-server and proxies send to keep a connection open) and other fields (`id:`,
//! `retry:`) are skipped, and a blank line ends an event. An error is an error however
//! it comes: an event named `error` (`event: error`), or llama-server's own `error:`
//! field in place of `data:`, ends the reply with the server's message, never with the
//! text so far taken as a whole answer. Lines end in `\n` or
//! `\r\n`; bytes may be split anywhere across reads, inside a line or a UTF-8 character.
//! One line, and one event's data, are bounded, so a server that never sends a newline
//! or a blank line cannot grow memory without end.

use crate::ollama::OllamaError;

/// Splits an SSE byte stream into events.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    /// Bytes of the line not yet ended.
    buffer: Vec<u8>,
    /// Leading bytes of `buffer` already searched for a newline (none there).
    scanned: usize,
    /// The `data` of the event being read.
    data: Vec<u8>,
    /// Whether the event being read has a `data` field (one may be empty).
    has_data: bool,
    /// The event being read is an error (`event: error`, or an `error:` field).
    is_error: bool,
    /// The most bytes of one line, and of one event's data.
    max_line: usize,
}

impl SseDecoder {
    /// A decoder whose lines and events are at most `max_line` bytes.
    pub(crate) fn new(max_line: usize) -> SseDecoder {
        SseDecoder {
            buffer: Vec::new(),
            scanned: 0,
            data: Vec::new(),
            has_data: false,
            is_error: false,
            max_line,
        }
    }

    /// Feeds bytes; `on_event` gets each complete event's data and answers whether to
    /// stop (the `[DONE]` event). Returns true once stopped.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        on_event: &mut dyn FnMut(&[u8]) -> Result<bool, OllamaError>,
    ) -> Result<bool, OllamaError> {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        let mut from = self.scanned;
        let mut stopped = false;
        while let Some(offset) = memchr::memchr(b'\n', &self.buffer[from..]) {
            let end = from + offset;
            let line = std::mem::take(&mut self.buffer);
            let result = self.line(&line[start..end], on_event);
            self.buffer = line;
            start = end + 1;
            from = start;
            if result? {
                stopped = true;
                break;
            }
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if !stopped && self.buffer.len() > self.max_line {
            return Err(self.too_long("a single line"));
        }
        Ok(stopped)
    }

    /// Ends the stream: a last line without a newline is read, and an event the stream
    /// ended inside is dispatched (some servers never send the final blank line).
    pub(crate) fn finish(
        &mut self,
        on_event: &mut dyn FnMut(&[u8]) -> Result<bool, OllamaError>,
    ) -> Result<bool, OllamaError> {
        let rest = std::mem::take(&mut self.buffer);
        if !rest.is_empty() && self.line(&rest, on_event)? {
            return Ok(true);
        }
        self.dispatch(on_event)
    }

    fn line(
        &mut self,
        line: &[u8],
        on_event: &mut dyn FnMut(&[u8]) -> Result<bool, OllamaError>,
    ) -> Result<bool, OllamaError> {
        if line.len() > self.max_line {
            return Err(self.too_long("a single line"));
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line.starts_with(b":") {
            return Ok(false);
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(at) => (&line[..at], &line[at + 1..]),
            None => (line, &b""[..]),
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        match field {
            b"data" => {}
            b"event" => {
                self.is_error |= value == b"error";
                return Ok(false);
            }
            b"error" => self.is_error = true,
            _ => return Ok(false),
        }
        if self.has_data {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
        if self.data.len() > self.max_line {
            return Err(self.too_long("a single event"));
        }
        Ok(false)
    }

    fn dispatch(
        &mut self,
        on_event: &mut dyn FnMut(&[u8]) -> Result<bool, OllamaError>,
    ) -> Result<bool, OllamaError> {
        if !self.has_data && !self.is_error {
            return Ok(false);
        }
        let data = std::mem::take(&mut self.data);
        self.has_data = false;
        if std::mem::take(&mut self.is_error) {
            return Err(OllamaError::from_stream_error(&String::from_utf8_lossy(
                &data,
            )));
        }
        on_event(&data)
    }

    fn too_long(&self, what: &str) -> OllamaError {
        OllamaError::Protocol(format!(
            "{what} of the event stream passed {} bytes, which no Chat Completions server sends, so metron stopped reading",
            self.max_line
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(parts: &[&[u8]], max_line: usize) -> Result<Vec<String>, OllamaError> {
        let mut decoder = SseDecoder::new(max_line);
        let mut seen = Vec::new();
        let mut on = |data: &[u8]| {
            seen.push(String::from_utf8_lossy(data).into_owned());
            Ok(data == b"[DONE]")
        };
        for part in parts {
            if decoder.feed(part, &mut on)? {
                return Ok(seen);
            }
        }
        decoder.finish(&mut on)?;
        Ok(seen)
    }

    #[test]
    fn data_comments_crlf_and_splits_at_any_byte() {
        let stream = b": ping\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata:{\"b\":\ndata: 2}\n\nid: 3\n\ndata: [DONE]\n\ndata: after";
        let want = vec!["{\"a\":1}", "{\"b\":\n2}", "[DONE]"];
        assert_eq!(events(&[stream], 1 << 10).expect("events"), want);
        for at in 0..stream.len() {
            let (a, b) = stream.split_at(at);
            assert_eq!(
                events(&[a, b], 1 << 10).expect("events"),
                want,
                "split {at}"
            );
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytewise, 1 << 10).expect("events"), want);
    }

    #[test]
    fn an_error_event_or_field_is_an_error_however_it_comes() {
        let cases: [&[u8]; 4] = [
            // llama-server: the `error` field in place of `data`, then `[DONE]`.
            b"data: {\"a\":1}\n\nerror: {\"code\":500,\"message\":\"slot failed\"}\n\ndata: [DONE]\n\n",
            b"event: error\ndata: {\"error\":{\"message\":\"slot failed\"}}\n\ndata: [DONE]\n\n",
            b"event: error\r\ndata: slot failed\r\n\r\n",
            // Named `error` with no data at all: still an error, at the stream's end too.
            b"event: error\n",
        ];
        for stream in cases {
            let result = events(&[stream], 1 << 10);
            assert!(
                matches!(&result, Err(OllamaError::MidStream(m)) if m.contains("slot failed") || m == "(empty body)"),
                "{}: {result:?}",
                String::from_utf8_lossy(stream)
            );
        }
        let overflow = b"error: {\"code\":400,\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\"}\n\n";
        assert!(matches!(
            events(&[overflow], 1 << 10),
            Err(OllamaError::ContextOverflow { .. })
        ));
        // Other named events are data as before.
        assert_eq!(
            events(&[b"event: message\ndata: x\n\n"], 64).expect("events"),
            vec!["x"]
        );
    }

    #[test]
    fn an_event_without_its_blank_line_is_read_at_the_end() {
        assert_eq!(events(&[b"data: x"], 64).expect("events"), vec!["x"]);
        assert_eq!(events(&[b"data: x\n"], 64).expect("events"), vec!["x"]);
    }

    #[test]
    fn a_line_or_event_at_the_bound_is_read_and_one_byte_more_is_refused() {
        let at = format!("data: {}\n\n", "x".repeat(58));
        assert_eq!(at.len() - 2, 64);
        assert_eq!(events(&[at.as_bytes()], 64).expect("at the bound").len(), 1);
        let over = format!("data: {}\n\n", "x".repeat(59));
        assert!(matches!(
            events(&[over.as_bytes()], 64),
            Err(OllamaError::Protocol(_))
        ));
        // No newline at all: refused once the pending bytes pass the bound.
        let mut decoder = SseDecoder::new(64);
        let mut on = |_: &[u8]| Ok(false);
        let mut result = Ok(false);
        for _ in 0..10 {
            result = decoder.feed(&[b'x'; 10], &mut on);
            if result.is_err() {
                break;
            }
        }
        assert!(matches!(result, Err(OllamaError::Protocol(_))));
        // Many short data lines in one event: the event's bound.
        let many = "data: xxxxxxxxx\n".repeat(8);
        assert!(matches!(
            events(&[many.as_bytes()], 64),
            Err(OllamaError::Protocol(_))
        ));
    }
}
