//! Bounds on what tenants write and the exit gate copies: anyone who may edit a Workflow can
//! make its `status.message` or an annotation as large as the API server takes (about 1.5
//! MiB), and the gate keeps such text per completion in flight, in its claim, its body and
//! every attempt. Each such string is cut to [`TENANT_TEXT_MAX`] bytes, with a marker that
//! says how much was cut, wherever the gate copies it.

use std::borrow::Cow;

/// The most of one tenant string the gate copies (a marker follows what was cut).
pub const TENANT_TEXT_MAX: usize = 4096;

/// The longest mark annotation the gate reads: the controller's own are a few hundred bytes;
/// a longer one is not the controller's.
pub const MARK_TEXT_MAX: usize = 1024;

/// The longest claim annotation the gate reads: a few hundred bytes and the frozen message
/// (at most [`TENANT_TEXT_MAX`] and its marker, JSON-escaped).
pub const CLAIM_TEXT_MAX: usize = 4 * TENANT_TEXT_MAX;

/// `text`, or its first [`TENANT_TEXT_MAX`] bytes (on a character boundary) and a marker.
pub fn capped(text: &str) -> Cow<'_, str> {
    capped_to(text, TENANT_TEXT_MAX)
}

/// `text`, or its first `max` bytes (on a character boundary) and a marker naming the bytes cut.
pub fn capped_to(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!(
        "{}... [pipewarden: {} more bytes not copied]",
        &text[..cut],
        text.len() - cut
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_character_boundary_with_a_marker() {
        assert_eq!(capped("short"), "short");
        let long = "é".repeat(3000);
        let cut = capped(&long);
        assert!(cut.len() < TENANT_TEXT_MAX + 64, "{}", cut.len());
        assert!(cut.ends_with("more bytes not copied]"), "{cut}");
        assert!(cut.starts_with("éé"));
        assert_eq!(
            capped_to("abcdef", 4),
            "abcd... [pipewarden: 2 more bytes not copied]"
        );
    }
}
