//! A component of `pipewarden:policy@0.2.0`, a contract the host does not serve: loading it
//! must fail with an error that names the version (and the changed signatures) it found.

#[allow(clippy::too_many_arguments)] // the canonical ABI flattens records into arguments
mod bindings {
    wit_bindgen::generate!({ path: "wit", world: "policy" });
}

use bindings::pipewarden::policy::host::{LogLevel, log};
use bindings::{RebuildDecision, RebuildInput};

struct OtherWorld;

impl bindings::Guest for OtherWorld {
    fn validate_settings(_settings: String) -> Result<(), String> {
        Ok(())
    }

    fn should_rebuild(_input: RebuildInput, _settings: String) -> RebuildDecision {
        log(LogLevel::Info, "a 0.2.0 policy was called");
        RebuildDecision::Skip("built for pipewarden:policy@0.2.0".to_owned())
    }

    fn render_swf(swf: String) -> Result<Vec<u8>, String> {
        Ok(swf.into_bytes())
    }
}

bindings::export!(OtherWorld with_types_in bindings);
