//! Secrets kept out of messages: URLs and connection strings with their passwords hidden
//! (SPEC v1.1 rule 11).

/// The store URL or connection string with every password or token replaced by `***`, for
/// messages (SPEC v1.1 rule 11).
///
/// URLs (`scheme://...`): the password in the userinfo, read both as tokio-postgres reads it
/// (up to the first `@`, so `/ ? #` may stand unencoded in it) and as the WHATWG parser of the
/// redis crate does (up to the last `@`), and the value of every query parameter named like a
/// secret (`password`, `pass`, `pwd`, anything with `pass`, `token`, `secret`, `auth` or `key`
/// in its name). libpq `key=value` strings (`host=h password='p w'`): the values of the same
/// keys, quoted or not. In doubt more is hidden, never less.
pub fn redact_url(url: &str) -> String {
    let mut shown = String::with_capacity(url.len());
    let mut at = 0;
    for (start, end) in secret_spans(url) {
        shown.push_str(&url[at..start]);
        shown.push_str("***");
        at = end;
    }
    shown.push_str(&url[at..]);
    shown
}

/// `message` (say, a driver's error about `url`) with every secret of `url` hidden, in case
/// the driver echoed one.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn scrub_secrets(message: &str, url: &str) -> String {
    let mut secrets: Vec<String> = Vec::new();
    for (start, end) in secret_spans(url) {
        let raw = &url[start..end];
        secrets.push(raw.to_owned());
        let decoded = percent_decode(raw);
        if decoded != raw {
            secrets.push(decoded);
        }
    }
    // Longest first, so that a secret containing another is hidden whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = message.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret.as_str(), "***");
    }
    out
}

/// Whether a parameter name (lowercase) names a secret.
pub(super) fn secret_name(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    [
        "pass",
        "pwd",
        "token",
        "secret",
        "auth",
        "key",
        "credential",
    ]
    .iter()
    .any(|word| name.contains(word))
}

pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte ranges of `url` that hold secrets, sorted and merged.
pub(super) fn secret_spans(url: &str) -> Vec<(usize, usize)> {
    let mut spans = match url.find("://") {
        Some(scheme_end) => url_secret_spans(url, scheme_end + 3),
        None => key_value_secret_spans(url),
    };
    spans.retain(|(start, end)| start < end);
    spans.sort();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

pub(super) fn url_secret_spans(url: &str, rest: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let tail = &url[rest..];
    // The userinfo's password, up to the first `@` (tokio-postgres) and up to the last one
    // (WHATWG, which also ends the authority at `/ ? #`: a password holding those is misread
    // by it, but still meant as a password).
    for at in [tail.find('@'), tail.rfind('@')].into_iter().flatten() {
        if let Some(colon) = tail[..at].find(':') {
            spans.push((rest + colon + 1, rest + at));
        }
    }
    // Query parameters: `?` or `&`, a name, `=`, a value up to the next `&`.
    let bytes = url.as_bytes();
    let mut i = rest;
    while i < bytes.len() {
        if matches!(bytes[i], b'?' | b'&') {
            let name_start = i + 1;
            let name_end = url[name_start..]
                .find(['=', '&'])
                .map_or(url.len(), |n| name_start + n);
            if name_end < url.len() && bytes[name_end] == b'=' {
                let value_start = name_end + 1;
                let value_end = url[value_start..]
                    .find('&')
                    .map_or(url.len(), |n| value_start + n);
                if secret_name(&percent_decode(&url[name_start..name_end])) {
                    spans.push((value_start, value_end));
                }
                i = value_end;
                continue;
            }
        }
        i += 1;
    }
    spans
}

/// libpq `key=value` pairs: blanks around `=` allowed; a value is single-quoted (with `\`
/// escapes) or runs to the next blank.
pub(super) fn key_value_secret_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    let skip_blanks = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_blanks(i);
        if i >= bytes.len() {
            return spans;
        }
        let name_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let name = &text[name_start..i];
        i = skip_blanks(i);
        if i >= bytes.len() || bytes[i] != b'=' {
            // Not a pair: a word on its own (or not a connection string at all).
            continue;
        }
        i = skip_blanks(i + 1);
        let value_start = i;
        if i < bytes.len() && bytes[i] == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(bytes.len());
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(bytes.len());
        }
        while !text.is_char_boundary(i) {
            i += 1;
        }
        if secret_name(name) {
            spans.push((value_start, i));
        }
    }
}
