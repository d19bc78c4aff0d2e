//! Where canonical bytes go: a growing buffer (to show the material) or a buffered SHA-256 (to make the key).

use sha2::{Digest, Sha256};

/// Receives canonical bytes; one writer feeds every sink, so material and key always agree.
pub(super) trait Sink {
    fn put(&mut self, bytes: &[u8]);

    /// Puts `"text"`; `text` must need no escaping.
    #[inline]
    fn put_quoted(&mut self, text: &[u8]) {
        self.put(b"\"");
        self.put(text);
        self.put(b"\"");
    }

    /// The input's data (the canonical JSON of the whole input, with no `key_arguments`) is
    /// about to be written, or has been: [`DataTee`] copies what lies between to a second sink.
    #[inline]
    fn data(&mut self, _begins: bool) {}
}

/// Passes everything to `material` and, between `data(true)` and `data(false)`, also to
/// `input`: the key and the payload fingerprint from one parse and one write.
pub(super) struct DataTee<'a, M: Sink, I: Sink> {
    pub(super) material: &'a mut M,
    pub(super) input: &'a mut I,
    pub(super) teeing: bool,
}

impl<M: Sink, I: Sink> Sink for DataTee<'_, M, I> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.material.put(bytes);
        if self.teeing {
            self.input.put(bytes);
        }
    }

    #[inline]
    fn data(&mut self, begins: bool) {
        self.teeing = begins;
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

const HASH_BUFFER: usize = 256;

/// Streams bytes into SHA-256 through a stack buffer, so the many small writes of the
/// canonical writer turn into a few block-sized hasher updates.
pub(super) struct HashSink {
    hasher: Sha256,
    buf: [u8; HASH_BUFFER],
    len: usize,
}

impl HashSink {
    pub(super) fn new() -> Self {
        HashSink {
            hasher: Sha256::new(),
            buf: [0; HASH_BUFFER],
            len: 0,
        }
    }

    pub(super) fn finish(mut self) -> [u8; 32] {
        self.hasher.update(&self.buf[..self.len]);
        self.hasher.finalize().into()
    }

    #[cold]
    fn spill(&mut self, bytes: &[u8]) {
        // Top the buffer up so the hasher always sees whole blocks.
        let (head, mut rest) = bytes.split_at(HASH_BUFFER - self.len);
        self.buf[self.len..].copy_from_slice(head);
        self.hasher.update(self.buf);
        if rest.len() >= HASH_BUFFER {
            let whole = rest.len() - rest.len() % 64;
            self.hasher.update(&rest[..whole]);
            rest = &rest[whole..];
        }
        self.buf[..rest.len()].copy_from_slice(rest);
        self.len = rest.len();
    }
}

impl Sink for HashSink {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if end <= HASH_BUFFER {
            self.buf[self.len..end].copy_from_slice(bytes);
            self.len = end;
        } else {
            self.spill(bytes);
        }
    }

    #[inline]
    fn put_quoted(&mut self, text: &[u8]) {
        let end = self.len + text.len() + 2;
        if end <= HASH_BUFFER {
            self.buf[self.len] = b'"';
            self.buf[self.len + 1..end - 1].copy_from_slice(text);
            self.buf[end - 1] = b'"';
            self.len = end;
        } else {
            self.put(b"\"");
            self.put(text);
            self.put(b"\"");
        }
    }
}
