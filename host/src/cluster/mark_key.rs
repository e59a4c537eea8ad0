//! The exit gate's mark key, read from its file: for `run` and `plan` alike.

use crate::exit::claim::MarkKey;

/// The keys claims are signed with: one per line of the file (surrounding whitespace
/// trimmed, empty lines skipped), the first signing, every one verifying; or none, said once,
/// when no file is named. A file named but missing, unreadable or without a key refuses to
/// start: a Secret that was meant to be mounted and is not must not mean unsigned claims.
pub fn mark_key(path: Option<&std::path::Path>) -> anyhow::Result<MarkKey> {
    let Some(path) = path else {
        tracing::warn!(
            "exit claims are unsigned (no --exit-mark-key-file): a claim on a workflow is \
             trusted as written; forged ones can delay a notification, not cause one"
        );
        return Ok(MarkKey::none());
    };
    let text = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("--exit-mark-key-file {}: {e}", path.display()))?;
    let keys: Vec<&[u8]> = text
        .split(|byte| *byte == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|line| !line.is_empty())
        .collect();
    if keys.is_empty() {
        anyhow::bail!(
            "--exit-mark-key-file {}: the file holds no key",
            path.display()
        );
    }
    if let Some(short) = keys.iter().position(|key| key.len() < 16) {
        anyhow::bail!(
            "--exit-mark-key-file {}: key {} is {} bytes; a key needs at least 16",
            path.display(),
            short + 1,
            keys[short].len()
        );
    }
    tracing::info!(
        keys = keys.len(),
        "exit claims are signed (the first key signs)"
    );
    Ok(MarkKey::list(&keys))
}

#[cfg(test)]
mod tests {
    use super::mark_key;

    #[test]
    fn a_mark_key_file_named_but_missing_or_empty_refuses_to_start() {
        let dir = std::env::temp_dir().join(format!("pipewarden-mark-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = mark_key(Some(&dir.join("absent"))).unwrap_err().to_string();
        assert!(missing.contains("--exit-mark-key-file"), "{missing}");
        let empty = dir.join("empty");
        std::fs::write(&empty, "\n  \n").unwrap();
        let error = mark_key(Some(&empty)).unwrap_err().to_string();
        assert!(error.contains("holds no key"), "{error}");
        let short = dir.join("short");
        std::fs::write(&short, "a-long-enough-current-key\nshort\n").unwrap();
        let error = mark_key(Some(&short)).unwrap_err().to_string();
        assert!(error.contains("key 2 is 5 bytes"), "{error}");
        let two = dir.join("two");
        std::fs::write(&two, "the-current-key-signs\n\nthe-previous-key-verifies\n").unwrap();
        assert_eq!(mark_key(Some(&two)).unwrap().len(), 2);
        assert!(!mark_key(None).unwrap().is_set(), "none named: unsigned");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
