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
}
