//! The policy settings in force, read through the host's `settings` import (WIT 0.1.1).
//!
//! `validate-settings`, `should-rebuild` and `render-swf` are handed the settings; other exports
//! (`exit-eligibility`) ask for them when a decision needs them. Each call copies the text into
//! the guest, so read them only on the path that needs them.
//!
//! Outside a component (native tests, benchmarks) there is no host: [`settings`] returns what
//! [`set_native`] set on the calling thread, `{}` until then.

/// The settings JSON the operator configured (`{}` when none).
pub fn settings() -> String {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::pipewarden::policy::host::settings()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        NATIVE.with(|settings| settings.borrow().clone())
    }
}

/// Natively only: what [`settings`] returns on this thread from now on. Does nothing inside a
/// component, where the host answers.
pub fn set_native(settings: &str) {
    #[cfg(not(target_arch = "wasm32"))]
    NATIVE.with(|native| *native.borrow_mut() = settings.to_owned());
    #[cfg(target_arch = "wasm32")]
    let _ = settings;
}

/// The known key `given` most likely meant to be: one within two edits of it (one for keys
/// shorter than six characters; an edit inserts, deletes or replaces a character, or swaps two
/// neighbours), letter case aside. None for a known key, or nothing that close. For a warning:
/// settings keys a policy does not read are ignored, so a misspelt one would silently change
/// nothing.
pub fn likely_key<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let candidates: Vec<&str> = known.into_iter().collect();
    if candidates.contains(&given) {
        return None;
    }
    let lower = given.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|key| (edits(&lower, &key.to_ascii_lowercase()), key))
        .filter(|(distance, key)| *distance <= if key.len() < 6 { 1 } else { 2 })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, key)| key)
}

/// Edits between `a` and `b` (optimal string alignment: insert, delete, replace, swap two
/// neighbours).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let replace = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + replace);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    static NATIVE: std::cell::RefCell<String> = std::cell::RefCell::new("{}".to_owned());
}

#[cfg(test)]
mod tests {
    #[test]
    fn native_settings_default_to_empty_and_follow_set_native() {
        assert_eq!(super::settings(), "{}");
        super::set_native(r#"{"notify":"all"}"#);
        assert_eq!(super::settings(), r#"{"notify":"all"}"#);
    }

    #[test]
    fn a_key_one_or_two_edits_from_a_known_one_names_it() {
        use super::likely_key;
        let known = [
            "V2_DRIVER_IMAGE",
            "V2_LAUNCHER_IMAGE",
            "notify",
            "workspace",
        ];
        assert_eq!(likely_key("V2_DRIVER_IMAG", known), Some("V2_DRIVER_IMAGE"));
        assert_eq!(
            likely_key("V2_DIRVER_IMAGE", known),
            Some("V2_DRIVER_IMAGE")
        );
        assert_eq!(
            likely_key("v2_launcher_image", known),
            Some("V2_LAUNCHER_IMAGE")
        );
        assert_eq!(
            likely_key("V2_LAUNCHR_IMAG", known),
            Some("V2_LAUNCHER_IMAGE")
        );
        assert_eq!(likely_key("notfy", known), Some("notify"));
        assert_eq!(likely_key("V2_DRIVER_IMAGE", known), None, "known");
        assert_eq!(likely_key("V2_DRVR_IMGE", known), None, "three edits");
        assert_eq!(likely_key("HOME", known), None);
        assert_eq!(likely_key("ab", ["abc", "xy"]), Some("abc"));
        assert_eq!(likely_key("a", ["abc"]), None, "two edits from a short key");
    }
}
