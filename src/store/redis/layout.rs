//! Where records live in Redis: the key of a record, the SCAN patterns that find them, and the
//! `list` cursor that says where a listing stands (see the module documentation of the store).

use super::cluster::node_address;
use crate::error::StoreError;

/// The tenant part `t` of a record's key: `_` for no tenant, else `t` + hex of its UTF-8 bytes.
pub fn tenant_segment(tenant: Option<&str>) -> String {
    match tenant {
        None => "_".to_owned(),
        Some(t) => {
            let mut out = String::with_capacity(1 + 2 * t.len());
            out.push('t');
            for b in t.bytes() {
                out.push_str(&format!("{b:02x}"));
            }
            out
        }
    }
}

/// `text` with the glob characters of Redis `MATCH` patterns escaped.
pub fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '^' | '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether `suffix` (a Redis key after the prefix) has the shape `<t>:<64 hex>`.
pub(super) fn is_record_suffix(suffix: &str) -> bool {
    let Some((t, key)) = suffix.split_once(':') else {
        return false;
    };
    let tenant_ok = t == "_"
        || (t.starts_with('t')
            && t.len() % 2 == 1
            && t[1..]
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    tenant_ok && key.len() == 64 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A `list` position: on a cluster the node being scanned (`host:port`), where its SCAN is
/// (`None` when it finished) and keys it returned that the previous page had no room for.
///
/// Rendered `r1.<scan>.<pending>` for one server, `c1/<node>/<scan>/<pending>` for a cluster.
pub(super) struct ListCursor {
    pub(super) node: Option<String>,
    pub(super) scan: Option<u64>,
    pub(super) pending: Vec<String>,
}

impl ListCursor {
    pub(super) fn parse(text: Option<&str>, cluster: bool) -> Result<ListCursor, StoreError> {
        let Some(text) = text else {
            return Ok(ListCursor {
                node: None,
                scan: Some(0),
                pending: Vec::new(),
            });
        };
        let bad =
            || StoreError::Configuration(format!("bad list cursor {text:?} for the Redis store"));
        let (node, scan, pending) = if cluster {
            let rest = text.strip_prefix("c1/").ok_or_else(bad)?;
            let mut parts = rest.splitn(3, '/');
            let (Some(node), Some(scan), Some(pending)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad());
            };
            if node_address(node).is_none() {
                return Err(bad());
            }
            (Some(node.to_owned()), scan, pending)
        } else {
            let rest = text.strip_prefix("r1.").ok_or_else(bad)?;
            let (scan, pending) = rest.split_once('.').ok_or_else(bad)?;
            (None, scan, pending)
        };
        let scan = if scan == "-" {
            None
        } else {
            Some(scan.parse().map_err(|_| bad())?)
        };
        let pending: Vec<String> = if pending.is_empty() {
            Vec::new()
        } else {
            pending.split(',').map(str::to_owned).collect()
        };
        if !pending.iter().all(|p| is_record_suffix(p)) {
            return Err(bad());
        }
        Ok(ListCursor {
            node,
            scan,
            pending,
        })
    }

    /// Moves to the next node (in `nodes`' order) once this one is done; answers whether it did.
    pub(super) fn advance(&mut self, nodes: &[String]) -> bool {
        if self.scan.is_some() || !self.pending.is_empty() {
            return false;
        }
        let Some(current) = &self.node else {
            return false;
        };
        match nodes.iter().find(|n| n.as_str() > current.as_str()) {
            Some(next) => {
                self.node = Some(next.clone());
                self.scan = Some(0);
                true
            }
            None => false,
        }
    }

    pub(super) fn render(&self) -> Option<String> {
        if self.scan.is_none() && self.pending.is_empty() {
            return None;
        }
        let scan = match self.scan {
            Some(c) => c.to_string(),
            None => "-".into(),
        };
        match &self.node {
            Some(node) => Some(format!("c1/{node}/{scan}/{}", self.pending.join(","))),
            None => Some(format!("r1.{scan}.{}", self.pending.join(","))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_segment_is_underscore_or_t_and_hex() {
        assert_eq!(tenant_segment(None), "_");
        assert_eq!(tenant_segment(Some("")), "t");
        assert_eq!(tenant_segment(Some("acme")), "t61636d65");
        assert_eq!(tenant_segment(Some("é")), "tc3a9");
    }

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("idemkit:"), "idemkit:");
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }

    #[test]
    fn record_suffixes_are_recognised() {
        let key = "ab".repeat(32);
        assert!(is_record_suffix(&format!("_:{key}")));
        assert!(is_record_suffix(&format!("t:{key}")));
        assert!(is_record_suffix(&format!("t61:{key}")));
        assert!(!is_record_suffix(&format!("t6:{key}")));
        assert!(!is_record_suffix(&format!("x:{key}")));
        assert!(!is_record_suffix("_:abc"));
    }

    #[test]
    fn list_cursors_round_trip() {
        let key = "cd".repeat(32);
        let c = ListCursor {
            node: None,
            scan: Some(17),
            pending: vec![format!("_:{key}"), format!("t61:{key}")],
        };
        let text = c.render().unwrap();
        let back = ListCursor::parse(Some(&text), false).unwrap();
        assert_eq!(back.scan, Some(17));
        assert_eq!(back.pending, c.pending);
        let done = ListCursor {
            node: None,
            scan: None,
            pending: vec![],
        };
        assert_eq!(done.render(), None);
        assert!(ListCursor::parse(Some("nonsense"), false).is_err());
        assert!(ListCursor::parse(Some(&text), true).is_err());
    }

    #[test]
    fn cluster_list_cursors_name_the_node_and_move_on_in_order() {
        let key = "ef".repeat(32);
        let nodes = vec!["127.0.0.1:7001".to_owned(), "127.0.0.1:7002".to_owned()];
        let mut c = ListCursor {
            node: Some(nodes[0].clone()),
            scan: Some(5),
            pending: vec![format!("_:{key}")],
        };
        let text = c.render().unwrap();
        assert_eq!(text, format!("c1/127.0.0.1:7001/5/_:{key}"));
        let back = ListCursor::parse(Some(&text), true).unwrap();
        assert_eq!(back.node.as_deref(), Some("127.0.0.1:7001"));
        assert_eq!((back.scan, back.pending), (Some(5), c.pending.clone()));
        assert!(ListCursor::parse(Some(&text), false).is_err());
        assert!(!c.advance(&nodes));
        c.scan = None;
        c.pending.clear();
        assert!(c.advance(&nodes));
        assert_eq!(
            (c.node.as_deref(), c.scan),
            (Some("127.0.0.1:7002"), Some(0))
        );
        c.scan = None;
        assert!(!c.advance(&nodes));
        assert_eq!(c.render(), None);
    }
}
