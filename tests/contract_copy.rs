//! The one check that looks beside the repository: the project's copies of the contract
//! (`docs/SPEC.md`, in the project's words, and `tests/vectors/keys-v1.json`, byte for byte) still
//! match `../shared` when it is checked out there. Without it the repository stands on its own and
//! the check passes; nothing else in the repository reads `../shared`.

use std::path::{Path, PathBuf};

/// The vectors kept in the repository (a byte-for-byte copy of the contract's file).
const VECTORS_IN_REPO: &str = "tests/vectors/keys-v1.json";

/// Checks that the repository carries its contract: `docs/SPEC.md` and the vectors, and — where
/// the upstream contract is checked out beside the repository as `../shared` — that the vectors
/// are still a byte-for-byte copy of `../shared/vectors/keys-v1.json`. This is the only code that
/// looks at `../shared`; without it, the repository stands on its own and the check passes.
fn check_contract_copies(repo: &Path) -> Result<(), String> {
    let spec = repo.join("docs/SPEC.md");
    if !spec.is_file() {
        return Err(format!(
            "{} is missing: the repository must carry its contract",
            spec.display()
        ));
    }
    let spec_text = std::fs::read_to_string(&spec)
        .map_err(|e| format!("cannot read {} ({e})", spec.display()))?;
    for section in 1..=9 {
        if !spec_text.contains(&format!("\n## {section}. ")) {
            return Err(format!(
                "{} has no section `## {section}.`: code cites its sections as SPEC §1-§9",
                spec.display()
            ));
        }
    }
    let upstream_spec = repo.join("../shared/SPEC.md");
    if let Ok(upstream_text) = std::fs::read_to_string(&upstream_spec) {
        for (section, version) in [(8, "v1.1"), (9, "v1.2")] {
            let ours = section_rules(&spec_text, section);
            let theirs = section_rules(&upstream_text, section);
            if ours != theirs {
                return Err(format!(
                    "{} lists the {version} rules {ours:?} in §{section} but {} lists \
                     {theirs:?}: bring docs/SPEC.md in step",
                    spec.display(),
                    upstream_spec.display()
                ));
            }
        }
    }
    let ours_path = repo.join(VECTORS_IN_REPO);
    let ours = std::fs::read(&ours_path)
        .map_err(|e| format!("cannot read {} ({e})", ours_path.display()))?;
    let upstream_path = repo.join("../shared/vectors/keys-v1.json");
    if !upstream_path.is_file() {
        return Ok(());
    }
    let upstream = std::fs::read(&upstream_path)
        .map_err(|e| format!("cannot read {} ({e})", upstream_path.display()))?;
    if ours != upstream {
        return Err(format!(
            "{} differs from {}: the contract's vectors changed; copy them \
             (cp {} {}) and bring docs/SPEC.md in step with ../shared/SPEC.md",
            ours_path.display(),
            upstream_path.display(),
            upstream_path.display(),
            ours_path.display()
        ));
    }
    Ok(())
}

/// The numbers of the rules in one section of a SPEC: lines `N. **Title.**` after `## <section>.`
/// and before the next `## ` heading.
fn section_rules(spec: &str, section: u32) -> Vec<u32> {
    let spec = format!("\n{spec}");
    let Some(start) = spec.find(&format!("\n## {section}.")) else {
        return Vec::new();
    };
    let body = &spec[start + 1..];
    let end = body[1..].find("\n## ").map_or(body.len(), |at| at + 1);
    body[..end]
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once(". ")?;
            let number = number.parse().ok()?;
            rest.starts_with("**").then_some(number)
        })
        .collect()
}

#[test]
fn the_repository_carries_the_contract_and_its_vectors_match_the_shared_copy() {
    if let Err(problem) = check_contract_copies(Path::new(env!("CARGO_MANIFEST_DIR"))) {
        panic!("{problem}");
    }
}

/// A scratch tree `<tmp>/<name>/{repo,shared}` for the copy check; removed when dropped.
struct Layout {
    base: PathBuf,
}

impl Layout {
    fn new(name: &str, vectors: &[u8], shared: Option<&[u8]>, spec: bool) -> Layout {
        let base =
            std::env::temp_dir().join(format!("idemkit-copy-check-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join("tests/vectors")).unwrap();
        std::fs::write(repo.join(VECTORS_IN_REPO), vectors).unwrap();
        if spec {
            std::fs::create_dir_all(repo.join("docs")).unwrap();
            let sections: String = (1..=9).map(|n| format!("\n## {n}. Section\n")).collect();
            std::fs::write(repo.join("docs/SPEC.md"), format!("# idemkit\n{sections}")).unwrap();
        }
        if let Some(shared) = shared {
            std::fs::create_dir_all(base.join("shared/vectors")).unwrap();
            std::fs::write(base.join("shared/vectors/keys-v1.json"), shared).unwrap();
        }
        Layout { base }
    }

    fn repo(&self) -> PathBuf {
        self.base.join("repo")
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

#[test]
fn the_copy_check_passes_without_a_shared_checkout_beside_the_repository() {
    let layout = Layout::new("alone", b"{}\n", None, true);
    assert_eq!(check_contract_copies(&layout.repo()), Ok(()));
}

#[test]
fn the_copy_check_passes_when_the_shared_vectors_are_identical() {
    let layout = Layout::new("same", b"{\"a\":1}\n", Some(b"{\"a\":1}\n"), true);
    assert_eq!(check_contract_copies(&layout.repo()), Ok(()));
}

#[test]
fn the_copy_check_fails_naming_both_files_when_the_shared_vectors_differ() {
    // One byte apart (a trailing newline): a byte-for-byte copy, not an equal JSON value.
    let layout = Layout::new("differ", b"{\"a\":1}\n", Some(b"{\"a\":1}"), true);
    let problem = check_contract_copies(&layout.repo()).expect_err("differing vectors must fail");
    assert!(problem.contains("tests/vectors/keys-v1.json"), "{problem}");
    assert!(problem.contains("shared/vectors/keys-v1.json"), "{problem}");
    assert!(problem.contains("differs"), "{problem}");
}

#[test]
fn the_copy_check_fails_when_docs_spec_is_missing() {
    let layout = Layout::new("nospec", b"{}\n", None, false);
    let problem = check_contract_copies(&layout.repo()).expect_err("a missing SPEC must fail");
    assert!(problem.contains("docs/SPEC.md"), "{problem}");
}

#[test]
fn the_copy_check_fails_when_docs_spec_lacks_a_section() {
    let layout = Layout::new("nosection", b"{}\n", None, true);
    let spec = layout.repo().join("docs/SPEC.md");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("## 3. ", "## Three ");
    std::fs::write(&spec, text).unwrap();
    let problem = check_contract_copies(&layout.repo()).expect_err("a missing section must fail");
    assert!(problem.contains("`## 3.`"), "{problem}");
}

#[test]
fn the_v11_rules_are_read_from_section_8_only() {
    let spec = "## 2. Keys\n1. **Not this.**\n## 8. v1.1\n1. **One.**\n   text\n2. **Two.**\n10. **Ten.**\n";
    assert_eq!(section_rules(spec, 8), vec![1, 2, 10]);
}

#[test]
fn each_sections_rules_end_at_the_next_heading() {
    let spec =
        "## 8. v1.1\n1. **One.**\n2. **Two.**\n## 9. v1.2\n1. **Uno.**\n## Where\n3. **No.**\n";
    assert_eq!(section_rules(spec, 8), vec![1, 2]);
    assert_eq!(section_rules(spec, 9), vec![1]);
}

#[test]
fn the_copy_check_fails_when_the_shared_spec_has_v12_rules_docs_spec_lacks() {
    let layout = Layout::new("rules12", b"{}\n", None, true);
    std::fs::create_dir_all(layout.base.join("shared")).unwrap();
    std::fs::write(
        layout.base.join("shared/SPEC.md"),
        "# idemkit\n## 8. v1.1\n## 9. v1.2\n1. **A rule of v1.2.**\n",
    )
    .unwrap();
    let problem = check_contract_copies(&layout.repo()).expect_err("a missing §9 rule must fail");
    assert!(
        problem.contains("v1.2") && problem.contains("§9"),
        "{problem}"
    );
}

#[test]
fn the_copy_check_fails_when_the_shared_spec_lists_other_v11_rules() {
    let layout = Layout::new("rules", b"{}\n", None, true);
    std::fs::create_dir_all(layout.base.join("shared")).unwrap();
    std::fs::write(
        layout.base.join("shared/SPEC.md"),
        "# idemkit\n## 8. v1.1\n1. **A new rule.**\n",
    )
    .unwrap();
    let problem = check_contract_copies(&layout.repo()).expect_err("a new rule must fail");
    assert!(problem.contains("[1]"), "{problem}");
    assert!(problem.contains("shared/SPEC.md"), "{problem}");
}
