//! Reading a response body with a bound on its bytes.
//!
//! A broken or hostile server can send a body that never ends. Read whole, such a body
//! grows memory until the allocator gives up: an endless error body made `metron -p` abort
//! with "memory allocation failed", and endless `/api/tags`, `/api/show` and
//! `/api/version` bodies reached 2.4 to 3 GB within the doctor's 5 s. So every body except
//! the chat stream (which the stream parser bounds per line and per reply) is read here,
//! chunk by chunk, and reading stops at the bound of its [`BodyKind`]: memory stays at the
//! bound, whatever the server sends and however fast.

/// What a body is for, which decides how many of its bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// The body of an error status. Only its start is kept, for the message (the server's
    /// own message whole within it, a raw body quoted in part); the rest is not read, and
    /// is no error.
    ErrorStatus,
    /// The JSON answer of `/api/version`, `/api/tags`, `/api/ps` or `/api/show`. Past the
    /// bound the answer is refused: a cut JSON document cannot be read.
    Json,
}

/// The bytes of an error status's body kept for the message.
pub(crate) const ERROR_BODY_BYTES: usize = 8 << 10;

/// The most bytes of a JSON answer read. Ollama's largest, `/api/show`, is the model's
/// template, parameters, license and metadata: tens of KiB (without `verbose`, which
/// metron never asks for, so no tokenizer tables); `/api/tags` takes about 500 bytes per
/// installed model. 8 MiB is hundreds of times either, and still a bounded allocation.
pub(crate) const JSON_BODY_BYTES: usize = 8 << 20;

impl BodyKind {
    /// The most bytes of the body read.
    pub(crate) const fn limit(self) -> usize {
        match self {
            BodyKind::ErrorStatus => ERROR_BODY_BYTES,
            BodyKind::Json => JSON_BODY_BYTES,
        }
    }
}

/// A body as read so far: never more than its bound.
#[derive(Debug)]
pub(crate) struct Capped {
    bytes: Vec<u8>,
    limit: usize,
    over: bool,
}

impl Capped {
    /// An empty body that holds at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Capped {
        Capped {
            bytes: Vec::new(),
            limit,
            over: false,
        }
    }

    /// Adds the next chunk. Returns false once the body has passed its bound: the bytes
    /// up to the bound are kept, the rest of the chunk is not, and nothing more should be
    /// read.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> bool {
        let room = self.limit.saturating_sub(self.bytes.len());
        if chunk.len() > room {
            self.bytes.extend_from_slice(&chunk[..room]);
            self.over = true;
            return false;
        }
        self.bytes.extend_from_slice(chunk);
        true
    }

    /// Whether the body passed its bound (it had at least one byte more).
    pub(crate) fn is_over(&self) -> bool {
        self.over
    }

    /// The bytes kept.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// A byte count as people read it: `8 KiB`, `8 MiB`, or bytes.
pub(crate) fn human(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `total` bytes in chunks of `chunk` bytes; the `Capped` and whether every push
    /// was accepted.
    fn feed(limit: usize, total: usize, chunk: usize) -> (Capped, bool) {
        let mut body = Capped::new(limit);
        let mut left = total;
        let piece = vec![b'x'; chunk];
        while left > 0 {
            let n = left.min(chunk);
            left -= n;
            if !body.push(&piece[..n]) {
                return (body, false);
            }
        }
        (body, true)
    }

    #[test]
    fn a_body_of_exactly_the_bound_is_read_whole() {
        for kind in [BodyKind::ErrorStatus, BodyKind::Json] {
            let limit = kind.limit();
            for chunk in [1, 4096, limit, limit + 7] {
                if chunk == 1 && limit > 1 << 16 {
                    continue; // a byte at a time through 8 MiB proves nothing more
                }
                let (body, accepted) = feed(limit, limit, chunk);
                assert!(accepted, "{kind:?} chunk {chunk}");
                assert!(!body.is_over(), "{kind:?} chunk {chunk}");
                assert_eq!(body.into_bytes().len(), limit);
            }
        }
    }

    #[test]
    fn one_byte_past_the_bound_stops_reading_and_keeps_the_bound() {
        for kind in [BodyKind::ErrorStatus, BodyKind::Json] {
            let limit = kind.limit();
            for chunk in [4096, limit, limit + 1] {
                let (body, accepted) = feed(limit, limit + 1, chunk);
                assert!(!accepted, "{kind:?} chunk {chunk}");
                assert!(body.is_over(), "{kind:?} chunk {chunk}");
                assert_eq!(body.into_bytes().len(), limit);
            }
        }
    }

    #[test]
    fn nothing_is_kept_past_the_bound_even_when_pushed_again() {
        let mut body = Capped::new(3);
        assert!(!body.push(b"abcd"));
        assert!(!body.push(b"efgh"));
        assert!(body.is_over());
        assert_eq!(body.into_bytes(), b"abc");
    }

    #[test]
    fn the_bounds_are_the_stated_ones() {
        assert_eq!(BodyKind::ErrorStatus.limit(), 8 * 1024);
        assert_eq!(BodyKind::Json.limit(), 8 * 1024 * 1024);
        assert_eq!(human(ERROR_BODY_BYTES), "8 KiB");
        assert_eq!(human(JSON_BODY_BYTES), "8 MiB");
        assert_eq!(human(1000), "1000 bytes");
    }
}
