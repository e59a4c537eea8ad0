//! The compatibility matrix of `docs/kfp-releases.md` is the ledger's, with the number of cases
//! each data folder proves: written between its markers by `PIPEWARDEN_BLESS=1 cargo test -p
//! kfp-compiler ledger`, and checked by the same test otherwise.

use std::path::{Path, PathBuf};

use super::{Compile, LEDGER, Owner};

const BEGIN: &str =
    "<!-- ledger:begin (generated from policies/kfp-compiler/src/release/ledger.rs) -->";
const END: &str = "<!-- ledger:end -->";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Cases of a data folder: (install, busy).
fn cases(folder: &str) -> (usize, usize) {
    let path = repo()
        .join("tests/data/upstream")
        .join(folder)
        .join("index.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let busy = entries
        .iter()
        .filter(|entry| entry["compiled_busy"].is_string())
        .count();
    (entries.len(), busy)
}

/// The matrix as markdown.
pub fn matrix() -> String {
    let mut rows = vec![
        "| KFP | tagged | compiler | how it is proven | pipewarden does |".to_owned(),
        "| --- | --- | --- | --- | --- |".to_owned(),
    ];
    for entry in LEDGER {
        let (compiler, proof) = match entry.compile {
            Compile::Own { data, .. } => {
                let (install, busy) = cases(data);
                (
                    "its own".to_owned(),
                    format!(
                        "that release's own compiler output ({install} cases, {busy} busy; \
                         `tests/data/upstream/{data}`)"
                    ),
                )
            }
            Compile::Inherits { release, evidence } => (
                format!("{release}'s"),
                format!(
                    "{release}'s compiler; the patch changes nothing a compile reads: {evidence}"
                ),
            ),
            Compile::Unsupported { missing } => {
                ("none".to_owned(), format!("not served: {missing}"))
            }
        };
        let served = entry.release().is_some();
        let does = match (entry.owner, served) {
            (Owner::ApiServerEmbeds, true) => "rebuilds stale SWFs".to_owned(),
            (Owner::ApiServerEmbeds, false) => {
                "writes nothing (`unsupported-target`, one report)".to_owned()
            }
            (Owner::ApiOwnedInMultiUser, served) => format!(
                "multi-user: writes nothing, KFP's API owns every schedule; SWFs that still \
                 embed a workflow are reported not adopted. Single-user: {}",
                if served {
                    "rebuilds stale SWFs"
                } else {
                    "writes nothing (`unsupported-target`, one report)"
                }
            ),
        };
        let commit = entry
            .commit
            .map(|c| format!(" (`{}`)", &c[..c.len().min(12)]))
            .unwrap_or_default();
        rows.push(format!(
            "| {} | {}{commit} | {compiler} | {} | {does} |",
            entry.version,
            entry.date,
            proof.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    rows.join("\n") + "\n"
}

#[test]
fn the_docs_matrix_is_the_ledgers() {
    let path = repo().join("docs/kfp-releases.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        panic!("{}: no {BEGIN} ... {END} markers", path.display());
    };
    let generated = format!("{BEGIN}\n{}{END}", matrix());
    let current = &text[start..end + END.len()];
    if current != generated && std::env::var_os("PIPEWARDEN_BLESS").is_some() {
        std::fs::write(&path, text.replacen(current, &generated, 1)).unwrap();
        return;
    }
    assert!(
        current == generated,
        "docs/kfp-releases.md's matrix is not the ledger's; rerun with PIPEWARDEN_BLESS=1 \
         (cargo test -p kfp-compiler ledger)\n{generated}"
    );
}
